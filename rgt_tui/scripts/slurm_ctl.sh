#!/usr/bin/env bash
# rgt-tui's queue control on a Slurm login node: rgt_tui/services/slurm/control.py sends
# this whole file as `bash -c <this file> slurm_ctl VERB ARGS...`. Never deployed.
#
#   tasks                          the host's arrays (~/.rgt/queue/slurm.jobs) and every
#                                  task of them squeue still lists:
#                                  "array<TAB>ID<TAB>FIRST<TAB>LAST<TAB>KIND", then
#                                  "task<TAB>ARRAY<TAB>INDEX<TAB>TASKID<TAB>STATE<TAB>REASON<TAB>NODE"
#   hold WHY TASKID...             stop after the running cells: `scontrol uhold` each
#                                  pending task, then `stop <ts> WHY` in runner.state
#   kill NAME TASKID THEN TASKID...  `kill <ts> user THEN` in NAME.state, `scancel TASKID`;
#                                  THEN=stop: hold the pending TASKIDs after it (as hold)
#   cancel MODE TASKID...          `scancel` each; MODE=pending refuses (nothing cancelled)
#                                  unless every one is still PENDING (queue move);
#                                  MODE=any records a running cell's as `kill <ts> user stop`
#
# Records are written under the same lock as queue_ctl.sh's. A refusal prints
# "refused<TAB>CODE<TAB>DETAIL" and exits 3. Slurm's own messages are cut to one line.
set -u
set -f

verb=${1:-}
shift || true
rgt="$HOME/.rgt"
q="$rgt/queue"
lockfile="$rgt/queue.lock"

refuse() {  # CODE DETAIL
    printf 'refused\t%s\t%s\n' "$1" "$2"
    exit 3
}

take_lock() {
    mkdir -p "$q/cells" || refuse io "cannot create $q (disk full? df -h ~; df -i ~)"
    exec 9>>"$lockfile" || refuse io "cannot open $lockfile"
    if command -v flock >/dev/null 2>&1; then
        flock -w 30 9 || refuse busy "another rgt-tui holds $lockfile for over 30 s"
    fi
}

task_ok() {  # TASKID: 123 or 123_4, nothing else reaches a Slurm command
    case "$1" in '' | *[!0-9_]* | _* | *_ | *_*_*) refuse usage "bad Slurm job id '$1'" ;; esac
}

one_line() { tr '\n\t' '  ' | cut -c 1-300; }

# The state squeue shows for one task now ("" when it left the queue: it ended).
task_state() {  # TASKID
    squeue --noheader --jobs="$1" --format=%T 2>/dev/null | head -n 1 | tr -d ' '
}

need_squeue() {
    command -v squeue >/dev/null 2>&1 ||
        refuse no-slurm "squeue is not on the PATH of a non-interactive shell on this login node (is the slurm module loaded in ~/.bashrc?)"
}

tasks() {
    local f="$q/slurm.jobs" id first last ts kind ids="" out err
    [ -r "$f" ] || return 0
    # The file is the box's: bounded, and only lines of the agreed shape count.
    while read -r id first last ts kind _; do
        case "$id$first$last" in '' | *[!0-9]*) continue ;; esac
        printf 'array\t%s\t%s\t%s\t%s\n' "$id" "$first" "$last" "${kind:-launch}"
        ids="$ids $id"
    done < <(head -c 262144 "$f")
    [ -n "$ids" ] || return 0
    need_squeue
    err=$(mktemp) || refuse io "cannot create a temp file (disk full?)"
    # --me: this user's jobs only; filtered to the host's arrays here, not in squeue
    # (squeue --jobs fails outright when one of the ids has left the queue).
    if ! out=$(squeue --noheader --array --me --format='%F|%K|%i|%T|%r|%N' 2>"$err"); then
        refuse squeue "squeue failed: $(one_line <"$err")"
    fi
    rm -f "$err"
    printf '%s\n' "$out" | head -n 100000 | awk -F'|' -v ids="$ids" '
        BEGIN { n = split(ids, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
        ($1 in want) {
            # No tab in a field (the lines are tab-separated); the reason keeps its spaces
            # ("Nodes required for job are DOWN, DRAINED…" read as one word: h593 #6).
            for (i = 1; i <= 6; i++) if (i == 5) gsub(/\t/, " ", $i); else gsub(/[\t ]/, "", $i)
            printf "task\t%s\t%s\t%s\t%s\t%s\t%s\n", $1, $2, $3, $4, $5, $6
        }'
}

# Hold each pending task as its owner would (uhold: JobHeldUser, which the user may
# release; `hold` run by an admin would be JobHeldAdmin). One scontrol per task: one
# that started meanwhile fails alone.
hold_each() {  # TASKID...
    local id msg
    for id in "$@"; do
        if msg=$(scontrol uhold "$id" 2>&1); then
            printf 'held\t%s\n' "$id"
        else
            printf 'notheld\t%s\t%s\n' "$id" "$(printf '%s' "$msg" | one_line)"
        fi
    done
}

# The stop record names the tasks it held: the view lifts the stop once one of them
# ran (released), which whole seconds cannot tell when the release came within the
# stop's own second.
record_stop() {  # WHY HOLD_EACH_OUTPUT: once per launch, as queue_ctl.sh's stop
    local held
    if [ -r "$q/runner.state" ] &&
        awk '$1 == "launch" { s = 0 } $1 == "stop" { s = 1 } END { exit !s }' "$q/runner.state"; then
        printf 'stop\talready\n'
        return 0
    fi
    held=$(printf '%s\n' "$2" | awk -F'\t' '$1 == "held" { printf " %s", $2 }')
    printf 'stop %s %s%s\n' "$(date +%s)" "$1" "$held" >>"$q/runner.state" || refuse io "cannot write $q/runner.state (disk full?)"
    printf 'stop\trequested\n'
}

hold() {
    [ $# -ge 1 ] || refuse usage "hold needs WHY"
    local why=$1 id held
    shift
    case "$why" in user | kill) ;; *) refuse usage "hold: WHY must be user or kill" ;; esac
    for id in "$@"; do task_ok "$id"; done
    need_squeue
    take_lock
    held=$(hold_each "$@")
    [ -z "$held" ] || printf '%s\n' "$held"
    record_stop "$why" "$held"
}

kill_task() {
    [ $# -ge 3 ] || refuse usage "kill needs NAME TASKID THEN"
    local name=$1 id=$2 then=$3 state msg p held=''
    shift 3
    # The queue file's rule (queue_ctl.sh's cell_name_safe): a space or a leading dot is a
    # name the queue runs, so one it controls (h583 #1).
    case "$name" in '' | . | .. | */* | *[[:cntrl:]]*) refuse usage "bad cell name" ;; esac
    case "$then" in next | stop) ;; *) refuse usage "kill: THEN must be next or stop" ;; esac
    task_ok "$id"
    for p in "$@"; do task_ok "$p"; done
    need_squeue
    take_lock
    state=$(task_state "$id")
    [ "$state" = RUNNING ] || refuse not-running "Slurm task $id of cell $name is ${state:-no longer in the queue}, not RUNNING: there is nothing to kill"
    printf 'kill %s user %s\n' "$(date +%s)" "$then" >>"$q/cells/$name.state" ||
        refuse io "cannot write $q/cells/$name.state (disk full?)"
    # --then stop holds the pending tasks BEFORE the cancel: Slurm starts the next one as
    # soon as this one ends, before a hold sent after the scancel reaches it (seen under
    # load: the next cell ran although the user asked to stop).
    [ "$then" = stop ] && held=$(hold_each "$@")
    if ! msg=$(scancel "$id" 2>&1); then
        # Nothing killed: the holds this call made are released, the queue as it was.
        printf '%s\n' "$held" | awk -F'\t' '$1 == "held" { print $2 }' | while read -r p; do
            scontrol release "$p" >/dev/null 2>&1 || :
        done
        refuse scancel "scancel $id failed: $(printf '%s' "$msg" | one_line)"
    fi
    printf 'killing\t%s\n' "$id"
    if [ "$then" = stop ]; then
        [ -z "$held" ] || printf '%s\n' "$held"
        record_stop kill "$held"
    fi
}

# `kill <ts> user stop` in the state file of the cell array task TASKID runs (cells.tsv
# names it by the task's index); nothing for a plain job or a name that is no file's.
record_kill_of() {  # TASKID
    local idx=${1#*_} name
    [ "$idx" != "$1" ] || return 0
    name=$(head -n 5000 "$q/cells.tsv" 2>/dev/null | awk -F'\t' -v i="$idx" '$1 == i { print $2; exit }')
    case "$name" in '' | */* | . | ..) return 0 ;; esac
    printf 'kill %s user stop\n' "$(date +%s)" >>"$q/cells/$name.state" 2>/dev/null || true
}

cancel() {
    [ $# -ge 2 ] || refuse usage "cancel needs MODE and TASKIDs"
    local mode=$1 id state msg
    shift
    case "$mode" in pending | any) ;; *) refuse usage "cancel: MODE must be pending or any" ;; esac
    for id in "$@"; do task_ok "$id"; done
    need_squeue
    take_lock
    if [ "$mode" = pending ]; then
        for id in "$@"; do
            state=$(task_state "$id")
            case "$state" in PENDING | '') ;; *) refuse running "Slurm task $id is $state now, not pending: kill it first" ;; esac
        done
    fi
    # A running cell's cancel (teardown --cancel-jobs, typed) is the user's kill, and
    # recorded as kill_task records one: unrecorded, diagnose read it as someone else's
    # scancel to hunt down (a Slurm hour, s39 #8). One squeue for all (a look per task
    # ran past the command's time on a long array: the review of s39).
    local running=" "
    if [ "$mode" = any ]; then
        running=" $(squeue --noheader --array --states=RUNNING --format=%i \
            --jobs="$(IFS=,; printf '%s' "$*")" 2>/dev/null | tr -s ' \n' '  ') "
    fi
    for id in "$@"; do
        case "$running" in *" $id "*) record_kill_of "$id" ;; esac
        if msg=$(scancel "$id" 2>&1); then
            printf 'cancelled\t%s\n' "$id"
        else
            printf 'notcancelled\t%s\t%s\n' "$id" "$(printf '%s' "$msg" | one_line)"
        fi
    done
}

case "$verb" in
    tasks) tasks "$@" ;;
    hold) hold "$@" ;;
    kill) kill_task "$@" ;;
    cancel) cancel "$@" ;;
    *) refuse usage "unknown verb '$verb' (tasks, hold, kill, cancel)" ;;
esac
