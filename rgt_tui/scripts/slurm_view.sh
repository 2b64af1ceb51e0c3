# slurm_view.sh — the scheduler's view of this login node's queue, in one round trip
# (issue 32). Sent whole as `bash -c <script> slurm_view`; reads ~/.rgt/queue, writes
# nothing. Prints "key<TAB>value" lines, each bounded (the cluster's text is not ours):
#   now TS / user NAME
#   cell IDX<TAB>NAME            cells.tsv's index and name columns
#   jobs LINE                    slurm.jobs: <array id> <first> <last> <submit ts> <kind>
#   sq LINE / sq_err TEXT        squeue -r for those arrays: %i|%T|%r|%N|%M|%L
#   rq TASK<TAB>N<TAB>TS         a task Slurm requeued: its restart count, when (unix s)
#   acct LINE / acct_off TEXT    sacct for arrays squeue no longer lists (accounting on)
#   jc_loc PATH / jc LINE / jc_err TEXT   else the job-completion log's lines for them
#   oomout NAME<TAB>LINE         the cell's Slurm output ends with an OOM line (SLURM4)
#   mine COUNT<TAB>STATE         the user's tasks in the queue, by state
#   part LINE                    sinfo: %P|%a|%F (partition, avail, alloc/idle/other/total)
set -u
set -f
q="$HOME/.rgt/queue"
user=$(id -un 2>/dev/null)
printf 'now\t%s\nuser\t%s\n' "$(date +%s)" "$user"
# Every command answers within bounds: a hung slurmctld must not hang the poll.
t() { if command -v timeout >/dev/null 2>&1; then timeout 20 "$@"; else "$@"; fi; }

[ -r "$q/cells.tsv" ] && head -n 5000 "$q/cells.tsv" | cut -f 1,2 | cut -c 1-300 | sed 's/^/cell\t/'
ids=""
if [ -r "$q/slurm.jobs" ]; then
    tail -n 500 "$q/slurm.jobs" | cut -c 1-200 | sed 's/^/jobs\t/'
    ids=$(tail -n 500 "$q/slurm.jobs" | awk '$1 ~ /^[0-9]+$/ && length($1) < 21 { print $1 }' |
        awk '!seen[$0]++' | tail -n 200 | paste -sd, -)
fi

sq_ok=1
if [ -n "$ids" ] && command -v squeue >/dev/null 2>&1; then
    sq_rc=0
    sq=$(t squeue -h -r -j "$ids" -o '%i|%T|%r|%N|%M|%L' 2>&1) || sq_rc=$?
    if [ "$sq_rc" = 0 ]; then
        printf '%s\n' "$sq" | head -n 5000 | cut -c 1-400 | sed 's/^/sq\t/'
    elif printf '%s' "$sq" | grep -q 'Invalid job id'; then
        : # every array has left the queue: nothing pending or running
    else
        why=$(printf '%s' "$sq" | tr '\n\t' '  ' | cut -c 1-300)
        # A hung slurmctld: timeout killed squeue before it said anything (h593 #5 read
        # "squeue failed:  ·"), and each query after it waited its 20 s too.
        [ -n "${why// /}" ] || why="no answer within 20 s (exit $sq_rc): is slurmctld down or hung? scontrol ping says"
        printf 'sq_err\t%s\n' "$why"
        printf 'jc_err\tslurmctld did not answer: the job-completion log is unknown\n'
        sq_ok=0
    fi
fi
# Nothing more is asked of a controller that did not answer (its accounting would be read
# as every task gone).
if [ -n "$ids" ] && [ "$sq_ok" = 1 ] && command -v squeue >/dev/null 2>&1; then
    # Requeued tasks (SLURM1: preempted with PreemptMode=REQUEUE, a failed node, or
    # scontrol requeue): Slurm's restart count, and when it requeued them — a requeue
    # resets the submit time — as unix seconds. Only tasks restarted at least once.
    t squeue -h -r -j "$ids" -O 'JobArrayID:40,RestartCnt:12,SubmitTime:24' 2>/dev/null |
        head -n 5000 | awk '$2 ~ /^[0-9]+$/ && $2 > 0 && length($1) < 40 && length($2) < 10 { print $1, $2, $3 }' |
        head -n 500 | while read -r id n at; do
            ts=$(date -d "$at" +%s 2>/dev/null) || ts=-
            printf 'rq\t%s\t%s\t%s\n' "$id" "$n" "$ts"
        done
    # Arrays with an index squeue no longer lists: their end is in accounting.
    gone=$(printf '%s\n' "${sq:-}" | awk -F'|' '{ print $1 }' | tail -n 5000 |
        awk -v ids="$ids" -v f="$q/slurm.jobs" 'BEGIN { n = split(ids, a, ","); for (i = 1; i <= n; i++) want[a[i]] = 1 }
            { split($1, p, "_"); seen[p[1] "_" p[2]] = 1 }
            END { while ((getline line < f) > 0) {
                      split(line, x, " "); if (!(x[1] in want)) continue
                      for (i = x[2]; i <= x[3] && i - x[2] < 100000; i++)
                          if (!((x[1] "_" i) in seen)) { miss[x[1]] = 1; break } }
                  for (j in miss) print j }' | paste -sd, -)
    if [ -n "$gone" ]; then
        acct=""
        if command -v sacct >/dev/null 2>&1; then
            if acct=$(t sacct -n -P -X -j "$gone" -o JobID,State,ExitCode,Elapsed,NodeList 2>&1) &&
                ! printf '%s' "$acct" | grep -q 'accounting storage is disabled'; then
                printf '%s\n' "$acct" | head -n 10000 | cut -c 1-300 | sed 's/^/acct\t/'
            else
                printf 'acct_off\t%s\n' "$(printf '%s' "$acct" | head -n 1 | cut -c 1-200)"
                acct=""
            fi
        fi
        if [ -z "$acct" ]; then
            conf=$(t scontrol show config 2>/dev/null) || conf=""
            ctype=$(printf '%s\n' "$conf" | awk -F' = ' '$1 ~ /^JobCompType/ { print $2 }')
            loc=$(printf '%s\n' "$conf" | awk -F' = ' '$1 ~ /^JobCompLoc/ { print $2 }')
            printf 'jc_loc\t%s %s\n' "$(printf '%s' "$ctype" | cut -c 1-60)" "$(printf '%s' "$loc" | cut -c 1-300)"
            if [ -z "$conf" ]; then
                # slurmctld did not answer: where the cluster logs job ends is unknown,
                # not "nowhere".
                printf 'jc_err\tscontrol show config did not answer: the job-completion log is unknown\n'
            elif [ "$ctype" != "jobcomp/filetxt" ]; then
                printf 'jc_err\tthe cluster keeps no job-completion log (JobCompType %s)\n' "${ctype:-unset}"
            elif [ ! -f "$loc" ] || [ ! -r "$loc" ]; then
                printf 'jc_err\tthe job-completion log %s is not readable by %s\n' "$(printf '%s' "$loc" | cut -c 1-300)" "$user"
            else
                # The last 32 MiB only; one line per task (its last), keys that matter only.
                # A line with no ArrayJobId whose JobId is an array's is that array's
                # tasks that never split off (a pending array scancelled whole): kept,
                # its array fields empty.
                tail -c 33554432 "$loc" | grep -aF "UserId=$user(" |
                    awk -v ids="$gone" 'BEGIN { n = split(ids, a, ","); for (i = 1; i <= n; i++) want[a[i]] = 1 }
                    { delete v; for (i = 1; i <= NF; i++) { k = index($i, "=")
                          if (k > 1) v[substr($i, 1, k - 1)] = substr($i, k + 1, 120) }
                      if (v["ArrayJobId"] == "" && (v["JobId"] in want)) v["ArrayTaskId"] = ""
                      else if (!(v["ArrayJobId"] in want)) next
                      key = v["ArrayJobId"] "_" v["ArrayTaskId"]
                      if (v["ArrayJobId"] == "") key = v["JobId"] "_"
                      if (!(key in last)) order[++m] = key
                      last[key] = "JobId=" v["JobId"] " JobState=" v["JobState"] " NodeList=" v["NodeList"] \
                          " StartTime=" v["StartTime"] " EndTime=" v["EndTime"] " ExitCode=" v["ExitCode"] \
                          " ArrayJobId=" v["ArrayJobId"] " ArrayTaskId=" v["ArrayTaskId"] }
                    END { for (i = 1; i <= m && i <= 20000; i++) print "jc\t" last[order[i]] }'
            fi
        fi
    fi
fi

# The cells whose Slurm output (cells/NAME.slurm.out) ends with slurmstepd's OOM line:
# only its last 16 KiB, only a plain file (never a link out of the folder).
[ -r "$q/cells.tsv" ] && [ -n "$ids" ] && head -n 5000 "$q/cells.tsv" | cut -f 2 | while IFS= read -r name; do
    case "$name" in '' | */* | .*) continue ;; esac
    f="$q/cells/$name.slurm.out"
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    line=$(tail -c 16384 "$f" 2>/dev/null | grep -a -e 'Exceeded job memory limit' -e 'oom-kill event' \
        -e 'oom_kill event' | tail -n 1 | tr '\t\r' '  ' | cut -c 1-300)
    [ -n "$line" ] && printf 'oomout\t%s\t%s\n' "$name" "$line"
done

[ "$sq_ok" = 1 ] || exit 0
if command -v squeue >/dev/null 2>&1 && [ -n "$user" ]; then
    t squeue -h -r -u "$user" -o '%T' 2>/dev/null | head -n 100000 | sort | uniq -c |
        head -n 30 | awk '{ printf "mine\t%s\t%s\n", $1, substr($2, 1, 30) }'
fi
command -v sinfo >/dev/null 2>&1 && t sinfo -h -o '%P|%a|%F' 2>/dev/null | head -n 100 | cut -c 1-200 | sed 's/^/part\t/'
exit 0
