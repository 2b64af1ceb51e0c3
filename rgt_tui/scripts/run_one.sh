#!/usr/bin/env bash
# rgt-tui: run ONE queue cell and leave its records (docs/queues.md, "The runner").
#
#   run_one.sh QUEUE_DIR INDEX NAME WORKDIR COMMAND
#
# Deployed content-addressed as ~/.rgt/bin/run_one.<sha256[:12]>.sh and never
# overwritten: a running bash reads its script by byte offset (U2, principle 6).
#
# Records (append-only, one line each):
#   cells/NAME.state  start <unix_ts> <boot_id> <pid>   then   end <unix_ts> <exit_code>
#                     and, when the launch knew it, code <the code.id line> after start:
#                     the code this attempt ran (tree hash, git commit; U42)
#   cells/NAME.oom    start|end <unix_ts> <cgroup oom_kill count, or ?>
#   cells/NAME.log    the command's stdout+stderr; the same bytes go to this script's
#                     stdout, which the runner points at queue.log.
#
# The command runs in WORKDIR with the fleet file's cell environment of ~/.rgt/cell.env
# (the mirrors, PIP_INDEX_URL and HF_ENDPOINT, generic-ssh §3; written by the launch;
# RGT_CELL_ENV names another file: the smoke's) and the credentials of ~/.rgt/credentials.env exported
# (written 0600 by rgt-tui over stdin, U34: never on a command line), PYTHONUNBUFFERED=1 (U43: a detached run's log is
# otherwise block-buffered and looks frozen) and OMP/MKL thread pools capped to the
# cgroup's vCPU quota (U40: they default to the host's core count).
# RGT_PROC_ROOT / RGT_SYS_ROOT point the cgroup reads at a recorded tree (tests).
set -u

if [ $# -ne 5 ]; then
    echo "usage: run_one.sh QUEUE_DIR INDEX NAME WORKDIR COMMAND" >&2
    exit 2
fi
qdir=$1 index=$2 name=$3 workdir=$4 cmd=$5
proc_root=${RGT_PROC_ROOT:-/proc}
sys_root=${RGT_SYS_ROOT:-/sys}
cells="$qdir/cells"
state="$cells/$name.state"
log="$cells/$name.log"

boot_id() {
    local id
    id=$(cat "${RGT_BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}" 2>/dev/null)
    printf '%s' "${id:-unknown}"
}

# The directory of this process's cgroup in one hierarchy; the hierarchy root when the
# path is not visible (inside a container /proc/self/cgroup names the host-side path).
cgroup_dir() {  # ROOT PATH
    if [ -n "$2" ] && [ -d "$1$2" ]; then printf '%s' "$1$2"; else printf '%s' "$1"; fi
}

cgroup_path() {  # v2 | CONTROLLER
    local hier ctrls path
    while IFS=: read -r hier ctrls path; do
        if [ "$1" = v2 ] && [ "$hier" = 0 ] && [ -z "$ctrls" ]; then
            printf '%s' "$path"; return 0
        fi
        case ",$ctrls," in *",$1,"*) printf '%s' "$path"; return 0 ;; esac
    done <"$proc_root/self/cgroup"
    return 1
}

# vCPUs of the cgroup's CPU quota, rounded down, at least 1; empty when unlimited.
cgroup_vcpus() {
    local base="$sys_root/fs/cgroup" dir quota period root
    if [ -e "$base/cgroup.controllers" ]; then
        dir=$(cgroup_dir "$base" "$(cgroup_path v2 2>/dev/null)")
        read -r quota period 2>/dev/null <"$dir/cpu.max" || return 0
    else
        for root in cpu cpu,cpuacct cpuacct,cpu; do
            [ -d "$base/$root" ] && break
        done
        dir=$(cgroup_dir "$base/$root" "$(cgroup_path cpu 2>/dev/null)")
        quota=$(cat "$dir/cpu.cfs_quota_us" 2>/dev/null) || return 0
        period=$(cat "$dir/cpu.cfs_period_us" 2>/dev/null) || return 0
    fi
    case "$quota$period" in *[!0-9]*|'') return 0 ;; esac  # "max" or -1: unlimited
    [ "$period" -gt 0 ] || return 0
    local n=$((quota / period))
    [ "$n" -ge 1 ] || n=1
    printf '%s' "$n"
}

# The cgroup's oom_kill counter (memory.events v2, memory.oom_control v1), or "?".
oom_kills() {
    local base="$sys_root/fs/cgroup" file n
    if [ -e "$base/cgroup.controllers" ]; then
        file="$(cgroup_dir "$base" "$(cgroup_path v2 2>/dev/null)")/memory.events"
    else
        file="$(cgroup_dir "$base/memory" "$(cgroup_path memory 2>/dev/null)")/memory.oom_control"
    fi
    n=$(awk '$1 == "oom_kill" { print $2 }' "$file" 2>/dev/null)
    printf '%s' "${n:-?}"
}

mkdir -p "$cells" || exit 125
threads=$(cgroup_vcpus)
source_of_threads="cgroup CPU quota"
if [ -z "$threads" ]; then
    threads=$(nproc 2>/dev/null || echo 1)
    source_of_threads="no CPU quota: nproc"
fi
# Keep a smaller cap the user already set; never raise it above the quota.
case "${OMP_NUM_THREADS:-}" in
    ''|*[!0-9]*) ;;
    *) [ "$OMP_NUM_THREADS" -ge 1 ] && [ "$OMP_NUM_THREADS" -lt "$threads" ] && threads=$OMP_NUM_THREADS ;;
esac

printf '[rgt %s] cell %s %s: start in %s (threads %s, %s)\n' \
    "$(date '+%F %T')" "$index" "$name" "$workdir" "$threads" "$source_of_threads" | tee -a "$log"
printf 'start %s %s\n' "$(date +%s)" "$(oom_kills)" >>"$cells/$name.oom"

# The subshell writes the start record with its own pid, then execs the command, so the
# recorded pid IS the command (bash -c execs a simple command in place): killing that
# pid kills the cell, and the exit code the pipeline reports is the command's.
#
# A TERM to every process at once (Slurm's scancel or a preemption signals the whole
# step) must reach only the cell: this script waits for the cell and writes its end
# record (a trapped TERM runs after the pipeline ends; the subshell's command gets TERM's
# default back), and the log's tee ignores TERM and ends at EOF, when the cell's output
# closes. Were it killed, the cell's handler would die of a broken pipe on its first
# print, before its safe-point checkpoint (SLURM1).
trap ':' TERM
(
    printf 'start %s %s %s\n' "$(date +%s)" "$(boot_id)" "$BASHPID" >>"$state"
    if [ -r "$qdir/code.id" ]; then
        IFS= read -r code_id <"$qdir/code.id" && printf 'code %s\n' "$code_id" >>"$state"
    fi
    cell_env=${RGT_CELL_ENV:-$HOME/.rgt/cell.env}
    if [ -r "$cell_env" ]; then
        set -a
        . "$cell_env"
        set +a
    fi
    if [ -r "$HOME/.rgt/credentials.env" ]; then
        set -a
        . "$HOME/.rgt/credentials.env"
        set +a
    fi
    cd "$workdir" || {
        echo "rgt: cannot cd to the host's workdir $workdir — fix workdir in hosts.toml"
        exit 126
    }
    export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
    export RGT_CELL_NAME=$name RGT_CELL_INDEX=$index
    exec bash -c "$cmd"
) </dev/null 2>&1 | {
    trap '' TERM
    exec tee -a "$log"
}
code=${PIPESTATUS[0]}
trap - TERM

printf 'end %s %s\n' "$(date +%s)" "$code" >>"$state"
printf 'end %s %s\n' "$(date +%s)" "$(oom_kills)" >>"$cells/$name.oom"
# A last line the cell left unfinished (a print without its newline, a progress bar's
# closing "\r") is ended first: glued to it, the exit line hid the cell's last words
# from the queue's notes, and a bar's last state from the log (h583 #2).
if [ -s "$log" ] && [ -n "$(tail -c 1 -- "$log" 2>/dev/null)" ]; then printf '\n' | tee -a "$log"; fi
printf '[rgt %s] cell %s %s: exit %s\n' "$(date '+%F %T')" "$index" "$name" "$code" | tee -a "$log"
exit "$code"
