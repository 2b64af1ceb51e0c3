"""One fleet runtime under the TUI and under ``watch``: the same recorded stream (samples,
queue views, an OOM kill while nothing watched, a reboot, a lost connection) fed to the
runtime as the App wires it and as ``watch`` wires it tells the same events, in the
same order."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from support.replay import ReplayMonitor
from support.samples import FROZEN, agent_sample
from support.waiting import wait_for

from rgt_tui.app import RgtApp
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.queue_records import cells_tsv_line, parse_cells_tsv, parse_runner_state
from rgt_tui.domain.queue_state import QueueView, derive_view
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.store import WatchStore, watch_dir
from rgt_tui.services.watch.watcher import Watcher

FLEET = """\
[fleet]
tui_notify = true

[[hosts]]
name = "box1"
ssh = "root@10.0.0.5:40022"
"""
BOOT = "boot-box1"  # agent_sample's boot id for box1
CELLS = parse_cells_tsv("".join(cells_tsv_line(i, n, f"run {n}") for i, n in enumerate("ab")))


class Clock:
    def __init__(self) -> None:
        self.t = FROZEN

    def __call__(self) -> float:
        return self.t


def fleet_in(folder: Path) -> Fleet:
    """The one-host fleet in ``folder``, its watch memory from an earlier run: boot
    ``BOOT`` seen with no OOM kill yet (so a kill while nothing watched is owed)."""
    folder.mkdir()
    (folder / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(folder / "hosts.toml")
    store = WatchStore(watch_dir(journal_dir(fleet.path)))
    store.update("box1", lambda m: replace(m, boot_id=BOOT, oom_boot=BOOT, oom_baseline=0))
    return fleet


def queue_view(records: str, now: float) -> QueueView:
    return derive_view(
        "box1", CELLS, parse_runner_state(records), {}, boot_id=BOOT, now=now,
        runner_alive=True, alive_cells=frozenset(),
    )  # fmt: skip


async def replay(
    clock: Clock,
    monitor: ReplayMonitor,
    applied: object,
    check_now: object,
    view: object,
) -> None:
    """The recorded stream, step by step; after each, ``applied(update)`` until the
    consumer applied it, then ``check_now()`` (the events it owes are told)."""

    async def sample(**overrides: object) -> None:
        clock.t += 2
        update = monitor.sample(agent_sample("box1", t=clock.t, seq=int(clock.t), **overrides))
        await applied(update)  # type: ignore[operator]
        await check_now()  # type: ignore[operator]

    cgroup = agent_sample("box1")["cgroup"]
    await sample(cgroup=cgroup | {"oom_kill": 1})  # killed while nothing watched
    view(queue_view(f"launch {int(FROZEN)} {BOOT} tmux 0 /r.sh 42\n", clock.t))  # type: ignore[operator]
    await check_now()  # type: ignore[operator]
    await sample(cgroup=cgroup | {"oom_kill": 1})
    done = f"launch {int(FROZEN)} {BOOT} tmux 0 /r.sh 42\ndone {int(clock.t)} 1 1\n"
    view(queue_view(done, clock.t))  # type: ignore[operator]
    await check_now()  # type: ignore[operator]
    await sample(boot_id="boot-2", uptime_s=60.0)  # rebooted
    clock.t += 1
    lost = monitor.lose("Connection lost")
    await applied(lost)  # type: ignore[operator]
    clock.t += 400  # silent past the grace
    await check_now()  # type: ignore[operator]
    await sample(boot_id="boot-2", uptime_s=500.0)  # back


async def told_by_the_tui(folder: Path) -> list[WatchEvent]:
    fleet, clock = fleet_in(folder), Clock()
    monitor = ReplayMonitor(fleet.host("box1"), clock)
    app = RgtApp(
        fleet, monitors={"box1": monitor}, start_monitors=False, clock=clock,
        config_dir=folder / "config",
    )  # fmt: skip
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.wait_for(monitor.started.wait(), 30)

        async def applied(update: object) -> None:
            await wait_for(lambda: app.latest.get("box1") is update, pilot=pilot)

        await replay(
            clock, monitor, applied, app.runtime.check_now,
            lambda view: app.runtime.queue_viewed("box1", view),
        )  # fmt: skip
        return list(app.runtime.told)


async def told_by_watch(folder: Path) -> list[WatchEvent]:
    fleet, clock = fleet_in(folder), Clock()
    monitor = ReplayMonitor(fleet.host("box1"), clock)
    watcher = Watcher(fleet, drivers=False, clock=clock, monitors={"box1": monitor})
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(monitor.started.wait(), 30)

        async def applied(update: object) -> None:
            assert watcher.latest.get("box1") is update  # applied as it came

        await replay(
            clock, monitor, applied, watcher.check_now,
            lambda view: watcher.runtime.queue_viewed("box1", view),
        )  # fmt: skip
        return list(watcher.told)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_the_tui_and_watch_tell_the_same_events_in_the_same_order(tmp_path: Path) -> None:
    tui = await told_by_the_tui(tmp_path / "tui")
    watch = await told_by_watch(tmp_path / "watch")
    assert tui == watch, ([e.key for e in tui], [e.key for e in watch])
    kinds = [(e.kind, e.key.split(":")[2] if e.kind == "alert" else "") for e in tui]
    # The OOM kill while nothing watched is told (the monitor's health, seeded from the
    # memory, in both), then the finished queue, the reboot and the silence.
    assert ("alert", "cgroup.oom_kill") in kinds
    order = [k for k, _ in kinds if k in ("queue_done", "reboot", "silent")]
    assert order == ["queue_done", "reboot", "silent"], kinds
    assert kinds.index(("alert", "cgroup.oom_kill")) < kinds.index(("queue_done", ""))
