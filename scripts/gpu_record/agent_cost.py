"""The telemetry agent's own CPU per sample on a box (run where the GPU is, after
scripts/gpu_record/prepare.py .devrec): NVML, nvidia-smi every 3 samples (the default when
NVML is absent: python3 -S hides pynvml) and, for scale, one `nvidia-smi --query-gpu` per
poll, the way a patrol script asks. CPU seconds of the child processes, start-up
subtracted (a --count 1 run), several runs each.

    python3 scripts/gpu_record/agent_cost.py [.devrec] [--samples 200] [--runs 3]
"""

import argparse
import resource
import subprocess
import time

p = argparse.ArgumentParser()
p.add_argument("dir", nargs="?", default=".devrec")
p.add_argument("--samples", type=int, default=200)
p.add_argument("--runs", type=int, default=3)
args = p.parse_args()
with open(f"{args.dir}/agent.py", "rb") as source:
    agent = source.read()


def cpu_of(argv, stdin=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter() - t
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def agent_run(flags, count):
    argv = ["python3", *flags, "-u", "-", "--interval", "0.05", "--count", str(count)]
    return cpu_of(argv + ["--mount", "/", "--proc-every", "5"], agent)


print(f"{'source':<34} {'run':>3} {'ms CPU / sample':>16}")
for name, flags in (("agent, NVML", []), ("agent, nvidia-smi every 3rd", ["-S"])):
    for run in range(args.runs):
        start, _ = agent_run(flags, 1)
        total, _ = agent_run(flags, args.samples)
        per = (total - start) / (args.samples - 1) * 1000
        print(f"{name:<34} {run + 1:>3} {per:>16.2f}")
query = ["nvidia-smi", "--query-gpu=index,utilization.gpu,memory.used", "--format=csv,noheader"]
for run in range(args.runs):
    cpu = sum(cpu_of(query)[0] for _ in range(20)) / 20
    print(f"{'nvidia-smi per poll':<34} {run + 1:>3} {cpu * 1000:>16.2f}")
