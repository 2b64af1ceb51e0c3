#!/usr/bin/env bash
# rgt-tui: the queue runner — run every cell of ~/.rgt/queue/cells.tsv from START_INDEX
# (docs/queues.md, "The runner").
#
#   run_queue.sh QUEUE_DIR START_INDEX DETACH RUN_ONE WORKDIR [ENV_FILE]
#
# Deployed content-addressed as ~/.rgt/bin/run_queue.<sha256[:12]>.sh and never
# overwritten: this bash reads its own script by byte offset for as long as it runs (U2,
# principle 6), so a new version gets a new name and only new launches use it.
#
# cells.tsv ("<index>\t<name>\t<command>", rendered and shell-quoted by rgt-tui) is read
# afresh before every cell, so cells appended while the queue runs are run too; it is
# append-only, so index k always names the same cell and START_INDEX resumes exactly.
# DETACH (tmux | nohup | none) is recorded so `rgt-tui diagnose` can tell a hang-up.
# ENV_FILE is the launch session's environment (written by rgt-tui, mode 0600): the
# detach primitive must not hand the runner some other session's variables (U2).
set -u

if [ $# -lt 5 ]; then
    echo "usage: run_queue.sh QUEUE_DIR START_INDEX DETACH RUN_ONE WORKDIR [ENV_FILE]" >&2
    exit 2
fi
if [ -n "${6:-}" ] && [ -r "$6" ]; then
    # Top level on purpose: sourced inside a function, `declare`d values would be local.
    . "$6"
fi
qdir=$1 start=$2 detach=$3 run_one=$4 workdir=$5
tsv="$qdir/cells.tsv"
lockfile="$(dirname "$qdir")/queue.lock"

# stdin stays as it is: under tmux it is the pane's terminal, and a pane whose process
# closed every descriptor of its terminal is declared dead and sent SIGHUP by tmux.
# (Cells get /dev/null from run_one.sh; the nohup launch already gives /dev/null.)
exec >>"$qdir/queue.log" 2>&1
cd "$workdir" 2>/dev/null || cd "$HOME" || cd /

boot_id() {
    local id
    id=$(cat "${RGT_BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}" 2>/dev/null)
    printf '%s' "${id:-unknown}"
}
say() { printf '[rgt %s] %s\n' "$(date '+%F %T')" "$*"; }

# Appends (rgt-tui queue append) and the final "anything left?" check take this lock, so
# a cell appended just as the queue ends is either run or reported as not run.
exec 9>>"$lockfile"
if command -v flock >/dev/null 2>&1; then
    lock() { flock -w 60 9; }
    unlock() { flock -u 9; }
else
    lock() { :; }
    unlock() { :; }
fi

# Line K (0-based) of cells.tsv, only when complete: a line still being appended has no
# newline yet, and `read` then fails, so it is picked up on the next look.
cell_line() {
    local i=0 line
    [ -r "$tsv" ] || return 1
    while IFS= read -r line; do
        if [ "$i" -eq "$1" ]; then
            printf '%s\n' "$line"
            return 0
        fi
        i=$((i + 1))
    done <"$tsv"
    return 1
}

printf 'launch %s %s %s %s %s %s\n' "$(date +%s)" "$(boot_id)" "$detach" "$start" "$0" "$$" \
    >>"$qdir/runner.state"
say "queue launched: start index $start, detach $detach, runner pid $$, script $0"

k=$start n_ok=0 n_failed=0 failed=""
while :; do
    if ! line=$(cell_line "$k"); then
        lock
        if line=$(cell_line "$k"); then
            unlock
        else
            total=$((n_ok + n_failed))
            say "no cell $k in cells.tsv: queue finished"
            echo "QUEUE DONE: $n_ok/$total succeeded; failed: ${failed:-none}"
            printf 'done %s %s %s\n' "$(date +%s)" "$n_ok" "$n_failed" >>"$qdir/runner.state"
            unlock
            break
        fi
    fi
    IFS=$'\t' read -r idx name cmd <<<"$line"
    if [ "$idx" != "$k" ] || [ -z "${name:-}" ] || [ -z "${cmd:-}" ]; then
        # cells.tsv is append-only; a line out of place means someone edited it, and
        # running on would run the wrong cell under the wrong name (principle 6).
        say "cells.tsv line $((k + 1)) is not cell $k (got index '${idx:-}'): the file was edited; stopping"
        failed="${failed:+$failed, }cells.tsv(edited at line $((k + 1)))"
        n_failed=$((n_failed + 1))
        echo "QUEUE DONE: $n_ok/$((n_ok + n_failed)) succeeded; failed: $failed"
        printf 'done %s %s %s\n' "$(date +%s)" "$n_ok" "$n_failed" >>"$qdir/runner.state"
        exit 3
    fi
    bash "$run_one" "$qdir" "$k" "$name" "$workdir" "$cmd" 9>&-  # the cell must not hold the lock
    code=$?
    if [ "$code" -eq 0 ]; then
        n_ok=$((n_ok + 1))
    else
        n_failed=$((n_failed + 1))
        failed="${failed:+$failed, }$name(exit $code)"
    fi
    k=$((k + 1))
done
