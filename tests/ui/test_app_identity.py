"""Pilot tests of which box answers: refused host keys (the ``trust this key?`` prompt)
and a new box rented under a torn-down box's name, over real loopback boxes and the
app's real monitors.
"""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import SIZE, click, screen_text, shown_notifications, wait_for
from textual.widgets import Button, Static

from rgt_tui.app import RgtApp
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.paths import journal_dir
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.host_key import HostKeyScreen
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal, TeardownRecord


def footer_keys(app: RgtApp) -> set[str]:
    """The keys the current screen shows in its footer (enabled and shown)."""
    return {b.key for _, b, enabled, _ in app.screen.active_bindings.values() if enabled and b.show}


async def test_unknown_key_is_trusted_only_after_confirm(tmp_path: Path, loopback_fleet) -> None:  # type: ignore[no-untyped-def]
    known_hosts = loopback_fleet.known_hosts
    known_hosts.write_text("")  # no box is known: every connection is refused
    box1 = loopback_fleet.box("box1")
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        refusals = app.host_keys.refusals
        await wait_for(lambda: {"box1", "box2", "box3"} <= set(refusals), 40, pilot=pilot)
        error = refusals["box1"]
        assert error.kind == "unknown" and error.presented.startswith("ssh-ed25519 SHA256:")
        assert error.trust_line == box1.known_hosts_line
        # The selected pane (box1) offers K in its text and in the footer.
        await wait_for(lambda: "trust this key?" in screen_text(app), pilot=pilot)
        await wait_for(lambda: "K" in footer_keys(app), pilot=pilot)

        # Cancel writes nothing and the host stays refused.
        await pilot.press("K")
        await wait_for(lambda: isinstance(app.screen, HostKeyScreen), pilot=pilot)
        text = screen_text(app)
        assert "trust this key?" in text and "box1" in text
        assert error.presented in text and str(known_hosts) in text
        assert any(row.strip(" │") == box1.known_hosts_line for row in text.splitlines())
        assert app.screen.query_one("#key-cancel", Button).has_focus  # Enter is the safe way
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        await pilot.pause(0.5)
        assert known_hosts.read_text() == ""
        assert app.latest["box1"].connection.status != "connected"

        # Trust: the exact line is appended, then box1 (only) connects.
        await pilot.press("K")
        await wait_for(lambda: isinstance(app.screen, HostKeyScreen), pilot=pilot)
        await click(pilot, "#key-trust")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        assert known_hosts.read_text() == box1.known_hosts_line + "\n"
        await wait_for(lambda: app.latest["box1"].connection.status == "connected", 40, pilot=pilot)
        await wait_for(lambda: "box1" not in refusals, pilot=pilot)
        # One toast says it: "trusted …; reconnecting…", not a second "Reconnecting box1…"
        # (s39 new user #5).
        said = [str(n.message) for n in shown_notifications(app)]
        assert any("box1: trusted ssh-ed25519" in m and "reconnecting…" in m for m in said), said
        assert not any("Reconnecting box1" in m for m in said), said
        assert app.latest["box2"].connection.status != "connected" and "box2" in refusals
        await wait_for(lambda: "K" not in footer_keys(app), pilot=pilot)  # box1 is selected
    assert not loopback_fleet.errors


async def test_changed_key_shows_the_fix_and_offers_no_trust(
    tmp_path: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    known_hosts = loopback_fleet.known_hosts
    box1, box2 = loopback_fleet.box("box1"), loopback_fleet.box("box2")
    # box1's line now holds box2's key: box1 presents another key than the one recorded.
    wrong = f"[127.0.0.1]:{box1.port} {box2.known_hosts_line.split(' ', 1)[1]}"
    before = wrong + "\n" + box2.known_hosts_line + "\n"
    known_hosts.write_text(before)
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        refusals = app.host_keys.refusals
        await wait_for(lambda: "box1" in refusals, 40, pilot=pilot)
        error = refusals["box1"]
        assert error.kind == "changed" and error.trust_line is None
        await pilot.press("K")
        await wait_for(lambda: isinstance(app.screen, HostKeyScreen), pilot=pilot)
        text = screen_text(app)
        assert "host key CHANGED" in text
        assert error.known[0] in text and error.presented in text  # old and new
        assert f"ssh-keygen -R '[127.0.0.1]:{box1.port}'" in text.replace("\n", "")
        assert not app.screen.query("#key-trust")  # nothing to trust here
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        assert known_hosts.read_text() == before


def history_text(app: RgtApp) -> str:
    """The Teardown tab's history section (below the checklist: it may be scrolled off
    a 50-row screen, so it is read from its widget)."""
    return str(app.screen.query_one("#teardown-history", Static).render())


OLD_BOX = "0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00"
NEW_BOX = "9e99e99e99e99e99e99e99e99e99e999"


def _torn_down(hosts_file: Path, host: str, box_id: str) -> None:
    """``host``'s journal in the fleet of ``hosts_file``: box ``box_id`` seen, then torn
    down (as a teardown records it)."""
    journal = Journal(journal_dir(hosts_file))
    journal.observe_box(host, BoxIdentity(box_id, None), time.time() - 3600)
    journal.add_teardown(host, TeardownRecord(time.time() - 60, "true", 0, "", True, box_id))


def _box_id_on(box, box_id: str) -> None:  # type: ignore[no-untyped-def]
    """Which box this is: the id its agents read from ``~/.rgt/box-id`` (HOME = root)."""
    (box.root / ".rgt").mkdir(exist_ok=True)
    (box.root / ".rgt" / "box-id").write_text(box_id + "\n")


async def test_torn_down_box_gets_one_attempt_then_a_new_box_there_is_live(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    _torn_down(loopback_fleet.hosts_file, "box1", OLD_BOX)
    _box_id_on(loopback_fleet.box("box1"), OLD_BOX)  # the same box still answers
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.fleet_screen.panes["box1"]
        await wait_for(lambda: pane.has_class("-torn-down"), pilot=pilot)
        # One attempt: the box answered with the torn-down box's id, so polling stops.
        # A task is awaitable, and wait_for awaits what it is handed: the task in a tuple.
        (stopped,) = await wait_for(
            lambda: (
                app.runtime.monitor_tasks["box1"].done() and (app.runtime.monitor_tasks["box1"],)
            ),
            pilot=pilot,
        )
        assert "box1" in app.runtime.stopped and app.jobs.state("box1").torn_down_at
        await wait_for(
            lambda: (
                app.latest.get("box2") is not None
                and app.latest["box2"].connection.status == "connected"
            ),
            40,
            pilot=pilot,
        )
        assert not app.runtime.monitor_tasks["box2"].done()

        # r ("Press r on it if the box is back"): the same box answers. Recorded torn down
        # yet answering, it may still bill (GEN1): said loudly, and watched again, live.
        app.reconnect("box1")
        again = app.runtime.monitor_tasks["box1"]
        assert again is not stopped
        await wait_for(lambda: app.jobs.state("box1").still_answers_at, 40, pilot=pilot)
        await wait_for(lambda: not pane.has_class("-torn-down"), pilot=pilot)
        assert any("STILL ANSWERS" in str(n.message) for n in shown_notifications(app))
        await wait_for(
            lambda: any(a.id == "teardown.still-answers" for a in app.latest["box1"].alerts),
            40,
            pilot=pilot,
        )
        assert not again.done() and "box1" not in app.runtime.stopped
        assert app.jobs.state("box1").torn_down_at  # the record stands: it is not erased

        # The box is re-rented under the name: another box id answers. r: it is live.
        _box_id_on(loopback_fleet.box("box1"), NEW_BOX)
        app.reconnect("box1")
        live = app.runtime.monitor_tasks["box1"]
        await wait_for(lambda: app.jobs.state("box1").torn_down_at is None, 40, pilot=pilot)
        await wait_for(lambda: not pane.has_class("-torn-down"), pilot=pilot)
        await pilot.pause(1.0)
        assert not live.done() and "box1" not in app.runtime.stopped
        assert app.latest["box1"].connection.status == "connected"
        # The loopback box keeps its host key: another id under the same key is said as
        # such (a changed login user reads so too: hour s19b #5).
        said = [str(n.message) for n in shown_notifications(app)]
        assert any("another box id answers under this name with the same host key" in m
                   for m in said), said  # fmt: skip
        jh = Journal(journal_dir(loopback_fleet.hosts_file)).load("box1")
        assert jh.box is not None and jh.box.box_id == NEW_BOX and jh.torn_down_at is None
        assert [h.box.box_id for h in jh.history if h.box] == [OLD_BOX]
        # The old box's record is shown as history; the new box's gate is closed.
        await pilot.press("t")
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        await wait_for(lambda: "History: earlier boxes" in history_text(app), 60, pilot=pilot)
        await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)
        assert f"box {OLD_BOX[:12]}: torn down" in history_text(app)
        # Read once drawn: a loaded CI run read the tab's frame before its body.
        await wait_for(lambda: "locked" in screen_text(app), 60, pilot=pilot)
        assert not app.jobs.state("box1").gate.ready_but_confirmation
    assert not loopback_fleet.errors


async def test_new_box_under_a_torn_down_name_is_live_from_the_start(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    _torn_down(loopback_fleet.hosts_file, "box1", OLD_BOX)
    _box_id_on(loopback_fleet.box("box1"), NEW_BOX)
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.fleet_screen.panes["box1"]
        await wait_for(
            lambda: (b := app.jobs.state("box1").box) is not None and b.box_id == NEW_BOX,
            40,
            pilot=pilot,
        )
        await wait_for(lambda: not pane.has_class("-torn-down"), pilot=pilot)
        await wait_for(lambda: "● connected" in str(pane.render()), 40, pilot=pilot)
        await pilot.pause(1.0)
        assert not app.runtime.monitor_tasks["box1"].done()
        assert app.jobs.state("box1").torn_down_at is None
        assert "torn down" not in str(pane.border_subtitle)


def _torn_down_box_with_key(hosts_file: Path, host: str, box_id: str, host_key: str) -> None:
    """``host``'s journal: box ``box_id`` with host key ``host_key`` seen, then torn down."""
    journal = Journal(journal_dir(hosts_file))
    journal.observe_box(host, BoxIdentity(box_id, host_key), time.time() - 3600)
    journal.add_teardown(host, TeardownRecord(time.time() - 60, "true", 0, "", True, box_id))


async def _recreate_with_new_key(loopback, name: str, *, trusted: bool) -> None:  # type: ignore[no-untyped-def]
    """The box comes back with a new host key (the same disk, the same id); known_hosts
    holds the new key when ``trusted``, else still the old one."""
    import asyncssh

    box = loopback.box(name)
    await box.stop()
    box.host_key = asyncssh.generate_private_key("ssh-ed25519")
    await box.start()
    if trusted:
        prefix = box.known_hosts_line.split(" ", 1)[0] + " "
        lines = loopback.known_hosts.read_text().splitlines()
        kept = [ln for ln in lines if not ln.startswith(prefix)]
        loopback.known_hosts.write_text("\n".join([*kept, box.known_hosts_line]) + "\n")


async def test_same_id_with_a_new_host_key_is_a_new_box_in_the_tui(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    box1 = loopback_fleet.box("box1")
    old_key = box1.host_key.get_fingerprint("sha256")
    _torn_down_box_with_key(loopback_fleet.hosts_file, "box1", OLD_BOX, old_key)
    _box_id_on(box1, OLD_BOX)  # the disk was copied: the same id answers
    await _recreate_with_new_key(loopback_fleet, "box1", trusted=True)
    new_key = box1.host_key.get_fingerprint("sha256")
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.fleet_screen.panes["box1"]
        await wait_for(
            lambda: (b := app.jobs.state("box1").box) is not None and b.host_key == new_key,
            40,
            pilot=pilot,
        )
        await wait_for(lambda: not pane.has_class("-torn-down"), pilot=pilot)
        await pilot.pause(1.0)
        assert not app.runtime.monitor_tasks["box1"].done()
        assert "box1" not in app.runtime.stopped
        assert app.jobs.state("box1").torn_down_at is None
    jh = Journal(journal_dir(loopback_fleet.hosts_file)).load("box1")
    assert jh.box == BoxIdentity(OLD_BOX, new_key) and jh.torn_down_at is None
    (old,) = jh.history
    assert old.box == BoxIdentity(OLD_BOX, old_key) and "host key changed" in old.why


async def test_a_refused_key_that_is_not_the_torn_down_boxs_is_live_not_torn_down(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    box1 = loopback_fleet.box("box1")
    _torn_down_box_with_key(
        loopback_fleet.hosts_file, "box1", OLD_BOX, box1.host_key.get_fingerprint("sha256")
    )
    await _recreate_with_new_key(loopback_fleet, "box1", trusted=False)  # refused: changed
    new_key = box1.host_key.get_fingerprint("sha256")
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.fleet_screen.panes["box1"]
        await wait_for(lambda: "box1" in app.host_keys.refusals, 40, pilot=pilot)
        assert app.host_keys.refusals["box1"].kind == "changed"
        await wait_for(lambda: app.jobs.state("box1").refused_key == new_key, 60, pilot=pilot)
        await pilot.pause(1.0)
        assert not pane.has_class("-torn-down") and "torn down" not in str(pane.border_subtitle)
        assert "box1" not in app.runtime.stopped
        assert not app.runtime.monitor_tasks["box1"].done()
        assert "host key changed" in str(pane.render())  # its key error, shown
        assert any("another box, live" in str(n.message) for n in shown_notifications(app))
    # Nothing was decided in the journal: the box answering has not said which box it is.
    jh = Journal(journal_dir(loopback_fleet.hosts_file)).load("box1")
    assert jh.box is not None and jh.box.box_id == OLD_BOX and jh.torn_down_at is not None


async def test_a_refused_key_that_is_the_torn_down_boxs_own_stays_torn_down(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    box1 = loopback_fleet.box("box1")
    _torn_down_box_with_key(
        loopback_fleet.hosts_file, "box1", OLD_BOX, box1.host_key.get_fingerprint("sha256")
    )
    loopback_fleet.known_hosts.write_text("")  # its key is refused (unknown), yet the same
    app = RgtApp(load_fleet(loopback_fleet.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.fleet_screen.panes["box1"]
        await wait_for(lambda: "box1" in app.host_keys.refusals, 40, pilot=pilot)
        await wait_for(lambda: pane.has_class("-torn-down"), pilot=pilot)
        await wait_for(lambda: "box1" in app.runtime.stopped, 60, pilot=pilot)
        assert app.jobs.state("box1").refused_key is None
