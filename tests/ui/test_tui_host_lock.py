"""The open TUI holds hosts by the fleet runtime's one ``HostLocks`` (issue 38): its jobs
(``p``, verify, sync, teardown) and its periodic pulls take the runtime's lock, so a host
the autostop holds (its gate check, its stop command) refuses ``p``, said in the job
runner's words, and a ``p`` holds the same lock the autostop and the pulls look at."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, make_app, shown_notifications
from support.waiting import wait_for

from rgt_tui.services.watch.drivers.autostop import AUTOSTOP


async def test_the_tui_jobs_hold_hosts_by_the_runtimes_lock(tmp_path: Path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        host = app.fleet.hosts[0].name
        locks = app.runtime.locks
        assert app.jobs.locks is locks
        assert app.jobs.periodic_pulls().locks is locks
        # An autostop holding the host (its gate check, its stop command): p waits.
        assert locks.claim(host, AUTOSTOP) is None
        app.jobs.request(host, "pull")
        await wait_for(lambda: shown_notifications(app), 10, "the refusal", pilot=pilot)
        assert any(
            f"pull not started: {host}'s autostop is still running; press p when it ends"
            in str(n.message)
            for n in shown_notifications(app)
        ), shown_notifications(app)
        assert app.jobs.state(host).running == "" and locks.holder(host) == AUTOSTOP
        locks.release(host, AUTOSTOP)
        app.jobs.request(host, "pull")  # let go: the pull starts, holding the host itself
        assert locks.holder(host) == "pull"
