#!/usr/bin/env bash
# rgt-tui smoke step, box side (GEN5/U10): run one command as a queue cell runs, before
# the queue, and measure it. rgt_tui/services/preflight_smoke.py sends this whole file as
#   bash -c <this file> smoke RUN_ONE_NAME RUN_ONE_LEN ENV_LEN WORKDIR SECONDS COMMAND
# with run_one.sh's text (RUN_ONE_LEN bytes) then the cell environment file's (ENV_LEN
# bytes: the mirrors' exports) on stdin, and reads one "key<TAB>value" line per fact.
#
# The command runs through the queue's own run_one.sh (deployed content-addressed as
# ~/.rgt/bin/RUN_ONE_NAME, as a launch deploys it; an existing copy is never rewritten),
# so it gets what a cell gets: the workdir, ~/.rgt/credentials.env, the cell environment
# (here ~/.rgt/smoke/cell.env), the OMP/MKL caps of the cgroup's CPU quota, stdin
# /dev/null. Its records and log go to ~/.rgt/smoke/cells/smoke.*, never the queue's.
# RGT_SMOKE=1 is set, so a script can tell it is the smoke. The first cell a
# smoke_seconds smoke runs has its {out} under ~/.rgt/smoke/out (preflight renders it so),
# which is emptied before and after: the real run never resumes from the smoke's save.
#
# Every second its process tree is sampled: the sum of each process's peak resident set
# (VmHWM, /proc) and, where nvidia-smi exists, the GPU memory nvidia-smi lists for the
# tree's pids and the GPUs' total memory used. After SECONDS the tree is stopped (TERM,
# then KILL after 5 s). ~/.rgt/smoke/samples counts the samples taken (a smoke that must
# be measured while it holds its memory can wait on it).
set -u

ro_name=$1 ro_len=$2 env_len=$3 workdir=$4 seconds=$5 cmd=$6
rgt="$HOME/.rgt" bin="$HOME/.rgt/bin" sdir="$HOME/.rgt/smoke"
emit() { printf '%s\t%s\n' "$1" "$2"; }
lines() { local l; while IFS= read -r l || [ -n "$l" ]; do printf '%s\t%s\n' "$1" "$l"; done; }
fail() { emit error "$1"; emit end 1; exit 0; }
bounded() {
    local s=$1
    shift
    if command -v timeout >/dev/null 2>&1; then timeout "$s" "$@"; else "$@"; fi
}

case "$ro_name" in run_one.[0-9a-f]*.sh) ;; *) fail "bad runner name $ro_name" ;; esac
case "$ro_len$env_len$seconds" in *[!0-9]* | '') fail "bad sizes or seconds" ;; esac
mkdir -p "$bin" "$sdir/cells" || fail "cannot create $sdir (disk full? df -h ~)"
stage="$sdir/.stage.$$"
(umask 077 && cat >"$stage") || fail "cannot write $stage (disk full? df -h ~)"
part() { tail -c +$(($1 + 1)) "$stage" | head -c "$2"; }
if [ ! -s "$bin/$ro_name" ]; then
    part 0 "$ro_len" >"$bin/.$ro_name.$$" && mv -f "$bin/.$ro_name.$$" "$bin/$ro_name" ||
        fail "cannot deploy $bin/$ro_name"
fi
if command -v sha256sum >/dev/null 2>&1; then
    want=${ro_name%.sh}
    want=${want##*.}
    got=$(sha256sum <"$bin/$ro_name" | cut -c1-12)
    [ "$got" = "$want" ] || fail "$bin/$ro_name holds content with sha256 $got…, not $want…: move it aside"
fi
(umask 077 && part "$ro_len" "$env_len" >"$sdir/cell.env") || fail "cannot write $sdir/cell.env"
rm -f "$stage" "$sdir/cells/smoke.state" "$sdir/cells/smoke.oom" "$sdir/cells/smoke.log" "$sdir/samples"
# The scratch {out} root of a smoke_seconds smoke's cell (SMOKE_OUT_DIR): emptied first,
# or the cell would resume from the last smoke's checkpoint and measure nothing.
rm -rf "$sdir/out" && mkdir -p "$sdir/out" || fail "cannot empty $sdir/out (df -h ~)"

# The pids of ROOT and its descendants, space-separated (from /proc: ps may be missing).
tree_pids() {
    local -A parent=()
    local d stat rest ppid p found=" $1 " grew=1
    for d in /proc/[0-9]*; do
        read -r stat <"$d/stat" 2>/dev/null || continue
        rest=${stat##*) }
        read -r _ ppid _ <<<"$rest"
        parent[${d#/proc/}]=$ppid
    done
    while [ "$grew" = 1 ]; do
        grew=0
        for p in "${!parent[@]}"; do
            case "$found" in *" $p "*) continue ;; esac
            case "$found" in *" ${parent[$p]} "*) found="$found$p " grew=1 ;; esac
        done
    done
    printf '%s' "$found"
}

smi=$(command -v nvidia-smi 2>/dev/null)
gpu_used() {  # the GPUs' memory used and total, MiB: "USED TOTAL"
    bounded 5 nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits 2>/dev/null |
        awk -F, '$1 + 0 == $1 { u += $1; t += $2 } END { printf "%d %d", u, t }'
}
base_used=0 total=0
[ -n "$smi" ] && read -r base_used total <<<"$(gpu_used)"

start=$(date +%s)
if command -v setsid >/dev/null 2>&1; then
    RGT_CELL_ENV="$sdir/cell.env" RGT_SMOKE=1 setsid bash "$bin/$ro_name" "$sdir" 0 smoke "$workdir" "$cmd" </dev/null >/dev/null 2>&1 &
else
    RGT_CELL_ENV="$sdir/cell.env" RGT_SMOKE=1 bash "$bin/$ro_name" "$sdir" 0 smoke "$workdir" "$cmd" </dev/null >/dev/null 2>&1 &
fi
pid=$!

peak_kib=0 peak_tree_mib=0 peak_used=0 samples=0 timed_out=0 pids=""
sample() {
    local p kib sum=0 vram=0 used line apid amem
    pids=$(tree_pids "$pid")
    for p in $pids; do
        kib=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$p/status" 2>/dev/null)
        case "$kib" in '' | *[!0-9]*) ;; *) sum=$((sum + kib)) ;; esac
    done
    [ "$sum" -gt "$peak_kib" ] && peak_kib=$sum
    if [ -n "$smi" ]; then
        while IFS=, read -r apid amem; do
            apid=${apid// /} amem=${amem// /}
            case "$apid$amem" in '' | *[!0-9]*) continue ;; esac
            case " $pids " in *" $apid "*) vram=$((vram + amem)) ;; esac
        done <<<"$(bounded 5 nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null | head -n 256)"
        [ "$vram" -gt "$peak_tree_mib" ] && peak_tree_mib=$vram
        read -r used _ <<<"$(gpu_used)"
        case "${used:-}" in '' | *[!0-9]*) ;; *) [ "$used" -gt "$peak_used" ] && peak_used=$used ;; esac
    fi
    samples=$((samples + 1))
    printf '%s\n' "$samples" >"$sdir/samples"
}

stop_tree() {  # TERM the tree (the session too, with setsid), KILL it after 5 s
    local p n=0
    pids=$(tree_pids "$pid")
    kill -TERM -- "-$pid" 2>/dev/null
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
    kill -KILL -- "-$pid" 2>/dev/null
    for p in $pids; do kill -KILL "$p" 2>/dev/null; done
}

while kill -0 "$pid" 2>/dev/null; do
    sample
    if [ $(($(date +%s) - start)) -ge "$seconds" ]; then
        timed_out=1
        stop_tree
        break
    fi
    sleep 1
done
wait "$pid"
rc=$?
elapsed=$(($(date +%s) - start))
# ... and emptied after: a checkpoint saved there would fill the home disk for nothing.
rm -rf "$sdir/out"

emit rc "$rc"
emit timed_out "$timed_out"
emit seconds "$elapsed"
emit limit "$seconds"
emit samples "$samples"
emit rss_kib "$peak_kib"
emit smi "$smi"
emit vram_tree_mib "$peak_tree_mib"
emit gpu_used_mib "$peak_used"
emit gpu_base_mib "${base_used:-0}"
emit gpu_total_mib "${total:-0}"
# The cgroup's oom_kill counter before and after (run_one.sh's records): a rise is U9.
awk '{ print $1, $3 }' "$sdir/cells/smoke.oom" 2>/dev/null | head -n 4 | lines oomrec
log="$sdir/cells/smoke.log"
grep -a -m 3 -E 'CUDA out of memory|OutOfMemoryError' "$log" 2>/dev/null | head -c 4096 | lines oom
grep -av '^\[rgt ' "$log" 2>/dev/null | tail -n 20 | head -c 8192 | lines log
# Under torchrun the tail is its ChildFailedError banner; the worker's own error is its
# last line before torchrun's "failed (exitcode: N)" line (queue_ctl.sh's torchrun_cause).
tail -c 65536 "$log" 2>/dev/null | tr '\r\t' '\n ' | awk '
    /multiprocessing\/api\.py.*failed \(exitcode/ { if (w == "") w = prev }
    NF && !/^\[rgt / { prev = $0 }
    END { if (w != "") print substr(w, 1, 300) }' | lines worker
emit end 1
