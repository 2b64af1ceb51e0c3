"""The watch memory on disk and the service texts: a damaged or oversized memory file is
reported and started afresh (never trusted, never a crash); the unit quotes what systemd
would otherwise expand."""

from __future__ import annotations

from pathlib import Path

from rgt_tui.domain.health import Alert
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.install import WatchCommand, systemd_quote, systemd_unit
from rgt_tui.services.watch.store import MAX_MEMORY_BYTES, EventTracker, WatchStore

INODES = Alert("disk.inodes", "warning", "inodes 95% used", "U7", "/data")


def lost_state(now: float, alerts: tuple[Alert, ...] = ()) -> HostState:
    return HostState(None, alerts, "reconnecting", now, None, None, None, now)


def test_an_alert_is_told_once_per_store_and_a_second_tracker_finds_it_told(tmp_path: Path):
    store = tmp_path / "watch"
    first = EventTracker(WatchStore(store), reminder_s=3600)
    (event,) = first.observe("box1", lost_state(1000.0, (INODES,)))
    assert event.key == "alert:box1:disk.inodes:/data:1000"
    # Another process (the TUI beside watch) derives the same state: told already.
    second = EventTracker(WatchStore(store), reminder_s=3600)
    assert second.observe("box1", lost_state(1001.0, (INODES,))) == []
    assert first.observe("box1", lost_state(1002.0, (INODES,))) == []


def test_a_damaged_memory_is_reported_and_started_afresh(tmp_path: Path):
    store = WatchStore(tmp_path / "watch")
    store.directory.mkdir()
    store.path("box1").write_text('{"version": 1, "host": "box2", "open": {}}')
    store.path("box2").write_bytes(b"[" * 100_000)
    store.path("box3").write_bytes(b" " * (MAX_MEMORY_BYTES + 1))
    for host in ("box1", "box2", "box3"):
        assert store.load(host).open == {}
    assert len(store.problems) == 3
    assert all("damaged watch memory" in p and "started afresh" in p for p in store.problems)
    tracker = EventTracker(store, reminder_s=60)
    assert [e.kind for e in tracker.observe("box1", lost_state(5.0, (INODES,)))] == ["alert"]
    assert store.load("box1").open  # written over with a good one


def test_the_unit_quotes_spaces_and_doubles_what_systemd_would_expand():
    assert systemd_quote("/a b/c") == '"/a b/c"'
    assert systemd_quote("50%$HOME") == "50%%$$HOME"
    unit = systemd_unit(WatchCommand("/usr/bin/python3", Path("/f/hosts.toml")), Path("/e"))
    assert "ExecStart=/usr/bin/python3 -m rgt_tui watch --hosts /f/hosts.toml\n" in unit
    assert "Restart=on-failure" in unit and "WantedBy=default.target" in unit
