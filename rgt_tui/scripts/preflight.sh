#!/usr/bin/env bash
# rgt-tui preflight, box side: rgt_tui/services/preflight.py sends this whole file as
#   bash -c <this file> preflight WORKDIR DURABLE_DIR INTERPRETER FIND_CHECKPOINTS RUNTIME DATA_DIR [ROUTES]
# with preflight_check.py on stdin, and reads one "key<TAB>value" line per fact back.
# The program is told the paths whose storage it reports (U8) in RGT_PREFLIGHT_PATHS,
# and the routes it measures (ROUTES, "label<TAB>url" lines; generic-ssh §3) in
# RGT_PREFLIGHT_ROUTES.
# RUNTIME 0 (a Slurm login node, which runs no cell): the interpreter, the GPUs, the
# cells and tmux are not asked about; only the durable dir is.
# A rented box is hostile and bare: every tool may be missing (a missing one is a fact
# reported, never a failure of this script), every output is bounded, nothing is
# written anywhere and no symlink is followed out of the durable dir.
set -u
set -f

workdir=$1 durable=$2 interpreter=$3 find_checkpoints=$4 runtime=${5:-1} data=${6:-}
RGT_PREFLIGHT_ROUTES=${7:-}
export RGT_PREFLIGHT_ROUTES
RGT_PREFLIGHT_PATHS=$(printf 'workdir\t%s\ndurable\t%s' "$workdir" "$durable")
[ -n "$data" ] && RGT_PREFLIGHT_PATHS=$(printf '%s\ndata\t%s' "$RGT_PREFLIGHT_PATHS" "$data")
export RGT_PREFLIGHT_PATHS
program=$(head -c 65536)

emit() { printf '%s\t%s\n' "$1" "$2"; }
# Each line of stdin as "KEY<TAB>line" (the last line even without a newline).
lines() { local l; while IFS= read -r l || [ -n "$l" ]; do printf '%s\t%s\n' "$1" "$l"; done; }
# A command bounded in time where coreutils' timeout exists (a hung driver hangs
# nvidia-smi; a slow network filesystem hangs find).
bounded() {
    local s=$1
    shift
    if command -v timeout >/dev/null 2>&1; then timeout "$s" "$@"; else "$@"; fi
}

boot=$(cat "${RGT_BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}" 2>/dev/null)
emit boot "${boot:-unknown}"
emit home "$HOME"

# -- the run's interpreter, in the workdir -------------------------------------------
# A run template that starts a console script (torchrun, accelerate, deepspeed) runs the
# Python its shebang names, whatever `python3` is (ux-h #2): domain/run_interpreter.py
# then hands `rgt_script_python WORD -`, after the template's own set-up, as the
# interpreter. It finds WORD as the run's shell would (on that PATH), reads its first two
# lines and runs the interpreter they name with the rest of its arguments, as the kernel
# runs `#!INTERP [ARG]` (pip's `#!/bin/sh` + `'''exec' "/path/python"` form for long
# paths too). The program is told what was found (RGT_PREFLIGHT_SCRIPT: where;
# RGT_PREFLIGHT_SHEBANG: the interpreter line, "" when WORD is no Python script, and
# python3 answers as before); a WORD not found, or an interpreter that does not start, is
# its own answer (exit 127).
rgt_script_python() {
    local word=$1 kind path first="" second="" line interp opt py="" rest w
    local -a words
    shift
    kind=$(type -t -- "$word" 2>/dev/null)
    if [ -z "$kind" ]; then
        printf 'RGT-PREFLIGHT script {"found": false}\n'
        exit 127
    fi
    path=""
    [ "$kind" = file ] && path=$(type -P -- "$word" 2>/dev/null)
    if [ -n "$path" ] && [ -f "$path" ]; then
        { IFS= read -r first; IFS= read -r second; } < <(head -c 1024 -- "$path" 2>/dev/null | tr -d '\000')
    fi
    case $first in
    '#!'*)
        line=${first#??}
        line=${line#"${line%%[![:space:]]*}"}
        interp=${line%%[[:space:]]*}
        opt=${line#"$interp"}
        opt=${opt#"${opt%%[![:space:]]*}"}
        opt=${opt%"${opt##*[![:space:]]}"}
        case ${interp##*/} in
        python | python[0-9]*) py=$interp ;;
        env)
            read -r -a words <<<"$opt"
            for w in "${words[@]}"; do
                case $w in -* | *=*) continue ;; esac
                case ${w##*/} in python | python[0-9]*) py=$w ;; esac
                break
            done
            ;;
        sh | bash | dash)
            case $second in
            "'''exec' "*)
                rest=${second#"'''exec' "}
                case $rest in
                \"*) rest=${rest#\"} && w=${rest%%\"*} ;;
                \'*) rest=${rest#\'} && w=${rest%%\'*} ;;
                *) w=${rest%%[[:space:]]*} ;;
                esac
                case $w in *'$'* | *'`'*) ;; */python | */python[0-9]*) py=$w interp=$w opt="" line=$w ;; esac
                ;;
            esac
            ;;
        esac
        ;;
    esac
    export RGT_PREFLIGHT_SCRIPT="${path:-$word}"
    if [ -z "$py" ]; then
        export RGT_PREFLIGHT_SHEBANG=""
        exec python3 "$@"
    fi
    export RGT_PREFLIGHT_SHEBANG="$line"
    shopt -s execfail
    if [ -n "$opt" ]; then exec "$interp" "$opt" "$@"; else exec "$interp" "$@"; fi
    printf 'RGT-PREFLIGHT script {"found": true, "ran": false}\n'
    exit 127
}
export -f rgt_script_python
if [ "$runtime" != 1 ]; then
    # A login node: no interpreter asked, but each task starts in the workdir (a missing
    # one passed preflight, then refused the launch: hour s22b #6).
    if [ -d "$workdir" ]; then emit workdir 1; else emit workdir 0; fi
elif cd "$workdir" 2>/dev/null; then
    emit workdir 1
    printf '%s' "$program" | bounded 120 bash -c "$interpreter -" 2>&1 | head -c 65536 | tail -n 40 | lines py
    emit py_rc "${PIPESTATUS[1]}"
    cd / 2>/dev/null
else
    emit workdir 0
fi

# -- the GPUs the driver sees, its CUDA version, who holds them ------------------------
smi=""
[ "$runtime" = 1 ] && smi=$(command -v nvidia-smi 2>/dev/null)
emit smi "$smi"
if [ -n "$smi" ]; then
    bounded 20 nvidia-smi --query-gpu=index,driver_version,name --format=csv,noheader 2>&1 | head -c 16384 | lines gpu
    emit gpu_rc "${PIPESTATUS[0]}"
    version=$(bounded 20 nvidia-smi --version 2>/dev/null | head -c 4096)
    case "$version" in
    *"CUDA Version"*) printf '%s\n' "$version" | lines ver ;;
    # Older drivers have no --version: their summary's header names the CUDA version.
    *) bounded 20 nvidia-smi 2>/dev/null | head -c 8192 | grep -m 1 'CUDA Version' | lines ver ;;
    esac
    apps=$(bounded 20 nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>&1 | head -c 65536; exit "${PIPESTATUS[0]}")
    emit apps_rc "$?"
    printf '%s\n' "$apps" | head -n 256 | lines app
    # Each holder's ancestors (pid, parent, ...), so a cell's child counts as the cell's.
    printf '%s\n' "$apps" | head -n 64 | while IFS=, read -r pid _; do
        pid=${pid// /}
        case "$pid" in '' | *[!0-9]*) continue ;; esac
        chain="" p=$pid depth=0
        while [ -n "$p" ] && [ "$p" != 0 ] && [ "$depth" -lt 64 ]; do
            stat=$(cat "/proc/$p/stat" 2>/dev/null) || break
            chain="$chain $p"
            rest=${stat##*) }
            read -r _ p _ <<<"$rest"
            depth=$((depth + 1))
        done
        comm=$(head -c 64 "/proc/$pid/comm" 2>/dev/null | tr -d '\t\n')
        emit anc "$pid	${comm:--}	${chain# }"
    done
fi

# -- this host's queue cells running now (their processes are not "someone else's") ---
cells="$HOME/.rgt/queue/cells"
if [ "$runtime" = 1 ] && [ -d "$cells" ]; then
    set +f
    n=0
    for f in "$cells"/*.state "$cells"/.*.state; do  # a cell named .x is a dot file
        [ -f "$f" ] || continue
        n=$((n + 1))
        [ "$n" -le 2000 ] || break
        read -r kind _ sboot spid _ <<<"$(grep -a '^start ' "$f" 2>/dev/null | tail -n 1)"
        if [ "${kind:-}" = start ] && [ "${sboot:-}" = "${boot:-unknown}" ]; then
            case "${spid:-}" in '' | *[!0-9]*) ;; *) [ -e "/proc/$spid" ] && emit cell "$spid" ;; esac
        fi
    done
    set -f
fi

# -- the durable dir: where it really is, its mount, free bytes and inodes --------------
real=$(realpath -m -- "$durable" 2>/dev/null || readlink -m -- "$durable" 2>/dev/null || printf '%s' "$durable")
emit durable_real "$real"
[ -d "$real" ] && emit durable_exists 1 || emit durable_exists 0
at=$real blocked=""
while [ ! -d "$at" ] && [ "$at" != / ] && [ -n "$at" ]; do
    # Something that is there but no folder (a regular file) stands in the way: the
    # durable dir can never be created under it.
    [ -e "$at" ] || [ -L "$at" ] && blocked=$at
    at=$(dirname -- "$at")
done
emit durable_at "$at"
emit durable_blocked "$blocked"
# Whether this login may write the durable dir (or create it in its nearest folder): the
# access test only (a read-only mount or another user's folder says no); nothing is written.
[ -w "$at" ] && [ -x "$at" ] && emit durable_writable 1 || emit durable_writable 0
emit tmpdir "${TMPDIR:-}"
df -PB1 -- "$at" 2>&1 | tail -n 1 | head -c 4096 | lines dfb
df -Pk -- "$at" 2>&1 | tail -n 1 | head -c 4096 | lines dfk
df -Pi -- "$at" 2>&1 | tail -n 1 | head -c 4096 | lines dfi
# The mount's own type (ext4, xfs, overlay) from df; stat -f names the superblock's magic,
# which ext2, ext3 and ext4 share ("ext2/ext3"): only where df has no --output (busybox).
fstype=$(df --output=fstype -- "$at" 2>/dev/null | tail -n 1 | head -c 64)
[ -n "$fstype" ] || fstype=$(stat -f -c %T -- "$at" 2>/dev/null | head -c 64)
emit fstype "$fstype"
# The newest checkpoint under the durable dir, when no checkpoint_gb is configured:
# `find` never follows a symlink (-P, and -type f is not one), stays on that filesystem
# and is cut off after 20 s or 20,000 files, whichever comes first.
if [ "$find_checkpoints" = 1 ] && [ -d "$real" ]; then
    bounded 20 find -P "$real" -xdev -maxdepth 8 -type f \( -name '*.pt' -o -name '*.pth' -o -name '*.ckpt' -o -name '*.safetensors' \) -printf '%T@ %s %p\n' 2>/dev/null |
        head -n 20000 | sort -rn 2>/dev/null | head -n 1 | head -c 4096 | lines ckpt
fi

# -- tmux, which the queue runs in -------------------------------------------------
tmux=""
[ "$runtime" = 1 ] && tmux=$(command -v tmux 2>/dev/null)
emit tmux "$tmux"
[ -n "$tmux" ] && emit tmux_version "$(tmux -V 2>&1 | head -c 200)"
emit end 1
