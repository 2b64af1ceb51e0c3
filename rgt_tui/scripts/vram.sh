#!/usr/bin/env bash
# rgt-tui's box-side VRAM reclaim (U11, GEN7): rgt_tui/services/box/vram.py sends this whole
# file as `bash -c <this file> vram VERB ARGS`. It is never deployed to the box.
#
#   list        the evidence, one "key<TAB>fields" line each:
#               smi<TAB>ok|missing|failed<TAB>DETAIL
#               gpu<TAB>INDEX<TAB>UUID<TAB>USED_MIB<TAB>UTIL_PCT      nvidia-smi --query-gpu
#               app<TAB>GPU_UUID<TAB>PID<TAB>USED_MIB                 its compute processes
#               walk<TAB>ok|missing|timeout                           the /proc fd walk
#               holder<TAB>PID<TAB>DEVICE      a process of THIS PID namespace with a
#                                              /dev/nvidia* file open (fuser -v /dev/nvidia*)
#               proc<TAB>PID<TAB>VISIBLE<TAB>STATE<TAB>UID<TAB>AGE_S<TAB>CELL<TAB>COMM<TAB>CMDLINE<TAB>START<TAB>RUNS
#                                              START: /proc/PID/stat's start time (ticks);
#                                              RUNS: 1 when of CELL's run going on now,
#                                              0 when a leftover carrying CELL's name
#   kill PID GRACE [START]
#               SIGTERM to PID, then SIGKILL if it still runs GRACE seconds later; only
#               while PID holds a /dev/nvidia* file right now, started at START (the
#               process listed, not a reused PID), and is no running queue cell's (the
#               queue's own kill records it). Prints
#               killed<TAB>PID<TAB>TERM|KILL or alive<TAB>PID<TAB>STATE; a refusal prints
#               refused<TAB>CODE<TAB>DETAIL and exits 3.
#
# A rented box is hostile: every tool may be missing, every output is bounded, every name
# printed is cut to printable text on one line. RGT_NVIDIA_DEV_PREFIX replaces
# /dev/nvidia as the device path prefix for tests only: no test machine has the device,
# so tests point it at files a real process holds open.
set -u

verb=${1:-}
shift || true
prefix=${RGT_NVIDIA_DEV_PREFIX:-/dev/nvidia}
cells="$HOME/.rgt/queue/cells"
MAX_PIDS=200

refuse() {  # CODE DETAIL
    printf 'refused\t%s\t%s\n' "$1" "$2"
    exit 3
}

# A command bounded in time where coreutils' timeout exists (a hung driver hangs nvidia-smi).
bounded() {
    local s=$1
    shift
    if command -v timeout >/dev/null 2>&1; then timeout "$s" "$@"; else "$@"; fi
}

# Printable, one line, no tab, at most 200 characters: names come from the box.
clean() {
    local s=${1//[^[:print:]]/?}
    s=${s//$'\t'/?}
    printf '%s' "${s:0:200}"
}

# Running and not a zombie (a defunct process answers kill -0 but holds nothing).
alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    stat=${stat%% *}
    [ "$stat" != Z ] && [ "$stat" != X ]
}

proc_state() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || { printf '-'; return; }
    stat=${stat##*) }
    printf '%s' "${stat%% *}"
}

status_field() {  # PID FIELD: the first value of a /proc/PID/status line
    local k v _
    while read -r k v _; do
        [ "$k" = "$2:" ] && { printf '%s' "$v"; return 0; }
    done <"/proc/$1/status" 2>/dev/null
    return 1
}

# "PID NAME" of each running cell (the name last: it may hold spaces): its last start
# record of this boot has no end after it.
running_cells() {
    local boot
    boot=$(cat "${RGT_BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}" 2>/dev/null)
    [ -d "$cells" ] || return 0
    (
        shopt -s nullglob dotglob # a cell named .x is a dot file
        files=("$cells"/*.state)
        [ ${#files[@]} -gt 0 ] || exit 0
        awk -v boot="$boot" '
            FNR == 1 { if (pid != "") print pid, name; pid = ""; name = FILENAME
                       sub(/^.*\//, "", name); sub(/\.state$/, "", name) }
            $1 == "start" && NF >= 4 { pid = ($3 == boot) ? $4 : "" }
            $1 == "end" { pid = "" }
            END { if (pid != "") print pid, name }' "${files[@]:0:5000}" 2>/dev/null
    )
}

# The queue cell PID belongs to, as "1 NAME" when it is of that cell's run going on now
# (its own pid, or an ancestor's, is the run's; or it carries the RGT_CELL_NAME run_one.sh
# exports and started with or after that run), "0 NAME" when it carries a cell's name and
# is no running run's: a leftover of a finished cell, or of an earlier run of a cell run
# again, which this reclaim exists for (h551 #4, review h554 #5: refused as "the running
# cell"); empty when none.
cell_of() {  # PID RUNNING_CELLS
    local pid=$1 p=$1 depth=0 name cpid env mine theirs
    while [ -n "$p" ] && [ "$p" -gt 1 ] 2>/dev/null && [ "$depth" -lt 64 ]; do
        while read -r cpid name; do
            if [ "$cpid" = "$p" ] && alive "$cpid"; then
                printf '1 %s' "$name"
                return 0
            fi
        done <<<"$2"
        p=$(status_field "$p" PPid) || break
        depth=$((depth + 1))
    done
    env=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | head -c 1048576 | grep -m 1 '^RGT_CELL_NAME=')
    [ -n "$env" ] || return 0
    env=${env#RGT_CELL_NAME=}
    mine=$(start_of "$pid")
    while read -r cpid name; do
        if [ "$name" = "$env" ] && alive "$cpid"; then
            theirs=$(start_of "$cpid")
            # Started before the run: not its (either start unknown: its, to be safe).
            if [ -n "$mine" ] && [ -n "$theirs" ] && [ "$mine" -lt "$theirs" ] 2>/dev/null; then
                break
            fi
            printf '1 %s' "$name"
            return 0
        fi
    done <<<"$2"
    printf '0 %s' "$env"
    return 0
}

# When PID started, in clock ticks since boot (/proc/PID/stat field 22): with the pid,
# which process it is (a pid the kernel gave again is another start).
start_of() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    printf '%s' "$stat" | awk '{ print $20 }'
}

# Every "PID<TAB>DEVICE" with a file under the prefix open (one PID: that PID only).
holders() {  # [PID]
    local dirs dir target pid
    if [ -n "${1:-}" ]; then
        dirs=("/proc/$1/fd")
    else
        shopt -s nullglob
        dirs=(/proc/[0-9]*/fd)
        shopt -u nullglob
    fi
    # NUL-separated: a link target may hold a newline, and must not forge a line.
    bounded 20 find "${dirs[@]}" -maxdepth 1 -lname "$prefix*" -printf '%h\0%l\0' 2>/dev/null |
        head -c 4194304 |
        while IFS= read -r -d '' dir && IFS= read -r -d '' target; do
            pid=${dir#/proc/}
            pid=${pid%/fd}
            case "$pid" in '' | *[!0-9]*) continue ;; esac
            printf '%s\t%s\n' "$pid" "$(clean "$target")"
        done | sort -u | head -n 4096
}

do_list() {
    local smi out rc pids line pid cell comm cmd uid age start ticks up running tag runs
    smi=$(command -v nvidia-smi 2>/dev/null)
    pids=""
    if [ -z "$smi" ]; then
        printf 'smi\tmissing\tnvidia-smi is not on PATH\n'
    else
        out=$(bounded 20 nvidia-smi --query-gpu=index,uuid,memory.used,utilization.gpu --format=csv,noheader,nounits 2>&1 | head -c 65536; exit "${PIPESTATUS[0]}")
        rc=$?
        if [ "$rc" != 0 ]; then
            printf 'smi\tfailed\t%s\n' "$(clean "exit $rc: ${out%%$'\n'*}")"
        else
            printf 'smi\tok\t\n'
            printf '%s\n' "$out" | head -n 64 | while IFS=, read -r index uuid used util; do
                printf 'gpu\t%s\t%s\t%s\t%s\n' "$(clean "${index// /}")" "$(clean "${uuid// /}")" \
                    "$(clean "${used// /}")" "$(clean "${util// /}")"
            done
            out=$(bounded 20 nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits 2>/dev/null | head -c 65536)
            while IFS=, read -r uuid pid used; do
                pid=${pid// /}
                case "$pid" in '' | *[!0-9]*) continue ;; esac
                printf 'app\t%s\t%s\t%s\n' "$(clean "${uuid// /}")" "$pid" "$(clean "${used// /}")"
                pids="$pids $pid"
            done < <(printf '%s\n' "$out" | head -n 256)
        fi
    fi
    if ! command -v find >/dev/null 2>&1; then
        printf 'walk\tmissing\t\n'
    else
        out=$(holders)
        printf 'walk\tok\t\n'
        while IFS=$'\t' read -r pid line; do
            [ -n "$pid" ] || continue
            printf 'holder\t%s\t%s\n' "$pid" "$line"
            pids="$pids $pid"
        done <<<"$out"
    fi
    running=$(running_cells)
    ticks=$(getconf CLK_TCK 2>/dev/null || echo 100)
    read -r up _ </proc/uptime 2>/dev/null || up=0
    up=${up%.*}
    # shellcheck disable=SC2086  # the pids are digits only, split on purpose
    for pid in $(printf '%s\n' $pids | sort -un | head -n "$MAX_PIDS"); do
        if [ ! -d "/proc/$pid" ]; then
            printf 'proc\t%s\t0\t-\t-\t-\t-\t-\t-\n' "$pid"
            continue
        fi
        uid=$(status_field "$pid" Uid) || uid=-
        start=$(start_of "$pid")
        age=-
        case "$start$ticks" in '' | *[!0-9]*) ;; *) age=$((up - start / ticks)) ;; esac
        tag=$(cell_of "$pid" "$running")
        cell=${tag#? }
        runs=${tag%% *}
        comm=$(head -c 64 "/proc/$pid/comm" 2>/dev/null)
        cmd=$(head -c 1024 "/proc/$pid/cmdline" 2>/dev/null | tr '\0' ' ')
        case "$start" in '' | *[!0-9]*) start=- ;; esac
        printf 'proc\t%s\t1\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pid" "$(proc_state "$pid")" "$uid" "$age" \
            "$(clean "${cell:--}")" "$(clean "${comm:--}")" "$(clean "${cmd:--}")" "$start" "${runs:-0}"
    done
}

do_kill() {  # PID GRACE [START]
    local pid=${1:-} grace=${2:-10} listed=${3:-} tag i
    case "$pid" in '' | *[!0-9]*) refuse bad-pid "not a process id: $(clean "$pid")" ;; esac
    case "$grace" in '' | *[!0-9]*) grace=10 ;; esac
    [ "$pid" -gt 1 ] || refuse bad-pid "pid $pid is never killed from here"
    alive "$pid" || refuse gone "pid $pid no longer runs: nothing was killed"
    # The process the user confirmed, not one the kernel gave its number since (h551 #3).
    case "$listed" in
    '' | *[!0-9]*) ;;
    *) [ "$(start_of "$pid")" = "$listed" ] || refuse reused "pid $pid is another process now (it started after the list you confirmed): nothing was killed; list again to see who holds the GPU now" ;;
    esac
    # Right before the kill: the number still names a process holding the GPU's device.
    [ -n "$(holders "$pid")" ] || refuse not-holder "pid $pid holds no $prefix* file now (it let go, or the number belongs to another process): nothing was killed"
    tag=$(cell_of "$pid" "$(running_cells)")
    case "$tag" in
    "1 "*) refuse queue-cell "$(clean "pid $pid belongs to the running queue cell ${tag#1 }")" ;;
    esac
    kill -TERM "$pid" 2>/dev/null || refuse denied "kill -TERM $pid was refused by the box (another user's process: run as its owner or root)"
    for ((i = 0; i < grace * 5; i++)); do
        alive "$pid" || { printf 'killed\t%s\tTERM\n' "$pid"; return 0; }
        sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null
    for ((i = 0; i < 25; i++)); do
        alive "$pid" || { printf 'killed\t%s\tKILL\n' "$pid"; return 0; }
        sleep 0.2
    done
    printf 'alive\t%s\t%s\n' "$pid" "$(proc_state "$pid")"
}

case "$verb" in
list) do_list ;;
kill) do_kill "$@" ;;
*)
    echo "vram.sh: unknown verb '$verb' (list, kill)" >&2
    exit 2
    ;;
esac
