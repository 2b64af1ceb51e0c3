# slurm_gpu.sh — one telemetry sample from inside a running array task's allocation
# (issue 32). Sent whole as `bash -c <script> slurm_gpu TASK LIMIT_S AGENT WORDS...`
# with the agent's source on stdin; srun passes stdin on to the step's one task.
#   TASK     <array job id>_<index>, squeue's %i. srun --jobid takes only a job's own
#            numeric id ("Invalid numeric value" for 12_3): for an array task that is
#            squeue's %A, resolved here.
#   LIMIT_S  seconds srun may take in all (a site that queues or hangs the step).
# Prints "rgt-node<TAB>NODE" then the agent's JSON line; on a refusal srun's own error
# lines go to stderr and the exit status is srun's (124: it ran out of time).
# The step is `--overlap`: it shares the task's CPUs, memory and GRES instead of asking
# for its own (which a full allocation refuses: "Memory required by task is not
# available"); a step gets all the job's GPUs unless told otherwise (srun(1) --gres).
set -u
task=${1:-} limit=${2:-}
shift 2 || exit 2
case $task in
    "" | *[!0-9_]* | _* | *_ | *_*_*) echo "slurm_gpu: not an array task id: $task" >&2; exit 2 ;;
esac
case $limit in "" | *[!0-9]*) echo "slurm_gpu: bad time limit" >&2; exit 2 ;; esac
t() { if command -v timeout >/dev/null 2>&1; then timeout -k 5 "$@"; else shift; "$@"; fi; }

if ! line=$(t 20 squeue -h -r -j "$task" -o '%A|%T|%N' 2>&1); then
    echo "squeue -j $task: $(printf '%s' "$line" | tr '\n' ' ' | cut -c 1-300)" >&2
    exit 3
fi
line=$(printf '%s\n' "$line" | head -n 1 | cut -c 1-300)
id=${line%%|*}
rest=${line#*|}
state=${rest%%|*}
node=${rest#*|}
case $id in
    "" | *[!0-9]*) echo "squeue no longer lists task $task" >&2; exit 3 ;;
esac
printf 'rgt-node\t%s\t%s\n' "$node" "$state"
t "$limit" srun --jobid="$id" --overlap --ntasks=1 --nodes=1 --quiet "$@"
