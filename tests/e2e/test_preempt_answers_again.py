"""ux-e #2: a spot box named preempted that answers again from the same start (vast.ai
resumed a paused box: every process died, the boot id and PID 1 stay) keeps its named
preemption, so ``rgt-tui diagnose`` names it as the cause of the run it interrupted — not
"manual kill … find what killed it". While the box does not answer, ``diagnose`` and
``queue show`` say what to do about the cell: move it.

Two real loopback boxes (OpenSSH sshd, the real runner), a real ``Watcher`` (its agents,
its queue polls, its preemption watch over the fleet's journal) and the real command line.
The network-blip floor (120 s in production) is the PreemptionWatch's parameter here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from support.cli import arun
from support.machine import kill_processes_under
from support.queues import GATE, QUEUE_PREFLIGHT_ACK, SCRIPT_RUN, QueueFleet, wait_view
from support.waiting import wait_for

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.paths import journal_dir
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.move import apply_move, plan_move
from rgt_tui.services.runtime.preemption import PreemptionWatch, preempt_dir
from rgt_tui.services.watch.watcher import Watcher

FLOOR_S = 3.0  # the network-blip floor: a loopback box never blips
MOVE_FLOOR_S = 15.0  # long enough to move the cell while the box is only "preempted?"

MOVE_FIX = (
    "box1 does not answer (preempted): move the interrupted cell: rgt-tui queue move gate --to box2"
)


def interruptible(qf: QueueFleet) -> Fleet:
    """box1 of ``qf`` made an interruptible vast.ai box whose spare is box2 (no
    ``on_preempt``: the user moves); samples every 0.2 s."""
    path = qf.loopback.hosts_file
    head, *entries = path.read_text().split("[[hosts]]")
    for i, entry in enumerate(entries):
        if 'name = "box1"\n' in entry:
            entry = entry.replace('profile = "generic-ssh"', 'profile = "vastai"')
            entries[i] = entry.rstrip("\n") + '\ninterruptible = true\nspare = ["box2"]\n\n'
    path.write_text("[fleet]\npoll_seconds = 0.2\n\n" + head + "[[hosts]]".join(["", *entries]))
    # "arch": torch is not imported by the cells here (python3 -S)
    qf.set_preflight_ack((*QUEUE_PREFLIGHT_ACK, "durable", "arch"), "box1")
    return qf.fleet


@contextlib.asynccontextmanager
async def watching(fleet: Fleet, floor_s: float = FLOOR_S) -> AsyncIterator[Watcher]:
    watcher = Watcher(fleet, queue_poll_s=0.2, tick_s=0.2)
    watcher.runtime.preemptions = PreemptionWatch(
        fleet, memory_dir=preempt_dir(journal_dir(fleet.path)), blip_s=floor_s
    )
    task = asyncio.create_task(watcher.run())
    try:
        yield watcher
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def status(watcher: Watcher) -> tuple[str | None, str | None]:
    """box1's connection status and running cell at the Watcher's latest sample."""
    update = watcher.latest.get("box1")
    if update is None:
        return None, None
    snap = update.snapshot
    return update.connection.status, snap.cell if snap is not None else None


def answered_since(watcher: Watcher, t: float) -> bool:
    """box1 sent a sample newer than ``t`` (not the one from before the loss again)."""
    update = watcher.latest.get("box1")
    snap = update.snapshot if update is not None else None
    return update is not None and update.connection.status == "connected" and snap.t > t


async def gate_running(qf: QueueFleet) -> Fleet:
    """box1 made interruptible, its queue's one cell (gate) running."""
    fleet = interruptible(qf)
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\n")
    qf.write_queue("", "box2")
    transport = qf.transport("box1")
    try:
        plan = await plan_launch(fleet, qf.host("box1"), transport)
        assert plan.ok, plan.problems
        await launch(plan, transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="gate to run")
    return fleet


async def test_a_preempted_box_that_answers_again_is_diagnosed_preempted(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    fleet = await gate_running(qf)
    hosts = qf.loopback.hosts_file

    async with watching(fleet) as watcher:
        preemptions = watcher.runtime.preemptions
        await wait_for(
            lambda: status(watcher) == ("connected", "gate"), 60, "the agent to see gate"
        )
        # vast.ai: the box is paused at once, no signal; every process dies.
        box1 = qf.loopback.box("box1")
        await box1.stop()
        kill_processes_under(qf.root("box1"))
        await wait_for(
            lambda: (p := preemptions.current.get("box1")) is not None and p.named,
            60,
            "box1 named preempted",
        )
        lost_at = watcher.latest["box1"].snapshot.t  # its last sample before the loss
        # ux-e #14: named, its alert no longer asks "preempted?".
        (alert,) = [a for a in watcher.latest["box1"].alerts if a.id == "connection.lost"]
        assert alert.message.startswith("connection lost — preempted at ~"), alert

        # While it does not answer, the commands say what to do about the cell.
        for args in (("diagnose", "box1"), ("queue", "show", "box1")):
            down = await arun(*args, "--hosts", hosts)
            assert down.returncode == 1, down
            assert "box1 unreachable: connection refused" in down.stderr, down.stderr
            assert MOVE_FIX in " ".join(down.stderr.split()), down.stderr
        # status too, before the transport's "check the port" (s35 resume hour #8).
        down = await arun("status", "box1", "--hosts", hosts)
        said = " ".join(down.stdout.split())
        assert down.returncode == 1 and "UNREACHABLE" in said, down
        assert f"fix: {MOVE_FIX}; or " in said, said
        # Its alert says the preemption as the TUI's does, not "preempted?" (s43 #3).
        assert "[warning] connection lost — preempted at ~" in said, said
        assert "preempted?" not in said, said

        # The box answers again from the same start, its processes gone.
        await box1.start()
        await wait_for(lambda: answered_since(watcher, lost_at), 60, "box1 to answer again")
        assert preemptions.current.get("box1") is not None, status(watcher)
        assert preemptions.current["box1"].named  # the pane keeps its line
        told = await arun("diagnose", "box1", "--hosts", hosts)

    assert told.returncode == 1, told.stderr
    assert "cell 0 (gate) stopped without an end record: preempted" in told.stdout, told.stdout
    assert "find what killed it" not in told.stdout, told.stdout
    assert "rgt-tui queue move gate --to box2" in told.stdout, told.stdout


async def test_a_cell_moved_before_the_preemption_is_named_is_said_moved(make_queue_fleet):
    """ux-e #14: the user moved the cell while the box was only "preempted?"; the
    "preempted" notice that follows says it already moved."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    fleet = await gate_running(qf)
    async with watching(fleet, floor_s=MOVE_FLOOR_S) as watcher:
        await wait_for(
            lambda: status(watcher) == ("connected", "gate"), 60, "the agent to see gate"
        )
        await qf.loopback.box("box1").stop()
        kill_processes_under(qf.root("box1"))
        await wait_for(
            lambda: watcher.runtime.preemptions.current.get("box1") is not None,
            60,
            "box1 read preempted?",
        )
        transport = qf.transport("box1")
        try:
            moving = await plan_move(
                fleet, qf.host("box1"), ["gate"], "box2", transport, resume=True
            )
            assert moving.ok and not moving.source_answered, moving.problems
            await apply_move(moving, qf.host("box1"), transport)
        finally:
            await transport.close()
        assert not watcher.runtime.preemptions.current["box1"].named  # moved within the floor
        (named,) = await wait_for(
            lambda: [e for e in watcher.told if e.kind == "preempted"], 60, "the notice"
        )
    assert named.title == "box1: preempted", named
    assert named.body.endswith(
        "cell gate interrupted; it already moved to box2 (its queue file's #moved-to)"
    ), named.body
