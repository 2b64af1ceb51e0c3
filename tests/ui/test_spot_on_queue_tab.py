"""The Queue tab shows a running cell's work at risk (issue 40), as the pane does: its
newest checkpoint's age on the box and of the newest one verified here, named by cell,
and the Young/Daly line for an interruptible host."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pilot import make_app, screen_text, wait_for
from support.samples import FROZEN, agent_sample, make_update

from rgt_tui.domain.preemption import Checkpoint
from rgt_tui.domain.queue_records import DeployedCell, parse_cell_state, parse_runner_state
from rgt_tui.domain.queue_state import QueueView, derive_view
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.queue import QueueTab
from rgt_tui.services.fleet.file import load_fleet

pytestmark = pytest.mark.usefixtures("utc")
HOST = "a100-train"
BOOT = "b0"


def fleet_in(folder: Path):
    """One interruptible vast.ai box with a queue."""
    (folder / "q.txt").write_text("cells/eta_long.py t 1\n")
    (folder / "hosts.toml").write_text(
        f'[[hosts]]\nname = "{HOST}"\nssh = "root@10.0.0.5:40022"\nprofile = "vastai"\n'
        f'interruptible = true\nqueue = "{folder / "q.txt"}"\nrun = "python {{cfg}} {{out}}"\n'
    )
    return load_fleet(folder / "hosts.toml")


def flat(app) -> str:
    return " ".join(" ".join(row.strip(" │┃║").split()) for row in screen_text(app).splitlines())


def running(now: int = int(FROZEN)) -> QueueView:
    """eta_long running in a live queue."""
    launches = parse_runner_state(f"launch {now - 900} {BOOT} tmux 0 /s.sh 42\n")
    attempts = {"eta_long": parse_cell_state(f"start {now - 900} {BOOT} 9\n")}
    return derive_view(
        HOST, (DeployedCell(0, "eta_long", "x"),), launches, attempts, boot_id=BOOT, now=now,
        runner_alive=True,
    )  # fmt: skip


async def test_the_queue_tab_shows_the_running_cells_checkpoint_ages(tmp_path: Path) -> None:
    writes = [[FROZEN - 180 - 600 * i, 30.0, 1 << 20] for i in (2, 1, 0)]
    ckpt = {"name": "checkpoint.pt", "mtime": FROZEN - 180, "size": 1 << 20, "writes": writes}
    app = make_app(tmp_path, fleet=fleet_in(tmp_path))
    async with app.run_test(size=(110, 50)) as pilot:
        app.post_message(
            HostUpdated(make_update(HOST, agent_sample(HOST, cell="eta_long", ckpt=ckpt)))
        )
        await wait_for(lambda: HOST in app.latest, pilot=pilot)
        app.open_host(HOST, tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        tab = app.screen.query_one(QueueTab)
        await wait_for(lambda: tab.query(".queue-body"), pilot=pilot)
        tab.show_queue(running())
        await wait_for(lambda: "ckpt 3m ago on box" in flat(app), pilot=pilot)
        assert "eta_long: ckpt 3m ago on box · none verified here" in flat(app)
        assert "checkpoints every 10 min; for this box W ≈" in flat(app)  # Young/Daly
        # The spot controller's look at the records, handed to every fleet view.
        screen = app.screen
        assert isinstance(screen, HostDetailScreen)
        screen.checkpoint_verified(
            HOST, "eta_long", Checkpoint("checkpoint.pt", FROZEN - 41 * 60, 1 << 20)
        )
        await wait_for(lambda: "41m ago verified here" in flat(app), pilot=pilot)
        assert "eta_long: ckpt 3m ago on box · 41m ago verified here" in flat(app)
        # Another cell's checkpoint is not this one's.
        screen.checkpoint_verified(HOST, "other", Checkpoint("c.pt", FROZEN - 60, 1))
        await wait_for(lambda: "none verified here" in flat(app), pilot=pilot)
