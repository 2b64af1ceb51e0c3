"""`+` in the running app: paste a box's SSH command, trust its key, and its pane, its
connection and its telemetry start at once — the fleet file gains the block."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, click, notes, wait_for
from textual.widgets import Button, Input

from rgt_tui.app import RgtApp
from rgt_tui.demo.loopback import LOOPBACK_HOST
from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.services.fleet.file import load_fleet


async def test_plus_adds_a_pasted_box_and_watches_it_live(
    make_loopback_fleet, home, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    watched = await make_loopback_fleet(1)
    other = await make_loopback_fleet(1)
    box = other.boxes[0]
    before = watched.hosts_file.read_text()
    app = RgtApp(load_fleet(watched.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: "box1" in app.latest, pilot=pilot)
        await pilot.press("plus")
        screen = await wait_for(
            lambda: isinstance(app.screen, AddHostScreen) and app.screen, pilot=pilot
        )
        pasted = f"ssh -p {box.port} -i {other.client_key} {other.username}@{LOOPBACK_HOST}"
        screen.query_one("#add-target", Input).value = pasted
        screen.query_one("#add-name", Input).value = "added"
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, pilot=pilot)
        await click(pilot, screen.query_one("#add-trust", Button))
        add = screen.query_one("#add-add", Button)
        await wait_for(lambda: not add.disabled, pilot=pilot)
        await click(pilot, add)

        await wait_for(lambda: "added" in app.fleet_screen.panes, pilot=pilot)
        # The box the user just added is the one selected (not so for an edit made
        # elsewhere: tests/ui/test_fleet_file_live.py)
        added = app.fleet_screen.panes["added"]
        await wait_for(lambda: app.fleet_screen.selected is added, pilot=pilot)
        await wait_for(
            lambda: (u := app.latest.get("added")) is not None and u.snapshot is not None,
            20,
            pilot=pilot,
        )
        assert app.latest["added"].connection.status == "connected"
        assert [h.name for h in app.fleet.hosts] == ["box1", "added"]
        # One toast for one add, with what it made (h581 #5: two stacked toasts).
        said = [t for t in notes(app) if "added" in t]
        assert len(said) == 1 and f"added added to {watched.hosts_file}; created " in said[0], said

    after = watched.hosts_file.read_text()
    assert after.startswith(before)  # every byte the user wrote, kept
    assert load_fleet(watched.hosts_file).host("added").ssh.port == box.port


async def test_the_footer_does_not_offer_plus_or_question_mark_while_a_box_is_typed_in(
    make_loopback_fleet, home, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """In a text box +, ? and q are text: a user's hour read "+ Add box" in the footer beside
    the teardown name box they were typing into."""
    watched = await make_loopback_fleet(1)
    app = RgtApp(load_fleet(watched.hosts_file), config_dir=tmp_path / "config")

    def offered() -> set[str]:
        return {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}

    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: "box1" in app.latest, pilot=pilot)
        assert {"add_host", "help", "quit_key"} <= offered()  # on the fleet grid
        app.open_host("box1", "teardown")
        name = await wait_for(
            lambda: next(iter(app.screen.query("#confirm-name")), None), pilot=pilot
        )
        name.focus()
        await wait_for(lambda: app.focused is name, pilot=pilot)
        assert not {"add_host", "help", "quit_key"} & offered()
        await pilot.press("plus", "question_mark", "q")  # typed, not acted on
        assert name.value == "+?q" and app.is_running and not isinstance(app.screen, AddHostScreen)
        app.screen.set_focus(None)
        await wait_for(lambda: {"add_host", "help", "quit_key"} <= offered(), pilot=pilot)


async def test_the_first_box_added_to_a_file_with_none_replaces_the_stand_in_local(
    make_loopback_fleet, home, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """h604 #3: the first `+` over a fleet file naming no host kept the stand-in "local"
    ("2 hosts", the "showing this machine" banner), and the next edit of the file told
    "local was removed from the fleet file … still bills"."""
    from support.pilot import screen_text

    other = await make_loopback_fleet(1)
    box = other.boxes[0]
    hosts = tmp_path / "hosts.toml"
    hosts.write_text("# my fleet\n[fleet]\npoll_seconds = 1\n")
    fleet = load_fleet(hosts)
    assert fleet.is_default
    app = RgtApp(fleet, config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: "has no [[hosts]] entry" in screen_text(app), pilot=pilot)
        # Meanwhile `rgt-tui add` in another terminal writes a box (h606 #2: the first
        # + then kept only its own box, dropping this one until the file changed again).
        with hosts.open("a") as f:
            f.write('\n[[hosts]]\nname = "other"\nssh = "local"\n')
        await pilot.press("plus")
        screen = await wait_for(
            lambda: isinstance(app.screen, AddHostScreen) and app.screen, pilot=pilot
        )
        pasted = f"ssh -p {box.port} -i {other.client_key} {other.username}@{LOOPBACK_HOST}"
        screen.query_one("#add-target", Input).value = pasted
        screen.query_one("#add-name", Input).value = "first"
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, pilot=pilot)
        await click(pilot, screen.query_one("#add-trust", Button))
        add = screen.query_one("#add-add", Button)
        await wait_for(lambda: not add.disabled, pilot=pilot)
        await click(pilot, add)
        await wait_for(lambda: "first" in app.fleet_screen.panes, pilot=pilot)
        await wait_for(lambda: "other" in app.fleet_screen.panes, pilot=pilot)
        assert sorted(app.fleet_screen.panes) == ["first", "other"]
        assert [h.name for h in app.fleet.hosts] == ["other", "first"] and not app.fleet.is_default
        await wait_for(lambda: "has no [[hosts]] entry" not in screen_text(app), pilot=pilot)
        # The user edits the file: read again, and nothing is said of "local".
        hosts.write_text(hosts.read_text().replace("poll_seconds = 1", "poll_seconds = 3"))
        await app.runtime.look_at_fleet_file()
        await wait_for(lambda: app.fleet.poll_seconds == 3, pilot=pilot)
        await pilot.pause()
        said = notes(app)
        assert not [n for n in said if "local" in n], said
        assert sorted(app.fleet_screen.panes) == ["first", "other"]
