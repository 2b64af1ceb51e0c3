"""The notices list (``n``) says what it holds and lists outages (ux-g 9): it holds what
happened since this TUI started (a restart begins a new one), and a box that stops
answering is listed once per outage, its return with the gap. A real loopback box, the
real app and its monitors."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, screen_text, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.controllers.notices import notices_of
from rgt_tui.screens.notices import NoticesScreen
from rgt_tui.services.fleet.file import load_fleet


async def test_a_drop_and_a_return_are_listed_in_a_list_that_says_since_when(
    make_loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    loopback = await make_loopback_fleet(1)
    app = RgtApp(load_fleet(loopback.hosts_file), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        notices = notices_of(app)

        def titles() -> list[str]:
            return [n.title for n in notices.items() if n.host == "box1"]

        await wait_for(
            lambda: (u := app.latest.get("box1")) is not None and u.snapshot is not None,
            pilot=pilot,
        )
        assert not [t for t in titles() if "answering" in t]  # a first connect is no news

        await loopback.box("box1").stop()
        await wait_for(
            lambda: "box1: not answering" in titles(), pilot=pilot, show=lambda: str(titles())
        )
        # However many retries fail meanwhile, one entry for the outage.
        await wait_for(lambda: app.latest["box1"].connection.attempt >= 2, 60, pilot=pilot)
        assert titles().count("box1: not answering") == 1
        (down,) = [n for n in notices.items() if n.title == "box1: not answering"]
        assert down.severity == "warning" and "may still be alive (GEN8)" in down.text

        await loopback.box("box1").start()
        app.reconnect("box1")  # r: no backoff wait
        await wait_for(lambda: "box1: answering again" in titles(), 60, pilot=pilot)
        (back,) = [n for n in notices.items() if n.title == "box1: answering again"]
        assert back.text.startswith("after ") and back.text.endswith(" without an answer")
        assert titles().index("box1: answering again") < titles().index("box1: not answering")

        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, NoticesScreen), pilot=pilot)
        await wait_for(lambda: "Since this TUI started" in screen_text(app), pilot=pilot)
        text = screen_text(app)
        assert "a restart begins a new list" in text
        assert "box1: not answering" in text and "box1: answering again" in text


async def test_a_spot_box_that_stops_answering_is_listed_as_preempted_not_alive(
    make_loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Hour s17a #12: the pane of an interruptible box said "preempted?" while the
    notices said only GEN8's "a run there may still be alive", which docs/spot.md
    replaces for a spot box."""
    loopback = await make_loopback_fleet(1)
    hosts = loopback.hosts_file
    hosts.write_text(hosts.read_text().rstrip("\n") + "\ninterruptible = true\n")
    app = RgtApp(load_fleet(hosts), config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        notices = notices_of(app)
        await wait_for(
            lambda: (u := app.latest.get("box1")) is not None and u.snapshot is not None,
            pilot=pilot,
        )
        await loopback.box("box1").stop()
        down = await wait_for(
            lambda: [n for n in notices.items() if n.host == "box1" and "answering" in n.title],
            pilot=pilot,
        )
        assert [n.title for n in down] == ["box1: not answering (preempted?)"]
        assert "may be preempted: d says" in down[0].text and "m moves" in down[0].text
        # The connection is retried, not the cell (s44 spot hour #8 read "it is retried").
        assert "the connection is retried on its own (the cell is not)" in down[0].text
        assert "may still be alive" not in down[0].text
