"""SVG snapshots of the fleet screen, time frozen, fed agent-shaped samples.

The samples (``support.samples``) are agent JSON turned into snapshots and alerts by the
real parser and health rules; only the transport is left out. Regenerate after an
intended UI change with ``pytest tests/ui/test_app_snapshots.py --snapshot-update`` and
look at the report.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support import GIB
from support.pilot import SNAPSHOT_SIZE, make_app, post_three, snapshot_app
from support.samples import (
    FROZEN,
    agent_sample,
    disk,
    gpu,
    healthy_update,
    lost_update,
    make_update,
    write_fleet,
)

from rgt_tui.app import RgtApp
from rgt_tui.domain.history import HostHistory
from rgt_tui.messages import HostUpdated


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_fleet_screen_three_hosts(snap_compare, tmp_path, utc, theme) -> None:
    """Healthy, inode alert and lost connection side by side, in each theme."""
    app = snapshot_app(tmp_path, theme)
    assert snap_compare(app, terminal_size=SNAPSHOT_SIZE, run_before=post_three)


def test_detail_alerts_tab(snap_compare, tmp_path, utc) -> None:
    """The inode host's Alerts tab: the alert with its cause and fix."""
    app = snapshot_app(tmp_path, "dark")

    async def open_alerts(pilot) -> None:  # type: ignore[no-untyped-def]
        await post_three(pilot)
        await pilot.press("right", "enter")
        await pilot.pause()
        await pilot.press("4")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SNAPSHOT_SIZE, run_before=open_alerts)


SMALL = (80, 24)  # issue 22: every screen must work at the smallest common terminal


def test_fleet_screen_at_80x24(snap_compare, tmp_path, utc) -> None:
    """The footer keeps Open, Pull, Verify, Teardown, ``? more`` and Quit, all whole."""
    app = snapshot_app(tmp_path, "dark")
    assert snap_compare(app, terminal_size=SMALL, run_before=post_three)


# Not tab 8 (Logs): it starts following over a real connection to the fleet file's
# made-up address, and its status line would read however that address fails here.
@pytest.mark.parametrize("key", ["1", "2", "3", "4", "5", "6", "7"], ids=lambda key: f"tab{key}")
def test_detail_tab_at_80x24(snap_compare, tmp_path, utc, key) -> None:
    """Each detail tab at 80×24: numbered tab titles, the title's ``1–8 tabs``, a
    footer of whole keys (6: the Teardown tab's Re-check and accept buttons in view)."""
    app = snapshot_app(tmp_path, "dark")

    async def open_tab(pilot) -> None:  # type: ignore[no-untyped-def]
        await post_three(pilot)
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SMALL, run_before=open_tab)


def test_help_at_80x24(snap_compare, tmp_path, utc) -> None:
    """Help's long lines continue under their description, not at column 0."""
    app = snapshot_app(tmp_path, "dark")

    async def open_help(pilot) -> None:  # type: ignore[no-untyped-def]
        await post_three(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SMALL, run_before=open_help)


# -- the screen uses the space it has (issue 27) -----------------------------------------

HISTORY = 90  # samples of history before the frozen one: the charts have something to draw

FLEET_OF_ONE = """\
[[hosts]]
name = "a100-train"
ssh = "root@10.0.0.5:40022"
profile = "vastai"
cost_per_hour = 1.89
started_at = 2026-01-01T10:00:00Z
mounts = ["/", "/workspace"]
"""

PROFILES = [("vastai", 1.89), ("lambda", 2.49), ("runpod", 0.34)]


def fleet_of_twelve() -> str:
    """Twelve boxes over three providers: what a small lab rents for a sweep."""
    return "".join(
        f'[[hosts]]\nname = "sweep-{i:02d}"\nssh = "root@10.0.2.{i}"\n'
        f'profile = "{PROFILES[i % 3][0]}"\ncost_per_hour = {PROFILES[i % 3][1]}\n'
        "started_at = 2026-01-01T10:00:00Z\n\n"
        for i in range(12)
    )


def wave(k: int, phase: float, low: float, high: float) -> float:
    """A deterministic moving figure (a training job's util goes up and down)."""
    return low + (high - low) * (0.5 + 0.5 * math.sin(k / 6 + phase))


def sample_at(host: str, k: int, phase: float, *, last: int = HISTORY, **overrides: Any) -> dict:
    """``host``'s sample ``k`` of ``last``, at FROZEN for the last one."""
    util = wave(k, phase, 20, 100)
    data = {
        "gpus": [gpu(0, util, 1305, 61.5, 66), gpu(1, wave(k, phase + 1, 30, 99), 1290, 60.2, 68)],
        "cgroup": {
            "version": 2, "memory_current": int(wave(k, phase / 2, 20, 58) * GIB),
            "memory_max": 64 * GIB, "oom_kill": 0, "cpu_quota_vcpus": 8.0,
        },
    }  # fmt: skip
    data.update(overrides)
    return agent_sample(host, t=FROZEN - (last - k), seq=k + 1, **data)


def post_history(app: RgtApp, host: str, phase: float, **overrides: Any) -> None:
    """``host``'s history before now, as the App records it (posted one by one, each
    would replace the last in the queue: a newer sample of a host supersedes it)."""
    history = app.histories.setdefault(host, HostHistory())
    for k in range(HISTORY):
        history.add(make_update(host, sample_at(host, k, phase, **overrides)).snapshot)


def twelve_updates(app: RgtApp) -> None:
    """History for eleven boxes, a full disk on one, and one whose link dropped."""
    for i in range(12):
        name = f"sweep-{i:02d}"
        if i == 7:
            app.post_message(HostUpdated(replace(lost_update(), host=name)))
            continue
        disks = [disk("/", "/", 40, 12), disk("/workspace", "/workspace", 95 if i == 4 else 55, 20)]
        post_history(app, name, i * 0.7, disks=disks)
        app.post_message(
            HostUpdated(make_update(name, sample_at(name, HISTORY, i * 0.7, disks=disks)))
        )


def fleet_app(tmp_path: Path, boxes: int) -> RgtApp:
    if boxes == 3:
        return snapshot_app(tmp_path, "dark")
    text = FLEET_OF_ONE if boxes == 1 else fleet_of_twelve()
    app = make_app(tmp_path, fleet=write_fleet(tmp_path, text), theme="dark")
    app.fleet_screen.filter_input.cursor_blink = False
    return app


@pytest.mark.parametrize("boxes", [1, 3, 12], ids=lambda n: f"{n}box")
@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_fleet_uses_the_space(snap_compare, tmp_path, utc, size, boxes) -> None:
    """1 box: one pane as big as the screen, its history as tall charts across it;
    3 boxes: a column each when wide, rows sharing the height; 12 boxes: compact
    panes, more columns when wide, the grid scrolling when they do not fit. The
    danger clocks take one header line."""
    app = fleet_app(tmp_path, boxes)

    async def feed(pilot) -> None:  # type: ignore[no-untyped-def]
        if boxes == 12:
            twelve_updates(pilot.app)
        else:
            post_history(pilot.app, "a100-train", 0.0)
            if boxes == 3:
                h100 = [gpu(0, 35, 1410, 20.0, 58, name="NVIDIA H100 80GB HBM3")]
                post_history(pilot.app, "h100-eval", 2.0, gpus=h100)
        await pilot.pause()
        if boxes == 1:
            pilot.app.post_message(HostUpdated(healthy_update()))
            await pilot.pause()
            await pilot.pause()
        elif boxes == 3:
            await post_three(pilot)
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=feed)
