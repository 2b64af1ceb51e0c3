"""The launch dialog reads every credential before Launch (ux-d #10): one that cannot be
read refuses the plan, every such credential named with its fix, the focus on Cancel as
for any refusal. Loopback box; the credentials' sources are this test's own HOME and
environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.pilot import SIZE, screen_text, wait_for
from support.queues import SCRIPT_RUN
from test_app_queue import planned, queue_app
from textual.widgets import Button

from rgt_tui.screens.fleet import FleetScreen


async def test_unreadable_credentials_refuse_the_plan_all_named_cancel_focused(
    make_queue_fleet: Any, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RGT_T_UNSET", raising=False)
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    with qf.loopback.hosts_file.open("a") as f:
        f.write(
            "[hosts.credentials]\n"
            'WANDB_API_KEY = { netrc = "api.wandb.ai" }\n'
            'MY_SECRET = { env = "RGT_T_UNSET" }\n'
        )
    qf.write_queue(f"{qf.cell_script('c0', 'echo hi')} t\n")
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        modal = await planned(pilot, app)
        assert modal.plan is not None and not modal.plan.ok
        # The refusal is scrolled into view after a refresh: read once it is there (a
        # loaded CI machine read the screen before).
        wanted = "cannot read credential WANDB_API_KEY (netrc api.wandb.ai)"
        await wait_for(lambda: wanted in screen_text(app), pilot=pilot)
        text = screen_text(app)
        assert "Refused" in text
        assert "cannot read credential MY_SECRET (env RGT_T_UNSET)" in text
        assert not modal.query_one("#launch-go", Button).display
        assert app.focused is modal.query_one("#launch-cancel", Button)
        await pilot.press("enter")  # closes; nothing is launched
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
    assert not (qf.qdir() / "runner.state").exists()
