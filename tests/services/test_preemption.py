"""Issue 40: a preemption of an interruptible box is named as one, and ``on_preempt``
acts on it once.

The recorded stream of a spot box (its samples with the cell running and the box's
start, then a lost connection, then samples from a new container start) is fed to the
fleet runtime as ``watch`` runs it (``support.replay``), with the fleet's real journal
folder: the box reads "preempted?" while silent within its grace, is named preempted past
it (RunPod-style: its profile's 5 s grace; the runtime's network-blip floor) or when it
answers from a new PID 1 under the same boot id (a restarted container), and
``on_preempt = "move"`` moves the interrupted cell to the spare once across a restart of
``watch`` (two Watchers over the same journal). The move itself is the resume move's
(``services.queue.resume``, tested with its own boxes): here a stand-in records the call.

Over 450 lines on purpose: one recorded spot stream and its watch set-up serve every
case of naming and acting; split, each file would rebuild them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import replace
from pathlib import Path

import pytest
from support.replay import ReplayMonitor
from support.samples import FROZEN, agent_sample
from support.waiting import wait_for

from rgt_tui.content.host_text import connection_lines
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.preemption import (
    LOST,
    RESTARTED,
    SUSPECTED,
    Checkpoint,
    Preemption,
    hhmm,
    preemption_line,
)
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.runtime.preemption import PreemptionWatch, preempt_dir
from rgt_tui.services.telemetry import ConnectionState
from rgt_tui.services.watch.drivers.on_preempt import OnPreempt, Outcome
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.watcher import Watcher

FLEET = """\
[[hosts]]
name = "box1"
ssh = "root@10.0.0.5:40022"
profile = "runpod"
pull = ["/workspace/runs"]
interruptible = true
on_preempt = "{action}"
spare = ["box2"]

[[hosts]]
name = "box2"
ssh = "root@10.0.0.6:40022"
pull = ["/workspace/runs"]
"""
CKPT = Checkpoint("ckpt_step40.pt", FROZEN - 300, 1 << 20, 40)


class Clock:
    def __init__(self) -> None:
        self.t = FROZEN

    def __call__(self) -> float:
        return self.t


def fleet_in(folder: Path, action: str = "move") -> Fleet:
    folder.mkdir(exist_ok=True)
    (folder / "hosts.toml").write_text(FLEET.format(action=action))
    return load_fleet(folder / "hosts.toml")


class Mover:
    """Stands in for the resume move: records each call, says it moved."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.interrupted: list[float] = []  # the preemption's time each move was handed

    async def __call__(
        self, fleet: Fleet, source: HostConfig, cell: str, spare: HostConfig, at: float
    ):
        self.calls.append((source.name, cell, spare.name))
        self.interrupted.append(at)
        return Outcome(True, f"box2's queue launched from cell 0 ({cell})")


def watcher_over(fleet: Fleet, clock: Clock, mover: Mover) -> tuple[Watcher, ReplayMonitor]:
    monitor = ReplayMonitor(fleet.host("box1"), clock)
    # drivers=False: the pull and autostop are not this test's; on_preempt is set below.
    watcher = Watcher(
        fleet, hosts=[fleet.host("box1")], clock=clock, monitors={"box1": monitor}, drivers=False
    )
    # The fleet's own preemption memory, its verified checkpoint given (the records'
    # lookup is the resume move's cell_files, tested there).
    watcher.runtime.preemptions = PreemptionWatch(
        fleet, memory_dir=preempt_dir(journal_dir(fleet.path)), checkpoint=lambda h, c: CKPT
    )
    watcher.on_preempt = OnPreempt(
        fleet, watcher.connections, emit=watcher.emit, clock=clock, mover=mover,
        queue_view=watcher.runtime.queues.views.get,
    )  # fmt: skip
    return watcher, monitor


async def run_watch(watcher: Watcher, monitor: ReplayMonitor) -> asyncio.Task[None]:
    task = asyncio.create_task(watcher.run())
    await asyncio.wait_for(monitor.started.wait(), 30)
    return task


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def told(watcher: Watcher, kind: str) -> list[WatchEvent]:
    return [e for e in watcher.told if e.kind == kind]


async def test_a_silent_spot_box_reads_preempted_then_its_cell_moves_once_across_a_restart(
    tmp_path: Path,
) -> None:
    fleet, clock, mover = fleet_in(tmp_path), Clock(), Mover()
    watcher, monitor = watcher_over(fleet, clock, mover)
    task = await run_watch(watcher, monitor)
    try:
        monitor.sample(agent_sample("box1", t=clock.t, cell="eta_long", container_start=1000))
        clock.t += 10
        lost = monitor.lose()  # RunPod-style: TERM, KILL 5 s later, the box gone
        await watcher.check_now()
        shown = watcher.runtime.preemptions.current["box1"]
        assert shown.kind == SUSPECTED  # within the grace: "preempted?", no action
        line = connection_lines(lost.connection, None, clock.t, shown)[0].plain
        assert line.startswith("⚡ preempted? unreachable since ") and "(10s)" in line
        # s38 spot hour #8: the pane's fix named only the port, the command line's the
        # move first; a suspected preemption says both, in the pane's keys.
        port = dataclasses.replace(lost.connection, fix="check the port in the SSH command")
        said = "".join(c.plain for c in connection_lines(port, None, clock.t, shown))
        assert (
            "fix: if it was preempted: m moves its cell (it resumes elsewhere from its last "
            "verified checkpoint, if one is pulled); else: check the port in the SSH command"
        ) in said, said
        assert "may still be alive" not in "".join(
            c.plain for c in connection_lines(lost.connection, None, clock.t, shown)
        )
        assert mover.calls == []
        clock.t += 400  # past the grace (and the blip floor) with no answer
        await watcher.check_now()
        await wait_for(lambda: len(told(watcher, "preempt_action")) == 1, timeout=30)
        await watcher.check_now()
        assert mover.calls == [("box1", "eta_long", "box2")]
        # ux-b #1: the move is handed the preemption's time (its last answer), so the
        # work it repeats runs from the checkpoint to then, not to the move.
        assert mover.interrupted == [FROZEN]
        (named,) = told(watcher, "preempted")
        assert f"preempted at ~{hhmm(FROZEN)}" in named.body
        assert "cell eta_long interrupted; last verified step 40," in named.body
        (moved,) = told(watcher, "preempt_action")
        assert moved.body.startswith("moved eta_long to box2: it resumes from ckpt_step40.pt")
    finally:
        await stop(task)

    # watch restarts while the box is still gone, then the box answers from a new start.
    watcher2, monitor2 = watcher_over(fleet, clock, mover)
    task = await run_watch(watcher2, monitor2)
    try:
        monitor2.lose()
        clock.t += 400
        await watcher2.check_now()
        assert watcher2.runtime.preemptions.current["box1"].kind == LOST  # from its memory
        monitor2.sample(agent_sample("box1", t=clock.t, container_start=2000))
        await watcher2.check_now()
        await asyncio.sleep(0)  # the claim runs in a thread: let it answer
        await wait_for(lambda: not watcher2._side, timeout=30)
        assert mover.calls == [("box1", "eta_long", "box2")]  # once, not twice
        assert told(watcher2, "preempt_action") == []
    finally:
        await stop(task)


class Refuser(Mover):
    """Stands in for a resume move every spare refuses (no room there, say)."""

    async def __call__(
        self, fleet: Fleet, source: HostConfig, cell: str, spare: HostConfig, at: float
    ):
        self.calls.append((source.name, cell, spare.name))
        return Outcome(False, "needs 2.0 GB free in /workspace, 0.5 GB there")


async def test_a_move_no_spare_takes_is_told_once_with_the_command_that_finishes_it(
    tmp_path: Path,
) -> None:
    fleet, clock, mover = fleet_in(tmp_path), Clock(), Refuser()
    watcher, monitor = watcher_over(fleet, clock, mover)
    task = await run_watch(watcher, monitor)
    try:
        monitor.sample(agent_sample("box1", t=clock.t, cell="eta_long", container_start=1000))
        clock.t += 10
        monitor.lose()
        clock.t += 400
        await watcher.check_now()
        await wait_for(lambda: len(told(watcher, "preempt_action")) == 1, timeout=30)
        (said,) = told(watcher, "preempt_action")
        assert said.title == "box1: not moved"
        assert "box2: needs 2.0 GB free" in said.body
        assert "rgt-tui queue move eta_long --to HOST" in said.body
        clock.t += 60  # claimed once: a later look does not try the spares again
        await watcher.check_now()
        await wait_for(lambda: not watcher._side, timeout=30)
        assert mover.calls == [("box1", "eta_long", "box2")]
        assert len(told(watcher, "preempt_action")) == 1
    finally:
        await stop(task)


class MovedNotStarted(Mover):
    """Stands in for a resume move that moved the cell but whose launch was refused."""

    async def __call__(
        self, fleet: Fleet, source: HostConfig, cell: str, spare: HostConfig, at: float
    ):
        from rgt_tui.services.queue.move import MovedNotRun

        self.calls.append((source.name, cell, spare.name))
        raise MovedNotRun(
            f"{cell} is {spare.name}'s now (its line is in {spare.name}'s queue file), but the launch was refused:\n"
            "preflight check 'code' failed: 2 files differ\n"
            f"fix that, then: rgt-tui launch {spare.name} --start 0"
        )


async def test_a_move_whose_launch_was_refused_is_told_moved_not_running(tmp_path: Path) -> None:
    """Hour s18a #2: it read "not moved", tried the next spare ("moved already"), and
    its fix — a plain move on — left the verified checkpoint behind; its text carried a
    literal backslash-n and the exception's class name."""
    fleet, clock, mover = fleet_in(tmp_path), Clock(), MovedNotStarted()
    watcher, monitor = watcher_over(fleet, clock, mover)
    task = await run_watch(watcher, monitor)
    try:
        monitor.sample(agent_sample("box1", t=clock.t, cell="eta_long", container_start=1000))
        clock.t += 10
        monitor.lose()
        clock.t += 400
        await watcher.check_now()
        await wait_for(lambda: len(told(watcher, "preempt_action")) == 1, timeout=30)
        (said,) = told(watcher, "preempt_action")
        assert said.title == "box1: moved, not running", said
        assert said.body.startswith("moved eta_long to box2, NOT RUNNING there: eta_long is")
        assert "; preflight check 'code' failed: 2 files differ; fix that, then: rgt-tui " in (
            said.body
        )
        assert "\\n" not in said.body and "MovedNotRun" not in said.body
    finally:
        await stop(task)


def test_a_restarted_container_under_the_same_boot_is_named_with_its_cell(tmp_path: Path) -> None:
    fleet, clock = fleet_in(tmp_path), Clock()
    host = fleet.host("box1")
    watch = PreemptionWatch(fleet, memory_dir=tmp_path / "p", checkpoint=lambda h, c: CKPT)
    monitor = ReplayMonitor(host, clock)
    monitor.emit = lambda update: None  # no runtime: the updates are observed by hand
    first = monitor.sample(agent_sample("box1", t=clock.t, cell="eta_long", container_start=1000))
    assert watch.observe(host, first, clock.t) is None
    clock.t += 30
    # Same boot id, a new PID 1: the container restarted (vast.ai-style: no signal at all).
    again = monitor.sample(agent_sample("box1", t=clock.t, container_start=2000))
    named = watch.observe(host, again, clock.t)
    assert named is not None and named.kind == RESTARTED and named.cell == "eta_long"
    full = watch.with_checkpoint(host, named)
    text = preemption_line(full)
    assert text == (
        f"preempted at ~{hhmm(FROZEN)}: cell eta_long interrupted; "
        f"last verified step 40, from {hhmm(CKPT.mtime)}"
    )
    # With no cell running then, the way on is still said (h502 #1: it ended there).
    assert preemption_line(replace(full, cell=None)) == (
        f"preempted at ~{hhmm(FROZEN)}: no cell was running then — a cell it did not "
        "finish moves to another box by hand (m on its Queue tab; rgt-tui queue move CELL "
        "--to HOST)"
    )
    # A new watch over the same memory sees the same start: nothing named again.
    later = PreemptionWatch(fleet, memory_dir=tmp_path / "p", checkpoint=lambda h, c: CKPT)
    assert (
        later.observe(
            host, monitor.sample(agent_sample("box1", t=clock.t, container_start=2000)), clock.t
        )
        is None
    )


async def test_relaunch_restarts_the_queue_from_its_resume_index_once(tmp_path: Path) -> None:
    fleet, clock = fleet_in(tmp_path, "relaunch"), Clock()
    host = fleet.host("box1")
    watch = PreemptionWatch(fleet, memory_dir=tmp_path / "p", checkpoint=lambda h, c: CKPT)
    monitor = ReplayMonitor(host, clock)
    monitor.emit = lambda update: None  # no runtime: the updates are observed by hand
    watch.observe(host, monitor.sample(agent_sample("box1", cell="b", container_start=1)), 1.0)
    named = watch.observe(host, monitor.sample(agent_sample("box1", container_start=2)), 2.0)
    assert named is not None
    view = QueueView.__new__(QueueView)
    object.__setattr__(view, "resume_index", 1)
    calls: list[int] = []

    async def relaunch(fleet: Fleet, host: HostConfig, index: int) -> Outcome:
        calls.append(index)
        return Outcome(True, "cells 1.. run again")

    told_events: list[WatchEvent] = []
    for _ in range(2):  # a second driver (a watch restart, the TUI) over the same journal
        driver = OnPreempt(
            fleet, None, emit=told_events.append, queue_view=lambda h: view,  # type: ignore[arg-type]
            relauncher=relaunch,
        )  # fmt: skip
        await driver.on_preempted(host, named)
    assert calls == [1]
    actions = [e.body for e in told_events if e.kind == "preempt_action"]
    assert actions == ["relaunched the queue on box1 from cell 1: cells 1.. run again"]


async def test_no_move_while_the_fleet_file_is_not_applied(tmp_path: Path) -> None:
    """h491 #1's rule for on_preempt: a spare edited beside a typo is not the one in force;
    nothing moves unattended then, and the notice says what to do by hand."""
    fleet, clock, mover = fleet_in(tmp_path), Clock(), Mover()
    host = fleet.host("box1")
    named = Preemption("box1", LOST, clock.t, "boot/1", "eta_long", checkpoint=CKPT)
    told_events: list[WatchEvent] = []
    driver = OnPreempt(
        fleet, None, emit=told_events.append, clock=clock, mover=mover,  # type: ignore[arg-type]
        queue_view=lambda h: None, fleet_mistake=lambda: "hosts.toml:9: spare: unknown host",
    )  # fmt: skip
    await driver.on_preempted(host, named)
    assert mover.calls == []
    actions = [e for e in told_events if e.kind == "preempt_action"]
    assert [e.title for e in actions] == ["box1: not moved"], told_events
    assert actions[0].body.startswith(
        "the fleet file is not applied (hosts.toml:9: spare: unknown host): on_preempt acts"
    )
    # Not claimed: once the file is applied, a later look may act.
    driver.fleet_mistake = lambda: ""
    await driver.on_preempted(host, named)
    assert len(mover.calls) == 1


async def test_a_cell_the_user_moved_already_is_not_moved_again(tmp_path: Path) -> None:
    # The user moved the cell while the box was only "preempted?": once named, the
    # preemption says it moved; on_preempt = "move" tries nothing (no "not moved" notice).
    fleet, clock, mover = fleet_in(tmp_path), Clock(), Mover()
    host = fleet.host("box1")
    named = Preemption("box1", LOST, clock.t, "boot/1", "eta_long", checkpoint=CKPT,
                       moved_to="box2")  # fmt: skip
    told_events: list[WatchEvent] = []
    driver = OnPreempt(
        fleet, None, emit=told_events.append, clock=clock, mover=mover,  # type: ignore[arg-type]
        queue_view=lambda h: None,
    )  # fmt: skip
    await driver.on_preempted(host, named)
    assert mover.calls == []
    assert [e.kind for e in told_events] == ["preempted"]
    assert "it already moved to box2" in told_events[0].body


def test_a_second_preemption_of_one_start_with_another_cell_is_named_again(
    tmp_path: Path,
) -> None:
    """vast.ai resumes a paused box with its start kept: box1 was lost past its grace
    (named), answered again from the same start, ran a new cell, and was lost again. The
    second was keyed as the first and never told nor moved (hour s21a #1)."""
    fleet, clock = fleet_in(tmp_path), Clock()
    host = fleet.host("box1")
    watch = PreemptionWatch(fleet, memory_dir=tmp_path / "p", checkpoint=lambda h, c: CKPT)
    monitor = ReplayMonitor(host, clock)
    monitor.emit = lambda update: None
    keys = []
    for cell in ("spot_long", "spot2"):
        running = monitor.sample(agent_sample("box1", t=clock.t, cell=cell, container_start=1000))
        assert watch.observe(host, running, clock.t) is None
        clock.t += 5
        watch.observe(host, monitor.lose(), clock.t)
        clock.t += watch.grace(host) + 5
        named = watch.observe(host, monitor.lose(), clock.t)
        assert named is not None and named.kind == LOST and named.cell == cell, named
        keys.append(named.key)
        clock.t += 30
        back = monitor.sample(agent_sample("box1", t=clock.t, container_start=1000))
        assert watch.observe(host, back, clock.t) is None  # the same start: resumed
    assert keys[0] != keys[1]
    assert keys[1].startswith("preempted:box1:") and keys[1].endswith(":spot2")


async def test_a_preemption_nothing_acts_on_is_told_with_the_move_that_resumes_it(
    tmp_path: Path,
) -> None:
    """With on_preempt off, what reaches a phone named no next step (hour s21a #7)."""
    fleet, clock = fleet_in(tmp_path, "off"), Clock()
    host = fleet.host("box1")
    watch = PreemptionWatch(fleet, memory_dir=tmp_path / "p", checkpoint=lambda h, c: CKPT)
    monitor = ReplayMonitor(host, clock)
    monitor.emit = lambda update: None
    watch.observe(host, monitor.sample(agent_sample("box1", cell="b", container_start=1)), 1.0)
    named = watch.observe(host, monitor.sample(agent_sample("box1", container_start=2)), 2.0)
    assert named is not None
    told_events: list[WatchEvent] = []
    driver = OnPreempt(fleet, None, emit=told_events.append, queue_view=lambda h: None)  # type: ignore[arg-type]
    await driver.on_preempted(host, named)
    (event,) = told_events
    assert event.kind == "preempted" and event.body.startswith(preemption_line(named))
    assert event.body.endswith(
        ". To resume it elsewhere: rgt-tui queue move b --to box2 (m on its Queue tab)"
    ), event.body


async def test_watch_tells_the_move_the_open_tui_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hour s24a #8: the open TUI claimed and made the move; watch, which lost the claim,
    said only "preempted", so its notify targets never heard where the cell went. It now
    tells the TUI's outcome once recorded (a second watch over the same told log, not)."""
    from rgt_tui.services.watch.drivers import on_preempt

    monkeypatch.setattr(on_preempt, "FOLLOW_LOOK_S", 0.02)  # the test's own pace
    fleet, clock = fleet_in(tmp_path), Clock()
    host = fleet.host("box1")
    named = Preemption("box1", LOST, clock.t, "boot/1", "eta_long", checkpoint=CKPT)
    release = asyncio.Event()

    class SlowMover(Mover):  # the TUI's move takes a while: a checkpoint is pushed
        async def __call__(self, *args):  # type: ignore[no-untyped-def]
            await release.wait()
            return await super().__call__(*args)

    tui_mover, watch_mover = SlowMover(), Mover()
    tui_events: list[WatchEvent] = []
    watch_events: list[WatchEvent] = []
    tui = OnPreempt(
        fleet, None, emit=tui_events.append, clock=clock, mover=tui_mover,  # type: ignore[arg-type]
        queue_view=lambda h: None, actor="the TUI",
    )  # fmt: skip
    watch = OnPreempt(
        fleet, None, emit=watch_events.append, clock=clock, mover=watch_mover,  # type: ignore[arg-type]
        queue_view=lambda h: None,
    )  # fmt: skip
    moving = asyncio.ensure_future(tui.on_preempted(host, named))
    await wait_for(lambda: tui.claims_path("box1").exists(), 30, "the TUI's claim")
    following = asyncio.ensure_future(watch.on_preempted(host, named))
    await asyncio.sleep(0.1)
    assert [e.kind for e in watch_events] == ["preempted"]  # nothing recorded yet
    release.set()
    await asyncio.wait_for(asyncio.gather(moving, following), 30)
    assert watch_mover.calls == [] and tui_mover.calls == [("box1", "eta_long", "box2")]
    (moved,) = [e for e in tui_events if e.kind == "preempt_action"]
    (told,) = [e for e in watch_events if e.kind == "preempt_action_by_other"]
    assert told.key == moved.key and told.body == moved.body  # one notification, by key
    assert told.title == "box1: moved (by the TUI)" and "moved eta_long to box2" in told.body


async def tui_claims_and_stalls(fleet: Fleet, clock: Clock, host: HostConfig, named: Preemption):  # type: ignore[no-untyped-def]
    """The open TUI claims ``named``'s move and never finishes it (closed mid-move); its
    task, claimed."""

    class StuckMover(Mover):
        async def __call__(self, *args):  # type: ignore[no-untyped-def]
            await asyncio.Event().wait()

    tui = OnPreempt(
        fleet, None, emit=lambda e: None, clock=clock, mover=StuckMover(),  # type: ignore[arg-type]
        queue_view=lambda h: None, actor="the TUI",
    )  # fmt: skip
    stuck = asyncio.ensure_future(tui.on_preempted(host, named))
    await wait_for(lambda: tui.claims_path("box1").exists(), 30, "the TUI's claim")
    return stuck


async def test_watch_says_when_the_claimer_recorded_no_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TUI claimed the move and closed (or crashed) mid-way: watch does not act twice,
    and says after its wait that nothing was recorded, naming who claimed it."""
    from rgt_tui.services.watch.drivers import on_preempt

    monkeypatch.setattr(on_preempt, "FOLLOW_LOOK_S", 0.02)
    monkeypatch.setattr(on_preempt, "FOLLOW_WAIT_S", 0.1)
    fleet, clock = fleet_in(tmp_path), Clock()
    host = fleet.host("box1")
    named = Preemption("box1", LOST, clock.t, "boot/1", "eta_long", checkpoint=CKPT)
    stuck = await tui_claims_and_stalls(fleet, clock, host, named)
    watch_events: list[WatchEvent] = []
    watch_mover = Mover()
    watch = OnPreempt(
        fleet, None, emit=watch_events.append, clock=clock, mover=watch_mover,  # type: ignore[arg-type]
        queue_view=lambda h: None,
    )  # fmt: skip
    await asyncio.wait_for(watch.on_preempted(host, named), 30)
    stuck.cancel()
    assert watch_mover.calls == []
    (told,) = [e for e in watch_events if e.kind == "preempt_action_by_other"]
    assert told.title == "box1: move not told" and told.severity == "warning"
    assert told.body.startswith("the TUI took on the move of eta_long and recorded no outcome")
    assert "rgt-tui queue show box1 and at box2's" in told.body


async def test_a_watch_once_pass_does_not_wait_on_a_claim_it_lost(tmp_path: Path) -> None:
    """Review s25 #1: a cron pass (watch --once) waited up to 30 min on the TUI's move,
    holding back the pass's own notifications. It looks once and goes on."""
    fleet, clock = fleet_in(tmp_path), Clock()
    host = fleet.host("box1")
    named = Preemption("box1", LOST, clock.t, "boot/1", "eta_long", checkpoint=CKPT)
    stuck = await tui_claims_and_stalls(fleet, clock, host, named)
    told: list[WatchEvent] = []
    once = OnPreempt(fleet, None, emit=told.append, clock=clock, mover=Mover(),  # type: ignore[arg-type]
                     queue_view=lambda h: None)  # fmt: skip
    once.follow_s = 0.0  # as Watcher.once sets it
    await asyncio.wait_for(once.on_preempted(host, named), 5)
    stuck.cancel()
    assert [e.kind for e in told] == ["preempted"]  # no wait, no "not told" yet


def test_a_box_named_preempted_is_not_sent_to_check_its_ssh_port() -> None:
    """s35 resume hour #8: "fix: check the port in the provider's SSH command" stayed
    under "⚡ preempted at …": the box is gone, not mistyped. A suspected one may be
    either, so its fix stays."""
    conn = ConnectionState(
        "lost",
        100.0,
        error="connection refused",
        fix="check the port in the provider's SSH command",
    )

    def text(kind: str) -> str:
        p = Preemption("box1", kind, 100.0, "s", "eta_long")
        return "\n".join(c.plain for c in connection_lines(conn, None, 500.0, p))

    # A suspected one keeps the port among its fixes, after the move (s38 spot hour #8).
    assert "; else: check the port in the provider's SSH command" in text(SUSPECTED)
    named = text(LOST)
    assert named.startswith("⚡ preempted at ~") and "check the port" not in named, named


async def test_watch_once_says_a_box_named_preempted_is_told_as_one_not_as_silent(
    tmp_path: Path,
) -> None:
    """h502 #10: `watch --once` said of a box named preempted "(a silence past 5m00s is
    told as a silent event)", as of a box to check the port of."""
    from rgt_tui.services.watch.watcher import Watcher

    fleet = fleet_in(tmp_path)
    lines: list[str] = []
    watcher = Watcher(fleet, report=lines.append, drivers=False)
    try:
        host = fleet.host("box1")
        plain = watcher._told_later(host, "a silence past 5m00s is told as a silent event")
        assert plain == "a silence past 5m00s is told as a silent event"
        named = Preemption("box1", LOST, FROZEN, "boot/1", "eta_long")
        watcher.runtime.preemptions.current["box1"] = named
        said = watcher._told_later(host, "a silence past 5m00s is told as a silent event")
        assert said == (
            f"named preempted at ~{hhmm(FROZEN)}, not silent: `rgt-tui queue show box1` says "
            "what to move"
        )
    finally:
        await watcher.close()
