"""Hosts removed from the live fleet file while the app runs (h542 #1, #2): a removed
host's detail screen closes even under another screen (the help screen on top left it
open, frozen, its keys answering "not monitored"), and many removed at once are one
toast, each still listed under n with its own words. A real loopback box, and entries
that point at closed ports."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.controllers.notices import notices_of
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.help import HelpScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet

DEAD = "".join(f'[[hosts]]\nname = "dead{n}"\nssh = "root@127.0.0.1:{n}"\n' for n in range(1, 5))


async def test_removed_hosts_close_their_screens_and_are_told_in_one_toast(
    tmp_path: Path, state_dir: Path
) -> None:
    async with LoopbackFleet(1, tmp_path / "fleet") as boxes:
        hosts = boxes.hosts_file
        mine = hosts.read_text()
        hosts.write_text(mine + DEAD)
        app = RgtApp(load_fleet(hosts), config_dir=tmp_path / "config")
        app.FLEET_FILE_EVERY_S = 0.05
        async with app.run_test(size=SIZE) as pilot:
            screen = app.fleet_screen
            await wait_for(lambda: "dead1" in screen.panes, pilot=pilot)
            screen.select("dead1")
            await pilot.press("enter")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            await pilot.press("question_mark")
            await wait_for(lambda: isinstance(app.screen, HelpScreen), pilot=pilot)

            hosts.write_text(mine)  # the four dead entries go
            await wait_for(lambda: "dead1" not in screen.panes, pilot=pilot)
            await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
            assert not [s for s in app.screen_stack if isinstance(s, HostDetailScreen)]
            toasts = [n for n in app._notifications if "removed" in n.title]
            assert [n.title for n in toasts] == ["hosts removed"], toasts
            assert "4 hosts were removed from the fleet file" in str(toasts[0].message)
            assert "(dead1, dead2, dead3, dead4)" in str(toasts[0].message)
            listed = [
                n
                for n in notices_of(app).items()
                if n.title.startswith("dead") and n.title.endswith(" removed")
            ]
            assert sorted(n.title for n in listed) == [f"dead{n} removed" for n in range(1, 5)]
            assert all("still bills" in n.text for n in listed)


def dead(*numbers: int) -> str:
    """Fleet file entries of hosts deadN that point at closed ports."""
    return "".join(f'[[hosts]]\nname = "dead{n}"\nssh = "root@127.0.0.1:{n}"\n' for n in numbers)


async def test_the_selection_moves_to_the_removed_hosts_neighbour(
    tmp_path: Path, state_dir: Path
) -> None:
    """h571 #4: box33 selected at the grid's foot and removed: box1 was selected and the
    view scrolled to the top. Its neighbour in the grid is: the one after it, or at the
    foot the one before."""
    async with LoopbackFleet(1, tmp_path / "fleet") as boxes:
        hosts = boxes.hosts_file
        mine = hosts.read_text()
        hosts.write_text(mine + dead(1, 2, 3, 4))
        app = RgtApp(load_fleet(hosts), config_dir=tmp_path / "config")
        app.FLEET_FILE_EVERY_S = 0.05
        async with app.run_test(size=SIZE) as pilot:
            screen = app.fleet_screen
            await wait_for(lambda: "dead4" in screen.panes, pilot=pilot)
            order = [p.host.name for p in screen.visible_panes]
            assert order[-4:] == ["dead1", "dead2", "dead3", "dead4"], order
            screen.select("dead2")
            hosts.write_text(mine + dead(1, 3, 4))
            await wait_for(lambda: "dead2" not in screen.panes, pilot=pilot)
            await wait_for(lambda: app.focused is screen.panes["dead3"], pilot=pilot)
            assert screen.selected is screen.panes["dead3"], screen.selected.host.name
            screen.select("dead4")  # at the foot
            hosts.write_text(mine + dead(1, 3))
            await wait_for(lambda: "dead4" not in screen.panes, pilot=pilot)
            await wait_for(lambda: app.focused is screen.panes["dead3"], pilot=pilot)
            assert screen.selected is screen.panes["dead3"], screen.selected.host.name
