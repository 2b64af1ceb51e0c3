"""Issue 40 end to end: an interruptible box preempted under a real ``watch``, and its
cell moved to the spare unattended, once.

Two real loopback boxes; box1 is an interruptible vast.ai (or RunPod) box with
``on_preempt = "move"`` and ``spare = ["box2"]``. Its cell follows the checkpoint recipe
(``support.resume_cell``: a checkpoint every second, the step it loaded printed on
start); it is pulled and verified for real. A real ``Watcher`` (its real monitors: the
agent on each box, the queue polls, the drivers) watches the fleet while box1 is
preempted:

- vast.ai style: the box's server stops and every process of its user dies at once;
- RunPod style: TERM to the cell, the box's telemetry still answering in its grace (it
  sees the cell end), then KILL and the box gone.

The Watcher names the preemption past the grace, moves the cell to box2 (the resume
move: the verified checkpoint pushed, box2's queue launched), and box2's run prints the
verified step it loaded. A second Watcher over the same journal (a ``watch`` restart)
names it again and moves nothing. box1's teardown gate is locked before the move, and
once box1 answers again (the paused vast.ai box resumed) the queue file's ``#moved-to``
line replaces the cell's unfinished line: the gate waits only for its typed name.

The blip floor (120 s in production) and the RunPod grace are the PreemptionWatch's
constructor parameters here, so nothing waits minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator

from support.machine import kill_processes_under
from support.queues import QUEUE_PREFLIGHT_ACK, SCRIPT_RUN, QueueFleet, wait_view
from support.resume_cell import cell_log, loaded_steps, pull_verify, run_until_held
from support.waiting import wait_for

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.preemption import hhmm
from rgt_tui.domain.queue_state import FINISHED, SKIPPED
from rgt_tui.domain.units import fmt_duration
from rgt_tui.paths import journal_dir
from rgt_tui.services.journal import journal_for
from rgt_tui.services.runtime.preemption import PreemptionWatch, preempt_dir
from rgt_tui.services.teardown import GateReport, check_gate
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.watcher import Watcher

FLOOR_S = 3.0  # the network-blip floor (BLIP_S, 120 s in production): a loopback box never blips
RUNPOD_GRACE_S = 5.0  # the runpod profile's spot_grace_s, given as the parameter it is


def interruptible(qf: QueueFleet, profile: str) -> Fleet:
    """box1 of ``qf`` made an interruptible ``profile`` box that moves to box2 when
    preempted; samples every 0.2 s. The fleet file as the user would write it."""
    path = qf.loopback.hosts_file
    head, *entries = path.read_text().split("[[hosts]]")
    for i, entry in enumerate(entries):
        if 'name = "box1"\n' in entry:
            entry = entry.replace('profile = "generic-ssh"', f'profile = "{profile}"')
            entries[i] = (
                entry.rstrip("\n")
                + '\ninterruptible = true\non_preempt = "move"\nspare = ["box2"]\n\n'
            )
    path.write_text("[fleet]\npoll_seconds = 0.2\n\n" + head + "[[hosts]]".join(["", *entries]))
    # A provider's profile keeps durable data elsewhere than this machine's folder.
    qf.set_preflight_ack((*QUEUE_PREFLIGHT_ACK, "durable"), "box1")
    return qf.fleet


@contextlib.asynccontextmanager
async def watching(fleet: Fleet, grace_s: float | None = None) -> AsyncIterator[Watcher]:
    """``rgt-tui watch`` over ``fleet`` (every driver), its preemption floor ``FLOOR_S``
    and, given, every interruptible host's grace ``grace_s``; stopped on the way out."""
    watcher = Watcher(fleet, queue_poll_s=0.2, tick_s=0.2)
    watcher.runtime.preemptions = PreemptionWatch(
        fleet,
        memory_dir=preempt_dir(journal_dir(fleet.path)),
        blip_s=FLOOR_S,
        grace_s=None if grace_s is None else (lambda host: grace_s),
    )
    task = asyncio.create_task(watcher.run())
    try:
        yield watcher
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def told(watcher: Watcher, kind: str) -> list[WatchEvent]:
    return [e for e in watcher.told if e.kind == kind]


def said(watcher: Watcher) -> str:
    """What the Watcher told, for a failure's message."""
    return "\n".join(f"{e.kind}: {e.title}: {e.body}" for e in watcher.told)


def running_cell(watcher: Watcher, host: str = "box1") -> str | None:
    update = watcher.latest.get(host)
    snap = update.snapshot if update is not None else None
    if update is None or update.connection.status != "connected" or snap is None:
        return None
    return snap.cell


async def gate(qf: QueueFleet, fleet: Fleet) -> GateReport:
    transport = qf.transport("box1")
    try:
        return await check_gate(fleet, fleet.host("box1"), transport, journal_for(fleet))
    finally:
        await transport.close()


def cond(report: GateReport, key: str) -> list[str]:
    return [c.evidence for c in report.conditions if c.key == key]


async def pulled_and_watched(qf: QueueFleet, profile: str) -> tuple[Fleet, int]:
    """box1 made interruptible, its cell run until it has checkpointed twice, then held
    (no new write), pulled and verified; the verified checkpoint's step."""
    fleet = interruptible(qf, profile)
    await run_until_held(qf)
    verified = await pull_verify(qf, "box1")
    # Its files verify; the cell still runs, so the roster does not count it yet.
    assert verified.problems == ("cell ck missing: running: counted once it is done",)
    step = json.loads((fleet.results_dir / "box1" / "ck" / "checkpoint.json").read_text())["step"]
    assert step >= 2
    return fleet, step


async def moved_once(qf: QueueFleet, fleet: Fleet, watcher: Watcher, step: int) -> None:
    """The Watcher named box1's preemption and moved ck to box2, which resumed it from
    the verified ``step``."""
    (moved,) = await wait_for(
        lambda: told(watcher, "preempt_action"), 90, "the move", show=lambda: said(watcher)
    )
    assert moved.body.startswith("moved ck to box2: it resumes from checkpoint.bin"), moved.body
    # ux-b #1: the work repeated runs from the verified checkpoint to the preemption
    # (the box's last answer), not to the move a grace later.
    p = watcher.runtime.preemptions.current["box1"]
    assert p.checkpoint is not None
    repeats = fmt_duration(max(0.0, p.at - p.checkpoint.mtime))
    assert f"(repeats ~{repeats} of work, to the preemption at ~{hhmm(p.at)})" in moved.body
    (named,) = told(watcher, "preempted")
    assert "cell ck interrupted" in named.body, named.body
    assert qf.queue_file("box1").read_text().startswith("#moved-to box2: cells/ck.sh")
    there = await wait_view(qf, lambda v: v.state == FINISHED, name="box2", what="box2's run")
    assert [c.name for c in there.cells] == ["ck"]
    log = cell_log(qf, "box2")
    assert loaded_steps(log) == [step] and step > 0, log  # the verified step, loaded
    assert "done at step 6" in log


async def restart_moves_nothing(qf: QueueFleet, fleet: Fleet, grace_s: float | None) -> None:
    """``watch`` restarted over the same journal, box1 still gone: the preemption is named
    again from what was kept, nothing moves a second time, and nothing is told again."""
    queued = qf.queue_file("box2").read_text()
    async with watching(fleet, grace_s) as again:
        await wait_for(
            lambda: (p := again.runtime.preemptions.current.get("box1")) is not None and p.named,
            60,
            "the preemption named again",
        )
        await wait_for(lambda: not again._side, 60, "on_preempt to have answered")
        await again.check_now()
        assert told(again, "preempt_action") == []
        assert told(again, "preempted") == []  # ux-b #7: told by the first watch, not again
    assert qf.queue_file("box2").read_text() == queued  # ck queued on box2 once
    claims = json.loads((journal_dir(fleet.path) / "preempt" / "claims" / "box1.json").read_text())[
        "claims"
    ]
    assert len(claims) == 1 and claims[0].startswith("move:preempted:box1:"), claims


async def gate_opens_after_the_move(qf: QueueFleet, fleet: Fleet) -> None:
    """box1 answers again (its server back, its processes gone): the cell's line is the
    move, not unfinished work; only the typed name is missing."""
    await qf.loopback.box("box1").start()
    # box1's view reads the queue file's #moved-to record: ck moved, not unfinished there.
    view = await wait_view(qf, lambda v: v.cells[0].status == SKIPPED, what="ck moved")
    assert [c.name for c in view.cells] == ["ck"] and view.cells[0].note.startswith("moved")
    report = await gate(qf, fleet)
    assert cond(report, "unfinished") == [], report.conditions
    assert cond(report, "moved") == [
        "ck moved to box2 (the queue file's #moved-to; box2's queue file holds it)"
    ]
    assert report.ready_but_confirmation, [c for c in report.conditions if not c.ok]


async def test_vastai_preemption_moves_the_cell_to_the_spare_once_under_watch(
    make_queue_fleet,
):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    fleet, step = await pulled_and_watched(qf, "vastai")
    before = await gate(qf, fleet)
    assert not before.ready_but_confirmation  # ck still runs on box1
    assert not [c for c in before.conditions if c.key == "idle"][0].ok

    async with watching(fleet) as watcher:
        await wait_for(lambda: running_cell(watcher) == "ck", 60, "box1's agent to see ck")
        # vast.ai: an outbid box is paused at once, no signal.
        await qf.loopback.box("box1").stop()
        kill_processes_under(qf.root("box1"))
        await moved_once(qf, fleet, watcher, step)

    await restart_moves_nothing(qf, fleet, None)
    await gate_opens_after_the_move(qf, fleet)


async def test_runpod_preemption_term_then_kill_moves_the_cell_to_the_spare_once(
    make_queue_fleet,
):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    fleet, step = await pulled_and_watched(qf, "runpod")

    async with watching(fleet, RUNPOD_GRACE_S) as watcher:
        await wait_for(lambda: running_cell(watcher) == "ck", 60, "box1's agent to see ck")
        # RunPod: TERM, the box still up for its grace: its agent sees the cell end
        # (the box's last answers name no cell), then KILL and the box gone.
        os.kill(int((qf.root("box1") / "ck.pid").read_text()), signal.SIGTERM)
        await wait_for(
            lambda: running_cell(watcher) is None,
            RUNPOD_GRACE_S,
            "box1's agent to see ck end within the grace",
        )
        kill_processes_under(qf.root("box1"))
        await qf.loopback.box("box1").stop()
        await moved_once(qf, fleet, watcher, step)

    await restart_moves_nothing(qf, fleet, RUNPOD_GRACE_S)
    await gate_opens_after_the_move(qf, fleet)
