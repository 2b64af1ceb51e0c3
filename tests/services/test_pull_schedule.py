"""Periodic pulls over loopback boxes: the cadence, one pull per host, none during a
teardown, the box's logs beside the results, and the bandwidth budget. Over 450 lines on
purpose: one scheduler set-up (``_setup``, ``_scheduler``) serves every case."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import re
import time
from pathlib import Path

import pytest
from support import MIB
from support.controller_host import LoopHost
from support.pulls import box_results, fast, host_of, random_file, sha
from support.waiting import wait_for

from rgt_tui.domain.config import HostWatch
from rgt_tui.domain.gate_events import ConfirmationTyped
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal, TeardownRecord
from rgt_tui.services.pull import pull_host
from rgt_tui.services.pull.box_logs import BOX_LOGS_DIR
from rgt_tui.services.pull.budget import Bandwidth
from rgt_tui.services.runtime.locks import HostLocks
from rgt_tui.services.verify.run import verify_host
from rgt_tui.services.watch.drivers.periodic_pull import (
    ALIVE_FILE,
    BUSY_RETRY_S,
    RETRY_S,
    WATCH_PULLS,
    PullScheduler,
    pull_every,
)
from rgt_tui.transport import transport_for


def _setup(loopback, tmp_path: Path, every: float = 600.0):  # type: ignore[no-untyped-def]
    host = host_of(loopback, watch=HostWatch(pull_every_s=every))
    fleet = dataclasses.replace(
        load_fleet(loopback.hosts_file), results_dir=tmp_path / "res", hosts=(host,)
    )
    return fleet, host


def _scheduler(fleet, tmp_path: Path, events: list, **kw):  # type: ignore[no-untyped-def]
    connections = FleetConnections(fleet.hosts)
    journal = Journal(tmp_path / "journal")
    kw.setdefault("locks", HostLocks())
    kw.setdefault("options", fast())
    return (
        PullScheduler(
            fleet,
            connections,
            emit=events.append,
            journal=lambda: journal,
            poll_s=0.05,
            **kw,
        ),
        connections,
        journal,
    )


@contextlib.asynccontextmanager
async def _running(scheduler: PullScheduler, connections: FleetConnections):  # type: ignore[no-untyped-def]
    """The scheduler's loop for the block, then stopped and its connections closed."""
    runner = asyncio.ensure_future(scheduler.run())
    try:
        yield
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        await connections.close_all()


def _box_logs(box_root: Path) -> None:
    q = box_root / ".rgt" / "queue"
    (q / "cells").mkdir(parents=True)
    (q / "queue.log").write_text("queue started\n")
    (q / "cells" / "c0.log").write_text("epoch 1 loss 0.5\n")
    (q / "cells" / "c0.state").write_text("start 1 boot 42\nend 2 0\n")
    (q / "cells" / "notes.txt").write_text("not a log: stays on the box")
    os.symlink("/etc/passwd", q / "cells" / "evil.log")  # a link out: never followed


async def test_periodic_pull_brings_a_file_written_after_the_first_pull(
    make_loopback_fleet, tmp_path
):
    loopback = await make_loopback_fleet(1)
    res = box_results(loopback)
    first = random_file(res / "cell0" / "model.pt", 2 * MIB)
    (res / "cell0" / "metrics.json").write_text(json.dumps({"acc": 0.5}))
    _box_logs(loopback.box("box1").root)
    fleet, host = _setup(loopback, tmp_path)
    now = [1000.0]
    events: list = []
    scheduler, connections, _ = _scheduler(fleet, tmp_path, events, clock=lambda: now[0])
    async with _running(scheduler, connections):
        await wait_for(lambda: [e for e in events if e.kind == "pull"], 60, "the first pull")
        dest = fleet.results_dir / "box1"
        assert sha(dest / "cell0" / "model.pt") == first
        assert not (dest / "cell0" / "late.pt").exists()
        assert scheduler.due["box1"] == now[0] + 600  # the cadence, on the given clock

        late = random_file(res / "cell0" / "late.pt", 3 * MIB + 5)  # written after it
        now[0] += 599  # not yet due: nothing happens
        scheduler.wake()
        await asyncio.sleep(0)
        assert scheduler.start_due() == []
        now[0] += 1
        scheduler.wake()
        await wait_for(lambda: len([e for e in events if e.kind == "pull"]) == 2, 60, "pull 2")
    assert sha(dest / "cell0" / "late.pt") == late
    second = [e for e in events if e.kind == "pull"][1]
    assert second.host == "box1" and "1 file (3.0M) pulled" in second.body, second.body
    # Random bytes named .pt do not load: the verdict, not the one verified file, leads.
    assert "verify: NOT VERIFIED: 2 problems (files: 2 corrupt, 1 verified)" in second.body
    assert second.key != events[0].key and second.key.startswith("pull:box1:")

    # The box's logs came too, under .rgt/box-logs, and only the logs.
    logs = dest / BOX_LOGS_DIR
    assert (logs / "queue.log").read_text() == "queue started\n"
    assert (logs / "cells" / "c0.log").read_text() == "epoch 1 loss 0.5\n"
    assert (logs / "cells" / "c0.state").read_text().endswith("end 2 0\n")
    assert not (logs / "cells" / "notes.txt").exists()
    assert (
        not (logs / "cells" / "evil.log").exists()
        and not (logs / "cells" / "evil.log").is_symlink()
    )
    # verify checks the results and nothing of the logs.
    report = await verify_host(host, fleet.results_dir)
    paths = {c.path for c in report.checks}
    assert paths == {"cell0/model.pt", "cell0/metrics.json", "cell0/late.pt"}
    assert not [f for f in report.flags if ".rgt" in f.path]


async def test_a_shorter_cadence_from_the_fleet_file_counts_from_the_last_pull(
    make_loopback_fleet, tmp_path
):
    """A user's hour (s42): pull_every cut from 30 minutes to "1m" for a spot box was
    seen by a running watch ("fleet file: changed box1 (pull_every)"), yet the next pull
    waited for the old cadence's slot; a restart pulled at once."""
    loopback = await make_loopback_fleet(1)
    random_file(box_results(loopback) / "cell0" / "model.pt", MIB)
    fleet, host = _setup(loopback, tmp_path, every=1800.0)
    now = [1000.0]
    events: list = []
    scheduler, connections, _ = _scheduler(fleet, tmp_path, events, clock=lambda: now[0])
    async with _running(scheduler, connections):
        await wait_for(lambda: [e for e in events if e.kind == "pull"], 60, "the first pull")
        assert scheduler.due["box1"] == now[0] + 1800
        shorter = dataclasses.replace(host, watch=HostWatch(pull_every_s=60.0))
        scheduler.fleet = dataclasses.replace(fleet, hosts=(shorter,))  # the edit, applied
        now[0] += 30
        scheduler.wake()
        await asyncio.sleep(0)
        assert scheduler.start_due() == []  # 30 s after the last pull: not yet
        assert scheduler.due["box1"] == now[0] + 30  # a minute after it, not 30 minutes
        random_file(box_results(loopback) / "cell0" / "late.pt", MIB)  # news to tell
        now[0] += 30
        scheduler.wake()
        await wait_for(lambda: len([e for e in events if e.kind == "pull"]) == 2, 60, "pull 2")
        # Longer again: the pull just made set its slot; the next counts the new cadence.
        scheduler.fleet = fleet
        await wait_for(lambda: not scheduler.running("box1"), 60, "pull 2 ended")
        due = scheduler.due["box1"]
        scheduler.start_due()
        assert scheduler.due["box1"] == due


async def test_a_torn_down_host_pulled_lately_elsewhere_is_not_told_skipped(
    make_loopback_fleet, tmp_path
):
    """A torn-down host whose last pull was another's, inside its cadence, was told
    "periodic pull skipped ... the next here at HH:MM": a pull that never comes."""
    loopback = await make_loopback_fleet(1)
    random_file(box_results(loopback) / "cell0" / "model.pt", 1000)
    fleet, host = _setup(loopback, tmp_path)
    skips: list[tuple[str, str, str]] = []
    events: list = []
    scheduler, connections, journal = _scheduler(
        fleet, tmp_path, events, on_skip=lambda *told: skips.append(told)
    )
    other = transport_for(host)
    try:
        assert (await pull_host(host, fleet.results_dir, other, options=fast())).ok
        journal.add_teardown("box1", TeardownRecord(time.time(), "destroy", 0, "", True))
        assert scheduler.start_due() == []  # the other's pull set its first slot
        scheduler.due["box1"] = time.time() - 1  # its own clock says due
        assert scheduler.start_due() == []
        assert skips == [] and "torn down" in scheduler.last["box1"], scheduler.last
        # A host not torn down, in the same place, is still told.
        journal.path("box1").unlink()
        scheduler.due["box1"] = time.time() - 1
        assert scheduler.start_due() == []
        assert [s[1] for s in skips] == ["box1: periodic pull skipped"]
    finally:
        await other.close()
        await connections.close_all()


async def test_a_pull_notice_with_a_problem_says_not_verified_before_its_counts(
    make_loopback_fleet, tmp_path
):
    # A user's hour: "verify: 8 verified" headed a notice whose bullets named files
    # changed on the box since; the counts read as the verdict.
    loopback = await make_loopback_fleet(1)
    res = box_results(loopback)
    random_file(res / "cell0" / "model.bin", 2 * MIB)  # hash-only: no problem
    (res / "cell0" / "metrics.json.tmp").write_text("{}")  # a leftover: verify flags it
    fleet, _ = _setup(loopback, tmp_path)
    events: list = []
    scheduler, connections, _ = _scheduler(fleet, tmp_path, events, clock=lambda: 1000.0)
    async with _running(scheduler, connections):
        await wait_for(lambda: [e for e in events if e.kind == "pull"], 60, "the pull")
    body = next(e for e in events if e.kind == "pull").body
    head = body.splitlines()[0]
    assert "verify: NOT VERIFIED: 1 problem (files: " in head, body
    assert "metrics.json.tmp" in body  # the problem itself, as a bullet


async def test_a_host_is_never_pulled_twice_at_once(make_loopback_fleet, tmp_path):
    loopback = await make_loopback_fleet(1)
    random_file(box_results(loopback) / "big.bin", 8 * MIB)
    fleet, host = _setup(loopback, tmp_path)
    events: list = []
    locks = HostLocks()
    scheduler, connections, _ = _scheduler(fleet, tmp_path, events, locks=locks)
    manifest = fleet.results_dir / "box1" / ".rgt" / "manifest.json"
    try:
        # In this process: the TUI's `p` holds the host.
        assert locks.claim("box1", "pull") is None
        assert await scheduler.pull_once(host) == BUSY_RETRY_S
        assert "the pull of box1 is running" in scheduler.last["box1"]
        assert not manifest.exists() and not events
        locks.release("box1", "pull")

        # Another process's pull (the lock file): a slow one, by a small budget.
        phases: list[str] = []
        other = transport_for(host)
        slow = fast(budget=Bandwidth.from_mbit(24))  # 8 MiB: about 3 s
        pulling = asyncio.ensure_future(
            pull_host(
                host,
                fleet.results_dir,
                other,
                options=slow,
                on_progress=lambda p: phases.append(p.phase),
            )
        )
        await wait_for(lambda: "pulling" in phases, 30, "the other pull copying")
        assert await scheduler.pull_once(host) == BUSY_RETRY_S
        assert "another pull of box1" in scheduler.last["box1"]
        assert not events and locks.holder("box1") is None
        assert (await pulling).ok
        await other.close()
    finally:
        await connections.close_all()


async def test_no_pull_while_a_teardown_is_in_progress(make_loopback_fleet, tmp_path):
    loopback = await make_loopback_fleet(1)
    random_file(box_results(loopback) / "w.pt", 1000)
    fleet, host = _setup(loopback, tmp_path)
    events: list = []
    locks = HostLocks()
    scheduler, connections, journal = _scheduler(fleet, tmp_path, events, locks=locks)
    manifest = fleet.results_dir / "box1" / ".rgt" / "manifest.json"
    try:
        # The TUI's teardown job holds the host.
        locks.claim("box1", "teardown")
        assert await scheduler.pull_once(host) == BUSY_RETRY_S
        assert "teardown of box1 is running" in scheduler.last["box1"]
        locks.release("box1", "teardown")
        # Another process typed the name: its re-scan and command are under way.
        t = time.time()
        journal.record("box1", t, ConfirmationTyped("box1", "tok1"))
        assert await scheduler.pull_once(host) == BUSY_RETRY_S
        assert "teardown" in scheduler.last["box1"] and not manifest.exists()
        # Recorded torn down: never pulled again.
        journal.add_teardown("box1", TeardownRecord(t + 1, "destroy", 0, "", True))
        assert await scheduler.pull_once(host) == BUSY_RETRY_S
        assert "torn down" in scheduler.last["box1"] and not manifest.exists() and not events
    finally:
        await connections.close_all()


async def test_a_failing_pull_is_told_once_per_run_of_failures(make_loopback_fleet, tmp_path):
    """ux-b #3: told once for the run of failures, with the interval it is really tried
    again at; and once across a restart of watch (hour s21a #9: the same failure was sent
    again a minute after the restart): the run's start and reason are kept beside the
    journal, until a pull comes through."""
    loopback = await make_loopback_fleet(1)
    fleet, host = _setup(loopback, tmp_path, every=60.0)
    results = box_results(loopback)
    gone = results.with_name("results.away")
    results.rename(gone)  # the box answers; its pull folder is not there
    events: list = []
    now = [5000.0]
    scheduler, connections, _ = _scheduler(fleet, tmp_path, events, clock=lambda: now[0])
    try:
        await scheduler.pull_once(host)
        now[0] += 300
        await scheduler.pull_once(host)
    finally:
        await connections.close_all()
    (failed,) = events
    assert failed.kind == "pull_failed" and failed.key == "pull_failed:box1:5000"
    assert "fix:" in failed.body and failed.severity == "warning"
    assert "It is tried again every 1 min;" in failed.body, failed.body
    # Each line but the fix a sentence, the fix last: the console joins them (h602 #6:
    # "…on the box It is tried"), and a full stop after a command breaks its copy.
    *said, fix = failed.body.splitlines()
    assert all(line.endswith((".", "!", "?")) for line in said) and fix.startswith("fix: ")
    assert scheduler.failure("box1")[0] == 5300.0  # the pane's line still follows each try

    # watch restarted (a new scheduler, its own clock): the same failure is not told again.
    later: list = []
    kept: list = []  # listed only (the TUI's n list starts empty: h575 #5)
    restarted, connections, _ = _scheduler(
        fleet, tmp_path, later, clock=lambda: 9000.0, on_kept=kept.append
    )
    try:
        await restarted.pull_once(host)
        await restarted.pull_once(host)  # listed once, not at each try
    finally:
        await connections.close_all()
    assert later == [] and restarted.failure("box1") is not None
    assert [e.key for e in kept] == ["pull_failed:box1:5000"], kept
    assert "fix:" in kept[0].body

    # A pull that comes through ends the run: the next failure is told (a new key).
    gone.rename(results)
    random_file(results / "a.bin", 4096)
    scheduler, connections, _ = _scheduler(fleet, tmp_path, later, clock=lambda: 9100.0)
    try:
        await scheduler.pull_once(host)
        assert [e.kind for e in later] == ["pull"]
        for _ in range(2):  # a.bin rewritten twice: 1, then 2 earlier copies kept, told
            random_file(results / "a.bin", 4096)
            await scheduler.pull_once(host)
        results.rename(gone)
        await scheduler.pull_once(host)
        # It comes through again with only a newer copy of a.bin (3 kept: no new power of
        # two): told all the same, as the last word the user had was the failure (review
        # s37: it was quiet as "no news").
        gone.rename(results)
        random_file(results / "a.bin", 4096)
        await scheduler.pull_once(host)
    finally:
        await connections.close_all()
    assert [e.kind for e in later] == ["pull"] * 3 + ["pull_failed", "pull"], later
    assert later[3].key == "pull_failed:box1:9100"


async def test_a_full_local_disk_whose_figures_change_is_told_once(make_loopback_fleet, tmp_path):
    """An overnight hour (s39 watch #1): the local results disk full while the box's run
    wrote on, the failure was told again each minute ("needs 1.0G (29K still to pull …),
    12K is free", then 57K, then 58K): the same failure, its figures changed. Once; a
    failure for another reason is still told. A real tmpfs holds the results folder."""
    from support.machine import tmpfs

    loopback = await make_loopback_fleet(1)
    fleet, host = _setup(loopback, tmp_path, every=60.0)
    results = box_results(loopback)
    random_file(results / "a.bin", 4096)
    events: list = []
    now = [5000.0]
    with tmpfs(fleet.results_dir, size="1m"):
        # A 2 MiB margin over a 1 MiB disk: refused for want of space, as with 1 GiB.
        scheduler, connections, _ = _scheduler(
            fleet, tmp_path, events, clock=lambda: now[0], options=fast(margin_min_bytes=2 << 20)
        )
        try:
            await scheduler.pull_once(host)
            assert events and "not enough local space" in events[0].body, events or scheduler.last
            random_file(results / "b.bin", 64 * 1024)  # the run wrote on: other figures
            now[0] += 60
            await scheduler.pull_once(host)
            assert "not enough local space" in scheduler.last["box1"], scheduler.last
            results.rename(results.with_name("results.away"))  # another reason: told
            now[0] += 60
            await scheduler.pull_once(host)
        finally:
            await connections.close_all()
    assert [e.kind for e in events] == ["pull_failed", "pull_failed"], events
    assert "not enough local space" in events[0].body
    assert "not enough local space" not in events[1].body


def test_a_failures_figures_are_not_its_reason_but_its_exit_status_is() -> None:
    """Sizes and counts change as the box's files grow (one failure); an exit status
    names another (the review of s39 #10)."""
    from rgt_tui.services.watch.drivers.periodic_pull import _shape

    full = "needs {} ({} still to pull plus the safety margin), {} is free"
    assert _shape(full.format("1.0G", "29K", "12K")) == _shape(full.format("1.0G", "58K", "8.0K"))
    assert _shape("ssh exited 255: lost") != _shape("ssh exited 1: lost")
    # The disk found full before the pull, and one that filled while it wrote, are one
    # failure (h532 #6: told twice a host, a minute apart), in the words the pull uses.
    from pathlib import Path

    from rgt_tui.services.pull.types import LocalDiskFull, NotEnoughSpace

    before = NotEnoughSpace(Path("/r/box1"), 10 << 30, 1 << 20, 5 << 30)
    during = LocalDiskFull(Path("/r/box1/big.bin.part"), Path("/r/box1"))
    assert _shape(before.message) == _shape(during.message)
    assert _shape(before.message) != _shape("ssh exited 1: lost")


async def test_watchs_metrics_hear_each_periodic_pulls_end(make_loopback_fleet, tmp_path):
    """An overnight hour (s39 watch #5): `watch` hands each periodic pull's end to its
    sinks, so /metrics says a host's pulls fail (rgt_pull_failing) and when one last came
    through. Over a real box, the watcher's own scheduler and FleetMetrics."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families
    from support.replay import ReplayMonitor
    from support.samples import agent_sample, make_update

    from rgt_tui.services.watch.sinks.metrics import FleetMetrics
    from rgt_tui.services.watch.watcher import Watcher

    loopback = await make_loopback_fleet(1)
    fleet, host = _setup(loopback, tmp_path, every=60.0)
    metrics = FleetMetrics(fleet)
    monitors = {"box1": ReplayMonitor(updates=[make_update("box1", agent_sample("box1"))])}
    watcher = Watcher(fleet, hosts=fleet.hosts, monitors=monitors, sinks=(metrics,))

    def pulls() -> dict[str, float]:
        text = generate_latest(metrics.registry).decode()
        return {
            s.name: s.value
            for f in text_string_to_metric_families(text)
            for s in f.samples
            if s.name.startswith("rgt_pull_") and s.labels.get("host") == "box1"
        }

    results = box_results(loopback)
    random_file(results / "a.bin", 4096)
    try:
        assert watcher.pull is not None
        await watcher.pull.pull_once(host)
        await wait_for(lambda: pulls().get("rgt_pull_failing") == 0, 30, "a pull through")
        through = pulls()["rgt_pull_last_success_timestamp_seconds"]
        assert abs(through - time.time()) < 600
        results.rename(results.with_name("results.away"))
        await watcher.pull.pull_once(host)
        await wait_for(lambda: pulls().get("rgt_pull_failing") == 1, 30, "a failed pull")
        assert pulls()["rgt_pull_last_success_timestamp_seconds"] == through
    finally:
        await watcher.close()


async def test_a_pull_of_a_box_that_does_not_answer_is_not_told_as_a_failed_pull(
    make_loopback_fleet, tmp_path
):
    """The box's connection line and its alert (GEN8, or the preemption it is named as)
    say it does not answer: a "periodic pull failed" beside them was noise (s21a #9)."""
    loopback = await make_loopback_fleet(1)
    fleet, host = _setup(loopback, tmp_path, every=60.0)
    await loopback.box("box1").stop()
    events: list = []
    scheduler, connections, _ = _scheduler(fleet, tmp_path, events, clock=lambda: 5000.0)
    try:
        delay = await scheduler.pull_once(host)
    finally:
        await connections.close_all()
    assert events == [] and scheduler.failure("box1") is None
    assert scheduler.last["box1"].startswith("not pulled: box1 does not answer ("), scheduler.last
    assert delay == RETRY_S  # tried again as after any failure (the cadence, if sooner)


def test_profiles_set_a_cadence_only_where_a_box_can_vanish(tmp_path):
    from rgt_tui.domain.config import HostConfig

    base = HostConfig(
        "h", None, None, None, "generic-ssh", None, None, "~", "~/r", (), None, None, ("~/r",),
        None, 1,
    )  # fmt: skip
    every = {p: pull_every(dataclasses.replace(base, profile=p)) for p in (
        "vastai", "runpod", "kubernetes", "autodl", "generic-ssh", "lambda", "slurm", "paperspace",
    )}  # fmt: skip
    assert every == {
        "vastai": 1800, "runpod": 1800, "kubernetes": 1800, "autodl": 3600,
        "generic-ssh": None, "lambda": None, "slurm": None, "paperspace": None,
    }  # fmt: skip
    own = dataclasses.replace(base, profile="vastai", watch=HostWatch(pull_every_s=900))
    assert pull_every(own) == 900


async def test_pull_all_keeps_two_boxes_within_one_budget(make_loopback_fleet, tmp_path, capsys):
    from rgt_tui.cli import main

    loopback = await make_loopback_fleet(2)
    digests = {
        "box1": {"big.pt": random_file(box_results(loopback, "box1") / "big.pt", 3 * MIB // 2)},
        "box2": {"big.pt": random_file(box_results(loopback, "box2") / "big.pt", 2 * MIB)},
    }
    for i in range(20):  # small files: the tar stream's way, budgeted too
        name = f"evals/e{i}.json"
        digests["box1"][name] = random_file(box_results(loopback, "box1") / name, 25_000)
    total = sum(
        (box_results(loopback, h) / n).stat().st_size for h, files in digests.items() for n in files
    )
    hosts = tmp_path / "hosts.toml"
    text = loopback.hosts_file.read_text()  # noqa: ASYNC240
    hosts.write_text(f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n\n{text}')  # noqa: ASYNC240

    started = time.monotonic()
    code = await asyncio.to_thread(main, ["pull", "--all", "--bwlimit", "8", "--hosts", str(hosts)])
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 0, err + out
    rate_mbit = total * 8 / elapsed / 1e6
    assert rate_mbit <= 8 * 1.2, f"{rate_mbit:.2f} Mbit/s over {elapsed:.2f} s"
    assert elapsed >= total * 8 / 8e6 * 0.8
    for host, files in digests.items():
        for name, digest in files.items():
            assert sha(tmp_path / "res" / host / name) == digest, (host, name)
    summary = out.splitlines()
    assert any(line.startswith("box1: 21 pulled") for line in summary), out
    assert any(line.startswith("box2: 1 pulled") for line in summary), out
    # The fleet's line (the egress total, issue 42, follows it).
    fleet_line = next(line for line in summary if line.startswith("all hosts: 2/2 complete"))
    assert "budget 8 Mbit/s" in fleet_line, out
    # Its time in tenths under a minute ("134K in 0s, 1.1 Mbit/s" read as a slip).
    assert re.search(r" in \d+\.\ds, \d+\.\d Mbit/s", fleet_line), fleet_line
    assert "box1: pulling" in err and "box2: pulling" in err  # one view, a line per host
    print(f"pull --all: {total} bytes over 2 boxes in {elapsed:.2f} s = {rate_mbit:.2f} Mbit/s")


async def test_pull_all_refuses_a_host_and_all_together(make_loopback_fleet, tmp_path, capsys):
    from rgt_tui.cli import main

    loopback = await make_loopback_fleet(1)
    args = ["pull", "box1", "--all", "--hosts", str(loopback.hosts_file)]
    assert await asyncio.to_thread(main, args) == 2
    assert await asyncio.to_thread(main, ["pull", "--hosts", str(loopback.hosts_file)]) == 2
    bad = ["pull", "--all", "--bwlimit", "0", "--hosts", str(loopback.hosts_file)]
    assert await asyncio.to_thread(main, bad) == 2
    assert "--bwlimit" in capsys.readouterr().err


async def test_the_budget_paces_every_take_on_one_timeline():
    budget = Bandwidth(1e6, clock=lambda: 0.0)  # a frozen clock: any wait would hang
    await asyncio.wait_for(budget.take(200_000), 1)  # within the burst (0.25 s = 250 kB)
    slept: list[float] = []
    now = [0.0]

    async def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    shared = Bandwidth(1e6, clock=lambda: now[0], sleep=sleep)
    for _ in range(10):  # 10 × 500 kB at 1 MB/s: 5 s, less the burst
        await shared.take(500_000)
    assert abs(now[0] - 4.75) < 1e-6 and max(slept) <= 1.0


async def test_the_tui_p_and_the_periodic_pull_share_one_pull_per_host(
    make_loopback_fleet, tmp_path
):
    from rgt_tui.controllers.jobs import JobRunner

    loopback = await make_loopback_fleet(1)
    random_file(box_results(loopback) / "big.bin", 6 * MIB)
    fleet, host = _setup(loopback, tmp_path)
    fleet = dataclasses.replace(fleet, watch=dataclasses.replace(fleet.watch, pull_rate_mbit=16))
    connections = FleetConnections(fleet.hosts)
    app = LoopHost()
    journal = Journal(tmp_path / "journal")
    runner = JobRunner(app, fleet, connections, locks=HostLocks(), journal=lambda: journal)
    scheduler = runner.periodic_pulls()
    try:
        periodic = asyncio.ensure_future(scheduler.pull_once(host))
        await wait_for(lambda: runner.state("box1").running == "pull", 30, "the periodic pull")
        runner.request("box1", "pull")  # the user's p meanwhile: refused, said so
        assert any("still running" in n for n in app.messages)
        assert len(app.tasks) == 0
        # Nobody asked for it: quitting is not held up by it (its parts are kept).
        assert runner.busy() == []
        await periodic
        assert runner.state("box1").running == "" and runner.locks.holder("box1") is None
        # And the other way: while p runs, the periodic pull waits its turn.
        runner.request("box1", "verify")
        assert await scheduler.pull_once(host) == BUSY_RETRY_S
        await asyncio.gather(*app.tasks)
    finally:
        await connections.close_all()


async def test_the_tuis_periodic_pulls_leave_the_hosts_to_a_running_watch(
    make_loopback_fleet, tmp_path
):
    """Hour s23a #3: the TUI beside a running `watch` won every race for the periodic
    pull, and what it brought was told in the TUI alone, never to the notify targets."""
    loopback = await make_loopback_fleet(1)
    fleet, host = _setup(loopback, tmp_path)
    watch_side, connections, _ = _scheduler(fleet, tmp_path, [])
    tui_side, tui_connections, _ = _scheduler(fleet, tmp_path, [], defer_to_watch=True)
    alive = tmp_path / "journal" / "watch" / ALIVE_FILE
    assert tui_side.start_due() == [host.name]  # no watch runs: the TUI pulls
    task = asyncio.ensure_future(watch_side.run())
    try:
        await wait_for(alive.exists, 30, "watch's periodic pulls to say they run")
        assert tui_side.watch_pulls()
        for running in list(tui_side._running.values()):
            await running
        tui_side.due.clear()
        assert tui_side.start_due() == []
        assert tui_side.held_back[host.name] == WATCH_PULLS
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert not alive.exists()  # watch ended: the TUI pulls again
    assert not tui_side.watch_pulls()
    await connections.close_all()
    await tui_connections.close_all()


def test_a_pull_notice_names_ten_failed_files_and_counts_the_rest() -> None:
    """A review (s38 #6): every file not pulled was a bullet of the notice, and a box
    whose 100,000 files never match their hashes made a notice (and its sent-log line and
    memory) of megabytes. Ten are named, the rest counted; a box's name is cut and shown."""
    from rgt_tui.services.watch.drivers.periodic_pull import pull_problems

    failed = [(f"cell0/f{i}.bin", "SHA-256 differs") for i in range(100_000)]
    failed[0] = ("x" * 5000 + "\x1b[2J", "why " * 1000)
    said = pull_problems("box1", ["folder runs/ is missing"], failed)
    assert said[0] == "folder runs/ is missing" and len(said) == 12
    assert said[2] == "cell0/f1.bin: SHA-256 differs"
    assert said[-1] == "and 99990 more files not pulled (rgt-tui pull box1 names each)"
    assert "\x1b" not in said[1] and len(said[1]) < 600
    assert len("\n".join(said)) < 2000
    assert pull_problems("box1", [], failed[1:3]) == [
        "cell0/f1.bin: SHA-256 differs",
        "cell0/f2.bin: SHA-256 differs",
    ]


async def test_a_periodic_pull_while_a_cell_runs_says_so_in_its_notice(make_queue_fleet, tmp_path):
    """s43 spot hour #6: the CLI and the Pulls tab say RUNNING … pull again once it ends
    for a pull taken while a cell ran; watch's notice, what reaches a phone, said only
    `verify: NOT VERIFIED: …`, which read as damage."""
    from support.queues import GATE, SCRIPT_RUN, wait_view

    from rgt_tui.domain.queue_state import RUNNING
    from rgt_tui.services.queue.launch import launch, plan_launch

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    writes = qf.cell_script("hold", 'mkdir -p "$2"; echo "{}" > "$2/metrics.json"; ' + GATE)
    qf.write_queue(f"{writes} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    try:
        await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
        await wait_for((qf.root() / "results" / "hold" / "metrics.json").exists, 30, "its file")
        # The cell has run a whole cadence (here 1 s), so its results are due.
        view = await wait_view(
            qf, lambda v: v.now - (v.cells[0].started_at or v.now) >= 1.5, what="a cadence"
        )
        fleet, _ = _setup(qf.loopback, tmp_path, every=1.0)
        events: list = []
        scheduler, connections, _ = _scheduler(
            fleet, tmp_path, events, clock=lambda: 1000.0, queue_view=lambda host: view
        )
        async with _running(scheduler, connections):
            await wait_for(lambda: [e for e in events if e.kind == "pull"], 60, "the pull")
    finally:
        (qf.root() / "go").touch()
    body = next(e for e in events if e.kind == "pull").body
    assert "; RUNNING: cell hold ran on the box at the pull: its files may still change" in body
    assert "pull again once it ends" in body, body


async def test_a_host_held_back_does_not_make_the_loop_spin(make_loopback_fleet, tmp_path):
    """h582 #1: a host stopped by watch's autostop kept its due time, long past, and
    every sleep of the loop was 0: watch spun at 60% of a core while the box was off
    (1250 touches of its alive file a second). Held back, it waits for the next look."""
    loopback = await make_loopback_fleet(1)
    fleet, _host = _setup(loopback, tmp_path, every=60.0)
    events: list = []
    off: dict[str, float | None] = {"box1": None}
    scheduler, connections, _journal = _scheduler(
        fleet, tmp_path, events, stopped=off.get
    )  # no queue, a cadence: it has results to pull
    scheduler.poll_s = 30.0
    try:
        scheduler.due["box1"] = scheduler.clock() - 600  # due ten minutes ago
        off["box1"] = time.time() - 60  # then stopped by watch
        assert scheduler.start_due() == [] and "box1" in scheduler.held_back
        assert scheduler._sleep_s() == pytest.approx(30.0, abs=0.5)
        off["box1"] = None  # answering again: due at once
        assert scheduler.start_due() == ["box1"]
    finally:
        for task in list(scheduler._running.values()):
            task.cancel()
        await asyncio.gather(*scheduler._running.values(), return_exceptions=True)
        await connections.close_all()


def test_a_watch_that_died_here_is_not_another_watch(tmp_path):
    """h582 #7: a watch killed (or crashed) and started again within a minute, as
    systemd's Restart=on-failure does, was warned that "another rgt-tui watch runs on this
    fleet": the alive file's age alone said so. The file names its process and machine."""
    import socket
    import subprocess
    import sys

    from rgt_tui.services.watch.drivers.periodic_pull import ALIVE_FILE, watch_alive_for
    from rgt_tui.services.watch.store import watch_dir

    alive = watch_dir(tmp_path) / ALIVE_FILE
    alive.parent.mkdir(parents=True, exist_ok=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    here = socket.gethostname()
    alive.write_text(f"{gone.stdout.strip()} {here}\n")
    assert watch_alive_for(tmp_path) is None  # its process is gone
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as running:
        try:
            alive.write_text(f"{running.pid} {here}\n")
            assert watch_alive_for(tmp_path) is not None
        finally:
            running.kill()
    alive.write_text(f"{gone.stdout.strip()} another-machine\n")  # a shared journal folder
    assert watch_alive_for(tmp_path) is not None  # its age is all there is to go by
    alive.write_text("")  # an older watch's empty file
    assert watch_alive_for(tmp_path) is not None
