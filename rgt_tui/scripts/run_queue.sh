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
#
# Queue control (rgt-tui queue stop|kill|retry, queue_ctl.sh) talks to this runner
# through records only, never signals: a `stop` record in runner.state after this
# runner's launch record ends the queue before the next cell starts; a cell whose
# state's last record is `skip` is not run; one whose last record is `retry` (a cell
# before the current index) is run again under its name before the next cell.
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

# The last start/end/skip/retry record of cell NAME ("" when none): what the cell is
# now. `code` and `kill` records annotate an attempt and do not change that.
last_record() {
    local f="$qdir/cells/$1.state" line last=""
    [ -r "$f" ] || return 0
    while IFS= read -r line; do
        case "$line" in start\ * | end\ * | skip\ * | retry\ *) last=$line ;; esac
    done <"$f"
    printf '%s' "$last"
}

# A stop was asked for this launch: a `stop` record after the launch record this
# runner wrote (an earlier launch's request, or another runner's, is not for us).
stop_requested() {
    awk -v p="$$" '$1 == "launch" { mine = ($NF == p); s = 0 } $1 == "stop" && mine { s = 1 }
        END { exit !s }' "$qdir/runner.state" 2>/dev/null
}

# The first cell before index K whose last record is `retry` and which this runner has
# not run for that record yet: "index<TAB>name<TAB>command"; fails when there is none.
declare -A retried=()
next_retry() {
    local line idx name cmd rec
    [ -r "$tsv" ] || return 1
    while IFS= read -r line; do
        IFS=$'\t' read -r idx name cmd <<<"$line"
        [ -n "${name:-}" ] && [ "${idx:-x}" -lt "$1" ] 2>/dev/null || continue
        rec=$(last_record "$name")
        case "$rec" in retry\ *) ;; *) continue ;; esac
        [ -z "${retried["$name $rec"]:-}" ] || continue
        retried["$name $rec"]=1
        printf '%s\n' "$line"
        return 0
    done <"$tsv"
    return 1
}

# Cell NAME's exit, as the QUEUE DONE line lists it: a kill record after its last
# start says who stopped it (`kill TS WHO THEN`: the user, or rgt-tui's watch of a group
# whose other rank failed).
killed_by() {  # NAME: who killed its last attempt (user, group), or nothing
    awk '$1 == "start" { w = "" } $1 == "kill" { w = $3 } END { print w }' \
        "$qdir/cells/$1.state" 2>/dev/null
}

failure_text() {  # NAME CODE
    local who
    who=$(killed_by "$1")
    case "$who" in
        "") printf '%s(exit %s)' "$1" "$2" ;;
        group) printf '%s(stopped with its group, exit %s)' "$1" "$2" ;;
        *) printf '%s(killed by the user, exit %s)' "$1" "$2" ;;
    esac
}

finish() {  # [STOP_NOTE]: the QUEUE DONE line and the done record, then exit
    local n_bad=$n_failed list="" skips=$skipped extra="" entry
    # A cell that failed here and was then skipped (queue move took it to another host
    # to resume there) is no failure of this queue: it is listed as skipped, uncounted.
    for entry in ${cell_failures[@]+"${cell_failures[@]}"}; do
        case "$(last_record "${entry%%$'\t'*}")" in
            skip\ *) skips="${skips:+$skips, }${entry#*$'\t'}" ;;
            *) list="${list:+$list, }${entry#*$'\t'}" n_bad=$((n_bad + 1)) ;;
        esac
    done
    [ -n "$failed" ] && list="${list:+$list, }$failed"
    [ -n "$skips" ] && extra="; skipped: $skips"
    [ -n "${1:-}" ] && extra="$extra; $1"
    echo "QUEUE DONE: $n_ok/$((n_ok + n_bad)) succeeded; failed: ${list:-none}$extra"
    printf 'done %s %s %s\n' "$(date +%s)" "$n_ok" "$n_bad" >>"$qdir/runner.state"
}

# A rank of a group's job runs the group's template, which sources the group's env file
# first (domain.group_run.ENV_PREFIX, the same bytes).
group_prefix='set -a && . "$HOME/.rgt/group.env" && set +a && '

run_cell() {  # INDEX NAME COMMAND
    bash "$run_one" "$qdir" "$1" "$2" "$workdir" "$3" 9>&-  # the cell must not hold the lock
    local code=$?
    if [ "$code" -eq 0 ]; then
        n_ok=$((n_ok + 1))
    else  # counted by finish, which sees whether the cell was skipped since
        cell_failures+=("$2"$'\t'"$(failure_text "$2" "$code")")
        # One rank's own failure fails the group's job: this rank stops here, as its peers
        # are stopped by rgt-tui's watch. Going on started the next cell alone, its
        # checkpoint left in that cell's {out} and this rank's resume point past the
        # group's (a groups hour, s39 #3). Not a killed cell: its kill's THEN decides (the
        # user's `queue kill GROUP --then next` goes on to the next cell on every rank).
        case $3 in
            "$group_prefix"*)
                if [ -z "$(killed_by "$2")" ]; then
                    printf 'stop %s failed\n' "$(date +%s)" >>"$qdir/runner.state"
                fi
                ;;
        esac
    fi
    last_ran="cell $1 $2"
}

# Asked to stop, with WORK the next thing this runner would start: record where it
# stopped and end.
stop_now() {  # NEXT_INDEX WHAT
    local after=${last_ran:-"its launch (no cell ran)"} by
    by=$(stopped_by)
    say "$by after $after: $2 and later not started"
    printf 'stopped %s %s\n' "$(date +%s)" "$1" >>"$qdir/runner.state"
    finish "$by after $after"
    exit 0
}

# Who asked this stop: the user, or rgt-tui's watch of a group (a kill with THEN=stop
# asks the stop, its cell's kill record saying who: `kill TS group stop`; between cells
# the stop record says it: `stop TS group`).
stopped_by() {
    local who asked
    asked=$(awk '$1 == "stop" { s = $3 } END { print s }' "$qdir/runner.state" 2>/dev/null)
    who=$asked
    if [ "$asked" = kill ] && [ -n "$last_ran" ]; then
        who=$(killed_by "${last_ran#cell * }")
    fi
    if [ "$who" = failed ]; then
        echo "stopped with its group (its own cell failed here)"
    elif [ "$who" = group ]; then
        echo "stopped with its group (another rank failed or went silent)"
    else
        echo "stopped by the user"
    fi
}

# cell_failures: "NAME<TAB>what the QUEUE DONE line says" per failed attempt; failed and
# Cell NAME's retry in words, for the log: the record's third field is "=" (a resume:
# its {out} kept), "-" (nothing there to set aside) or where its {out} was moved
# (a user's hour read "(retry 1796515003 =)" in the queue log).
retry_words() {
    local rec
    rec=$(last_record "$1")
    case "$rec" in
        retry\ *\ =) printf 'a resume: its output folder kept' ;;
        retry\ *\ -) printf 'from the start: no earlier outputs to set aside' ;;
        retry\ *\ *) printf 'from the start: earlier outputs set aside as %s' "${rec#retry * }" ;;
        *) printf '%s' "$rec" ;;
    esac
}

# n_failed: the runner's own failure (cells.tsv edited), never a cell's.
cell_failures=()
k=$start n_ok=0 n_failed=0 failed="" skipped="" last_ran=""
while :; do
    # Retries first: a cell the user asked to run again runs before the next new one.
    if line=$(next_retry "$k"); then
        IFS=$'\t' read -r idx name cmd <<<"$line"
        stop_requested && stop_now "$k" "the retry of cell $idx $name"
        say "cell $idx $name: retry asked by the user ($(retry_words "$name"))"
        run_cell "$idx" "$name" "$cmd"
        continue
    fi
    if ! line=$(cell_line "$k"); then
        lock
        if line=$(cell_line "$k"); then
            unlock
        elif line=$(next_retry "$k"); then
            # Asked for while this runner was looking: run it (the retry verb saw the
            # queue running, so nothing else will).
            unlock
            IFS=$'\t' read -r idx name cmd <<<"$line"
            say "cell $idx $name: retry asked by the user ($(retry_words "$name"))"
            run_cell "$idx" "$name" "$cmd"
            continue
        else
            say "no cell $k in cells.tsv: queue finished"
            finish
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
        finish
        exit 3
    fi
    rec=$(last_record "$name")
    if [ "${rec%% *}" = skip ]; then
        # rgt-tui queue move (or skip) took this cell away: never run it here.
        read -r _ _ why <<<"$rec"
        say "cell $k $name skipped: ${why:-no reason given}"
        skipped="${skipped:+$skipped, }$name"
        k=$((k + 1))
        continue
    fi
    stop_requested && stop_now "$k" "cell $k $name"
    run_cell "$k" "$name" "$cmd"
    k=$((k + 1))
done
