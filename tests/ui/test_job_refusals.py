"""A job key pressed while another job holds the host is refused by a notice that names
the refused job and its key, so two refusals never read alike (and merge into one) and
the user can tell which key was dropped (a P pressed during a sync)."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, make_app, notes
from support.waiting import wait_for


async def test_each_refused_key_says_which_job_did_not_start(tmp_path: Path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        host = app.fleet.hosts[0].name
        # The host is held by a sync (the runtime's one lock, as a running `y` holds it).
        assert app.runtime.locks.claim(host, "sync") is None
        await pilot.press("y", "P")
        said = {
            f"{host}: sync not started: {host}'s sync is still running; press y when it ends",
            f"{host}: preflight not started: {host}'s sync is still running; press P when it ends",
        }
        await wait_for(lambda: said <= set(notes(app)), 10, "both refusals", pilot=pilot)
        assert app.jobs.state(host).running == ""
        app.runtime.locks.release(host, "sync")
