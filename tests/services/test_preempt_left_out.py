"""A preempted cell whose newest checkpoint failed verify (UX trial H11): the preemption
line names the last *verified* step, never "interrupted at" it, and the unattended move
says which newer checkpoint it left out and why.

Two loopback boxes with real torch files: box1's cell kept ``step-21.pt`` and
``step-22.pt``; the newest has bytes zeroed (a damaged write). Both are pulled and
verified for real, box1 is preempted (its server stops), and the ``on_preempt`` driver
moves the cell to box2 with the real resume move.
"""

from __future__ import annotations

import os
import time

import torch
from support.machine import kill_processes_under
from support.queues import SCRIPT_RUN, QueueFleet
from support.resume_cell import pull_verify

from rgt_tui.domain.preemption import LOST, Preemption, hhmm, preemption_line
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.runtime.preemption import cell_checkpoints
from rgt_tui.services.watch.drivers.on_preempt import OnPreempt
from rgt_tui.services.watch.events import WatchEvent


def moves_to_box2(qf: QueueFleet) -> None:
    """box1 made interruptible, moving to box2 when preempted (as the user writes it)."""
    path = qf.loopback.hosts_file
    head, *entries = path.read_text().split("[[hosts]]")
    for i, entry in enumerate(entries):
        if 'name = "box1"\n' in entry:
            entries[i] = (
                entry.rstrip("\n")
                + '\ninterruptible = true\non_preempt = "move"\nspare = ["box2"]\n\n'
            )
    path.write_text(head + "[[hosts]]".join(["", *entries]))


async def test_the_line_and_the_move_name_the_verified_step_and_the_newer_one_left_out(
    make_queue_fleet,
):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    moves_to_box2(qf)
    line = qf.cell_script("solo1", 'echo "resumed in $2"; ls "$2"', name="box1")
    qf.cell_script("solo1", 'echo "resumed in $2"; ls "$2"', name="box2")
    qf.write_queue(f"{line} t 1\n", "box1")
    qf.write_queue("", "box2")
    out = qf.root("box1") / "results" / "solo1"
    out.mkdir(parents=True)
    torch.save({"step": 21, "w": torch.zeros(100)}, out / "step-21.pt")
    whole = (out / "step-21.pt").read_bytes()
    (out / "step-22.pt").write_bytes(whole[:64] + bytes(136) + whole[200:])
    now = time.time()
    for age, name in ((20, "step-21.pt"), (10, "step-22.pt")):
        os.utime(out / name, (now - age, now - age))
    report = await pull_verify(qf, "box1")
    checks = {c.path: c.status for c in report.checks}
    assert checks["solo1/step-21.pt"] == "verified" and checks["solo1/step-22.pt"] == "corrupt"
    await qf.loopback.box("box1").stop()  # preempted: the box stops answering
    kill_processes_under(qf.root("box1"))

    ck, _ = cell_checkpoints(qf.fleet, qf.host("box1"), "solo1")
    assert ck is not None and ck.path == "step-21.pt" and ck.step == 21
    named = Preemption("box1", LOST, now - 5, "boot/1", "solo1", ck, ck.step)
    assert preemption_line(named) == (
        f"preempted at ~{hhmm(now - 5)} (unreachable past its grace): cell solo1 interrupted; "
        f"last verified step 21, from {hhmm(ck.mtime)}; newer step-22.pt (verify found it "
        "corrupt) left out"
    )

    told: list[WatchEvent] = []
    connections = FleetConnections(qf.fleet.hosts)
    driver = OnPreempt(qf.fleet, connections, emit=told.append)
    try:
        await driver.on_preempted(qf.host("box1"), named)
    finally:
        await connections.close_all()
    (moved,) = [e for e in told if e.kind == "preempt_action"]
    assert moved.title == "box1: moved", moved
    assert moved.body.startswith(
        f"moved solo1 to box2: it resumes from step-21.pt from {hhmm(ck.mtime)}; "
        "step-22.pt (verify found it corrupt) left out, never pushed; "
        "box2's queue launched from cell 0 (solo1)"
    ), moved.body
