#!/usr/bin/env bash
# rgt-tui's box-side queue control: rgt_tui/services/queue_box.py sends this whole file
# as `bash -c <this file> queue_ctl VERB ARGS...` and payloads on stdin. It is never
# deployed to the box, so nothing on the box can be running it when it changes.
#
#   probe SESSION WORKDIR DURABLE_DIR [diag]      facts, one "key<TAB>value" per line
#   launch SESSION START DETACH WORKDIR QBYTES CLINES FRESH RQ RQ_LEN RO RO_LEN Q_LEN C_LEN ID_LEN
#   append SESSION QBYTES CLINES Q_LEN C_LEN
#   credentials LEN         ~/.rgt/credentials.env (0600) := the LEN bytes on stdin (U34)
#   credentials-remove      delete ~/.rgt/credentials.env ("removed<TAB>1|0")
#   code-hash DIR [SESSION] / code-stage DIR TOKEN SESSION / code-switch DIR TOKEN SESSION
#   code-drop DIR TOKEN     code sync (U42), described where they are defined
#   stop SESSION WHO / kill SESSION NAME THEN GRACE WHO / retry SESSION ALLOW_DONE NAME OUT...
#   skip NAME               queue control (the reason on stdin), described where defined
#   slurm-probe DURABLE JOBNAME / slurm-submit KIND ... sbatch ARGS   a Slurm host's
#                           queue as job arrays (issue 32), described where defined
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

# Why a file-system step failed, said from its own stderr (the text after the last ": "
# of its last line is strerror's), with what to do: only a full disk is pointed at df. A
# folder this login may not create (another user's, a read-only mount, a file in the way)
# is said as that, naming KEY, the fleet-file key that names the folder, when given.
io_reason() {  # STDERR [KEY]
    local why=${1##*$'\n'} set_key=${2:+ — set $2 to a folder this login can write}
    why=${why##*: }
    case "$why" in
        "No space left on device") printf '%s (df -h; df -i)' "$why" ;;
        "Disk quota exceeded") printf "%s (this login's quota: quota -s)" "$why" ;;
        "Permission denied") printf '%s: this login cannot create it%s' "$why" "$set_key" ;;
        "Read-only file system") printf '%s: it is on a read-only mount%s' "$why" "$set_key" ;;
        "Not a directory" | "File exists")
            printf '%s: a file is in the way on that path — move it aside%s' "$why" \
                "${2:+, or set $2 to another folder}" ;;
        "") printf 'no reason given' ;;
        *) printf '%s%s' "$why" "$set_key" ;;
    esac
}

# mkdir -p DIR, or refuse with mkdir's own reason (io_reason; KEY as there). LC_ALL=C:
# the reason is matched in English, whatever the box's locale.
make_dir() {  # DIR [KEY]
    local err
    err=$(LC_ALL=C mkdir -p -- "$1" 2>&1) || refuse io "cannot create $1: $(io_reason "$err" "${2:-}")"
}

# Running and not a zombie (an orphan whose reaper never reaps still answers kill -0).
# Never pid 0 (or "00"): `kill -0 0` asks about this shell's own process group and succeeds.
alive() {
    local pid=$1 stat
    case "$pid" in '' | *[!0-9]* | 0*) return 1 ;; esac
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
last_launch() {  # [FILE]: runner.state, or the text on stdin with "-"
    local f=${1:-$q/runner.state}
    [ "$f" = - ] || [ -r "$f" ] || return 0
    awk '$1 == "launch" && NF >= 7 { b = $3; p = $NF; l = 1; d = 0 } $1 == "done" { d = 1 }
         END { if (l) print d, b, p }' "$f"
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

# A cell that still runs though its runner is gone (the runner killed; a cell that ignored
# the hang-up): a launch would start a second copy beside it (h612 #1). Prints why.
# Only the cells whose last record is a start of this boot are looked at, found by one awk
# over the state files (a subshell per cell took 6 s under the lock for 2,000 cells:
# review h620 #5); a start whose pid cannot be proven another's refuses too.
orphan_reason() {
    local name boot rc
    local -a files=()
    [ -r "$q/cells.tsv" ] || return 1
    # Each deployed cell's state file, named from cells.tsv (set -f: no glob here).
    while IFS=$'\t' read -r _ name _; do
        cell_name_safe "$name" && [ -r "$q/cells/$name.state" ] && files+=("$q/cells/$name.state")
    done <"$q/cells.tsv"
    [ "${#files[@]}" -gt 0 ] || return 1
    boot=$(boot_id)
    while IFS= read -r name; do
        cell_pid_check "$name"
        rc=$?
        if [ "$rc" = 0 ] && [ -n "$cell_pid" ]; then
            printf 'cell %s (pid %s) still runs though its runner is gone: a launch would start a second copy beside it — kill it first' "$name" "$cell_pid"
            return 0
        fi
        if [ "$rc" = 2 ]; then
            printf '%s; a launch would start a second copy beside it if it runs' "$cell_why"
            return 0
        fi
    done < <(awk -v boot="$boot" '
        function flush() {  # the file read last: its last record a start of this boot
            if (prev == "" || last == "") return
            split(last, f, " ")
            if (f[1] == "start" && f[3] == boot) print prev
        }
        FNR == 1 { flush(); last = ""; prev = FILENAME; sub(/^.*\//, "", prev); sub(/\.state$/, "", prev) }
        /^(start|end|skip|retry) / { last = $0 }
        END { flush() }' "${files[@]}")
    return 1
}

# A cell log's last printed line (not the runner's "[rgt ..." marks, not blank), read from
# its last 4 KiB only: the log is the box's text, of any size. Not through a symlink.
log_last_line() {  # LOG
    [ -r "$1" ] && [ ! -L "$1" ] || return 0
    tail -c 4096 "$1" 2>/dev/null | tr '\r' '\n' |
        grep -av -e '^\[rgt ' -e '^[[:space:]]*$' | tail -n 1 | cut -c 1-300
}
# torchrun's summary of a failed worker (a log's tail on stdin): the Root Cause's
# exitcode and traceback lines and the worker's own last line before torchrun reported
# it, as "EXITCODE<TAB>TRACEBACK<TAB>WORKER LINE"; nothing without a ChildFailedError.
# From the last attempt's start mark on: the log's tail holds earlier attempts (a retry),
# whose cause is not this one's (hour s18b #4 read a fixed error as the new failure's).
torchrun_cause() {
    tr '\r\t' '\n ' | awk '
        /^\[rgt .*: start in / { w = ""; prev = ""; seen = 0; root = 0; ec = ""; tb = "" }
        /multiprocessing\/api\.py.*failed \(exitcode/ { if (w == "") w = prev }
        NF && !/^\[rgt / { prev = $0 }
        /ChildFailedError/ { seen = 1 }
        seen && /Root Cause/ { root = 1 }
        root && ec == "" && /^ *exitcode *:/ { ec = $0 }
        root && tb == "" && /^ *traceback *:/ { tb = $0 }
        END { if (ec != "") printf "%s\t%s\t%s\n", substr(ec, 1, 200), substr(tb, 1, 300), substr(w, 1, 300) }'
}
# Which host entry launched this account's queue: its tmux session's name, in $q/owner.
# Two entries for one account (one box pasted as `ssh -p N root@sshX.vast.ai` and as
# `root@IP`) each saw the other's queue as its own, and one's Queue tab killed the
# other's cell (hour s19b #2): stop, kill, retry and append refuse another entry's queue.
owner_ok() {  # SESSION
    local owner
    [ -r "$q/owner" ] || return 0
    owner=$(head -c 200 "$q/owner" | tr -d '[:cntrl:]')
    if [ -n "$owner" ] && [ "$owner" != "$1" ]; then
        refuse owner "this account's queue was launched by another host entry (tmux session $owner), not this one ($1): both entries log in to one account, which holds one queue (~/.rgt/queue) — act on it from that entry, and keep one entry per account"
    fi
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
    make_dir "$rgt/stage"
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

# The newest mtime, in whole seconds, of a file under DIR: links not followed, at most 6
# levels and 200000 files deep, within 5 s, so an {out} of any size costs a probe little
# (GNU find's -printf; nothing where it is missing).
newest_mtime() {  # DIR
    timeout 5 find "$1" -maxdepth 6 -type f -printf '%T@\n' 2>/dev/null | head -n 200000 |
        awk '$1 > m { m = $1 } END { if (m > 0) printf "%d\n", m }'
}

# newest_mtime of a stopped cell's {out}, kept in cells/NAME.outt so that an interrupted
# cell's walk is paid once, not on every poll: nothing of the cell writes there once it
# stops. The kept figure counts while it is newer than the cell's .state (a retry or a
# relaunch appends there) and than {out} itself (a file added or renamed in). Probes
# otherwise only read; this small file is written whole (tmp, then mv) so that two
# probes at once cannot tear it, and a failed write (disk full) only means a walk again.
out_newest() {  # NAME DIR
    local kept="$q/cells/$1.outt" v
    if [ "$kept" -nt "$q/cells/$1.state" ] && [ "$kept" -nt "$2" ] && IFS= read -r v <"$kept"; then
        printf '%s\n' "$v"
        return
    fi
    v=$(newest_mtime "$2")
    printf '%s\n' "$v"
    { printf '%s\n' "$v" >"$kept.tmp.$$" && mv -f "$kept.tmp.$$" "$kept"; } 2>/dev/null || rm -f "$kept.tmp.$$"
}

probe() {  # SESSION WORKDIR DURABLE [diag]
    local session=$1 workdir=$2 durable=$3 diag=${4:-} boot info d b p idx name cmd f line last
    local kind sboot spid why mt live at
    boot=$(boot_id)
    printf 'home\t%s\nboot\t%s\nnow\t%s\n' "$HOME" "$boot" "$(date +%s)"
    read -r line _ 2>/dev/null </proc/uptime && printf 'uptime\t%s\n' "$line"
    printf 'tmux\t%s\n' "$(command -v tmux 2>/dev/null)"
    printf 'setsid\t%s\n' "$(command -v setsid 2>/dev/null)"
    session_present "$session" && printf 'session\t1\n' || printf 'session\t0\n'
    [ -d "$workdir" ] && printf 'workdir\t1\n' || printf 'workdir\t0\n'
    [ -d "$durable" ] && printf 'durable\t1\n' || printf 'durable\t0\n'
    printf 'qbytes\t%s\nclines\t%s\n' "$(count_bytes "$q/queue.txt")" "$(count_lines "$q/cells.tsv")"
    [ -r "$q/owner" ] && printf 'owner\t%s\n' "$(head -c 200 "$q/owner" | tr -d '[:cntrl:]')"
    # The box's own copies syncs kept aside (code_switch): not results, never pulled, so
    # the teardown checklist names them. Counted only where the folder is (the usual box
    # has none), and at most 10000 of them.
    [ -d "$rgt/sync-kept" ] && [ ! -L "$rgt/sync-kept" ] &&
        printf 'synckept\t%s\n' "$(find "$rgt/sync-kept" -mindepth 2 -type f 2>/dev/null | head -n 10000 | wc -l)"
    # Whether the runner lives, for the launch the records printed below end with: the
    # records are read after the check (a runner writes its done record, then exits),
    # and read again when a launch came in between (its runner_alive line was missing,
    # read as a runner gone: a false "queue stopped", and its real end never told).
    local records alive checked
    for _ in 1 2 3; do
        info=$(last_launch)
        alive=""
        if [ -n "$info" ]; then
            read -r d b p <<<"$info"
            if [ "$b" = "$boot" ] && runner_pid_alive "$p"; then alive=1; else alive=0; fi
        fi
        records=$(cat -- "$q/runner.state" 2>/dev/null)
        checked=$(printf '%s\n' "$records" | last_launch - | cut -d' ' -f2-)
        [ "$checked" = "${info#* }" ] && break
    done
    [ -n "$alive" ] && printf 'runner_alive\t%s\n' "$alive"
    [ -n "$records" ] && while IFS= read -r line; do printf 'runner\t%s\n' "$line"; done <<<"$records"
    [ -r "$q/cells.tsv" ] && while IFS= read -r line; do
        printf 'cell\t%s\n' "$line"
        IFS=$tab read -r idx name cmd <<<"$line"
        # A name the box's cells.tsv holds is the box's text: one that climbs out of
        # cells/ (../../x) or is none rgt-tui writes reads no file (h503 #2).
        cell_name_safe "${name:-}" || continue
        last=""
        seen=0
        f="$q/cells/$name.state"
        [ -r "$f" ] && while IFS= read -r line; do
            printf 'state\t%s\t%s\n' "$name" "$line"
            # Only start/end say whether an attempt runs (code/kill/retry/skip follow them).
            case "$line" in
                start\ * | end\ *) last=$line seen=1 ;;
                code\ * | kill\ * | retry\ * | skip\ *) seen=1 ;;
            esac
        done <"$f"
        # Bytes but no record (NULs a crash left, a disk that filled mid-line, no read
        # permission): not "never ran", which would let its stale {out} count as results.
        [ "$seen" = 0 ] && [ -s "$f" ] && printf 'garbled\t%s\n' "$name"
        f="$q/cells/$name.oom"
        [ -r "$f" ] && while IFS= read -r line; do printf 'oom\t%s\t%s\n' "$name" "$line"; done <"$f"
        # An unfinished attempt of this boot: is its pid still running?
        read -r kind _ sboot spid <<<"$last"
        live=0
        if [ "${kind:-}" = start ] && [ "${sboot:-}" = "$boot" ] && alive "${spid:-}"; then
            live=1
            printf 'alive\t%s\n' "$name"
            # A running cell: the last line its command printed so far (a group's pane
            # shows each rank's, issue 41), read in this same probe.
            line=$(log_last_line "$q/cells/$name.log")
            [ -n "$line" ] && printf 'last\t%s\t%s\n' "$name" "$line"
        fi
        # An unfinished attempt: its last sign of life, for a run that stopped without an
        # end record: when its log was last written (GNU stat; none where it is missing)
        # or, once it no longer runs, the newest file under its {out} (<durable>/<name>),
        # if later. Python's stdout to a file is block-buffered: a cell can checkpoint for
        # an hour and write its log twice.
        if [ "${kind:-}" = start ]; then
            mt=$(stat -c %Y "$q/cells/$name.log" 2>/dev/null) || mt=""
            if [ "$live" = 0 ] && [ -d "$durable/$name" ]; then
                f=$(out_newest "$name" "$durable/$name")
                [ -n "$f" ] && { [ -z "$mt" ] || [ "$f" -gt "$mt" ]; } && mt=$f
            fi
            [ -n "$mt" ] && printf 'logt\t%s\t%s\n' "$name" "$mt"
        fi
        # A failed attempt ("end TS CODE", CODE not 0): the last line its command printed,
        # which names the cause (a traceback ends "ModuleNotFoundError: ..."). Bounded:
        # the log is the box's text, of any size.
        if [ "${kind:-}" = end ] && [ "${sboot:-0}" != 0 ] && [ -r "$q/cells/$name.log" ]; then
            why=$(log_last_line "$q/cells/$name.log")
            [ -n "$why" ] && printf 'why\t%s\t%s\n' "$name" "$why"
            # A torchrun cell ends on its banner and exits 1 however its worker died:
            # the summary says how (issue 41).
            why=$(tail -c 16384 "$q/cells/$name.log" 2>/dev/null | torchrun_cause)
            [ -n "$why" ] && printf 'torchrun\t%s\t%s\n' "$name" "$why"
            # diagnose: torch's CUDA OOM line, wherever in the log's tail (GEN5/U10).
            [ "$diag" = diag ] && why=$(tail -c 65536 "$q/cells/$name.log" 2>/dev/null |
                tr '\r' '\n' | grep -a 'CUDA out of memory' | tail -n 1 | cut -c 1-600) &&
                [ -n "$why" ] && printf 'cuda_oom\t%s\t%s\n' "$name" "$why"
            # diagnose: a full disk under its {out} (U6). The log may say so (ENOSPC), or
            # not (torch's save: "unexpected pos 6144 vs 6038"): the disk's df says it.
            if [ "$diag" = diag ]; then
                why=$(tail -c 65536 "$q/cells/$name.log" 2>/dev/null | tr '\r' '\n' |
                    grep -a -E 'No space left on device|Errno 28|ENOSPC|Disk quota exceeded' |
                    tail -n 1 | cut -c 1-600)
                [ -n "$why" ] && printf 'nospace\t%s\t%s\n' "$name" "$why"
                at="$durable/$name"
                [ -e "$at" ] || at="$durable"
                why=$(df -Pk "$at" 2>/dev/null | tail -n 1 | awk '{ print $2, $4, $6 }')
                [ -n "$why" ] && printf 'outdf\t%s\t%s\n' "$name" "$why"
            fi
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
            printf '%s\n' "$line" | grep -E 'NVRM: Xid' | tail -n 5 |
                while IFS= read -r f; do printf 'xid_line\t%s\n' "$f"; done
        else
            printf 'dmesg\tdenied\n'
        fi
        # A dead GPU where the kernel log is not readable (U22): what nvidia-smi says.
        if command -v nvidia-smi >/dev/null 2>&1; then
            timeout 20 nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total \
                --format=csv,noheader,nounits 2>&1 | head -n 16 | cut -c 1-300 |
                while IFS= read -r f; do printf 'gpu_line\t%s\n' "$f"; done
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
    [ $# -eq 15 ] || refuse usage "launch needs 15 arguments, got $#"
    local session=$1 start=$2 detach=$3 workdir=$4 qbytes=$5 clines=$6 fresh=$7
    local rq=$8 rq_len=$9 ro=${10} ro_len=${11} q_len=${12} c_len=${13} id_len=${14}
    local code_stamp=${15}  # the sync record the plan's code check read ("": none checked)
    local why method before now pid i envf="$q/launch.env" archived
    make_dir "$bin"
    make_dir "$q/cells"
    stage_payload $((rq_len + ro_len + q_len + c_len + id_len))
    deploy "$rq" 0 "$rq_len"
    deploy "$ro" "$rq_len" "$ro_len"
    take_lock
    if why=$(running_reason "$session"); then
        owner_ok "$session"
        refuse running "$why"
    fi
    if why=$(orphan_reason); then refuse running "$why"; fi
    # A sync since the plan's code check (it switches under this lock): the cells would
    # record the code the plan saw, not the code they run (h603 #1). Before anything
    # moves: a --fresh launch refused here archived the queue first (review h605 #1).
    [ -z "$code_stamp" ] || [ "$(record_stamp "$workdir/$record_name")" = "$code_stamp" ] ||
        refuse code-changed "the code in $workdir was synced since the plan checked it: the cells would record the code the plan saw, not the code they run — plan the launch again"
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
    printf '%s\n' "$session" >"$q/owner" 2>/dev/null || refuse io "cannot write $q/owner (disk full?)"
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
    # Another entry's queue is refused only while its runner runs (stop and kill know it
    # by that entry's session); an idle one takes the lines, as its launch would after
    # the entry was renamed in place (h546 #2: append refused, naming a gone entry).
    if running_reason "$session" >/dev/null; then owner_ok "$session"; fi
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

# The credentials file run_one.sh exports into each cell: its bytes come on stdin, never
# on a command line (U34), and go straight to a 0600 temp file beside it (never through
# the shared stage file), then mv: a cell never sources half a file.
credentials() {  # LEN
    [ $# -eq 1 ] || refuse usage "credentials needs 1 argument, got $#"
    local want=$1 f="$rgt/credentials.env" t="$rgt/.credentials.env.$$"
    case "$want" in '' | *[!0-9]*) refuse usage "credentials: LEN must be a number" ;; esac
    make_dir "$rgt"
    rm -f "$t"
    cred_tmp=$t  # global: the EXIT trap runs after this function's locals are gone
    trap 'rm -f "$cred_tmp"' EXIT
    (umask 077 && set -C && cat >"$t") || refuse io "cannot write $t (disk full? df -h ~; df -i ~)"
    [ "$(count_bytes "$t")" = "$want" ] ||
        refuse io "the credentials arrived incomplete ($(count_bytes "$t") bytes, expected $want): $f was left as it was"
    chmod 600 "$t" && mv -f "$t" "$f" || refuse io "cannot move $t to $f"
    printf 'credentials\tok\n'
}

credentials_remove() {
    local f="$rgt/credentials.env"
    [ $# -eq 0 ] || refuse usage "credentials-remove takes no arguments, got $#"
    if [ -e "$f" ] || [ -L "$f" ]; then
        rm -f "$f" || refuse io "cannot remove $f: remove it by hand (rm -f ~/.rgt/credentials.env)"
        printf 'removed\t1\n'
    else
        printf 'removed\t0\n'
    fi
}

# --- Code sync (U42): the listed files of a tree under a workdir, by hash; a staging dir
# beside them; the switch. Paths arrive NUL-separated on stdin, relative to the dir; a
# box's symlink is never followed, for reading or writing.

record_name=.rgt-sync.record  # the workdir's sync record (code_ctl.sh writes it)

record_stamp() {  # FILE -> "inode.size.mtime" of the sync record, or "none"
    stat -c '%i.%s.%Y' -- "$1" 2>/dev/null || printf 'none'
}

code_dir() {  # PATH -> PATH with a leading ~ expanded (arguments arrive quoted whole)
    case "$1" in
        "~") printf '%s' "$HOME" ;;
        "~/"*) printf '%s/%s' "$HOME" "${1#"~/"}" ;;
        *) printf '%s' "$1" ;;
    esac
}

# A relative path that stays under its dir: no "..", ".", empty or absolute part, no
# control character (the answers are one line per path).
code_rel_ok() {
    case "/$1/" in */../* | */./* | *//* | *[[:cntrl:]]*) return 1 ;; esac
    [ -n "$1" ]
}

# No part of REL under DIR, the last included, is a symlink. Shell tests only: no
# process per file.
code_no_link() {  # DIR REL
    local p=$1 rest=$2 c
    while :; do
        c=${rest%%/*}
        p=$p/$c
        [ -L "$p" ] && return 1
        [ "$c" = "$rest" ] && return 0
        rest=${rest#*/}
    done
}

# What stands where REL goes under DIR so that no switch can put it there: sets
# block_kind ("link": a parent is a symlink, never written through; "file": a parent is
# not a directory; "dir": REL itself is a directory) and block_depth (how many of REL's
# parts name that path); status 1, both empty, when nothing does. One rule for the
# switch and for the check (code_hash): a check that said "sync" over a symlinked folder
# sent every file for the switch to refuse (h573 #4). Shell tests only: no process per file.
code_blocker() {  # DIR REL
    local p=$1 rest=$2 c
    block_kind= block_depth=0
    while [ "${rest#*/}" != "$rest" ]; do
        c=${rest%%/*} rest=${rest#*/}
        p=$p/$c block_depth=$((block_depth + 1))
        if [ -L "$p" ]; then
            block_kind=link
        elif [ -e "$p" ] && [ ! -d "$p" ]; then
            block_kind=file
        else
            continue
        fi
        return 0
    done
    if [ -d "$p/$rest" ] && [ ! -L "$p/$rest" ]; then
        block_kind=dir block_depth=$((block_depth + 1))
        return 0
    fi
    block_depth=0
    return 1
}

code_token_ok() {
    case "$1" in '' | *[!0-9a-f]*) refuse usage "bad staging token '$1'" ;; esac
}

# code-hash DIR [SESSION]: "dir<TAB>1|0" (DIR exists), with SESSION "running<TAB>WHY"
# when that queue runs, then per path "<sha256><TAB>x|-<TAB>PATH", or "missing", "link"
# (the path itself is a symlink: not followed), "other" (not a readable regular file) or
# "blocked<TAB>KIND:DEPTH<TAB>PATH" (code_blocker: no switch can put it there) in place
# of the hash. The hashes come from one sha256sum batch, not a process per file.
code_hash() {
    local dir session=${2:-} rel why line h p esc
    local -a ok=()
    dir=$(code_dir "$1")
    if [ -n "$session" ] && why=$(running_reason "$session"); then printf 'running\t%s\n' "$why"; fi
    if [ -d "$dir" ]; then printf 'dir\t1\n'; else printf 'dir\t0\n'; fi
    command -v sha256sum >/dev/null 2>&1 || refuse no-sha256sum "sha256sum is not installed on the box (install coreutils)"
    while IFS= read -r -d '' rel; do
        code_rel_ok "$rel" || continue
        if code_blocker "$dir" "$rel"; then
            printf 'blocked\t%s:%s\t%s\n' "$block_kind" "$block_depth" "$rel"
        elif ! code_no_link "$dir" "$rel"; then
            printf 'link\t-\t%s\n' "$rel"
        elif [ ! -e "$dir/$rel" ]; then
            printf 'missing\t-\t%s\n' "$rel"
        elif [ ! -f "$dir/$rel" ] || [ ! -r "$dir/$rel" ]; then
            printf 'other\t-\t%s\n' "$rel"
        else
            ok+=("./$rel")
        fi
    done
    [ "${#ok[@]}" -gt 0 ] || return 0
    # sha256sum escapes a name holding a backslash: "\<hash>  <name with \\>".
    (cd -- "$dir" && printf '%s\0' "${ok[@]}" | xargs -0 sha256sum -- 2>/dev/null) |
        while IFS= read -r line; do
            esc=0
            case "$line" in '\'*) esc=1 line=${line#\\} ;; esac
            h=${line:0:64}
            p=${line:66}
            [ "$esc" = 1 ] && p=${p//\\\\/\\}
            p=${p#./}
            if [ -x "$dir/$p" ]; then printf '%s\tx\t%s\n' "$h" "$p"; else printf '%s\t-\t%s\n' "$h" "$p"; fi
        done
}

# code-stage DIR TOKEN SESSION: refused while the queue runs; otherwise removes the
# staging dirs earlier syncs left in DIR, creates DIR/.rgt-sync.TOKEN and, under it, the
# relative dirs on stdin. Prints "staged<TAB>PATH" and "rsync<TAB>PATH|" (rsync's path).
code_stage() {
    local dir token=$2 session=$3 stage_dir rel why err
    dir=$(code_dir "$1")
    code_token_ok "$token"
    make_dir "$rgt"
    take_lock
    if why=$(running_reason "$session"); then refuse running "$why"; fi
    make_dir "$dir" workdir
    # Another sync sending now (a file of its staging written within 2 minutes) is left
    # alone and this one refused: removing its staging broke it mid-send (h603 #6). One
    # cut off is removed once 2 minutes pass. Only real directories of that name: find's
    # -type d does not follow a link.
    local live
    # -mmin, not -newermt: BusyBox's find has it too (review h605 #2).
    live=$(find "$dir" -mindepth 1 -maxdepth 1 -type d -name '.rgt-sync.*' \
        -exec find {} -mmin -2 -print -quit \; 2>/dev/null | head -n 1)
    [ -z "$live" ] ||
        refuse busy "another sync is sending to $dir, or one was cut off less than 2 minutes ago (${live#"$dir"/} was written to within 2 minutes): wait for it to end, or 2 minutes, then sync again"
    find "$dir" -mindepth 1 -maxdepth 1 -type d -name '.rgt-sync.*' -exec rm -rf -- {} + 2>/dev/null
    stage_dir="$dir/.rgt-sync.$token"
    err=$(LC_ALL=C mkdir -m 700 -- "$stage_dir" 2>&1) || refuse io "cannot create $stage_dir: $(io_reason "$err")"
    while IFS= read -r -d '' rel; do
        code_rel_ok "$rel" || refuse usage "unsafe directory name in the staging list"
        make_dir "$stage_dir/$rel"
    done
    printf 'staged\t%s\n' "$stage_dir"
    printf 'rsync\t%s\n' "$(command -v rsync 2>/dev/null)"
}

# code-switch DIR TOKEN SESSION: stdin holds one "SHA256<TAB>x|-<TAB>REL" entry per file
# staged under DIR/.rgt-sync.TOKEN: the hash and executable bit the last sync put at REL
# ("-<TAB>-" when no sync did). Under the queue lock and only while no queue runs (else
# refused, nothing moved), each moves into its place in DIR by rename (a process that has
# the old file open keeps it), parents created; a symlink where a parent dir goes, or a
# dir where a file goes, refuses the whole switch first; a symlink at a file's own place
# is replaced, never written through. A readable file at REL that no sync put there, or
# whose content or executable bit is not what the sync put there, is first copied to
# ~/.rgt/sync-kept/TOKEN/ — decided here, under the lock, so an edit made on the box
# while the files were sent is kept too — with "kept<TAB>DIR" and, per file,
# "keptfile<TAB>edited|found<TAB>REL". Then the staging dir goes. Prints "switched<TAB>N".
code_switch() {
    local dir token=$2 session=$3 stage_dir item rel h x line why p rest c i n=0 kept err
    local -a rels=() sums=() keeps=() whys=() recorded=()
    local -A now=()
    dir=$(code_dir "$1")
    code_token_ok "$token"
    stage_dir="$dir/.rgt-sync.$token"
    kept="$rgt/sync-kept/$token"
    while IFS= read -r -d '' item; do
        h=${item%%"$tab"*} rest=${item#*"$tab"}
        x=${rest%%"$tab"*} rel=${rest#*"$tab"}
        code_rel_ok "$rel" || refuse usage "unsafe path in the switch list"
        case "$h" in -) x=- ;; '' | *[!0-9a-f]*) refuse usage "bad hash for $rel" ;; esac
        case "$x" in x | -) ;; *) refuse usage "bad mode for $rel" ;; esac
        rels+=("$rel")
        sums+=("$h$tab$x")
    done
    make_dir "$rgt"
    take_lock
    [ -d "$stage_dir" ] && [ ! -L "$stage_dir" ] ||
        refuse gone "the staging dir $stage_dir is gone (another sync started?): sync again"
    if why=$(running_reason "$session"); then
        rm -rf -- "$stage_dir"
        refuse running "$why"
    fi
    # Every path in the way, said at once: one refusal per sync, each after sending the
    # files again, made the user find them one by one (h543 #7).
    local -a blocked=()
    local -A told=()
    for rel in "${rels[@]}"; do
        [ -f "$stage_dir/$rel" ] && [ ! -L "$stage_dir/$rel" ] || refuse gone "$rel is not in $stage_dir: sync again"
        code_blocker "$dir" "$rel" || continue
        p=$dir rest=$rel
        for ((i = 0; i < block_depth; i++)); do
            c=${rest%%/*} rest=${rest#*/}
            p=$p/$c
        done
        case "$block_kind" in
            link) why="$p is a symlink on the box (a sync never writes through one)" ;;
            file) why="$p is a file where the tree has a directory" ;;
            *) why="$p is a directory where the tree has a file" ;;
        esac
        if [ -z "${told[$p]-}" ]; then
            told[$p]=1
            blocked+=("$why")
        fi
    done
    if [ "${#blocked[@]}" -gt 0 ]; then
        why=${blocked[0]}
        for i in "${!blocked[@]}"; do
            [ "$i" -eq 0 ] || [ "$i" -ge 5 ] || why="$why; ${blocked[$i]}"
        done
        [ "${#blocked[@]}" -le 5 ] || why="$why; and $((${#blocked[@]} - 5)) more"
        refuse blocked "$why: move each aside, then sync again"
    fi
    # What the box holds now at each path a sync put there: one sha256sum batch
    # (code_hash's "<sha256><TAB>x|-<TAB>REL" lines), not a process per file.
    for i in "${!rels[@]}"; do
        [ "${sums[$i]%%"$tab"*}" = - ] || recorded+=("${rels[$i]}")
    done
    if [ "${#recorded[@]}" -gt 0 ]; then
        while IFS= read -r line; do
            h=${line%%"$tab"*} rest=${line#*"$tab"}
            [ "${#h}" -eq 64 ] && now[${rest#*"$tab"}]="$h$tab${rest%%"$tab"*}"
        done < <(printf '%s\0' "${recorded[@]}" | code_hash "$dir")
    fi
    for i in "${!rels[@]}"; do
        p=$dir/${rels[$i]} h=${sums[$i]%%"$tab"*}
        why=found
        if [ ! -L "$p" ]; then
            [ -f "$p" ] && [ -r "$p" ] || continue
            if [ "$h" != - ]; then
                [ "${now[${rels[$i]}]-}" = "${sums[$i]}" ] && continue  # what the sync put there
                why=edited
            fi
        fi  # a link: no sync makes one (it writes files), so the user's: kept (h543 #4)
        keeps+=("${rels[$i]}")
        whys+=("$why")
    done
    if [ "${#keeps[@]}" -gt 0 ]; then
        # Our own folder, made fresh (mkdir fails on anything already there, a link too):
        # the copies may hold tokens, so only the login reads them.
        [ -L "$rgt/sync-kept" ] && refuse link "$rgt/sync-kept is a symlink on the box; move it aside, then sync again"
        [ -e "$rgt/sync-kept" ] && [ ! -d "$rgt/sync-kept" ] &&
            refuse blocked "$rgt/sync-kept is a file on the box, not a folder: move it aside, then sync again"
        err=$(LC_ALL=C mkdir -p -m 700 -- "$rgt/sync-kept" 2>&1 && LC_ALL=C mkdir -m 700 -- "$kept" 2>&1) ||
            refuse io "cannot create $kept: $(io_reason "$err"); nothing was switched"
        printf 'kept\t%s\n' "$kept"
    fi
    for i in ${keeps[@]+"${!keeps[@]}"}; do  # empty under set -u: bash before 4.4
        rel=${keeps[$i]}
        # A copy cut short is no copy: the folder goes whole (nothing was switched, so
        # every file it kept is still in place), not left to read as a backup (h512 #3).
        (umask 077 && mkdir -p -- "$(dirname -- "$kept/$rel")" && cp -P -p -- "$dir/$rel" "$kept/$rel") ||
            { rm -rf -- "$kept"; refuse io "cannot keep the box's copy of $rel in $kept (disk full? df -h ~); nothing was switched"; }
        printf 'keptfile\t%s\t%s\n' "${whys[$i]}" "$rel"
    done
    for rel in "${rels[@]}"; do
        p=$dir/$rel
        err=$(LC_ALL=C mkdir -p -- "${p%/*}" 2>&1) ||
            refuse io "cannot create ${p%/*}: $(io_reason "$err") ($n of ${#rels[@]} files switched)"
        if [ -L "$p" ]; then rm -f -- "$p" || refuse io "cannot replace the symlink $p ($n of ${#rels[@]} files switched)"; fi
        # mv's own reason (h603 #5: a folder the login cannot write said nothing), and that
        # a sync once it is fixed switches the rest.
        err=$(LC_ALL=C mv -f -- "$stage_dir/$rel" "$p" 2>&1) ||
            refuse io "cannot move $rel into place: $(io_reason "$err") ($n of ${#rels[@]} files switched; once that is fixed, sync again to switch the rest)"
        n=$((n + 1))
    done
    rm -rf -- "$stage_dir"
    printf 'switched\t%s\n' "$n"
}

code_drop() {  # DIR TOKEN: remove a staging dir this sync made (it failed)
    local dir
    dir=$(code_dir "$1")
    code_token_ok "$2"
    [ -L "$dir/.rgt-sync.$2" ] || rm -rf -- "$dir/.rgt-sync.$2"
}

# --- Queue control (rgt-tui queue stop|kill|retry|skip; docs/queues.md "Queue control").
# Each action is a record the runner reads (run_queue.sh) and the probe passes on:
#   runner.state      stop <ts> user|group|kill    stop before the next cell
#   cells/NAME.state  kill <ts> <who> <next|stop>  before the killed attempt's end record;
#                                                  who: user, or group (rgt-tui stopped a
#                                                  rank because another rank failed; a box
#                                                  written by an older rgt-tui says user)
#                     retry <ts> <aside path|-|=>  run NAME again; its {out} moved aside (=: kept, a resume)
#                     skip <ts> <reason...>        never run NAME on this box

# A name the queue file accepts (domain/queue_file.py: no control character, not . or ..)
# is one the box controls: refusing a space or a leading dot here left cells that ran
# and could be neither killed, retried nor moved (h583 #1).
cell_name_ok() {  # NAME: a file name under cells/
    cell_name_safe "$1" || refuse usage "bad cell name '$(printf '%s' "$1" | tr -d '[:cntrl:]' | cut -c 1-80)'"
}

cell_name_safe() {  # NAME: true when NAME.* can only be files under cells/
    case "$1" in '' | . | .. | */* | *[[:cntrl:]]*) return 1 ;; esac
}

cell_deployed() {  # NAME: in cells.tsv
    [ -r "$q/cells.tsv" ] && awk -F'\t' -v n="$1" '$2 == n { f = 1 } END { exit !f }' "$q/cells.tsv"
}

# The last start/end/skip/retry record of cell NAME, the one that says what it is now.
cell_last() {  # NAME
    local f="$q/cells/$1.state" line last=""
    [ -r "$f" ] || return 0
    while IFS= read -r line; do
        case "$line" in start\ * | end\ * | skip\ * | retry\ *) last=$line ;; esac
    done <"$f"
    printf '%s' "$last"
}

# Whether cell NAME's attempt runs now, checked before anything signals it: the start
# record is of this boot, its pid is alive and is still the cell (run_one.sh exports
# RGT_CELL_NAME into it). Sets cell_pid; returns 0 (it runs), 1 (it does not), or 2 with
# cell_code and cell_why set (a refusal) when the record must not be acted on: a pid
# that is never a cell's (0 or "00" is this shell's own process group, whose tree is
# the whole box; 1 is init; $$ and $PPID are this script and the session running it;
# not a number), or one whose environment cannot be read, so nothing proves it is the
# cell (an unreadable environ used to skip the check). The record can say anything.
cell_pid_check() {  # NAME
    local kind sboot spid envs
    cell_pid="" cell_code="" cell_why=""
    read -r kind _ sboot spid <<<"$(cell_last "$1")"
    [ "${kind:-}" = start ] && [ "${sboot:-}" = "$(boot_id)" ] || return 1
    spid=${spid:-}
    case "$spid" in
        '' | *[!0-9]* | 0* | 1 | "$$" | "$PPID" | ??????????*)
            cell_code=bad-pid
            cell_why="cell $1's start record names pid '$(printf '%s' "$spid" | tr -d '[:cntrl:]' | cut -c 1-20)', which is never a cell's process (0, 1, this control script or its session, or not a pid): nothing was signalled — the record in $q/cells/$1.state is damaged"
            return 2
            ;;
    esac
    alive "$spid" || return 1
    # 2>/dev/null first: it also silences the redirection's own error.
    if ! envs=$(tr '\0' '\n' 2>/dev/null <"/proc/$spid/environ"); then
        alive "$spid" || return 1 # it ended meanwhile
        cell_code=unverified
        cell_why="cannot read /proc/$spid/environ, so nothing proves pid $spid is still cell $1 (another user's process, or no /proc on this box): nothing was signalled"
        return 2
    fi
    printf '%s\n' "$envs" | grep -qxF "RGT_CELL_NAME=$1" || return 1
    cell_pid=$spid
}

# stop SESSION WHO: the runner ends the queue before its next cell, WHO (`user`, or
# `group`: rgt-tui stopping a rank between cells because another rank failed) recorded
# with it. "stop<TAB>requested" or "stop<TAB>already" (asked before for this launch);
# refused when no queue runs.
queue_stop() {
    [ $# -eq 2 ] || refuse usage "stop needs 2 arguments, got $#"
    local why who=$2
    case "$who" in user | group) ;; *) refuse usage "stop: WHO must be user or group, not '$(printf '%s' "$who" | tr -d '[:cntrl:]' | cut -c 1-20)'" ;; esac
    make_dir "$rgt"
    take_lock
    owner_ok "$1"
    why=$(running_reason "$1") || refuse not-running "the queue is not running: there is nothing to stop"
    if awk '$1 == "launch" { s = 0 } $1 == "stop" { s = 1 } END { exit !s }' "$q/runner.state"; then
        printf 'stop\talready\t%s\n' "$why"
        return 0
    fi
    printf 'stop %s %s\n' "$(date +%s)" "$who" >>"$q/runner.state" || refuse io "cannot write $q/runner.state (disk full?)"
    printf 'stop\trequested\t%s\n' "$why"
}

# kill SESSION NAME THEN GRACE WHO: record `kill <ts> WHO THEN` in NAME.state (and,
# THEN=stop, a stop request), WHO being who stopped the cell: `user` (queue kill, the
# Queue tab's X) or `group` (rgt-tui's group watch stopping a rank because another rank
# failed), then TERM the cell's process tree and KILL what is left after GRACE seconds,
# from a process detached from this session (setsid nohup): the kill may drop the SSH
# session that asked for it (U1, U4), so the caller checks the result in a new call.
# Prints "killing<TAB>PID<TAB>GRACE"; refused not-running when NAME does not run now.
queue_kill() {
    [ $# -eq 5 ] || refuse usage "kill needs 5 arguments, got $#"
    local session=$1 name=$2 then=$3 grace=$4 who=$5 pid
    cell_name_ok "$name"
    case "$then" in next | stop) ;; *) refuse usage "kill: THEN must be next or stop, not '$then'" ;; esac
    case "$grace" in '' | *[!0-9]*) refuse usage "kill: GRACE must be whole seconds" ;; esac
    case "$who" in user | group) ;; *) refuse usage "kill: WHO must be user or group, not '$(printf '%s' "$who" | tr -d '[:cntrl:]' | cut -c 1-20)'" ;; esac
    make_dir "$rgt"
    take_lock
    owner_ok "$session"
    cell_pid_check "$name"
    case $? in
        0) pid=$cell_pid ;;
        2) refuse "$cell_code" "$cell_why" ;;
        *) refuse not-running "cell $name is not running now: there is nothing to kill" ;;
    esac
    printf 'kill %s %s %s\n' "$(date +%s)" "$who" "$then" >>"$q/cells/$name.state" ||
        refuse io "cannot write $q/cells/$name.state (disk full?)"
    if [ "$then" = stop ] && running_reason "$session" >/dev/null; then
        printf 'stop %s kill\n' "$(date +%s)" >>"$q/runner.state"
    fi
    # The killer must not hold the lock (fd 9) nor this session's output pipes.
    if command -v setsid >/dev/null 2>&1; then
        setsid nohup bash -c "$BASH_EXECUTION_STRING" queue_ctl kill-tree "$pid" "$grace" "$name" "$who" \
            </dev/null >/dev/null 2>&1 9>&- &
    else
        nohup bash -c "$BASH_EXECUTION_STRING" queue_ctl kill-tree "$pid" "$grace" "$name" "$who" \
            </dev/null >/dev/null 2>&1 9>&- &
    fi
    printf 'killing\t%s\t%s\n' "$pid" "$grace"
}

# PID and every process descended from it, space-separated (from /proc; ps without it).
tree_pids() {  # PID
    local out=" $1 " f s pid ppid n=0 more=1
    local -a pairs=()
    if [ -d /proc/self ]; then
        set +f  # this script runs with globbing off; the listing needs it
        for f in /proc/[0-9]*/stat; do
            read -r s 2>/dev/null <"$f" || continue
            pid=${f#/proc/}
            pid=${pid%/stat}
            s=${s##*) }
            read -r _ ppid _ <<<"$s"
            pairs+=("$pid $ppid")
        done
        set -f
    else
        while read -r pid ppid; do pairs+=("$pid $ppid"); done < <(ps -eo pid=,ppid= 2>/dev/null)
    fi
    while [ "$more" = 1 ] && [ "$n" -lt 64 ]; do  # depth bound: a process tree, not a loop
        more=0 n=$((n + 1))
        for s in "${pairs[@]}"; do
            read -r pid ppid <<<"$s"
            case "$out" in *" $ppid "*) case "$out" in *" $pid "*) ;; *) out="$out$pid " more=1 ;; esac ;; esac
        done
    done
    printf '%s' "$out"
}

kill_tree() {  # PID GRACE NAME WHO (run detached by queue_kill)
    local root=$1 grace=$2 name=$3 pids p i left log="$q/cells/$3.log" why="killed by the user"
    [ "${4:-user}" = group ] && why="stopped with its group (another rank failed or went silent)"
    # queue_kill checked the pid (cell_pid_check); a tree rooted at 0 or 1 is the box's.
    case "$root" in '' | *[!0-9]* | 0* | 1) return 1 ;; esac
    pids=$(tree_pids "$root")
    # Stop the tree first so no process forks a child between the listing and the TERM.
    kill -STOP $pids 2>/dev/null
    pids=$(tree_pids "$root")
    # The list as words (tree_pids pads it with spaces): "TERM to 8614 8620".
    printf '[rgt %s] cell %s: %s: TERM to %s\n' "$(date '+%F %T')" "$name" "$why" "$(echo $pids)" >>"$log"
    kill -TERM $pids 2>/dev/null
    kill -CONT $pids 2>/dev/null
    for i in $(seq 1 $((grace * 10))); do
        left=""
        for p in $pids; do alive "$p" && left="$left $p"; done
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    printf '[rgt %s] cell %s: still running %s s after TERM: KILL to%s\n' "$(date '+%F %T')" "$name" "$grace" "$left" >>"$log"
    kill -KILL $left 2>/dev/null
}

# retry SESSION ALLOW_DONE NAME OUT [NAME OUT ...]: every NAME (failed, killed or
# interrupted; done only with ALLOW_DONE=1) gets a `retry` record, after its OUT folder
# (its {out}; "-": none) is renamed to OUT.before-retry-<time> — set aside, never
# deleted. OUT "=": a resume, its {out} kept as it is, recorded as such (`retry TS =`:
# the Queue tab says "resumed", not "retried"). All are checked before any is touched.
# Prints "retry<TAB>NAME<TAB>ASIDE|-|="
# per cell, then "queue<TAB>running<TAB>WHY" (the runner runs them before its next
# cell) or "queue<TAB>stopped" (a launch runs them).
queue_retry() {
    [ $# -ge 4 ] && [ $(($# % 2)) = 0 ] || refuse usage "retry needs SESSION ALLOW_DONE and NAME OUT pairs"
    local session=$1 allow_done=$2 name out kind code sboot spid aside why
    shift 2
    local -a pairs=("$@")
    make_dir "$q/cells"
    take_lock
    owner_ok "$session"
    set -- "${pairs[@]}"
    while [ $# -gt 0 ]; do
        name=$1 out=$2
        shift 2
        cell_name_ok "$name"
        cell_deployed "$name" || refuse unknown "cell $name is not in the box's queue (cells.tsv)"
        case "$out" in
            - | =) ;;
            /*/*) case "/$out/" in */../* | */./* | *[[:cntrl:]]*) refuse usage "bad output path for $name" ;; esac ;;
            *) refuse usage "the output path of $name must be absolute" ;;
        esac
        read -r kind _ code spid <<<"$(cell_last "$name")"
        sboot=$code
        case "${kind:-}" in
            '') refuse never-ran "cell $name never ran: nothing to retry (the queue runs it when it gets there)" ;;
            retry)  # its record's aside: "=" for a resume (the words of the cell's row)
                if [ "${code:-}" = "=" ]; then
                    refuse queued "cell $name is already queued to resume"
                fi
                refuse queued "cell $name is already queued to retry" ;;
            skip) refuse skipped "cell $name was taken off this box's queue (skip record): it does not run here" ;;
            start)
                if [ "$sboot" = "$(boot_id)" ] && alive "${spid:-}"; then
                    refuse running "cell $name is running now (pid $spid): kill it first, then retry"
                fi
                ;;
            end)
                if [ "$code" = 0 ] && [ "$allow_done" != 1 ]; then
                    refuse done "cell $name finished with exit 0: retrying it needs the explicit flag for done cells"
                fi
                ;;
        esac
    done
    set -- "${pairs[@]}"
    while [ $# -gt 0 ]; do
        name=$1 out=$2 aside=-
        shift 2
        [ "$out" = '=' ] && aside='='
        if [ "$aside" = - ] && [ "$out" != - ] && { [ -e "$out" ] || [ -L "$out" ]; }; then
            aside="$out.before-retry-$(date +%Y%m%d-%H%M%S)"
            [ -e "$aside" ] || [ -L "$aside" ] && aside="$aside.$$"
            # A rename in its own folder: nothing is copied or deleted; a symlink is
            # renamed itself, never followed.
            # mv's own words name the cause (a mount point is "busy", a read-only file
            # system says so); dropped, the refusal gave none (s37 dev-loop #8).
            if ! why=$(mv -T -- "$out" "$aside" 2>&1) && ! why=$(mv -- "$out" "$aside" 2>&1); then
                why=$(printf '%s' "$why" | tr '\n\t' '  ' | head -c 300)
                refuse io "cannot move $out aside to $aside (${why:-mv failed}): nothing retried from $name on (a mount point cannot be renamed: set what it holds aside by hand, then retry)"
            fi
        fi
        now=$(date +%s)
        printf 'retry %s %s\n' "$now" "$aside" >>"$q/cells/$name.state" ||
            refuse io "cannot write $q/cells/$name.state (disk full?)"
        # Its time too: a copy pulled before it holds the set-aside attempt (retried.py).
        printf 'retry\t%s\t%s\t%s\n' "$name" "$aside" "$now"
    done
    if why=$(running_reason "$session"); then
        printf 'queue\trunning\t%s\n' "$why"
    else
        printf 'queue\tstopped\t\n'
    fi
}

# skip NAME (the reason, one line, on stdin): append "skip <ts> <reason>" to NAME.state
# so no runner runs NAME on this box (rgt-tui queue move). Refused while NAME runs.
queue_skip() {
    [ $# -eq 1 ] || refuse usage "skip needs 1 argument, got $#"
    local name=$1 reason pid
    cell_name_ok "$name"
    reason=$(head -c 400 | head -n 1 | tr -d '[:cntrl:]' | cut -c 1-200)
    make_dir "$q/cells"
    take_lock
    cell_pid_check "$name"
    case $? in
        0) refuse running "cell $name is running now (pid $cell_pid): kill it first" ;;
        2) refuse "$cell_code" "cannot tell whether cell $name runs: $cell_why" ;;
    esac
    printf 'skip %s %s\n' "$(date +%s)" "${reason:-skipped by the user}" >>"$q/cells/$name.state" ||
        refuse io "cannot write $q/cells/$name.state (disk full?)"
    printf 'skipped\t%s\n' "$name"
}

# --- Slurm hosts (issue 32; rgt_tui/services/slurm/launch.py). The queue is one job
# array per submission, each recorded in slurm.jobs as
#   <array job id> <first index> <last index> <submit unix ts> <launch|append|retry>
# and a launch also in runner.state: launch <ts> <boot> slurm <start> <task script> <job id>.

# The array job ids of slurm.jobs that squeue still lists for JOBNAME: one
# "live<TAB>ID<TAB>STATE" per line squeue prints; "squeue_error<TAB>MESSAGE" when it
# cannot answer (a launch must not start a second array beside a live one).
slurm_live() {  # JOBNAME
    local ids out
    [ -r "$q/slurm.jobs" ] || return 0
    ids=$(tail -n 500 "$q/slurm.jobs" | awk '$1 ~ /^[0-9]+$/ { print $1 }' | sort -u | tr '\n' ' ')
    [ -n "$ids" ] || return 0
    if ! command -v squeue >/dev/null 2>&1; then
        printf 'squeue_error\tsqueue is not on the PATH of the login node\n'
        return 0
    fi
    # One line per task (-r): a held one names itself (its reason JobHeldUser).
    if ! out=$(squeue -h -r -u "$(id -un)" -n "$1" -o '%F %T %i %r' 2>&1); then
        printf 'squeue_error\t%s\n' "$(printf '%s' "$out" | head -c 600 | tr '\n\t' '  ' | cut -c 1-300)"
        return 0
    fi
    printf '%s\n' "$out" | head -n 2000 |
        awk -v ids=" $ids" 'index(ids, " " $1 " ") { print "live\t" $1 "\t" $2 "\t" $3 "\t" substr($4, 1, 40) }'
}

# slurm-probe DURABLE JOBNAME: the login node's facts a Slurm launch plan needs.
slurm_probe() {
    [ $# -eq 2 ] || refuse usage "slurm-probe needs 2 arguments, got $#"
    local real
    printf 'tmpdir\t%s\n' "${TMPDIR:-}"
    real=$(realpath -m -- "$1" 2>/dev/null || readlink -m -- "$1" 2>/dev/null)
    printf 'durable_real\t%s\n' "$real"
    printf 'sbatch\t%s\n' "$(command -v sbatch 2>/dev/null)"
    slurm_live "$2"
}

# unsend QBYTES CLINES: queue.txt and cells.tsv back as they were before this submit's
# lines were appended (none: both removed). A refused sbatch submitted nothing, and lines
# kept on the box would pin the local file's lines as sent (hour s22b #7: a typo fixed
# after a wrong partition was refused as "changed since they were sent").
unsend() {
    if [ "$1" = 0 ] && [ "$2" = 0 ]; then
        rm -f "$q/queue.txt" "$q/cells.tsv"
        return
    fi
    head -c "$1" "$q/queue.txt" >"$q/queue.txt.tmp" && mv -f "$q/queue.txt.tmp" "$q/queue.txt" &&
        head -n "$2" "$q/cells.tsv" >"$q/cells.tsv.tmp" && mv -f "$q/cells.tsv.tmp" "$q/cells.tsv" ||
        refuse io "sbatch refused the array and the cells sent for it cannot be taken back from $q (disk full?)"
}

# slurm-submit KIND START QBYTES CLINES FRESH FIRST LAST TASK TASK_LEN RO RO_LEN Q_LEN
#   C_LEN ID_LEN SESSION JOBNAME sbatch ARGS...
# As launch/append (the same payload: scripts, queue.txt and cells.tsv parts, code id),
# under the same lock and size checks; then the sbatch command that follows, whose
# array names cells FIRST..LAST. Every KIND writes code.id (removed when the id is
# empty): a retry or an append may run another tree than the launch did. A launch is
# refused while a runner or an array of this queue is live. Prints
# "submitted<TAB>JOBID<TAB>FIRST<TAB>LAST" (and "archived<TAB>PATH").
slurm_submit() {
    [ $# -ge 18 ] || refuse usage "slurm-submit needs at least 18 arguments, got $#"
    local kind=$1 start=$2 qbytes=$3 clines=$4 fresh=$5 first=$6 last=$7 task=$8 task_len=$9
    local ro=${10} ro_len=${11} q_len=${12} c_len=${13} id_len=${14} session=${15} jobname=${16}
    local why live archived out jobid n
    shift 16
    [ "${1:-}" = sbatch ] || refuse usage "slurm-submit runs sbatch, not '${1:-}'"
    shift
    case "$kind" in launch | append | retry) ;; *) refuse usage "slurm-submit: unknown kind '$kind'" ;; esac
    for n in "$start" "$qbytes" "$clines" "$first" "$last" "$task_len" "$ro_len" "$q_len" "$c_len" "$id_len"; do
        case "$n" in '' | *[!0-9]*) refuse usage "slurm-submit: '$n' is not a count" ;; esac
    done
    make_dir "$bin"
    make_dir "$q/cells"
    make_dir "$q/slurm"
    stage_payload $((task_len + ro_len + q_len + c_len + id_len))
    deploy "$task" 0 "$task_len"
    deploy "$ro" "$task_len" "$ro_len"
    take_lock
    if [ "$kind" = launch ]; then
        if why=$(running_reason "$session"); then refuse running "$why"; fi
        live=$(slurm_live "$jobname")
        case "$live" in squeue_error*)
            refuse squeue "cannot ask squeue whether this queue's arrays still run: ${live#squeue_error?}" ;;
        esac
        if [ -n "$live" ]; then
            refuse running "array job $(printf '%s\n' "$live" | cut -f 2 | sort -u | tr '\n' ' ')is still queued or running (squeue)"
        fi
        if [ "$fresh" = 1 ] && [ -e "$q/runner.state" -o -e "$q/cells.tsv" -o -e "$q/queue.txt" ]; then
            archived="$rgt/queue.archived.$(date +%Y%m%d-%H%M%S).$$"
            mv "$q" "$archived" && mkdir -p "$q/cells" "$q/slurm" || refuse io "cannot move $q aside to $archived"
            printf 'archived\t%s\n' "$archived"
        fi
    else
        [ -e "$q/queue.txt" ] || refuse not-deployed "no queue on the box yet: launch it first"
    fi
    [ "$(count_bytes "$q/queue.txt")" = "$qbytes" ] && [ "$(count_lines "$q/cells.tsv")" = "$clines" ] ||
        refuse changed "queue.txt or cells.tsv on the box changed since the plan was made"
    append_part "$q/queue.txt" $((task_len + ro_len)) "$q_len"
    append_part "$q/cells.tsv" $((task_len + ro_len + q_len)) "$c_len"
    # Every submit (launch, append, retry) names the code the workdir holds now: the
    # cells that start from here on record it (U42), not the first launch's.
    if [ "$id_len" -gt 0 ]; then
        part $((task_len + ro_len + q_len + c_len)) "$id_len" >"$q/code.id.tmp" && mv -f "$q/code.id.tmp" "$q/code.id" ||
            refuse io "cannot write $q/code.id (disk full? df -h ~; df -i ~)"
    else
        rm -f "$q/code.id"
    fi
    [ "$first" -le "$last" ] && [ "$last" -lt "$(count_lines "$q/cells.tsv")" ] ||
        refuse range "the array names cells $first-$last but cells.tsv holds $(count_lines "$q/cells.tsv")"
    if ! command -v sbatch >/dev/null 2>&1; then
        unsend "$qbytes" "$clines"
        refuse no-sbatch "sbatch is not on the PATH of the login node (module load slurm?); nothing was submitted and the cells were taken back"
    fi
    # sbatch must not hold the lock (fd 9) nor read a script from this session's stdin.
    if ! out=$(sbatch "$@" </dev/null 2>"$stage.err" 9>&-); then
        unsend "$qbytes" "$clines"
        refuse sbatch "sbatch refused the array (nothing was submitted and the cells were taken back): $(tail -c 600 "$stage.err" | tr '\n\t' '  ')"
    fi
    jobid=${out%%;*}
    jobid=${jobid//[[:space:]]/}
    case "$jobid" in '' | *[!0-9]*) refuse sbatch "sbatch printed no job id: $(printf '%s' "$out" | head -c 300)" ;; esac
    printf '%s %s %s %s %s\n' "$jobid" "$first" "$last" "$(date +%s)" "$kind" >>"$q/slurm.jobs" ||
        refuse io "array job $jobid was submitted but $q/slurm.jobs cannot be written (disk full?)"
    if [ "$kind" = launch ]; then
        printf 'launch %s %s slurm %s %s %s\n' "$(date +%s)" "$(boot_id)" "$start" "$bin/$task" "$jobid" >>"$q/runner.state"
    fi
    printf 'submitted\t%s\t%s\t%s\n' "$jobid" "$first" "$last"
}

case "$verb" in
    probe) probe "$@" ;;
    launch) launch "$@" ;;
    append) append "$@" ;;
    credentials) credentials "$@" ;;
    credentials-remove) credentials_remove "$@" ;;
    code-hash) code_hash "$@" ;;
    code-stage) code_stage "$@" ;;
    code-switch) code_switch "$@" ;;
    code-drop) code_drop "$@" ;;
    stop) queue_stop "$@" ;;
    kill) queue_kill "$@" ;;
    kill-tree) kill_tree "$@" ;;
    retry) queue_retry "$@" ;;
    skip) queue_skip "$@" ;;
    slurm-probe) slurm_probe "$@" ;;
    slurm-submit) slurm_submit "$@" ;;
    *) refuse usage "unknown verb '$verb' (probe, launch, append)" ;;
esac
