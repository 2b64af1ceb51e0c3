"""The fleet file is live for ``watch`` too (issue 43 item 9): one mechanism, the fleet
runtime's (``services.runtime.fleet_file``), over real loopback boxes; and what a new
reading changes, as a pure function."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from support.waiting import wait_for

from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.domain.config import SshTarget
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.runtime.fleet_file import fleet_changes
from rgt_tui.services.watch.watcher import Watcher


def _blocks(text: str) -> tuple[str, dict[str, str]]:
    head, *blocks = text.split("[[hosts]]\n")
    return head, {b.split('"', 2)[1]: "[[hosts]]\n" + b for b in blocks}


async def test_watch_takes_an_added_host_and_refuses_a_mistake(tmp_path: Path) -> None:
    async with LoopbackFleet(2, tmp_path / "fleet") as boxes:
        hosts = boxes.hosts_file
        head, block = _blocks(hosts.read_text())
        hosts.write_text(head + block["box1"])
        lines: list[str] = []
        watcher = Watcher(
            load_fleet(hosts), drivers=False, report=lines.append, fleet_file_every_s=0.05
        )
        task = asyncio.create_task(watcher.run())
        try:
            await wait_for(lambda: (u := watcher.latest.get("box1")) and u.snapshot, 40)
            hosts.write_text(head + block["box1"] + block["box2"])
            await wait_for(lambda: (u := watcher.latest.get("box2")) and u.snapshot, 40)
            assert "fleet file: added box2" in lines
            assert [h.name for h in watcher.hosts] == ["box1", "box2"]

            # A mistake: reported with its file:line, and the fleet watched as it was.
            hosts.write_text(head + block["box1"] + block["box2"] + "[[hosts]\n")
            line = len((head + block["box1"] + block["box2"]).splitlines()) + 1
            await wait_for(lambda: any(f"{hosts}:{line}" in ln for ln in lines), 10)
            assert "not applied; watching on the last good settings" in lines[-1]
            assert set(watcher.runtime.hosts) == {"box1", "box2"}
            assert watcher.runtime.running("box1") and watcher.runtime.running("box2")
            # What the autostop (and the TUI's teardown) wait on while it stands (h491 #1).
            assert f"{hosts}:{line}" in watcher.runtime.fleet_mistake()
            hosts.write_text(head + block["box1"] + block["box2"])
            await wait_for(lambda: watcher.runtime.fleet_mistake() == "", 10)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def test_a_block_moved_down_is_not_an_edit_and_a_new_address_reconnects(
    tmp_path: Path,
) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "a"\nssh = "u@10.0.0.1"\n\n[[hosts]]\nname = "b"\nssh = "u@10.0.0.2"\n'
    )
    old = load_fleet(hosts)
    moved = replace(old, hosts=tuple(replace(h, line=(h.line or 0) + 5) for h in old.hosts))
    assert fleet_changes(old, moved, old.hosts, moved.hosts).empty

    a, b = old.hosts
    b2 = replace(b, ssh=SshTarget("u", "10.0.0.3", 22), mounts=("/data",))
    a2 = replace(a, mounts=("/", "/data"))
    new = replace(old, hosts=(a2, b2), poll_seconds=old.poll_seconds + 1)
    changes = fleet_changes(old, new, old.hosts, new.hosts)
    assert changes.edited == (a2, b2) and changes.reconnect == {"b"} and changes.settings
    assert not changes.added and not changes.removed
    # Each change said by its key (s37 fleet hour #13: "changed a" said nothing of what).
    assert changes.summary() == (
        "changed a (mounts), b (ssh, mounts); [fleet] changed: poll_seconds"
    )

    # A [fleet] key that rebuilds no monitor is said too, results_dir with what it means
    # for earlier pulls (s37 fleet hour #6: no word, and panes read "none verified here").
    moved_results = replace(old, results_dir=tmp_path / "res2")
    changes = fleet_changes(old, moved_results, old.hosts, old.hosts)
    assert not changes.empty and not changes.settings
    assert changes.summary().startswith("[fleet] changed: results_dir; pulls and their records")
    assert "earlier ones stay in the old folder" in changes.summary()

    # Keys as the file names them, not the fields they are read into (review s37:
    # "watch.pull_every_s").
    every = replace(a, watch=replace(a.watch, pull_every_s=300.0))
    changes = fleet_changes(old, replace(old, hosts=(every, b)), old.hosts, (every, b))
    assert changes.summary() == "changed a (pull_every)"

    # A host still in the file that is no longer run (watch runs no torn-down box) is
    # not "removed" (hour s45a #5: "fleet file: added pair; removed box3"); one that
    # left the file is.
    changes = fleet_changes(old, old, old.hosts, (a,))
    assert changes.removed == ("b",) and changes.unpicked == ("b",)
    assert changes.summary() == ""
    gone = replace(old, hosts=(a,))
    changes = fleet_changes(old, gone, old.hosts, (a,))
    assert changes.summary() == "removed b" and changes.unpicked == ()


async def test_a_host_added_while_watch_runs_is_notified_and_one_removed_leaves_the_metrics(
    tmp_path: Path,
) -> None:
    """`rgt-tui add` while `watch` runs as a service: the new host's alerts reach the
    fleet's notify targets (the Notifier kept the fleet of its start, and dropped them),
    the metrics list it, and a removed host's series go."""
    from support.webhook import webhook

    from rgt_tui.services.watch.sinks.metrics import FleetMetrics
    from rgt_tui.services.watch.sinks.notify import Notifier

    async with LoopbackFleet(2, tmp_path / "fleet") as boxes:
        hosts = boxes.hosts_file
        head, block = _blocks(hosts.read_text())
        with webhook() as hook:
            # Any used inode trips the inode rule: each host alerts at its first sample.
            head = (
                f'[fleet]\npoll_seconds = 0.2\nnotify = ["{hook.url("/fleet")}"]\n'
                f"[fleet.thresholds]\ninode_pct = 0.0001\n\n{head}"
            )
            hosts.write_text(head + block["box1"])
            fleet = load_fleet(hosts)
            notifier = Notifier(fleet, tmp_path / "sent.jsonl", retry_delays=())
            metrics = FleetMetrics(fleet)
            watcher = Watcher(
                fleet, sinks=[notifier, metrics], drivers=False, report=lambda _: None,
                fleet_file_every_s=0.05,
            )  # fmt: skip

            def told(host: str) -> bool:
                return any(host in body["title"] for body in hook.at("/fleet"))

            def info_hosts() -> set[str]:
                return {
                    s.labels["host"]
                    for family in metrics.collect()
                    if family.name == "rgt_host_info"
                    for s in family.samples
                }

            def series_hosts() -> set[str]:
                return {
                    s.labels["host"]
                    for family in metrics.collect()
                    if family.name != "rgt_host_info"
                    for s in family.samples
                    if "host" in s.labels
                }

            task = asyncio.create_task(watcher.run())
            try:
                await wait_for(lambda: told("box1"), 40)
                hosts.write_text(head + block["box1"] + block["box2"])
                await wait_for(lambda: told("box2"), 40)
                assert info_hosts() == {"box1", "box2"}
                await wait_for(lambda: "box2" in series_hosts(), 40)

                hosts.write_text(head + block["box2"])
                await wait_for(lambda: info_hosts() == {"box2"}, 40)
                assert series_hosts() == {"box2"}
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await notifier.aclose(5)
            assert notifier.failures == []


async def test_an_edit_saved_after_the_read_and_before_the_watch_starts_is_taken(
    tmp_path: Path,
) -> None:
    """Hour s31 CLI #3: the file watch took its baseline when it started, not when the
    fleet was read, so an edit saved in between (a fix typed while `watch` started) was
    the baseline and never applied."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "box1"\nssh = "local"\n')
    fleet = load_fleet(hosts)
    hosts.write_text(hosts.read_text() + '\n[[hosts]]\nname = "box2"\nssh = "local"\n')
    lines: list[str] = []
    watcher = Watcher(fleet, drivers=False, report=lines.append, fleet_file_every_s=0.05)
    task = asyncio.create_task(watcher.run())
    try:
        await wait_for(lambda: "fleet file: added box2" in lines, 30, "the edit taken")
        assert [h.name for h in watcher.hosts] == ["box1", "box2"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
