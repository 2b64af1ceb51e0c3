"""The watch core on real loopback boxes and their real agents: each event is told exactly
once — a new alert, its reminder, a reboot, a silent box, a finished queue, a forgotten
box — and a new Watcher on the same journal repeats none of them, while a reboot that
happened while nothing watched is still told once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

from support.queues import wait_view
from support.waiting import wait_for

from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.watch.events import HostState, WatchEvent
from rgt_tui.services.watch.sinks import Sink
from rgt_tui.services.watch.store import watch_dir
from rgt_tui.services.watch.watcher import Watcher
from rgt_tui.transport.backoff import Backoff


class Clock:
    """This machine's clock, moved on only by the test."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


class Recorder(Sink):
    """A sink that keeps every state and event it is handed."""

    def __init__(self) -> None:
        self.states: list[tuple[str, HostState]] = []
        self.events: list[WatchEvent] = []

    def on_host(self, host: HostConfig, state: HostState) -> None:
        self.states.append((host.name, state))

    async def on_event(self, event: WatchEvent) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[WatchEvent]:
        return [e for e in self.events if e.kind == kind]

    def sampled(self, n: int = 1) -> bool:
        return sum(1 for _, s in self.states if s.snapshot is not None) >= n


@contextlib.asynccontextmanager
async def watching(fleet: Fleet, **kwargs: object) -> AsyncIterator[tuple[Watcher, Recorder]]:
    """A Watcher running over ``fleet`` with a Recorder; stopped (connections closed) after."""
    recorder = Recorder()
    watcher = Watcher(fleet, sinks=[recorder], drivers=False, **kwargs)  # type: ignore[arg-type]
    task = asyncio.create_task(watcher.run())
    try:
        yield watcher, recorder
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def fleet_with(loopback: LoopbackFleet, head: str) -> Fleet:
    """The loopback fleet file with ``head`` (``[fleet]`` keys) put in front."""
    hosts = loopback.hosts_file
    hosts.write_text(head + "\n" + hosts.read_text())
    return load_fleet(hosts)


async def test_new_alert_once_reminders_per_period_none_repeated_after_restart(
    make_loopback_fleet,
):
    loopback = await make_loopback_fleet(1)
    # Any used inode trips the inode rule (U7) on the box's folder.
    fleet = fleet_with(
        loopback,
        "[fleet]\npoll_seconds = 0.2\nnotify_reminder_minutes = 1\n"
        "[fleet.thresholds]\ninode_pct = 0.0001\n",
    )
    clock = Clock()
    async with watching(fleet, clock=clock) as (watcher, rec):
        await wait_for(lambda: rec.of("alert"), 60, "the inode alert")
        await wait_for(lambda: rec.sampled(5), 60, "more samples")
        (alert,) = rec.of("alert")
        assert alert.host == "box1" and alert.severity in ("warning", "critical")
        assert alert.key.startswith("alert:box1:disk.inodes:") and alert.key.endswith(
            f":{clock.t:.0f}"
        )
        clock.t += 59
        await watcher.check_now()
        assert rec.of("reminder") == []
        clock.t += 2
        await watcher.check_now()
        await watcher.check_now()
        (reminder,) = rec.of("reminder")
        assert reminder.key.endswith(":1") and "still open after 1m" in reminder.title
        assert len(rec.of("alert")) == 1
    assert (watch_dir(journal_dir(fleet.path)) / "box1.json").is_file()

    async with watching(fleet, clock=clock) as (watcher, rec):
        await wait_for(lambda: rec.sampled(5), 60, "samples after the restart")
        await watcher.check_now()
        assert rec.events == [], "an alert open before the restart was told again"
        clock.t += 60  # two periods since it opened: the second reminder, once
        await watcher.check_now()
        await watcher.check_now()
        (second,) = rec.of("reminder")
        assert second.key == reminder.key[: -len(":1")] + ":2"


def fake_proc(tree: Path, boot_id: str) -> list[str]:
    """A proc tree whose boot id the test sets (the rest copied from this machine's), and
    the agent arguments that read it."""
    (tree / "sys/kernel/random").mkdir(parents=True, exist_ok=True)
    (tree / "self").mkdir(exist_ok=True)
    for name in ("uptime", "loadavg", "meminfo", "self/mountinfo", "mounts"):
        (tree / name).write_text(Path("/proc", name).read_text())
    set_boot(tree, boot_id)
    return ["--proc-root", str(tree)]


def set_boot(tree: Path, boot_id: str) -> None:
    (tree / "sys/kernel/random/boot_id").write_text(boot_id + "\n")


async def test_reboot_told_once_and_a_reboot_while_nothing_watched_after_restart(
    make_loopback_fleet, tmp_path
):
    loopback = await make_loopback_fleet(1)
    fleet = fleet_with(loopback, "[fleet]\npoll_seconds = 0.2\n")
    tree = tmp_path / "proc"
    args = fake_proc(tree, "boot-a")
    async with watching(fleet, agent_args=args) as (_, rec):
        await wait_for(lambda: rec.sampled(3), 60, "samples in boot a")
        assert rec.of("reboot") == []  # the first boot seen is no reboot
        set_boot(tree, "boot-b")
        await wait_for(lambda: rec.of("reboot"), 60, "the reboot")
        seen = len(rec.states)
        await wait_for(lambda: len(rec.states) >= seen + 5, 60, "samples in boot b")
        assert [e.key for e in rec.of("reboot")] == ["reboot:box1:boot-b"]
        assert all("rebooted" not in e.key for e in rec.of("alert"))  # one message, not two

    async with watching(fleet, agent_args=args) as (watcher, rec):
        await wait_for(lambda: rec.sampled(3), 60, "samples after the restart")
        await watcher.check_now()
        assert rec.of("reboot") == []  # boot b was told already
    set_boot(tree, "boot-c")  # rebooted while watch was down
    async with watching(fleet, agent_args=args) as (watcher, rec):
        await wait_for(lambda: rec.sampled(5), 60, "samples in boot c")
        await watcher.check_now()
        assert [e.key for e in rec.of("reboot")] == ["reboot:box1:boot-c"]


def _tried(host: str, w) -> bool:  # type: ignore[no-untyped-def]
    update = w.latest.get(host)
    return (
        update is not None
        and update.connection.status == "unreached"
        and bool(update.connection.error)
    )


async def test_a_host_that_never_answered_is_told_so_with_its_last_try(make_loopback_fleet):
    """Hour s19b #7: a host never seen answering (a typo'd name, a closed port) read only
    "silent for 5m03s" on the console, like a box that had gone; the title says it never
    answered and why, in the last try's own words."""
    loopback = await make_loopback_fleet(1)
    fleet = fleet_with(loopback, "[fleet]\npoll_seconds = 0.2\n")
    await loopback.box("box1").stop()  # down before watch ever saw it
    clock = Clock()
    quick = Backoff(base=0.05, cap=0.2)
    async with watching(fleet, clock=clock, backoff=quick, silent_grace_s=120) as (w, rec):
        await wait_for(lambda: _tried("box1", w), 60, "a failed try")
        clock.t += 121
        await w.check_now()
        await w.check_now()
        (silent,) = rec.of("silent")
        assert silent.title.startswith("box1: never answered (2m0"), silent.title
        assert " — last try: connection refused" in silent.title, silent.title
        # Said once, in the title (h602 #6: "… — Last try: connection refused" again in
        # the body), and that no watch has seen it answer.
        assert "Last try" not in silent.body, silent.body
        assert silent.body.startswith("fix: check the port in the provider's SSH command")
        assert ". No watch has seen it answer; a run there, if one was started" in silent.body


async def test_a_silent_box_is_told_once_after_the_grace_and_not_again_after_restart(
    make_loopback_fleet,
):
    loopback = await make_loopback_fleet(1)
    fleet = fleet_with(loopback, "[fleet]\npoll_seconds = 0.2\n")
    clock = Clock()
    quick = Backoff(base=0.05, cap=0.2)
    async with watching(fleet, clock=clock, backoff=quick, silent_grace_s=120) as (w, rec):
        await wait_for(lambda: rec.sampled(2), 60, "samples")
        await loopback.box("box1").stop()
        await wait_for(lambda: w.latest["box1"].connection.status == "reconnecting", 60, "the drop")
        lost_at = clock.t
        clock.t += 119
        await w.check_now()
        assert rec.of("silent") == []  # within the grace: a blip
        clock.t += 2
        await w.check_now()
        await w.check_now()
        (silent,) = rec.of("silent")
        assert silent.key == f"silent:box1:{lost_at:.0f}" and "silent for 2m" in silent.title
        # Why, in the last try's own words (a bad name or a refused key waits for you).
        # (lost at the drop, refused at the tries after: whichever the tick read)
        assert silent.body.startswith(
            ("Last try: connection lost", "Last try: connection refused")
        ), silent.body

    clock.t += 600
    async with watching(fleet, clock=clock, backoff=quick, silent_grace_s=120) as (w, rec):
        await wait_for(lambda: w.latest.get("box1") and w._answered("box1"), 60, "a try")
        await w.check_now()
        assert rec.of("silent") == []  # the same silence, told already
        # Not answering since the first watch saw it go, not since this start (hour s23a
        # #7: the metrics' lost-since timestamp moved to each restart).
        lost = [s.lost_since for n, s in rec.states if n == "box1" and s.lost_since is not None]
        assert lost and abs(lost[-1] - lost_at) < 1, (lost, lost_at)
        await loopback.box("box1").start()
        await wait_for(lambda: rec.sampled(1), 60, "the box back")
        await w.check_now()
        # Its return is told once (ux-g 10): whoever got the warning learns it is over.
        assert [e.key for e in rec.events] == [f"back:box1:{lost_at:.0f}"]


async def test_a_box_torn_down_while_watch_runs_is_no_longer_the_forgotten_box(billed_queue_fleet):
    """s37 money hour #1: a watch running since before the teardown kept the box as GEN1's
    forgotten box (critical, and in /metrics for RgtForgottenBox). The teardown recorded
    in the journal (as `rgt-tui teardown` does) reaches it at the next sample."""
    from rgt_tui.domain.box_identity import BoxIdentity
    from rgt_tui.domain.cost import FORGOTTEN_ALERT
    from rgt_tui.services.journal import Journal, TeardownRecord

    qf = billed_queue_fleet
    fleet = fleet_with(
        qf.loopback, "[fleet]\npoll_seconds = 0.2\n[fleet.thresholds]\nforgotten_minutes = 0.02\n"
    )
    qf.write_queue(f"{qf.cell_script('only', 'echo trained')} t\n")
    transport = qf.transport()
    await launch(await plan_launch(fleet, fleet.host("box1"), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED)
    said: list[str] = []
    async with watching(fleet, queue_poll_s=0.2, report=said.append) as (watcher, rec):

        def forgotten_now() -> bool:
            return any(a.id == FORGOTTEN_ALERT for a in rec.states[-1][1].alerts)

        await wait_for(lambda: rec.states and forgotten_now(), 60, "the forgotten box")
        box_id = (qf.root() / ".rgt" / "box-id").read_text().strip()
        journal = Journal(journal_dir(fleet.path))
        journal.observe_box("box1", BoxIdentity(box_id, None), time.time() - 60)
        journal.add_teardown(
            "box1", TeardownRecord(time.time(), "true", 0, "", True, box_id=box_id)
        )
        seen = len(rec.states)
        await wait_for(lambda: len(rec.states) > seen + 3, 60, "samples after the teardown")
        assert not forgotten_now(), rec.states[-1][1].alerts
        # Said on the console, once (h491 #6: only the metrics' figures told it).
        torn = [line for line in said if "recorded as torn down" in line]
        assert torn == ["box1: recorded as torn down: its cost stops once the box is gone"], said


async def test_queue_done_and_the_forgotten_box_each_told_once_across_restart(billed_queue_fleet):
    qf = billed_queue_fleet
    # Forgotten 1.2 s after the queue finished (the default is 30 min).
    fleet = fleet_with(
        qf.loopback, "[fleet]\npoll_seconds = 0.2\n[fleet.thresholds]\nforgotten_minutes = 0.02\n"
    )
    qf.write_queue(f"{qf.cell_script('only', 'echo trained')} t\n")
    async with watching(fleet, queue_poll_s=0.2) as (watcher, rec):
        await wait_for(lambda: rec.sampled(2), 60, "samples")
        transport = qf.transport()
        await launch(await plan_launch(fleet, fleet.host("box1"), transport), transport)
        await transport.close()
        view = await wait_view(qf, lambda v: v.state == FINISHED)
        await wait_for(lambda: rec.of("queue_done"), 60, "the queue done event")
        await wait_for(lambda: rec.of("forgotten"), 60, "the forgotten box")
        seen = len(rec.states)
        await wait_for(lambda: len(rec.states) >= seen + 10, 60, "more samples and polls")
        assert view.launch is not None
        (done,) = rec.of("queue_done")
        assert done.key == f"queue_done:box1:{view.launch.ts}"
        assert done.title.endswith("queue finished: 1/1 done")
        (forgotten,) = rec.of("forgotten")
        assert forgotten.severity == "critical" and "$1.89/h" in forgotten.body
        assert not [e for e in rec.of("alert") if "cost.forgotten" in e.key]
        cost = [s.cost_per_hour for _, s in rec.states]
        assert set(cost) == {1.89}

    async with watching(fleet, queue_poll_s=0.2) as (watcher, rec):
        await wait_for(lambda: watcher.queues.get("box1"), 60, "the queue read again")
        await wait_for(lambda: rec.sampled(5), 60, "samples after the restart")
        await watcher.check_now()
        assert rec.events == [], [e.key for e in rec.events]
