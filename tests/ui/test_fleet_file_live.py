"""The fleet file is live (issue 43 item 9), over real loopback boxes and the app's real
monitors: the open TUI reads ``hosts.toml`` again when it changes. A host added gets a
pane and samples; a host removed loses its pane, monitor and connection; a host's new
mount is watched; a mistake is one notice naming file:line while the fleet runs on its
last good settings, and fixing it applies the file and clears the notice.
"""

from __future__ import annotations

import os
from pathlib import Path

from support.pilot import SIZE, screen_text, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.controllers.notices import notices_of
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.widgets.host_pane import HostPane


def _blocks(text: str) -> tuple[str, dict[str, str]]:
    """The fleet file's head and each host's ``[[hosts]]`` block, by name."""
    head, *blocks = text.split("[[hosts]]\n")
    return head, {b.split('"', 2)[1]: "[[hosts]]\n" + b for b in blocks}


def _write(hosts: Path, head: str, blocks: list[str]) -> None:
    hosts.write_text(head + "".join(blocks))


def _other_file_system(path: str) -> str:
    """A folder on another file system than ``path``'s (a tmpfs, on Linux)."""
    device = os.stat(path).st_dev
    found = [
        p for p in ("/dev/shm", "/run", "/tmp") if os.path.isdir(p) and os.stat(p).st_dev != device
    ]
    assert found, f"no folder on another file system than {path}'s"
    return found[0]


def _pulls_look_at(app: RgtApp, host: str) -> bool:
    """The periodic pulls weighed ``host`` (held it back, or made it due or pulled it)."""
    scheduler = app.jobs.scheduler
    return scheduler is not None and any(
        host in seen for seen in (scheduler.held_back, scheduler.due, scheduler.last)
    )


def _sampled(app: RgtApp, host: str) -> bool:
    update = app.latest.get(host)
    return update is not None and update.snapshot is not None


async def test_hosts_added_removed_edited_and_a_mistake_while_the_app_runs(
    tmp_path: Path, state_dir: Path
) -> None:
    async with LoopbackFleet(3, tmp_path / "fleet") as boxes:
        hosts = boxes.hosts_file
        head, block = _blocks(hosts.read_text())
        _write(hosts, head, [block["box1"], block["box2"]])
        app = RgtApp(load_fleet(hosts), config_dir=tmp_path / "config")
        app.FLEET_FILE_EVERY_S = 0.05
        async with app.run_test(size=SIZE) as pilot:
            screen = app.fleet_screen
            await wait_for(lambda: _sampled(app, "box1") and _sampled(app, "box2"), 40, pilot=pilot)
            assert set(screen.panes) == {"box1", "box2"}

            # Added: its pane appears and gets samples from its own monitor. The selection
            # stays where the user put it (an edit saved elsewhere is not a `+`).
            screen.select("box1")
            await wait_for(lambda: app.focused is screen.panes["box1"], pilot=pilot)
            block["box3"] += 'pull_every = "30m"\n'  # pulled on its cadence once it is here
            _write(hosts, head, [block["box1"], block["box2"], block["box3"]])
            await wait_for(lambda: "box3" in screen.panes, pilot=pilot)
            await wait_for(lambda: _sampled(app, "box3"), 40, pilot=pilot)
            await wait_for(lambda: screen.panes["box3"].update is not None, pilot=pilot)
            assert screen.selected is screen.panes["box1"]
            assert app.focused is screen.panes["box1"]
            assert boxes.box("box3").open_connections == 1
            # The periodic pulls look at it too (hour s23b #3: they kept the first fleet,
            # so a host added with pull_every was never pulled on its cadence).
            await wait_for(lambda: _pulls_look_at(app, "box3"), pilot=pilot)

            # Removed: its pane goes, and its monitor and connection close.
            box2_monitor = app.runtime.monitor_tasks["box2"]
            _write(hosts, head, [block["box1"], block["box3"]])
            await wait_for(lambda: "box2" not in screen.panes, pilot=pilot)
            assert "box2" not in app.runtime.monitors and "box2" not in app.runtime.hosts
            await wait_for(lambda: box2_monitor.done(), pilot=pilot)
            await wait_for(lambda: boxes.box("box2").open_connections == 0, pilot=pilot)
            assert not app.connections.is_connected("box2")
            assert [h.name for h in app.fleet.hosts] == ["box1", "box3"]
            # Never torn down: said loudly, as a toast and a notice (hour s22a #2).
            removed = "box2 was removed from the fleet file while its box is not recorded"
            assert any(removed in str(n.message) for n in app._notifications)
            # Listed once under n (hour s23a #8: the toast and a notice, twice).
            assert len([n for n in notices_of(app).items() if removed in n.text]) == 1

            # Edited: a new folder in box1's mounts is watched (on a file system of its
            # own: a sample keeps one disk per file system).
            root = str(boxes.box("box1").root)
            extra = _other_file_system(root)
            edited = block["box1"].replace(
                f'mounts = ["{root}"]', f'mounts = ["{root}", "{extra}"]'
            )
            assert edited != block["box1"]
            _write(hosts, head, [edited, block["box3"]])

            def watches_extra() -> bool:
                update = app.latest.get("box1")
                snap = update.snapshot if update is not None else None
                return snap is not None and any(d.path == str(extra) for d in snap.disks)

            await wait_for(watches_extra, 40, pilot=pilot)
            assert screen.panes["box1"].host.mounts == (root, str(extra))
            box3_monitor = app.runtime.monitor_tasks["box3"]
            assert not box3_monitor.done()  # the others were left alone

            # A mistake: one notice naming file:line; the fleet keeps its last good settings.
            broken = edited.replace("workdir = ", "workdri = ", 1)
            _write(hosts, head, [broken, block["box3"]])
            line = 1 + (head + broken).splitlines().index(
                next(ln for ln in broken.splitlines() if ln.startswith("workdri"))
            )
            where = f"{hosts}:{line}"
            await wait_for(lambda: f"{hosts.name}:{line}: workdri" in screen.problem, pilot=pilot)
            # Its own line, as an error, what happened first (the line is cut at its end)
            await wait_for(
                lambda: (
                    f"✖ fleet file not applied (n: all): {hosts.name}:{line}: workdri"
                    in screen_text(app)
                ),
                pilot=pilot,
            )
            assert "⏱ fleet file" not in screen_text(app)
            listed = [n for n in notices_of(app).items() if where in n.text]
            assert len(listed) == 1 and "last good settings" in listed[0].text
            assert not [n for n in app._notifications if where in str(n.message)]  # no toast
            assert set(screen.panes) == {"box1", "box3"}
            assert not box3_monitor.done() and app.runtime.running("box1")
            assert app.fleet.host("box1").mounts == (root, str(extra))

            # Fixed (and box2 back): applied, and the notice clears.
            _write(hosts, head, [edited, block["box2"], block["box3"]])
            await wait_for(lambda: screen.problem == "", pilot=pilot)
            await wait_for(lambda: "box2" in screen.panes, pilot=pilot)
            await wait_for(lambda: _sampled(app, "box2"), 40, pilot=pilot)
            assert not box3_monitor.done()
            # Back in its place in the file, on screen and for j/k (hour s22c #7: re-added
            # hosts went to the grid's end for the rest of the run).
            assert list(screen.panes) == ["box1", "box2", "box3"]
            grid = screen.query_one("#grid")
            assert [p.host.name for p in grid.query(HostPane)] == ["box1", "box2", "box3"]
    assert not boxes.errors
