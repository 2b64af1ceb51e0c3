#!/usr/bin/env bash
# rgt-tui: the epochs a cell's own config file declares (U32), for the launch plan.
#
#   cfg_epochs.sh WORKDIR MAX_BYTES      stdin: one config path a line
#
# Sent whole as `bash -c` by services/queue_epochs.py; it only reads. A relative path is
# taken from WORKDIR, where the cell's command runs. For each path, numbered from 0:
#   file<TAB>N<TAB>ok|missing|special|unreadable
#   epochs<TAB>N<TAB><line number>:<the line, first 200 bytes>     (at most 3 a file)
# Only the first MAX_BYTES of a file are read, and only regular files (a FIFO or a
# device would block or never end), so a hostile config costs a bounded answer.
set -u
workdir=$1 limit=$2
cd -- "$workdir" 2>/dev/null || { printf 'noworkdir\n'; exit 0; }
# An epochs key at the start of a line, YAML/TOML/JSON/Python alike:
# epochs: 50 | epochs = 50 | "epochs": 50 | epochs=50 (indented: nested sections too).
pattern='^[[:space:]]*["'"'"']?epochs["'"'"']?[[:space:]]*[:=]'
n=0
while IFS= read -r p; do
    if [ ! -e "$p" ]; then st=missing
    elif [ ! -f "$p" ]; then st=special
    elif [ ! -r "$p" ]; then st=unreadable
    else st=ok; fi
    printf 'file\t%s\t%s\n' "$n" "$st"
    if [ "$st" = ok ]; then
        head -c "$limit" -- "$p" 2>/dev/null | LC_ALL=C grep -a -n -m 3 -E "$pattern" |
            LC_ALL=C cut -b 1-200 | while IFS= read -r line; do
                printf 'epochs\t%s\t%s\n' "$n" "$line"
            done
    fi
    n=$((n + 1))
done
exit 0
