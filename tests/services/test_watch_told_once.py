"""ux-b #7: what watch's drivers tell (a preemption named again from the runtime's
memory after every restart, a move, a stop) is told once across runs: a second
``watch`` — a ``--once`` under cron — neither prints nor counts it again."""

from __future__ import annotations

from pathlib import Path

from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.events import WatchEvent
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
