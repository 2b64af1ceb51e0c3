"""The Teardown tab's steps under the Pilot, over a loopback box1 with real results:
``p`` pulls, ``v`` verifies, ``t`` opens the checklist, the name is typed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from textual.widgets import Input

from rgt_tui.app import RgtApp
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet
from support.fleet_files import set_host_key
from support.pilot import screen_text
from support.waiting import wait_for


def results_on_box(root: Path) -> None:
    """A real torch checkpoint and a metrics file in the box's durable folder."""
    results = root / "results"
    torch.save({"w": torch.arange(6.0).reshape(2, 3)}, results / "ckpt.pt")
    (results / "metrics.json").write_text(json.dumps({"loss": 0.25, "acc": 0.9}))


def teardown_app(loopback: Any, tmp_path: Path, teardown: str) -> RgtApp:
    """The App (no telemetry) on a loopback fleet whose box1 has results and the
    ``teardown`` command."""
    set_host_key(loopback.hosts_file, "teardown", teardown)
    results_on_box(loopback.box("box1").root)
    return RgtApp(
        load_fleet(loopback.hosts_file), start_monitors=False, config_dir=tmp_path / "config"
    )


async def job_done(app: RgtApp, pilot: Any, host: str, field: str) -> None:
    """Wait for ``host``'s job result ``field`` (``pull_result``, ``verify_report``) and
    for the job to let go of the host: the report is shown before the job re-reads the
    records, and a key pressed meanwhile is refused as "still running"."""
    await wait_for(lambda: getattr(app.jobs.state(host), field) is not None, 60, pilot=pilot)
    await wait_for(lambda: not app.jobs.state(host).running, 60, pilot=pilot)


async def pull_and_verify(app: RgtApp, pilot: Any) -> None:
    """``p`` then ``v`` on the fleet screen (box1 selected); both must succeed."""
    jobs = app.jobs
    await pilot.press("p")
    await wait_for(lambda: jobs.state("box1").pull_result is not None, 60, pilot=pilot)
    await wait_for(lambda: "pull complete" in screen_text(app), pilot=pilot)
    # The report is shown before the job lets go of the host (it re-reads the records
    # first): a key pressed meanwhile is refused as "still running".
    await wait_for(lambda: not jobs.state("box1").running, 60, pilot=pilot)
    assert isinstance(app.screen, HostDetailScreen) and app.screen.active_tab == "pulls"
    assert jobs.state("box1").pull_result.ok
    await pilot.press("v")
    await wait_for(lambda: jobs.state("box1").verify_report is not None, 60, pilot=pilot)
    await wait_for(lambda: "VERIFIED" in screen_text(app), pilot=pilot)
    await wait_for(lambda: not jobs.state("box1").running, 60, pilot=pilot)
    assert jobs.state("box1").verify_report.ok, jobs.state("box1").verify_report.problems


async def checklist(app: RgtApp, pilot: Any) -> str:
    """``t`` (``Ctrl+R`` from a text box, where t is a letter): box1's gate checked
    afresh; the Teardown tab's text once it is."""
    before = app.jobs.state("box1").gate
    # On the detail screen Ctrl+R re-checks wherever the focus is (the name box takes the
    # cursor as the tab opens, and a t typed there is a letter); from the fleet, t.
    await pilot.press("ctrl+r" if isinstance(app.screen, HostDetailScreen) else "t")
    await wait_for(
        lambda: app.jobs.state("box1").gate is not before and not app.jobs.state("box1").running,
        60,
        pilot=pilot,
    )
    await pilot.pause()
    assert isinstance(app.screen, HostDetailScreen) and app.screen.active_tab == "teardown"
    return screen_text(app)


async def type_name(app: RgtApp, pilot: Any, name: str) -> None:
    """Type ``name`` and Enter in the confirmation box; wait for what it started."""
    box = app.screen.query_one("#confirm-name", Input)
    box.focus()
    await pilot.pause()
    await pilot.press(*name, "enter")
    await pilot.pause()
    await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)
    await pilot.pause()


async def confirmed_by_hand(app: RgtApp, pilot: Any) -> None:
    """box1 pulled, verified, checked and its name typed, with no teardown command: the
    tab waits for the name typed again once the box is destroyed by hand."""
    await pull_and_verify(app, pilot)
    await checklist(app, pilot)
    await type_name(app, pilot, "box1")
    await wait_for(lambda: app.jobs.state("box1").awaiting_manual, pilot=pilot)
