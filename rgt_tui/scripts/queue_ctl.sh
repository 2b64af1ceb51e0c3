#!/usr/bin/env bash
# rgt-tui's box-side queue control: rgt_tui/services/queue_box.py sends this whole file
# as `bash -c <this file> queue_ctl VERB ARGS...` and payloads on stdin. It is never
# deployed to the box, so nothing on the box can be running it when it changes.
#
#   probe SESSION WORKDIR DURABLE_DIR [diag]      facts, one "key<TAB>value" per line
#   launch SESSION START DETACH WORKDIR QBYTES CLINES FRESH RQ RQ_LEN RO RO_LEN Q_LEN C_LEN ID_LEN
#   append SESSION QBYTES CLINES Q_LEN C_LEN
#
# launch/append read their payload from stdin: the runner scripts (launch only), then
# the bytes to append to queue.txt, then those to append to cells.tsv, then (launch only)
# the code identity this launch was checked against, written to code.id for run_one.sh
# to record with each cell (empty: none known, the file is removed). QBYTES/CLINES are
# the sizes rgt-tui saw when it planned: if queue.txt or cells.tsv changed since, the
# box refuses rather than append to something it did not compare. A refusal prints
# "refused<TAB>CODE<TAB>DETAIL" and exits 3.
set -u
set -f

verb=${1:-}
shift || true
rgt="$HOME/.rgt"
q="$rgt/queue"
bin="$rgt/bin"
lockfile="$rgt/queue.lock"
tab=$(printf '\t')

boot_id() {
    local id
    id=$(cat "${RGT_BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}" 2>/dev/null)
    printf '%s' "${id:-unknown}"
}

refuse() {  # CODE DETAIL
    printf 'refused\t%s\t%s\n' "$1" "$2"
    exit 3
}

# Running and not a zombie (an orphan whose reaper never reaps still answers kill -0).
alive() {
    local pid=$1 stat
    case "$pid" in '' | *[!0-9]*) return 1 ;; esac
    if [ -r "/proc/$pid/stat" ]; then
        stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
        stat=${stat##*) }
        stat=${stat%% *}
        [ "$stat" != Z ] && [ "$stat" != X ]
    else
        kill -0 "$pid" 2>/dev/null
    fi
}

# Alive AND a run_queue process: a pid from runner.state may since belong to another.
runner_pid_alive() {
    alive "$1" || return 1
    [ -r "/proc/$1/cmdline" ] || return 0
    tr '\0' ' ' <"/proc/$1/cmdline" | grep -q 'run_queue'
}

session_present() {  # SESSION
    [ -n "$1" ] && command -v tmux >/dev/null 2>&1 && tmux has-session -t "=$1" 2>/dev/null
}

# "done boot pid" of the last launch record, empty when there is none.
last_launch() {
    [ -r "$q/runner.state" ] || return 0
    awk '$1 == "launch" && NF >= 7 { b = $3; p = $NF; l = 1; d = 0 } $1 == "done" { d = 1 }
         END { if (l) print d, b, p }' "$q/runner.state"
}

# The rule a second launch is refused by: the last launch is of this boot, has no done
# record, and its runner pid is alive or its tmux session is still there.
running_reason() {  # SESSION -> prints why, returns 0 when running
    local info d b p
    info=$(last_launch)
    [ -n "$info" ] || return 1
    read -r d b p <<<"$info"
    [ "$d" = 0 ] && [ "$b" = "$(boot_id)" ] || return 1
    if runner_pid_alive "$p"; then
        printf 'runner pid %s is alive' "$p"
        return 0
    fi
    if session_present "$1"; then
        printf 'runner pid %s is gone but tmux session %s is still open' "$p" "$1"
        return 0
    fi
    return 1
}

count_lines() { [ -r "$1" ] && wc -l <"$1" | tr -d ' ' || echo 0; }
count_bytes() { [ -r "$1" ] && wc -c <"$1" | tr -d ' ' || echo 0; }

take_lock() {
    exec 9>>"$lockfile" || refuse io "cannot open $lockfile"
    if command -v flock >/dev/null 2>&1; then
        flock -w 30 9 || refuse busy "another rgt-tui holds $lockfile for over 30 s"
    fi
}

stage_payload() {  # EXPECTED_TOTAL -> sets $stage
    mkdir -p "$rgt/stage" || refuse io "cannot create $rgt/stage (disk full? df -h ~; df -i ~)"
    stage="$rgt/stage/payload.$$"
    trap 'rm -f "$stage" "$stage.err"' EXIT
    cat >"$stage" || refuse io "cannot write $stage (disk full? df -h ~; df -i ~)"
    [ "$(count_bytes "$stage")" = "$1" ] || refuse io "payload arrived short ($(count_bytes "$stage") of $1 bytes)"
}

part() {  # OFFSET LENGTH: those bytes of the staged payload
    [ "$2" -gt 0 ] || return 0
    tail -c +"$(($1 + 1))" "$stage" | head -c "$2"
}

# Append LENGTH bytes at OFFSET to FILE; on failure cut FILE back so no half line stays.
append_part() {  # FILE OFFSET LENGTH
    local size
    size=$(count_bytes "$1")
    if ! part "$2" "$3" >>"$1"; then
        command -v truncate >/dev/null 2>&1 && truncate -s "$size" "$1"
        refuse io "cannot append to $1 (disk full? df -h ~; df -i ~)"
    fi
}

# Place a script under its content-addressed name unless it is there: never overwrite a
# file a running queue may be reading (U2). ln fails when the name exists, atomically.
deploy() {  # NAME OFFSET LENGTH
    local f="$bin/$1" t="$bin/.$1.tmp.$$" want got
    if [ ! -e "$f" ]; then
        part "$2" "$3" >"$t" && chmod 755 "$t" || refuse io "cannot write $t (disk full?)"
        ln "$t" "$f" 2>/dev/null || mv -n "$t" "$f" 2>/dev/null
        rm -f "$t"
    fi
    if command -v sha256sum >/dev/null 2>&1; then
        want=${1%.sh}
        want=${want##*.}
        got=$(sha256sum <"$f" | cut -c1-12)
        [ "$got" = "$want" ] || refuse corrupt "$f holds content with sha256 $got…, not $want…: it was edited or truncated; move it aside and launch again"
    fi
}

sq() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }

write_env() {  # FILE: the launch session's exported environment, mode 0600
    local n
    (
        umask 077
        for n in $(compgen -e); do
            case "$n" in
                PWD | OLDPWD | SHLVL | _ | TMUX | TMUX_PANE | TERM | TERMCAP | SSH_* | BASH_FUNC_*) continue ;;
            esac
            printf 'export %s=%q\n' "$n" "${!n}"
        done >"$1.tmp"
    ) && mv -f "$1.tmp" "$1"
}

probe() {  # SESSION WORKDIR DURABLE [diag]
    local session=$1 workdir=$2 durable=$3 diag=${4:-} boot info d b p idx name cmd f line last
    local kind sboot spid why mt
    boot=$(boot_id)
    printf 'home\t%s\nboot\t%s\nnow\t%s\n' "$HOME" "$boot" "$(date +%s)"
    read -r line _ 2>/dev/null </proc/uptime && printf 'uptime\t%s\n' "$line"
    printf 'tmux\t%s\n' "$(command -v tmux 2>/dev/null)"
    printf 'setsid\t%s\n' "$(command -v setsid 2>/dev/null)"
    session_present "$session" && printf 'session\t1\n' || printf 'session\t0\n'
    [ -d "$workdir" ] && printf 'workdir\t1\n' || printf 'workdir\t0\n'
    [ -d "$durable" ] && printf 'durable\t1\n' || printf 'durable\t0\n'
    printf 'qbytes\t%s\nclines\t%s\n' "$(count_bytes "$q/queue.txt")" "$(count_lines "$q/cells.tsv")"
    info=$(last_launch)
    if [ -n "$info" ]; then
        read -r d b p <<<"$info"
        if [ "$b" = "$boot" ] && runner_pid_alive "$p"; then printf 'runner_alive\t1\n'; else printf 'runner_alive\t0\n'; fi
    fi
    [ -r "$q/runner.state" ] && while IFS= read -r line; do printf 'runner\t%s\n' "$line"; done <"$q/runner.state"
    [ -r "$q/cells.tsv" ] && while IFS= read -r line; do
        printf 'cell\t%s\n' "$line"
        IFS=$tab read -r idx name cmd <<<"$line"
        [ -n "${name:-}" ] || continue
        last=""
        f="$q/cells/$name.state"
        [ -r "$f" ] && while IFS= read -r line; do
            printf 'state\t%s\t%s\n' "$name" "$line"
            last=$line
        done <"$f"
        f="$q/cells/$name.oom"
        [ -r "$f" ] && while IFS= read -r line; do printf 'oom\t%s\t%s\n' "$name" "$line"; done <"$f"
        # An unfinished attempt of this boot: is its pid still running?
        read -r kind _ sboot spid <<<"$last"
        if [ "${kind:-}" = start ] && [ "${sboot:-}" = "$boot" ] && alive "${spid:-}"; then
            printf 'alive\t%s\n' "$name"
        fi
        # An unfinished attempt: when its log was last written, the last sign of life of a
        # run that stopped without an end record (GNU stat; none where it is missing).
        if [ "${kind:-}" = start ] && [ -e "$q/cells/$name.log" ]; then
            mt=$(stat -c %Y "$q/cells/$name.log" 2>/dev/null) && printf 'logt\t%s\t%s\n' "$name" "$mt"
        fi
        # A failed attempt ("end TS CODE", CODE not 0): the last line its command printed,
        # which names the cause (a traceback ends "ModuleNotFoundError: ..."). Bounded:
        # the log is the box's text, of any size.
        if [ "${kind:-}" = end ] && [ "${sboot:-0}" != 0 ] && [ -r "$q/cells/$name.log" ]; then
            why=$(tail -c 4096 "$q/cells/$name.log" 2>/dev/null | tr '\r' '\n' |
                grep -av -e '^\[rgt ' -e '^[[:space:]]*$' | tail -n 1 | cut -c 1-300)
            [ -n "$why" ] && printf 'why\t%s\t%s\n' "$name" "$why"
        fi
    done <"$q/cells.tsv"
    if [ "$diag" = diag ]; then
        printf 'oom_now\t%s\n' "$(oom_now)"
        if ! command -v dmesg >/dev/null 2>&1; then
            printf 'dmesg\tmissing\n'
        elif line=$(dmesg 2>&1); then
            printf 'dmesg\tok\n'
            printf '%s\n' "$line" | grep -iE 'killed process|out of memory' | tail -n 5 |
                while IFS= read -r f; do printf 'dmesg_line\t%s\n' "$f"; done
        else
            printf 'dmesg\tdenied\n'
        fi
    fi
}

# The same counter run_one.sh records: memory.events (v2) or memory.oom_control (v1).
oom_now() {
    local proc_root=${RGT_PROC_ROOT:-/proc} sys_root=${RGT_SYS_ROOT:-/sys} base file path hier ctrls p
    base="$sys_root/fs/cgroup"
    while IFS=: read -r hier ctrls p; do
        if [ -e "$base/cgroup.controllers" ]; then
            [ "$hier" = 0 ] && [ -z "$ctrls" ] && path=$p
        else
            case ",$ctrls," in *,memory,*) path=$p ;; esac
        fi
    done 2>/dev/null <"$proc_root/self/cgroup"
    if [ -e "$base/cgroup.controllers" ]; then
        file="$base${path:-}/memory.events"
        [ -r "$file" ] || file="$base/memory.events"
    else
        file="$base/memory${path:-}/memory.oom_control"
        [ -r "$file" ] || file="$base/memory/memory.oom_control"
    fi
    p=$(awk '$1 == "oom_kill" { print $2 }' "$file" 2>/dev/null)
    printf '%s' "${p:-?}"
}

launch() {
    [ $# -eq 14 ] || refuse usage "launch needs 14 arguments, got $#"
    local session=$1 start=$2 detach=$3 workdir=$4 qbytes=$5 clines=$6 fresh=$7
    local rq=$8 rq_len=$9 ro=${10} ro_len=${11} q_len=${12} c_len=${13} id_len=${14}
    local why method before now pid i envf="$q/launch.env" archived
    mkdir -p "$bin" "$q/cells" || refuse io "cannot create $q (disk full? df -h ~; df -i ~)"
    stage_payload $((rq_len + ro_len + q_len + c_len + id_len))
    deploy "$rq" 0 "$rq_len"
    deploy "$ro" "$rq_len" "$ro_len"
    take_lock
    if why=$(running_reason "$session"); then
        refuse running "$why"
    fi
    if [ "$fresh" = 1 ] && [ -e "$q/runner.state" -o -e "$q/cells.tsv" -o -e "$q/queue.txt" ]; then
        archived="$rgt/queue.archived.$(date +%Y%m%d-%H%M%S).$$"
        mv "$q" "$archived" && mkdir -p "$q/cells" || refuse io "cannot move $q aside to $archived"
        printf 'archived\t%s\n' "$archived"
    fi
    [ "$(count_bytes "$q/queue.txt")" = "$qbytes" ] && [ "$(count_lines "$q/cells.tsv")" = "$clines" ] ||
        refuse changed "queue.txt or cells.tsv on the box changed since the plan was made"
    method=$detach
    if [ "$method" = auto ]; then
        if command -v tmux >/dev/null 2>&1; then method=tmux; else method=nohup; fi
    fi
    if [ "$method" = tmux ]; then
        command -v tmux >/dev/null 2>&1 || refuse no-tmux "tmux is not installed on the box (use --detach nohup)"
        session_present "$session" &&
            refuse session "tmux session $session is left over from an earlier run (the queue is not running); close it: tmux kill-session -t '=$session'"
    fi
    append_part "$q/queue.txt" $((rq_len + ro_len)) "$q_len"
    append_part "$q/cells.tsv" $((rq_len + ro_len + q_len)) "$c_len"
    if [ "$id_len" -gt 0 ]; then
        part $((rq_len + ro_len + q_len + c_len)) "$id_len" >"$q/code.id.tmp" && mv -f "$q/code.id.tmp" "$q/code.id" ||
            refuse io "cannot write $q/code.id (disk full? df -h ~; df -i ~)"
    else
        rm -f "$q/code.id"
    fi
    write_env "$envf" || refuse io "cannot write $envf"
    before=$(awk '$1 == "launch" { n++ } END { print n + 0 }' "$q/runner.state" 2>/dev/null)
    set -- env -i "HOME=$HOME" "PATH=$PATH" bash "$bin/$rq" "$q" "$start" "$method" "$bin/$ro" "$workdir" "$envf"
    if [ "$method" = tmux ]; then
        # The tmux server may be another session's, with its environment (on the demo
        # fleet it is the first box's): the command carries everything it needs.
        local line="exec" a
        for a in "$@"; do line="$line $(sq "$a")"; done
        if ! tmux new-session -d -s "$session" -c "$workdir" "$line" </dev/null >/dev/null 2>"$stage.err" 9>&-; then
            refuse tmux "tmux new-session failed: $(tr '\n' ' ' <"$stage.err")"
        fi
    elif command -v setsid >/dev/null 2>&1; then
        setsid nohup "$@" </dev/null >>"$q/queue.log" 2>&1 9>&- &
    else
        nohup "$@" </dev/null >>"$q/queue.log" 2>&1 9>&- &
    fi
    # Hold the lock until the runner's launch record is there, so a second launch
    # racing this one sees it running.
    for i in $(seq 1 100); do
        now=$(awk '$1 == "launch" { n++; p = $NF } END { print n + 0, p }' "$q/runner.state" 2>/dev/null)
        read -r now pid <<<"$now"
        if [ "${now:-0}" -gt "${before:-0}" ]; then
            printf 'launched\t%s\t%s\n' "$pid" "$method"
            return 0
        fi
        sleep 0.05
    done
    refuse no-start "the runner wrote no launch record within 5 s; the end of $q/queue.log: $(tail -n 3 "$q/queue.log" 2>/dev/null | tr '\n' ' ')"
}

append() {
    [ $# -eq 5 ] || refuse usage "append needs 5 arguments, got $#"
    local session=$1 qbytes=$2 clines=$3 q_len=$4 c_len=$5 why
    [ -e "$q/queue.txt" ] || refuse not-deployed "no queue on the box yet: launch it first"
    stage_payload $((q_len + c_len))
    take_lock
    [ "$(count_bytes "$q/queue.txt")" = "$qbytes" ] && [ "$(count_lines "$q/cells.tsv")" = "$clines" ] ||
        refuse changed "queue.txt or cells.tsv on the box changed since rgt-tui read them"
    append_part "$q/queue.txt" 0 "$q_len"
    append_part "$q/cells.tsv" "$q_len" "$c_len"
    if why=$(running_reason "$session"); then
        printf 'appended\trunning\t%s\n' "$why"
    else
        printf 'appended\tstopped\t\n'
    fi
}

case "$verb" in
    probe) probe "$@" ;;
    launch) launch "$@" ;;
    append) append "$@" ;;
    *) refuse usage "unknown verb '$verb' (probe, launch, append)" ;;
esac
