"""ux-b #2, the open TUI: a box watch's autostop stopped (its stop recorded beside the
fleet's journal) that no longer answers reads "stopped by watch at HH:MM" on its pane,
never "the run may still be alive", and its meter stops at the stop."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.autostop import record_stop
from support.pilot import make_app, screen_text, wait_for
from support.samples import FROZEN, agent_sample, make_update

from rgt_tui.messages import HostUpdated
from rgt_tui.paths import journal_dir
from rgt_tui.services.runtime.stopped import hhmm
from rgt_tui.services.telemetry import ConnectionState

pytestmark = pytest.mark.usefixtures("utc")
HOST = "a100-train"


def flat(app) -> str:  # type: ignore[no-untyped-def]
    return " ".join(" ".join(row.strip(" │┃║").split()) for row in screen_text(app).splitlines())


async def test_the_open_tui_pane_says_the_box_was_stopped_by_watch(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    at = FROZEN - 600
    record_stop(journal_dir(app.fleet.path), HOST, at)
    async with app.run_test(size=(100, 50)) as pilot:
        lost = ConnectionState("reconnecting", FROZEN - 300, attempt=3, error="Connection refused")
        app.post_message(HostUpdated(make_update(HOST, agent_sample(HOST), lost)))
        await wait_for(lambda: f"stopped by watch at {hhmm(at)}" in flat(app), pilot=pilot)
        assert "may still be alive" not in flat(app)
        # Its status line says so plainly (not "reconnecting", not in the error colour),
        # and its meter stopped at the stop: $1.89/h from 10:00 to 11:50, not to 12:00.
        assert f"■ stopped by watch at {hhmm(at)}" in flat(app)
        assert "reconnecting" not in flat(app)

        assert "$3.46 total" in flat(app) and "$3.78" not in flat(app)


async def test_the_headers_rate_leaves_out_a_box_watch_stopped(tmp_path: Path) -> None:
    """Hour s18a #6: the header read the fleet's $/h with the stopped box's rate in it,
    while its pane and /metrics said it bills no compute."""
    app = make_app(tmp_path)
    rates = {h.name: h.cost_per_hour or 0.0 for h in app.fleet.hosts}
    assert rates[HOST] > 0 and len(rates) > 1
    every, without = sum(rates.values()), sum(r for n, r in rates.items() if n != HOST)
    async with app.run_test(size=(100, 50)) as pilot:
        await wait_for(lambda: f"${every:.2f}/h" in flat(app), pilot=pilot)
        record_stop(journal_dir(app.fleet.path), HOST, FROZEN - 600)
        lost = ConnectionState("reconnecting", FROZEN - 300, attempt=3, error="Connection refused")
        app.post_message(HostUpdated(make_update(HOST, agent_sample(HOST), lost)))
        await wait_for(lambda: "stopped by watch" in flat(app), pilot=pilot)
        await wait_for(lambda: f"${without:.2f}/h" in flat(app), pilot=pilot)
        assert f"${every:.2f}/h" not in flat(app)


async def test_a_box_watch_stopped_raises_no_forgotten_box_alert(tmp_path: Path) -> None:
    """GEN1 "queue finished … and the box still bills" stayed on the pane, in the header's
    criticals and in /metrics (RgtForgottenBox paged) of a box autostop had stopped: the
    alert fired every time autostop did its job (s36 watch hour #2)."""
    from dataclasses import replace

    from rgt_tui.domain.cost import FORGOTTEN_ALERT, forgotten_box_alert

    app = make_app(tmp_path)
    record_stop(journal_dir(app.fleet.path), HOST, FROZEN - 600)
    async with app.run_test(size=(100, 50)) as pilot:
        lost = ConnectionState("reconnecting", FROZEN - 300, attempt=3, error="Connection refused")
        update = make_update(HOST, agent_sample(HOST), lost)
        forgotten = forgotten_box_alert(FROZEN - 3600, FROZEN, 3.10)
        assert forgotten is not None
        app.post_message(HostUpdated(replace(update, alerts=(forgotten, *update.alerts))))
        await wait_for(lambda: "stopped by watch" in flat(app), pilot=pilot)
        shown = app.runtime.latest[HOST]
        assert FORGOTTEN_ALERT not in {a.id for a in shown.alerts}, shown.alerts
        assert "still bills" not in flat(app)
