"""The TUI sends watch's notifications when the fleet says ``tui_notify = true``: the same
derivation over its own samples, to the host's targets through Apprise's json:// to a
local HTTP server — once, and a ``watch`` run beside it tells nothing again. Off (the
default), the TUI sends nothing: ``watch`` is the sender."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import arun
from support.pilot import SIZE, wait_for
from support.webhook import webhook

from rgt_tui.app import RgtApp
from rgt_tui.services.fleet.file import load_fleet


def alert_fleet(hosts: Path, url: str, *, tui_notify: bool) -> None:
    """Any used inode trips the inode rule (U7); the fleet's one target is ``url``."""
    head = (
        f"[fleet]\npoll_seconds = 0.2\nnotify = {json.dumps([url])}\n"
        f"tui_notify = {'true' if tui_notify else 'false'}\n"
        "[fleet.thresholds]\ninode_pct = 0.0001\n\n"
    )
    hosts.write_text(head + hosts.read_text())


async def test_tui_notify_sends_each_event_once_and_watch_beside_it_repeats_nothing(
    make_loopback_fleet, tmp_path
):
    loopback = await make_loopback_fleet(1)
    with webhook() as hook:
        alert_fleet(loopback.hosts_file, hook.url("/tui"), tui_notify=True)
        app = RgtApp(load_fleet(loopback.hosts_file), config_dir=tmp_path / "config")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(lambda: hook.at("/tui"), 60, "the alert's notification", pilot=pilot)

            def seq() -> int:
                snap = app.latest["box1"].snapshot
                return snap.seq if snap is not None else -1

            first = seq()
            await wait_for(lambda: seq() >= first + 10, 60, "more samples", pilot=pilot)
            (body,) = hook.at("/tui")
            assert "disk.inodes" in body["title"]
            out = await arun("watch", "--once", "--hosts", loopback.hosts_file)
            assert out.returncode == 0, out.stderr
            assert out.stdout.strip() == ""  # told by the TUI already
        assert len(hook.at("/tui")) == 1


async def test_without_tui_notify_the_tui_sends_nothing(make_loopback_fleet, tmp_path):
    loopback = await make_loopback_fleet(1)
    with webhook() as hook:
        alert_fleet(loopback.hosts_file, hook.url("/tui"), tui_notify=False)
        app = RgtApp(load_fleet(loopback.hosts_file), config_dir=tmp_path / "config")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(
                lambda: (
                    any(a.id == "disk.inodes" for a in app.latest["box1"].alerts)
                    if "box1" in app.latest
                    else False
                ),
                60,
                "the alert on the pane",
                pilot=pilot,
            )
            assert app.tui_notify is None
        assert hook.at("/tui") == []
