"""A group's pane and Logs tab (issue 41): its boxes side by side, one line each from
each box's own latest sample, and a rank picker that follows the chosen rank's box."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app
from support.samples import FLEET_TOML, agent_sample, make_update, write_fleet
from support.waiting import wait_for
from textual.widgets import Select

from rgt_tui.messages import HostUpdated
from rgt_tui.screens.tabs.logs import LogsTab
from rgt_tui.services.telemetry import ConnectionState

GROUP = """
[[groups]]
name = "pair"
hosts = ["a100-train", "h100-eval"]
master_addr = "10.0.0.5"
"""


async def test_a_group_pane_shows_each_box_and_its_logs_tab_picks_a_rank(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path, FLEET_TOML + GROUP)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(160, 60)) as pilot:
        pane = app.fleet_screen.panes["pair"]
        app.post_message(HostUpdated(make_update("a100-train", agent_sample("a100-train"))))
        lost = ConnectionState("lost", 0.0, error="connection reset \x1b[2J")
        app.post_message(HostUpdated(make_update("h100-eval", agent_sample("h100-eval"), lost)))
        await wait_for(lambda: len(pane.member_lines) == 2, pilot=pilot)
        await wait_for(lambda: "lost" in pane.member_lines[1].plain, pilot=pilot)
        first, second = (line.plain for line in pane.member_lines)
        assert first.startswith("r0 a100-train") and "GPU " in first and "VRAM " in first
        assert second.startswith("r1 h100-eval") and "connection reset" in second
        assert "\x1b" not in second  # the box's error text, made printable
        assert not app.fleet_screen.panes["spot-4090"].member_lines  # a plain host: none

        app.open_host("pair", tab="logs")
        await wait_for(lambda: app.screen.query(LogsTab), pilot=pilot)
        tab = app.screen.query_one(LogsTab)
        await wait_for(lambda: tab.host is not None, pilot=pilot)
        ranks = tab.query_one("#logs-rank", Select)
        assert ranks.display and ranks.value == 0
        assert tab._box(tab.host) == "pair"  # rank 0: the group's own connection
        ranks.value = 1
        await wait_for(lambda: tab.rank == 1, pilot=pilot)
        assert tab._box(tab.host) == "h100-eval"  # rank 1's box, over its connection
        await pilot.press("escape")

        app.open_host("spot-4090", tab="logs")
        await wait_for(lambda: app.screen.query(LogsTab), pilot=pilot)
        plain = app.screen.query_one(LogsTab)
        await wait_for(lambda: plain.host is not None, pilot=pilot)
        assert not plain.query_one("#logs-rank", Select).display
