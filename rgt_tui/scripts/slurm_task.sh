#!/usr/bin/env bash
# rgt-tui: one task of a host's Slurm job array — runs cell $SLURM_ARRAY_TASK_ID of
# ~/.rgt/queue/cells.tsv through run_one.sh (issue 32; rgt_tui/services/slurm/launch.py).
#
#   sbatch --array=<indices>%<max_parallel> ... slurm_task.sh QUEUE_DIR RUN_ONE WORKDIR
#
# Deployed content-addressed as ~/.rgt/bin/slurm_task.<sha256[:12]>.sh and never
# overwritten: a pending task reads the bytes it was submitted with (U2).
#
# Task k runs line k of cells.tsv, only a complete line whose index is k (the file is
# append-only: index k always names the same cell). The cell's records are run_one.sh's
# (cells/NAME.state, .log, .oom, as on any host); this script adds:
#   cells/NAME.state      signal <unix_ts> TERM   each TERM the cell was sent (the
#                                                  walltime's warning, a scancel, a
#                                                  preemption)
#   cells/NAME.slurm.out  a hard link to this task's Slurm output (slurm/<job>_<k>.out:
#                         Slurm cannot name a cell in --output), where slurmstepd writes
#                         what it did to the task ("Exceeded job memory limit", SLURM4)
#
# The cell gets exactly one TERM, checkpoints at its next safe point and exits (SLURM1:
# work in a signal handler races the training step); this script records it, waits for
# the cell and exits with its code:
#   - the walltime's warning is USR1 to this shell alone (--signal=B:USR1@<lead>): the
#     trap passes it on to the cell's own process as TERM;
#   - a scancel or a preemption TERMs every process of the step, the cell's too: the
#     trap only records it. Passing it on as well was a second TERM, which could land
#     after the cell's handler had run, as its interpreter exited, and end a cell that
#     had checkpointed with 143 instead of 0.
#
# No srun: the cell runs in the batch step, which already holds the allocation's CPUs
# and GPUs (CUDA_VISIBLE_DEVICES is set for it). A cell that starts its own `srun` gets
# SRUN_CPUS_PER_TASK, since srun stopped reading the allocation's since 22.05 (SLURM3);
# it must pass its GPU request (--gres / --gpus-per-task) itself.
#
# A host with nodes = N (issue 41) passes NPROC_PER_NODE and MASTER_PORT too:
#
#   sbatch --array=... --nodes=N --ntasks-per-node=1 ... slurm_task.sh QUEUE_DIR RUN_ONE WORKDIR NPROC PORT
#
# The task is then one job over N nodes, and the cell runs under `srun` on each: one
# torchrun agent per srun task. Exported for the template's "$RGT_*" references
# (services/queue/slurm/sbatch.py's nodes_template): RGT_NNODES (srun's task count:
# N on a cluster, where --ntasks-per-node=1), RGT_NPROC_PER_NODE, RGT_MASTER_ADDR (the
# allocation's first node, its NodeAddr), RGT_MASTER_PORT (PORT, or 20000 + job id %
# 20000 when 0: two jobs sharing a first node do not collide), and in each task
# RGT_NODE_RANK (its SLURM_PROCID). srun --kill-on-bad-exit ends every rank when one
# fails (MN3); TERM to srun reaches every rank.
set -u
# The walltime's warning may come early (SLURM2), before the cell started; USR1 would end
# this shell. One trap for the whole script, never replaced: a USR1 pending when its trap
# was changed was dropped by bash (seen twice in CI: no `signal` record, the cell never
# told, the task left to its walltime). Before the cell starts it is only noted. A TERM
# that early keeps its default: the task is cancelled before its cell started.
#
# No `$(...)` below this line: bash 5.2 re-parses a `$(...)` each time it expands one,
# and a trap that comes due then is parsed as if inside it — "trap: unexpected EOF while
# looking for matching `)'" — and is lost: the warning never reaches the cell (seen in
# CI; tests/services/test_slurm_task_signals.py). Backquotes are not re-parsed; printf -v
# and %(...)T need no substitution at all.
early_warn=0 started=0
on_usr1() {
    if [ "$started" = 1 ]; then on_signal warn; else early_warn=1; fi
}
trap on_usr1 USR1

qdir=${1:-} run_one=${2:-} workdir=${3:-} nproc=${4:-} port=${5:-}
k=${SLURM_ARRAY_TASK_ID:-}
tsv="$qdir/cells.tsv"

say() { printf '[rgt %(%F %T)T] %s\n' -1 "$*"; }

if [ -z "$qdir" ] || [ -z "$run_one" ] || [ -z "$workdir" ]; then
    say "usage: sbatch --array=... slurm_task.sh QUEUE_DIR RUN_ONE WORKDIR"
    exit 2
fi
case "$k" in
    '' | *[!0-9]*)
        say "not a job array task (SLURM_ARRAY_TASK_ID='$k'): rgt-tui submits this script with --array"
        exit 2
        ;;
esac

# Line K (0-based) of cells.tsv into $line, only when complete (a line being appended
# has no newline yet, and read then fails).
cell_line() {
    local i=0 l
    [ -r "$tsv" ] || return 1
    while IFS= read -r l; do
        if [ "$i" -eq "$1" ]; then
            line=$l
            return 0
        fi
        i=$((i + 1))
    done <"$tsv"
    return 1
}

line=""
if ! cell_line "$k"; then
    say "task $k: no complete line $((k + 1)) in $tsv — the array names a cell the box does not hold"
    exit 3
fi
IFS=$'\t' read -r idx name cmd <<<"$line"
if [ "${idx:-}" != "$k" ] || [ -z "${name:-}" ] || [ -z "${cmd:-}" ]; then
    say "task $k: line $((k + 1)) of $tsv is not cell $k (got index '${idx:-}'): the file was edited; not running it"
    exit 3
fi
case "$name" in
    . | .. | */* | *[[:cntrl:]]*)
        say "task $k: bad cell name in $tsv"
        exit 3
        ;;
esac
state="$qdir/cells/$name.state"
mkdir -p "$qdir/cells" || exit 125

# A cell the user took off this box (queue move / skip) is never run.
last="" signalled=0
if [ -r "$state" ]; then
    while IFS= read -r rec; do
        case "$rec" in
            start\ *) last=$rec signalled=0 ;;
            signal\ *) signalled=1 ;;
            end\ * | skip\ * | retry\ *) last=$rec ;;
        esac
    done <"$state"
fi
if [ "${last%% *}" = skip ]; then
    say "cell $k $name skipped: ${last#skip * }"
    exit 0
fi
# Nor one that ran to its end (exit 0) since its last retry: Slurm runs a task again
# after `scontrol requeue` or a node failure past run_one's end record, and the cell
# retrained over results already pulled (h593 #4). A retry (its `retry` record) runs it,
# and so does a requeue of an attempt that was sent TERM: a cell that checkpoints on the
# signal and exits 0 (SLURM1) has not finished, its requeue resumes it (review h594 #2).
case "$signalled$last" in
    0end\ *\ 0)
        say "cell $k $name finished already (exit 0): a requeued task does not run it again; rgt-tui queue retry runs it on purpose"
        exit 0
        ;;
esac

# This task's Slurm output under the cell's name. ln -f replaces the name (never
# writes through it); the previous attempt's output stays under slurm/.
out="$qdir/slurm/${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-0}}_$k.out"
if [ -f "$out" ] && [ ! -L "$out" ]; then
    ln -f -- "$out" "$qdir/cells/$name.slurm.out" 2>/dev/null ||
        say "cannot link $out to $qdir/cells/$name.slurm.out (another filesystem?): read it there"
fi

if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
    export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK  # SLURM3
fi
say "cell $k $name: array job ${SLURM_ARRAY_JOB_ID:-?} task $k (job ${SLURM_JOB_ID:-?}) on ${HOSTNAME:-?}"

if [ -n "$nproc" ]; then
    case "$nproc$port" in *[!0-9]*)
        say "NPROC_PER_NODE '$nproc' and MASTER_PORT '$port' must be numbers"
        exit 2
        ;;
    esac
    first=`scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null | head -n 1`
    # The address Slurm itself reaches the node at (a NodeName need not resolve).
    addr=`scontrol show node "$first" 2>/dev/null | tr ' ' '\n' | sed -n 's/^NodeAddr=//p' | head -n 1`
    [ "${port:-0}" -gt 0 ] || port=$((20000 + ${SLURM_JOB_ID:-0} % 20000))
    export RGT_NNODES=${SLURM_NTASKS:-${SLURM_NNODES:-1}} RGT_NPROC_PER_NODE=$nproc
    export RGT_MASTER_ADDR=${addr:-$first} RGT_MASTER_PORT=$port
    say "cell $k $name: $RGT_NNODES ranks on ${SLURM_JOB_NODELIST:-?}, rendezvous $RGT_MASTER_ADDR:$RGT_MASTER_PORT"
    printf -v step 'export RGT_NODE_RANK=$SLURM_PROCID; %s' "$cmd"
    printf -v step '%q' "$step"
    cmd="srun --kill-on-bad-exit=1 bash -c $step"
fi

# The start records before this task's: the cell's own pid is on a later one.
starts_before=`awk '$1 == "start" { n++ } END { print n + 0 }' "$state" 2>/dev/null || echo 0`
term=0 passed=0 signalled=0

# Into $pid: the pid run_one.sh recorded for this task's attempt (the cell's command
# itself), empty while there is none.
cell_pid() {
    pid=`awk -v n="$starts_before" '$1 == "start" && NF == 4 { i++; if (i > n) p = $4 } END { print p }' \
        "$state" 2>/dev/null`
}

pass_term() {
    local pid
    cell_pid
    [ -n "$pid" ] || return 1
    kill -TERM "$pid" 2>/dev/null
    passed=1
}

# SLURM1: record, pass on (the walltime's USR1 only), nothing else. The cell decides
# when it is safe to stop.
on_signal() {  # warn | term
    local pid
    printf 'signal %(%s)T TERM\n' -1 >>"$state"
    signalled=1
    # A TERM before run_one.sh recorded the cell's pid may have come before the cell's
    # process existed: passed on once the pid is there (the loop below).
    cell_pid
    if [ "$1" = warn ] || [ -z "$pid" ]; then
        term=1
        pass_term
    fi
}
trap 'on_signal term' TERM

bash "$run_one" "$qdir" "$k" "$name" "$workdir" "$cmd" &
child=$!
started=1
[ "$early_warn" = 0 ] || on_signal warn
while :; do
    # TERM came before run_one.sh recorded the cell's pid: pass it on once it is there.
    if [ "$term" = 1 ] && [ "$passed" = 0 ] && ! pass_term && kill -0 "$child" 2>/dev/null; then
        sleep 0.1
        continue
    fi
    wait "$child"
    code=$?
    # A trapped signal ends `wait` early (code > 128) while the cell still runs.
    kill -0 "$child" 2>/dev/null || break
done
if [ "$signalled" = 1 ]; then
    # The wait the trap cut short may have missed the exit status: the cell's own end
    # record (run_one.sh) has it.
    recorded=`awk -v n="$starts_before" '$1 == "start" { i++ } $1 == "end" && i > n { c = $3 } END { print c }' \
        "$state" 2>/dev/null`
    case "$recorded" in '' | *[!0-9]*) ;; *) code=$recorded ;; esac
fi
exit "$code"
