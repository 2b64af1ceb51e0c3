"""ux-b #7: what watch's drivers tell (a preemption named again from the runtime's
memory after every restart, a move, a stop) is told once across runs: a second
``watch`` — a ``--once`` under cron — neither prints nor counts it again."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from support.waiting import wait_for

from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.told_log import ToldLog
from rgt_tui.services.watch.watcher import Watcher

FLEET = '[[hosts]]\nname = "box1"\nssh = "root@10.0.0.5:22"\n'
NAMED = WatchEvent(
    "preempted", "box1", "preempted:box1:boot/1000", "box1: preempted",
    "preempted at ~21:46 (unreachable past its grace)", "warning",
)  # fmt: skip


async def test_a_preemption_named_again_after_a_restart_is_not_told_again(tmp_path: Path) -> None:
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    told = []
    for _ in range(3):  # watch, then two passes of watch --once
        watcher = Watcher(fleet, hosts=[], drivers=False)
        try:
            watcher.emit(NAMED)  # on_preempt tells each preemption the runtime names
            await watcher.check_now()
            told.append(list(watcher.told))
        finally:
            await watcher.close()
    assert told == [[NAMED], [], []]


class SlowToldLog(ToldLog):
    """The real told log, its file slow for a preemption (a busy disk, a loaded machine)."""

    def told(self, event: WatchEvent, now: float) -> bool:
        if event.kind == "preempted":
            time.sleep(0.3)
        return super().told(event, now)


async def test_a_move_is_told_after_the_preemption_it_acted_on_however_slow_the_log(
    tmp_path: Path,
) -> None:
    # CI of 488ae19: the delivery loop took the preemption and waited on the told log's
    # thread; check_now's own drain took the move behind it and told it first.
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    watcher = Watcher(fleet, hosts=[], drivers=False)
    assert watcher.told_log is not None
    watcher.told_log = SlowToldLog(watcher.told_log.path)
    task = asyncio.create_task(watcher.run())
    try:
        await wait_for(lambda: watcher._delivering is not None)
        moved = WatchEvent("preempt_action", "box1", "move:1", "box1: moved", "moved", "info")
        watcher.emit(NAMED)
        watcher.emit(moved)
        await watcher.check_now()
        assert [e.kind for e in watcher.told] == ["preempted", "preempt_action"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
