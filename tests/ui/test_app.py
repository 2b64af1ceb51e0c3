"""Pilot tests of the TUI: what a user sees and what each key does.

Most tests feed the app agent-shaped samples (``support.samples``) through
fake monitors, which is exactly the interface ``HostMonitor`` offers; the last ones run
real monitors, over this machine's local transport and over a loopback SSH fleet.

Long because the App has many keys; the other tests/ui files each take one screen or flow
out of it (the fleet filter: test_fleet_filter.py).
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import replace
from pathlib import Path

import pytest
from support.pilot import (
    make_app,
    palette_titles,
    screen_text,
    shown_notifications,
    wait_for,
)
from support.replay import ReplayMonitor
from support.samples import (
    FROZEN,
    HOSTS,
    agent_sample,
    disk,
    healthy_update,
    inode_update,
    make_update,
    many_hosts_fleet,
    three_updates,
)
from textual import events
from textual.binding import Binding
from textual.containers import VerticalScroll

from rgt_tui.app import RgtApp
from rgt_tui.domain.gotchas import gotcha
from rgt_tui.domain.health import HealthState
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.snapshot import carry_processes, snapshot_from_agent
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.fleet_filter import FilterInput
from rgt_tui.screens.help import KEY_COLUMN, MOUSE_HELP, SAME_ACTION, HelpScreen, describe
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.telemetry import ConnectionState
from rgt_tui.widgets.pane_grid import PaneGrid, neighbour
from rgt_tui.widgets.spark import spark_rows

pytestmark = pytest.mark.usefixtures("utc")


async def test_panes_show_every_figure_from_the_monitors(tmp_path: Path) -> None:
    monitors = {u.host: ReplayMonitor(updates=[u]) for u in three_updates()}
    app = make_app(tmp_path, monitors)
    async with app.run_test(size=(140, 34)) as pilot:
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        await pilot.pause()
        text = screen_text(app)
    # Healthy host: util with the SM clock share beside it, VRAM, both mounts, cost.
    assert "GPU0 util  97% SM  93% of max 66°C 250W" in text
    assert "VRAM" in text and "62G/80G" in text
    assert "/workspace" in text and "275G/500G" in text and "6.6M/32.8M" in text
    assert "vastai · $1.89/h · $3.78 so far" in text  # started_at 10:00, now 12:00
    # No started_at: from when rgt-tui first saw the box (10:00), never from its uptime
    # (too narrow a border for all of it: the profile gives way, the spend stays whole).
    assert "─ $2.49/h · $4.98 since first seen 10:00 ─" in text
    subtitle = app.fleet_screen.panes["h100-eval"].border_subtitle
    assert subtitle == "$2.49/h · $4.98 since first seen 10:00"
    # Inode alert with its gotcha id; the inode bar is full while bytes are not.
    assert "inodes" in text and "96% 31.5M/32.8M" in text and "41% 820G/2.0T" in text
    assert "U7   inodes 96% used on /workspace" in text
    # Lost host: when, the GEN8 note, the error and the fix; unlimited cgroup said so.
    assert "lost since 11:50 · sample 11m00s ago" in text
    assert "the run may still be alive" in text
    # The error and its fix wrap rather than being cut off.
    assert "connect to 10.0.0.7:2222: connection" in text and "refused" in text
    assert "fix: is the pod stopped? start it in the" in text and "console, then press r" in text
    assert "30G of unlimited" in text and "vCPU unlimited" in text
    assert "rgt-tui  3 hosts  ● 2 up  ✖ 1 down" in text


async def test_no_gpu_and_oom_rise_and_reconnect_countdown(tmp_path: Path) -> None:
    base = agent_sample("h100-eval")
    health = HealthState().observe(make_update("h100-eval", base).snapshot)  # oom baseline 0
    oom = agent_sample("h100-eval", seq=2, cgroup={**base["cgroup"], "oom_kill": 3})
    no_gpu = agent_sample(
        "a100-train", gpus=[], gpu_source="none", gpu_processes=None,
        gpu_unavailable_reason="no NVIDIA driver tools (nvidia-smi not found)",
    )  # fmt: skip
    retrying = ConnectionState(
        "reconnecting", FROZEN - 20, attempt=3, next_try_at=FROZEN + 7, error="timed out"
    )
    app = make_app(tmp_path)
    async with app.run_test(size=(180, 40)) as pilot:
        for update in (
            make_update("a100-train", no_gpu),
            make_update("h100-eval", oom, health=health),
            make_update("spot-4090", agent_sample("spot-4090", t=FROZEN - 30), retrying),
        ):
            app.post_message(HostUpdated(update))
        await pilot.pause()
        text = screen_text(app)
    assert "no GPU: no NVIDIA driver tools (nvidia-smi not found)" in text
    assert "oom_kill 3 (+3)" in text and "U9" in text
    assert "reconnecting (attempt 3, next try in 7s) · sample 30s" in text


@pytest.mark.parametrize(("width", "columns"), [(80, 1), (100, 2), (140, 3), (250, 5)])
async def test_grid_columns_follow_the_width(tmp_path: Path, width: int, columns: int) -> None:
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 8))
    async with app.run_test(size=(width, 40)) as pilot:
        await pilot.pause()
        grid = app.screen.query_one(PaneGrid)
        assert grid.columns == columns
        lefts = {p.region.x for p in app.fleet_screen.panes.values()}
        assert len(lefts) == columns
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert grid.columns == 1
        assert {p.region.x for p in app.fleet_screen.panes.values()} == {grid.region.x + 1}


def test_history_records_each_sample_once_and_sparks_keep_an_absolute_scale() -> None:
    history = HostHistory(maxlen=50)
    update = healthy_update()
    assert history.add(update.snapshot) and not history.add(update.snapshot)  # re-sent sample
    for seq in range(2, 80):
        history.add(healthy_update(seq=seq, t=FROZEN + seq).snapshot)
    assert len(history) == 50 and history.gpu_util[-1] == pytest.approx(0.96)
    # More samples than columns (a deque cannot be sliced), and a fixed 0–100 % scale:
    # a flat 96 % line is tall, not a line at the bottom as min–max scaling would draw.
    (row,) = spark_rows(history.gpu_util, 10)
    assert row.plain == "█" * 10
    (low,) = spark_rows(deque([0.1] * 30), 10)
    assert set(low.plain) == {"▁"}


def test_neighbour_moves_within_rows_and_by_rows() -> None:
    # 5 panes, 3 columns:  0 1 2 / 3 4
    assert neighbour(0, 5, 3, "left") == 0
    assert neighbour(2, 5, 3, "right") == 2  # no wrap to the next row
    assert neighbour(3, 5, 3, "left") == 3
    assert neighbour(2, 5, 3, "down") == 4  # shorter last row: its last pane
    assert neighbour(4, 5, 3, "up") == 1
    assert neighbour(4, 5, 3, "down") == 4
    with pytest.raises(ValueError):
        neighbour(0, 5, 3, "sideways")


async def test_arrows_and_hjkl_move_the_selection_grid_aware(tmp_path: Path) -> None:
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 5))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()

        def selected() -> str:
            pane = app.fleet_screen.selected
            assert pane is not None
            return pane.host.name

        assert selected() == "box0"
        steps = [
            ("right", "box1"), ("right", "box2"), ("right", "box2"), ("down", "box4"),
            ("h", "box3"), ("left", "box3"), ("k", "box0"), ("j", "box3"), ("up", "box0"),
        ]  # fmt: skip
        for key, expected in steps:
            await pilot.press(key)
            assert selected() == expected, key


async def test_a_burst_of_keys_lands_where_it_was_aimed(tmp_path: Path) -> None:
    # Keys typed ahead (or a held arrow) arrive before focus has moved: the moves and
    # the Enter must follow the selection, not the focus that lags behind it.
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 5))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        for key in ("right", "right", "down", "enter"):
            app.post_message(events.Key(key, None))
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, HostDetailScreen)
        assert app.screen.host.name == "box4"


async def test_enter_opens_detail_which_keeps_updating(tmp_path: Path) -> None:
    monitors = {u.host: ReplayMonitor(updates=[u]) for u in three_updates()}
    app = make_app(tmp_path, monitors)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        await pilot.press("right", "enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HostDetailScreen) and screen.host.name == "h100-eval"
        assert "boot id boot-h100-eval" in screen_text(app)
        # A new sample arrives while the detail screen is open: it shows at once.
        newer = agent_sample(
            "h100-eval", seq=2, hostname="renamed-box",
            disks=[disk("/", "/", 31, 9), disk("/workspace", "/workspace", 41, 96, total_gib=2000)],
        )  # fmt: skip
        monitors["h100-eval"].emit(make_update("h100-eval", newer))
        await wait_for(lambda: "hostname renamed-box" in screen_text(app), pilot=pilot)
        await pilot.press("2")
        # The newer sample (two A100s) is what the GPUs tab shows, processes included.
        await wait_for(lambda: "GPU1 NVIDIA A100-SXM4-80GB" in screen_text(app), pilot=pilot)
        assert "pid 4122" in screen_text(app) and "SM clock 1290 MHz of 1410 MHz" in screen_text(
            app
        )
        assert "processes as listed" not in screen_text(app)  # listed in this very sample
        # Between two listings a sample carries the last list (as the monitor does): the
        # tab shows it, with how much older it is than the sample.
        between = {**newer, "seq": 4, "t": FROZEN + 6, "gpu_processes": None}
        carried = carry_processes(
            snapshot_from_agent("h100-eval", {**newer, "proc_every": 5, "seq": 0}),
            snapshot_from_agent("h100-eval", {**between, "proc_every": 5}),
        )
        monitors["h100-eval"].emit(replace(make_update("h100-eval", between), snapshot=carried))
        await wait_for(lambda: "processes as listed 6s ago:" in screen_text(app), pilot=pilot)
        assert "pid 4122" in screen_text(app)
        await pilot.press("3")
        await wait_for(lambda: "/workspace  on /workspace" in screen_text(app), pilot=pilot)
        assert "31,457,280 of 32,768,000" in screen_text(app)
        await pilot.press("4")
        await pilot.pause()
        text = screen_text(app)
        u7 = gotcha("U7")
        assert u7 is not None and u7.title in text
        assert "cause:" in text and "fix:" in text and "Watch `df -i`" in text
        await pilot.press("escape")
        assert isinstance(app.screen, FleetScreen)


async def test_click_opens_the_pane(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(140, 34)) as pilot:
        for update in three_updates():
            app.post_message(HostUpdated(update))
        await pilot.pause()
        pane = app.fleet_screen.panes["spot-4090"]
        assert await pilot.click(pane)
        await pilot.pause()
        assert isinstance(app.screen, HostDetailScreen)
        assert app.screen.host.name == "spot-4090"
        assert "fix: is the pod stopped?" in screen_text(app)


async def test_r_reconnects_the_selected_host_and_says_so(tmp_path: Path) -> None:
    monitors = {u.host: ReplayMonitor(updates=[u]) for u in three_updates()}
    app = make_app(tmp_path, monitors)
    async with app.run_test(size=(140, 34)) as pilot:
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        await pilot.press("right", "right", "r")
        await pilot.pause()
        assert [m.reconnects for m in monitors.values()] == [0, 0, 1]
        assert any("Reconnecting spot-4090" in str(n.message) for n in shown_notifications(app))
        # r again while that toast shows: no second toast, and the first is not re-armed.
        first = [n for n in shown_notifications(app) if "Reconnecting spot-4090" in str(n.message)]
        await pilot.press("r")
        await pilot.pause()
        again = [n for n in shown_notifications(app) if "Reconnecting spot-4090" in str(n.message)]
        assert [n.identity for n in again] == [n.identity for n in first]
        assert monitors["spot-4090"].reconnects == 2
        # Same key on the detail screen reconnects that screen's host.
        await pilot.press("left", "enter", "r")
        assert monitors["h100-eval"].reconnects == 1


async def test_a_repeated_notice_does_not_stack_or_re_arm(tmp_path: Path) -> None:
    """The same news posted again while its toast shows keeps the first toast's clock."""
    app = make_app(tmp_path)
    async with app.run_test(size=(140, 34)) as pilot:
        app.notify("box1 was torn down", title="box1", timeout=8)
        await pilot.pause()
        first = shown_notifications(app)
        assert len(first) == 1
        for _ in range(5):  # e.g. once per sample
            app.notify("box1 was torn down", title="box1", timeout=8)
        await pilot.pause()
        assert [(n.identity, n.raised_at) for n in shown_notifications(app)] == [
            (n.identity, n.raised_at) for n in first
        ]
        app.notify("box2 was torn down", title="box2", timeout=8)  # other news
        await pilot.pause()
        assert len(shown_notifications(app)) == 2


async def test_monitor_crash_is_reported_and_r_restarts_it(tmp_path: Path) -> None:
    crashing = ReplayMonitor(updates=[healthy_update()], crash="agent exploded")
    app = make_app(tmp_path, {"a100-train": crashing})
    async with app.run_test(size=(140, 34)) as pilot:
        await wait_for(
            lambda: any("agent exploded" in str(n.message) for n in shown_notifications(app)),
            pilot=pilot,
        )
        assert app.is_running
        crashing.started.clear()
        crashing.crash = None
        await pilot.press("r")
        await wait_for(crashing.started.is_set, pilot=pilot)


async def help_rows(app: RgtApp, pilot) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Every (keys, description) row of the open help as the user reads it: the help box
    paged through with PageDown to its end, each description joined across the lines it
    wraps onto (its continuation lines start at KEY_COLUMN)."""
    box = app.screen.query_one("#help-box", VerticalScroll)
    seen: dict[int, str] = {}
    while True:
        rows = screen_text(app).split("\n")
        area = box.scrollable_content_region  # not the scrollbar
        for i in range(area.height):
            seen[round(box.scroll_y) + i] = rows[area.y + i][area.x : area.right].rstrip()
        if box.scroll_y >= box.max_scroll_y:
            break
        before = box.scroll_y
        await pilot.press("pagedown")
        await wait_for(
            lambda: box.scroll_y > before and box.scroll_y == box.scroll_target_y,  # noqa: B023
            what="the help to page down",
            pilot=pilot,
        )
        await pilot.pause()
    out: list[tuple[str, str]] = []
    for line in (seen[i] for i in sorted(seen)):
        if line.startswith("  ") and line[2:3].strip():
            out.append((line[:KEY_COLUMN].strip(), line[KEY_COLUMN:].strip()))
        elif out and line.startswith(" " * KEY_COLUMN) and line.strip():
            keys, text = out[-1]
            out[-1] = (keys, f"{text} {line.strip()}")
    return out


async def test_help_lists_every_key(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    # Shorter than the help: every key of every screen must be reachable by paging.
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = await help_rows(app, pilot)
        everything = [
            *RgtApp.BINDINGS, *FleetScreen.BINDINGS,
            *FilterInput.BINDINGS, *HostDetailScreen.BINDINGS,
        ]  # fmt: skip
        bindings = list(Binding.make_bindings(everything))
        for binding in bindings:
            # Keys that share an action share one row, worded by one of them.
            # (q's own action is Ctrl+C's to the user: help.SAME_ACTION.)
            same = SAME_ACTION.get(binding.action, binding.action)
            texts = {describe(b) for b in bindings if SAME_ACTION.get(b.action, b.action) == same}
            key = app.get_key_display(binding)
            assert any(text in texts and key in keys.split(" ") for keys, text in rows), (
                binding,
                rows,
            )
        assert ("^p", "Command palette: every action") in rows
        assert ("click", MOUSE_HELP[0][1]) in rows
        await pilot.press("escape")
        assert isinstance(app.screen, FleetScreen)


async def test_palette_lists_every_action(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        names = await palette_titles(app)
        for host in HOSTS:
            assert f"Open detail: {host}" in names and f"Reconnect host: {host}" in names
        for theme in ("dark", "light", "high-contrast"):
            assert f"Switch theme to: {theme}" in names
        assert {"Filter hosts", "Help: keys", "Quit"} <= set(names)


async def test_palette_switches_theme_and_the_choice_persists(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.theme == "dark"
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"theme to: light")
        from textual.command import CommandList

        # The palette searches in the background: Enter once the match is highlighted
        # (a fixed pause is too short on a busy machine).
        def matched() -> bool:
            option = app.screen.query_one(CommandList).highlighted_option
            return option is not None and "light" in str(option.prompt)

        await wait_for(matched, what="the light theme highlighted", pilot=pilot)
        await pilot.press("enter")
        await wait_for(lambda: app.theme == "light", pilot=pilot)
        settings = tmp_path / "config" / "settings.json"
        await wait_for(settings.exists, pilot=pilot)
    assert json.loads(settings.read_text())["theme"] == "light"
    again = make_app(tmp_path)
    assert again.theme == "light"
    assert make_app(tmp_path, theme="high-contrast").theme == "high-contrast"


async def test_newer_sample_replaces_a_queued_older_one(tmp_path: Path) -> None:
    first, second = healthy_update(seq=1), healthy_update(seq=2, t=FROZEN + 1)
    assert HostUpdated(first).can_replace(HostUpdated(second))
    assert not HostUpdated(first).can_replace(HostUpdated(inode_update()))
    # Both are emitted before the app gets to run: only the newer one is processed.
    monitor = ReplayMonitor(updates=[first, second])
    app = make_app(tmp_path, {"a100-train": monitor})
    async with app.run_test(size=(140, 34)) as pilot:
        await wait_for(lambda: "a100-train" in app.latest, pilot=pilot)
        await pilot.pause()
        assert app.latest["a100-train"] is second
        assert list(app.histories["a100-train"].times) == [FROZEN + 1]


async def test_broken_theme_is_reported_once_and_not_fatal(tmp_path: Path) -> None:
    themes_dir = tmp_path / "config" / "themes"
    themes_dir.mkdir(parents=True)
    (themes_dir / "broken.toml").write_text("name = 'broken'\nprimary = [unclosed\n")
    (themes_dir / "badcolour.toml").write_text("primary = 'not-a-colour'\n")
    app = make_app(tmp_path, theme="no-such-theme")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        notes = [str(n.message) for n in shown_notifications(app)]
        assert len(notes) == 1
        assert "broken.toml" in notes[0] and "badcolour.toml" in notes[0]
        assert "--theme no-such-theme" in notes[0]
        assert app.theme == "dark"


async def test_default_fleet_shows_this_machine_with_a_hint(tmp_path: Path) -> None:
    fleet = load_fleet(None)
    assert fleet.is_default
    app = RgtApp(fleet, config_dir=tmp_path / "config")  # real monitor, local transport
    async with app.run_test(size=(130, 40)) as pilot:
        await wait_for(
            lambda: "● connected" in screen_text(app) and "inodes" in screen_text(app), pilot=pilot
        )
        text = screen_text(app)
    assert "No fleet file: showing this machine." in text and "rgt-tui demo" in text
    assert "╔═ local" in text
    assert "bytes" in text and "cg mem" in text
    assert "+ (or run rgt-tui add)" in text


async def test_a_fleet_file_with_no_hosts_is_named_not_called_missing(tmp_path: Path) -> None:
    """hosts.toml exists but names no box: the banner says so, not "No fleet file"."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text("[fleet]\npoll_seconds = 2\n")
    fleet = load_fleet(hosts)
    assert fleet.is_default and fleet.path == hosts
    app = RgtApp(fleet, start_monitors=False, config_dir=tmp_path / "config")
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    assert "hosts.toml has no [[hosts]] entry" in text
    assert "No fleet file" not in text


async def test_end_to_end_over_a_loopback_fleet(tmp_path: Path, loopback_fleet) -> None:  # type: ignore[no-untyped-def]
    fleet = load_fleet(loopback_fleet.hosts_file)
    app = RgtApp(fleet, config_dir=tmp_path / "config")
    async with app.run_test(size=(140, 40)) as pilot:

        def connected() -> int:
            return sum(
                u.connection.status == "connected" and u.snapshot is not None
                for u in app.latest.values()
            )

        await wait_for(lambda: connected() == 3, pilot=pilot)
        # The panes redraw after the snapshots land: wait for the words, not one pause.
        await wait_for(lambda: screen_text(app).count("● connected") == 3, 30, pilot=pilot)
        text = screen_text(app)
        assert text.count("inodes") >= 3 and text.count("● connected") == 3
        # The box goes away: the pane says reconnecting, not dead (GEN8).
        await loopback_fleet.box("box2").stop()
        await wait_for(lambda: app.latest["box2"].connection.status != "connected", pilot=pilot)
        alive = "the run may still be alive"
        await wait_for(lambda: alive in screen_text(app), 30, pilot=pilot)
        await loopback_fleet.box("box2").start()
        await pilot.press("right", "r")  # skip the backoff wait
        await wait_for(lambda: app.latest["box2"].connection.status == "connected", 40, pilot=pilot)
        assert any("Reconnecting box2" in str(n.message) for n in shown_notifications(app))
    assert not loopback_fleet.errors
