"""The watch's notifications end to end: real loopback boxes and their real agents, a real
Watcher with the real Notifier posting through Apprise's ``json://`` target to a local HTTP
server that records the bodies, and a second target beside it that answers 500.

An OOM kill (the cgroup's ``oom_kill`` counter the agent reads rises), a reboot (its boot
id changes), a finished queue and the forgotten box that follows it each reach the working
target exactly once; the failing one is retried with backoff and reported, and while its
retries wait the working one is told at once. A new Watcher and Notifier on the same
journal and sent log, with the box as it was, send the working target nothing more, and
give the target that failed (now back) each event it missed, once. An OOM kill while
nothing watched is told once by the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from support.queues import QueueFleet, wait_view
from support.waiting import wait_for
from support.webhook import Webhook, webhook

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.sinks import Sink
from rgt_tui.services.watch.sinks.notify import Notifier
from rgt_tui.services.watch.store import sent_log_path
from rgt_tui.services.watch.watcher import Watcher

UP, DOWN = "/up", "/down"
RETRIES = (0.01, 0.01)  # three tries in all


class Clock:
    """This machine's clock, moved on only by the test (nothing here needs it to move:
    the forgotten box counts the queue's real age, translated by each sample)."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


class Gate:
    """The Notifier's sleep between retries, held shut until the test opens it: the
    failing target then sits in its backoff while the working one must still be told."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.waiting = 0

    async def __call__(self, _seconds: float) -> None:
        self.waiting += 1
        try:
            await self.open.wait()
        finally:
            self.waiting -= 1


class Box:
    """A fake ``/proc`` and ``/sys`` the agent reads (``--proc-root``, ``--sys-root``): a
    cgroup v2 container (``/proc/self/cgroup`` is ``0::/``) whose ``oom_kill`` counter
    and boot id the test sets; the rest copied from this machine's."""

    def __init__(self, root: Path) -> None:
        self.proc = root / "proc"
        self.cgroup = root / "sys" / "fs" / "cgroup"
        (self.proc / "sys/kernel/random").mkdir(parents=True)
        (self.proc / "self").mkdir()
        for name in ("uptime", "loadavg", "meminfo", "self/mountinfo", "mounts"):
            (self.proc / name).write_text(Path("/proc", name).read_text())
        (self.proc / "self/cgroup").write_text("0::/\n")
        self.cgroup.mkdir(parents=True)
        (self.cgroup / "cgroup.controllers").write_text("cpu io memory pids\n")
        (self.cgroup / "memory.max").write_text("max\n")  # no limit: no memory alert
        (self.cgroup / "memory.current").write_text(f"{1 << 30}\n")
        self.boot("boot-a")
        self.oom_kills(0)

    @property
    def agent_args(self) -> list[str]:
        return ["--proc-root", str(self.proc), "--sys-root", str(self.proc.parent / "sys")]

    def boot(self, boot_id: str) -> None:
        (self.proc / "sys/kernel/random/boot_id").write_text(boot_id + "\n")

    def oom_kills(self, n: int) -> None:
        events = f"low 0\nhigh 0\nmax {n}\noom {n}\noom_kill {n}\noom_group_kill 0\n"
        tmp = self.cgroup / "memory.events.tmp"
        tmp.write_text(events)
        tmp.replace(self.cgroup / "memory.events")  # the agent never reads half a file


def fleet_for(qf: QueueFleet, hook: Webhook) -> Fleet:
    """The loopback fleet told to ``/up`` and ``/down`` of ``hook``; the box forgotten
    1.2 s after its queue finished (the default is 30 min)."""
    head = (
        f'[fleet]\npoll_seconds = 0.2\nnotify = ["{hook.url(UP)}", "{hook.url(DOWN)}"]\n'
        "[fleet.thresholds]\nforgotten_minutes = 0.02\n\n"
    )
    hosts = qf.loopback.hosts_file
    hosts.write_text(head + hosts.read_text())
    return load_fleet(hosts)


@contextlib.asynccontextmanager
async def watching(
    fleet: Fleet, clock: Clock, agent_args: Sequence[str], **notify: Any
) -> AsyncIterator[tuple[Watcher, Notifier, Samples]]:
    """A Watcher with the real Notifier as its only sink, as ``rgt-tui watch`` runs them;
    stopped after, the Notifier's sends finished (or cancelled: they stay owed)."""
    notifier = Notifier(
        fleet, sent_log_path(journal_dir(fleet.path)), clock=clock, retry_delays=RETRIES, **notify
    )
    counter = Samples()
    watcher = Watcher(
        fleet, sinks=[notifier, counter], drivers=False, clock=clock, agent_args=agent_args,
        queue_poll_s=0.2,
    )  # fmt: skip
    task = asyncio.create_task(watcher.run())
    try:
        yield watcher, notifier, counter
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await notifier.aclose(grace=30)


def titles(hook: Webhook, path: str) -> list[str]:
    return [body["title"] for body in hook.at(path)]


def told(hook: Webhook, path: str, words: str) -> list[str]:
    """The titles delivered to ``path`` that contain ``words``."""
    return [t for t in titles(hook, path) if words in t]


class Samples(Sink):
    """A second sink: counts the distinct samples handed to the sinks (a queue poll or a
    tick hands the same one again)."""

    def __init__(self) -> None:
        self.seen: set[float] = set()

    def on_host(self, host: HostConfig, state: HostState) -> None:
        if state.snapshot is not None:
            self.seen.add(state.snapshot.t)

    def after(self, n: int) -> Callable[[], bool]:
        """A predicate: ``n`` more samples than now."""
        start = len(self.seen)
        return lambda: len(self.seen) >= start + n


async def test_oom_reboot_queue_done_and_forgotten_each_posted_once_across_a_restart(
    billed_queue_fleet, tmp_path
):
    qf = billed_queue_fleet
    box = Box(tmp_path / "box")
    clock = Clock()
    with webhook() as hook:
        hook.failing.add(DOWN)
        fleet = fleet_for(qf, hook)
        gate = Gate()
        async with watching(fleet, clock, box.agent_args, sleep=gate) as (
            watcher,
            notifier,
            counter,
        ):
            await wait_for(counter.after(3), 60, "samples with oom_kill 0")
            assert titles(hook, UP) == []  # nothing new on a quiet box

            # (1) An OOM kill: the counter rises above the first sample's.
            box.oom_kills(1)
            (oom,) = await wait_for(lambda: told(hook, UP, "cgroup.oom_kill"), 60, "the OOM post")
            assert "box1" in oom
            (posted,) = [b for b in hook.at(UP) if b["title"] == oom]
            assert posted["type"] == "failure"  # critical: said by the type, not the title
            # The failing target had its first try and waits in its backoff meanwhile.
            await wait_for(lambda: hook.tries(DOWN) >= 1 and gate.waiting >= 1, 30, "a 500")

            # (2) A reboot: the boot id changes.
            box.boot("boot-b")
            await wait_for(lambda: told(hook, UP, "rebooted"), 60, "the reboot post")

            # (3) The queue finishes, and (4) the box is forgotten 1.2 s later.
            qf.write_queue(f"{qf.cell_script('only', 'echo trained')} t\n")
            transport = qf.transport()
            await launch(await plan_launch(fleet, fleet.host("box1"), transport), transport)
            await transport.close()
            view = await wait_view(qf, lambda v: v.state == FINISHED)
            await wait_for(lambda: told(hook, UP, "queue finished"), 60, "the queue post")
            await wait_for(lambda: told(hook, UP, "forgotten"), 60, "the forgotten post")
            await wait_for(counter.after(10), 60, "more samples and polls")
            await watcher.check_now()

            first = hook.at(UP)
            assert len(told(hook, UP, "cgroup.oom_kill")) == 1
            assert len(told(hook, UP, "rebooted")) == 1
            assert len(told(hook, UP, "queue finished: 1/1 done")) == 1
            assert len(told(hook, UP, "forgotten")) == 1
            assert len({(b["title"], b["message"]) for b in first}) == len(first)  # none twice
            assert "$1.89/h" in next(b["message"] for b in first if "forgotten" in b["title"])
            assert view.launch is not None
            keys = {e.kind: e.key for e in watcher.told}
            assert keys["queue_done"] == f"queue_done:box1:{view.launch.ts}"
            assert keys["reboot"] == "reboot:box1:boot-b"
            # Every event that reached the working target had one try at the failing one,
            # which is still held in its backoff: it never delayed the working one.
            await wait_for(lambda: gate.waiting == len(first), 30, "a first try of each")
            assert hook.tries(DOWN) == len(first)
            assert hook.at(DOWN) == []

            gate.open.set()  # let its retries run out
            await notifier.drain()
            assert hook.tries(DOWN) == 3 * len(first)
            given_up = [f for f in notifier.failures if "json target 2 of box1" in f]
            assert len(given_up) == len(first), notifier.failures
            assert all("not delivered after 3 tries" in f for f in given_up)
            assert not any("json target 1" in f for f in notifier.failures)
            assert len(hook.at(UP)) == len(first)

        # The failing target is back. A restart, the box as it was: the working target
        # hears nothing more; the one that failed gets each event it missed, once.
        hook.failing.discard(DOWN)
        async with watching(fleet, clock, box.agent_args) as (watcher, notifier, counter):
            await wait_for(lambda: watcher.queues.get("box1"), 60, "the queue read again")
            await wait_for(counter.after(10), 60, "samples after the restart")
            await watcher.check_now()
            await wait_for(lambda: len(hook.at(DOWN)) >= len(first), 30, "the missed events")
            await notifier.drain()
            assert list(watcher.told) == [], [e.key for e in watcher.told]
            assert hook.at(UP) == first
            assert sorted(titles(hook, DOWN)) == sorted(b["title"] for b in first)
            assert notifier.failures == []

        # An OOM kill while nothing watched: the next run tells it once, to both.
        box.oom_kills(2)
        async with watching(fleet, clock, box.agent_args) as (watcher, notifier, counter):
            await wait_for(lambda: len(hook.at(DOWN)) > len(first), 60, "the OOM while down")
            await wait_for(counter.after(10), 60, "more samples")
            await watcher.check_now()
            await notifier.drain()
            (new,) = hook.at(UP)[len(first) :]
            assert "cgroup.oom_kill" in new["title"]
            assert "oom_kill 1 → 2" in new["message"]
            assert hook.at(DOWN)[len(first) :] == [new]
