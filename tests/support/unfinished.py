"""Unfinished work on a loopback queue box (issue 40): cell scripts that leave results or
a checkpoint, and the launch, pull and verify the gate tests go through."""

from __future__ import annotations

from rgt_tui.services.pull import pull_host
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.verify.run import verify_host
from support.queues import QueueFleet

# Cell scripts under SCRIPT_RUN ("bash {cfg} {name} {out} {task} {epochs}"): $2 is {out}.
# A cell's results: metrics that load as JSON.
METRICS = 'mkdir -p "$2" && echo \'{"acc": 0.9}\' > "$2/metrics.json"'
# A checkpoint that loads (a safetensors file: header length, header, data), written the
# way a training loop writes one at the end of an epoch.
CHECKPOINT = (
    'mkdir -p "$2" && python3 -S -c \'import json, struct, sys; '
    'h = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode(); '
    'open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(4))\' '
    '"$2/ckpt_epoch3.safetensors" && echo "epoch 3/300 saved"'
)
# A cell that leaves its results, then fails.
FAILING = f'{METRICS} && echo "loss is nan" && exit 3'


async def launch_queue(qf: QueueFleet) -> None:
    """Launch box1's queue (its preflight passes: the queue fleet acknowledges what a
    loopback box lacks)."""
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport)
        assert plan.ok, plan.problems
        await launch(plan, transport)
    finally:
        await transport.close()


async def pull_and_verify(qf: QueueFleet) -> None:
    """Pull box1's results and verify them (the gate's facts)."""
    transport = qf.transport()
    try:
        await pull_host(qf.host(), qf.fleet.results_dir, transport)
        await verify_host(qf.host(), qf.fleet.results_dir, transport=transport)
    finally:
        await transport.close()
