"""A toast about a host with a very long name cuts the name (h611 #3: a 197-character name
in a toast's title and again in its body made each toast ten rows high, and a few covered
the screen); the notices list (n) keeps it whole."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.pilot import SIZE, screen_text, shown_notifications, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.controllers.notices import TOAST_NAME_CELLS, short_names
from rgt_tui.screens.notices import NoticesScreen
from rgt_tui.services.fleet.file import load_fleet

LONG = "gpu-" + "x" * 150 + "-end"


def test_a_long_name_is_cut_to_its_start_and_end_and_short_ones_are_left() -> None:
    cut = short_names(f"{LONG}: pull not started: {LONG}'s verify runs", [LONG, "box1"])
    short = f"{LONG[:19]}…{LONG[-20:]}"
    assert len(short) == TOAST_NAME_CELLS
    assert cut == f"{short}: pull not started: {short}'s verify runs"
    assert short_names("box1: pulled", [LONG, "box1"]) == "box1: pulled"


async def _app_of_a_long_name(make_loopback_fleet, tmp_path: Path) -> RgtApp:  # type: ignore[no-untyped-def]
    """The App (no telemetry) on one loopback box renamed LONG."""
    loopback = await make_loopback_fleet(1)
    fleet = load_fleet(loopback.hosts_file)
    fleet = replace(fleet, hosts=(replace(fleet.hosts[0], name=LONG),))
    return RgtApp(fleet, start_monitors=False, config_dir=tmp_path / "config")


async def test_a_toast_cuts_a_long_host_name_and_the_list_keeps_it_whole(
    make_loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    app = await _app_of_a_long_name(make_loopback_fleet, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.notify(f"pull not started: {LONG}'s verification is still running", title=LONG)
        await wait_for(lambda: shown_notifications(app), pilot=pilot)
        (toast,) = shown_notifications(app)
        assert LONG not in toast.title and LONG not in toast.message, toast
        assert toast.title.endswith("xxx-end") and toast.title.startswith("gpu-xxx")
        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, NoticesScreen), pilot=pilot)
        await wait_for(lambda: "-end's verification is still" in screen_text(app), pilot=pilot)
        assert "…" not in screen_text(app)  # whole here (wrapped)


async def test_the_detail_screens_title_cuts_a_long_name_so_its_keys_stay_on_the_line(
    make_loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """h611: at 80 columns the title was the whole 158-character name, its keys pushed off."""
    from rgt_tui.screens.host_detail import HostDetailScreen

    app = await _app_of_a_long_name(make_loopback_fleet, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_host(LONG)
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        await wait_for(lambda: "Esc back" in screen_text(app), pilot=pilot)
        assert "gpu-xxx" in screen_text(app) and LONG not in screen_text(app)
