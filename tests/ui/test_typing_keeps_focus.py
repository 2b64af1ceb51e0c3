"""Focus never turns typing into commands (issue 43.5), under the Pilot over a real
loopback box and `rgt-tui` run in a subprocess as in another terminal:

- a name submitted while the gate is locked or another job runs is refused, and the
  cursor stays in the box: the name typed again never reaches a binding (``1`` would
  switch tabs), whatever arrives meanwhile (the command line's pull and verify, the
  re-check they start, a sample, a finished job);
- ``Ctrl+R`` re-checks from inside the box (``t`` there is a letter of the name);
- keys typed right after ``t`` make the name, without the ``t``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import arun
from support.pilot import SIZE, make_app, publish_jobs, screen_text, wait_for
from support.samples import HOSTS, agent_sample, make_update, three_updates
from support.teardown_ui import checklist, teardown_app
from textual import events
from textual.widgets import Input

from rgt_tui.app import RgtApp
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.records_watch import WATCH_EVERY_S


def _items(app: RgtApp) -> dict[str, bool]:
    gate = app.jobs.state("box1").gate
    return {c.key: c.ok for c in gate.conditions} if gate is not None else {}


def _box(app: RgtApp) -> Input:
    return app.screen.query_one("#confirm-name", Input)


async def _settled(app: RgtApp, pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.pause()
    await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)
    await pilot.pause()


async def test_the_command_lines_pull_and_verify_never_take_the_cursor(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "destroyed"
    app = teardown_app(loopback_fleet, tmp_path, f"echo destroyed > {marker}")
    env: dict[str, str | None] = {"RGT_HOSTS": str(loopback_fleet.hosts_file)}
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await checklist(app, pilot)  # t: checked, locked (nothing pulled yet)
        box = _box(app)
        assert app.focused is box and not _items(app)["pulled"]
        # Typed before pulling: the locked gate refuses the name, the cursor stays.
        await pilot.press(*"box1", "enter")
        await _settled(app, pilot)
        assert app.jobs.state("box1").torn_down_at is None and not marker.exists()
        assert app.focused is box, app.focused
        await pilot.press(*"bo")  # partly typed when the other terminal's records land

        pulled = await arun("pull", "box1", env=env)
        assert pulled.returncode == 0, pulled.stdout + pulled.stderr
        verified = await arun("verify", "box1", env=env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        await wait_for(
            lambda: _items(app).get("verified") and not app.jobs.state("box1").running,
            WATCH_EVERY_S * 5 + 60,
            "the records watch to re-check the gate",
            pilot=pilot,
        )
        await pilot.pause()
        assert app.focused is box, app.focused
        await pilot.press(*"x1")  # "1" is tab 1 if it reaches a binding
        assert box.value == "box1" and app.screen.active_tab == "teardown"
        await pilot.press("enter")
        await wait_for(lambda: app.jobs.state("box1").torn_down_at is not None, 60, pilot=pilot)
        assert marker.exists()


async def test_a_sample_and_a_finished_job_keep_the_cursor(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, "true")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await checklist(app, pilot)
        box = _box(app)
        assert app.focused is box
        # A periodic pull holds the host (as pull_schedule claims it) when the name is
        # submitted: refused, "the pull is still running"; the cursor stays.
        app.jobs.locks.claim("box1", "pull")
        await pilot.press(*"box1", "enter")
        assert app.focused is box, app.focused
        app.jobs.locks.release("box1", "pull")
        # A pull's result arrives (not from a key: p is a letter in the box), then a sample.
        app.jobs.request("box1", "pull")
        await _settled(app, pilot)
        assert app.jobs.state("box1").pull_result is not None
        app.post_message(HostUpdated(make_update("box1", agent_sample("box1"))))  # a sample
        await pilot.pause()
        assert app.focused is box, app.focused
        await pilot.press(*"box1")
        assert box.value == "box1" and app.screen.active_tab == "teardown"


async def test_ctrl_r_rechecks_from_the_box_and_keeps_what_was_typed(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, "true")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await checklist(app, pilot)
        box = _box(app)
        before = app.jobs.state("box1").gate
        await pilot.press(*"tbo")  # t is a letter here: a host may be named "tpu1"
        assert box.value == "tbo" and app.jobs.state("box1").gate is before
        await pilot.press("ctrl+r")
        await wait_for(lambda: app.jobs.state("box1").gate is not before, 60, pilot=pilot)
        await _settled(app, pilot)
        assert app.focused is box and box.value == "tbo", (app.focused, box.value)
        assert app.screen.active_tab == "teardown"


async def test_keys_typed_right_after_t_make_the_name_without_the_t(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, "true")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        # As a terminal delivers a fast typist: every key queued before the first is
        # handled, from the fleet, then again from the detail screen's Overview.
        for ch in "tbox1":
            app.post_message(events.Key(ch, ch))
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        await _settled(app, pilot)
        box = _box(app)
        assert box.value == "box1" and app.screen.active_tab == "teardown", screen_text(app)
        box.value = ""
        app.screen.set_focus(None)
        await pilot.press("1")
        assert app.screen.active_tab == "overview"
        for ch in "tbox1":
            app.post_message(events.Key(ch, ch))
        await wait_for(lambda: app.screen.active_tab == "teardown", pilot=pilot)
        await _settled(app, pilot)
        assert box.value == "box1" and app.focused is box


async def test_a_tab_key_typed_while_p_s_screen_opens_is_not_undone_by_p(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """h542 #5: p, then 7 50–120 ms later, ended on the Pulls tab: the 7 reached the
    screen while it composed, and p's tab, shown after a refresh, went over it. The key
    typed last wins, whenever the screen can show it."""
    app = teardown_app(loopback_fleet, tmp_path, "true")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.open_host("box1", "pulls")  # what p does
        detail = app.screen
        assert isinstance(detail, HostDetailScreen) and not detail.is_mounted
        detail.action_show_tab("queue")  # the 7 typed behind it, still composing
        await wait_for(lambda: detail.is_mounted, pilot=pilot)
        await _settled(app, pilot)
        assert detail.active_tab == "queue", screen_text(app)
        # Alone, p's tab is shown as before.
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, HostDetailScreen), pilot=pilot)
        app.open_host("box1", "pulls")
        await wait_for(lambda: app.screen.active_tab == "pulls", pilot=pilot)


@pytest.mark.parametrize("field", ["filter", "add-target", "ack-cell", "confirm-name"])
async def test_every_refresh_leaves_a_text_box_its_cursor(
    tmp_path: Path, state_dir: Path, field: str
) -> None:
    """Each text box the fleet's news can reach (the grid's filter, the add-box paste
    over the grid, the Teardown tab's two): samples of every host, a finished job and
    the journal watch's look arrive while it has the cursor; it keeps it, and digits
    typed next are text (``1`` is a tab or a pane otherwise)."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        host = HOSTS[0]
        if field == "filter":
            await pilot.press("slash")
        elif field == "add-target":
            await pilot.press("plus")
        else:
            await pilot.press("enter")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            app.screen.action_show_tab("teardown")
            await pilot.pause()
            app.screen.set_focus(app.screen.query_one(f"#{field}", Input))
        await pilot.pause()
        screen, box = app.screen, app.focused
        assert isinstance(box, Input) and box.id == field, box
        await pilot.press(*"ab")
        for update in three_updates():
            app.post_message(HostUpdated(update))
        publish_jobs(app, host, running="pull")
        await pilot.pause()
        publish_jobs(app, host, running="", pull_error=("lost", "press p again"))
        await app.jobs.take_outside_changes()  # what another process recorded
        await pilot.pause()
        assert app.screen is screen and app.focused is box, app.focused
        await pilot.press(*"x1")
        assert box.value.endswith("abx1") and app.focused is box


async def test_a_correction_typed_in_a_burst_lands_in_order_in_the_name_box(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """Backspace then a letter in one burst (a quick correction, a busy machine): Textual
    runs Backspace's binding once the key has bubbled up, after the letter behind it was
    typed, so ``box9`` + [⌫, 1] read ``box9``, not ``box1`` (hour s22a #4; in the disk
    delete, cell and PID boxes too). The keys go to the app at once, as a terminal's
    burst does (pilot.press waits between keys)."""
    app = teardown_app(loopback_fleet, tmp_path, "true")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await checklist(app, pilot)
        box = _box(app)
        assert app.focused is box
        # Nothing pulled: the gate is locked, and Enter there checks again (its border
        # said "Enter: tear it down": hour s22a #13).
        await wait_for(
            lambda: (box.border_subtitle or "").startswith("Enter: re-check ("),
            pilot=pilot,
            show=lambda: str(box.border_subtitle),
        )
        for key in [*"box9", "backspace", "1", "left", "left", "delete", "o"]:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await wait_for(lambda: box.value == "boo1", pilot=pilot, show=lambda: box.value)
