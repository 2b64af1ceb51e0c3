"""The kill dialog says what the host's backend really does (issue 43 item 10b).

On a Slurm login node a kill is ``scancel`` of the cell's array task, not "TERM, KILL after
10 s" from a killer on the box; the dialog reads the words from the backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pilot import SIZE, make_app, screen_text, wait_for
from support.samples import FLEET_TOML, write_fleet

from rgt_tui.domain.queue_records import DeployedCell, parse_cell_state, parse_runner_state
from rgt_tui.domain.queue_state import derive_view
from rgt_tui.screens.dialog import ConfirmScreen
from rgt_tui.screens.tabs.queue import QueueTab

pytestmark = pytest.mark.usefixtures("utc")

HOST = "a100-train"
BOOT = "11111111-aaaa-bbbb-cccc-000000000001"


def running_view(host: str):
    """One cell, running since 1000."""
    deployed = (DeployedCell(0, "alpha", "x"),)
    launches = parse_runner_state(f"launch 1000 {BOOT} tmux 0 /s.sh 42\n")
    attempts = {"alpha": parse_cell_state(f"start 1000 {BOOT} 9\n")}
    return derive_view(host, deployed, launches, attempts, boot_id=BOOT, now=1100,
                       runner_alive=True)  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "said", "not_said"),
    [
        ("", "KILL after 10 s", "scancel"),
        ('scheduler = "slurm"\n', "scancel", "KILL after 10 s"),
    ],
    ids=["box", "slurm"],
)
async def test_the_kill_dialog_says_what_the_backend_does(
    tmp_path: Path, extra: str, said: str, not_said: str
) -> None:
    fleet_text = FLEET_TOML.replace(
        "cost_per_hour = 1.89\n",
        f'cost_per_hour = 1.89\nqueue = "q.txt"\nrun = "echo"\n{extra}',
        1,
    )
    app = make_app(tmp_path, fleet=write_fleet(tmp_path, fleet_text))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        host = next(h for h in app.fleet.hosts if h.name == HOST)
        app.open_host(HOST, tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        app.screen.query_one(QueueTab)._ask_kill(host, running_view(HOST))
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.pause()
        text = screen_text(app)
    assert said in text, text
    assert not_said not in text, text
