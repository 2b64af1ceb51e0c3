"""A cell following the checkpoint recipe on loopback boxes (docs/spot.md): it loads the
latest checkpoint on start and prints the step it loaded, writes each checkpoint
atomically with a sidecar naming its SHA-256, and can be held still by the test. Used by
the resume move's service and dialog tests."""

from __future__ import annotations

import json

from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.services.pull import pull_host
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.resume import plan_resume_move
from rgt_tui.services.verify.run import verify_host
from support.pulls import fast
from support.queues import wait_view
from support.waiting import wait_for

# The recipe (docs/spot.md): load the latest checkpoint on start, write each one
# atomically (tmp → fsync → rename), and a sidecar naming the checkpoint's SHA-256.
TRAIN = r"""
import hashlib, json, os, sys, time
out, total = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
ck, side = os.path.join(out, "checkpoint.bin"), os.path.join(out, "checkpoint.json")
def save(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data); f.flush(); os.fsync(f.fileno())
    os.replace(tmp, path)
step = 0
if os.path.exists(ck):
    with open(ck, "rb") as f:
        step = int(f.read().split()[1])
    print(f"loaded step {step} from {ck}", flush=True)
else:
    print("fresh start: no checkpoint", flush=True)
home = os.environ["HOME"]
with open(os.path.join(home, "ck.pid"), "w") as f:
    f.write(str(os.getpid()))
hold = os.path.join(home, "hold")
while step < total:
    time.sleep(1.0)
    if os.path.exists(hold):
        open(os.path.join(home, "held"), "w").close()
        while True:
            time.sleep(0.05)
    step += 1
    data = f"step {step}\n".encode() + b"w" * 8192
    save(ck, data)
    save(side, json.dumps({"step": step, "sha256": hashlib.sha256(data).hexdigest()}).encode())
print(f"done at step {step}", flush=True)
"""
CELL = 'exec python3 -S "$HOME/cells/ck_train.py" "$2" 6'


def give_cell(qf, name: str) -> str:
    (qf.root(name) / "cells").mkdir(parents=True, exist_ok=True)
    (qf.root(name) / "cells" / "ck_train.py").write_text(TRAIN)
    return qf.cell_script("ck", CELL, name=name)


async def run_until_held(qf) -> int:
    """Launch box1's queue, let ck checkpoint at least twice, hold it; its step."""
    line = give_cell(qf, "box1")
    give_cell(qf, "box2")
    qf.write_queue(f"{line} t 1\n", "box1")
    qf.write_queue("", "box2")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="ck to run")
    side = qf.root("box1") / "results" / "ck" / "checkpoint.json"

    def stepped() -> bool:
        try:
            return json.loads(side.read_text())["step"] >= 2
        except (OSError, ValueError):
            return False

    await wait_for(stepped, 60, "two checkpoints on box1")
    (qf.root("box1") / "hold").touch()
    await wait_for((qf.root("box1") / "held").exists, 30, "ck to stop writing")
    return json.loads(side.read_text())["step"]


async def pull_verify(qf, name: str):
    host = qf.host(name)
    transport = qf.transport(name)
    try:
        pulled = await pull_host(host, qf.fleet.results_dir, transport, options=fast())
        assert pulled.ok, pulled.failed
        return await verify_host(host, qf.fleet.results_dir, transport=transport)
    finally:
        await transport.close()


def cell_log(qf, name: str) -> str:
    """Every log of cell ck on box ``name`` (both halves of a resume, on their boxes)."""
    logs = list((qf.qdir(name)).rglob("ck*.log"))
    return "".join(p.read_text(errors="replace") for p in logs)


def loaded_steps(log: str) -> list[int]:
    """The steps the run said it loaded ("loaded step K from …"), in order."""
    return [int(line.split()[2]) for line in log.splitlines() if line.startswith("loaded step")]


async def plan_move(qf, cell: str = "ck", **kw):
    """The resume move of ``cell`` from box1 to box2, planned over fresh connections."""
    t1, t2 = qf.transport("box1"), qf.transport("box2")
    try:
        return await plan_resume_move(qf.fleet, qf.host("box1"), cell, "box2", t1, t2, **kw)
    finally:
        await t1.close()
        await t2.close()
