"""ux-b #6: the autostop says why it does not stop. A host whose autostop can never run
as configured (a profile without a reversible stop) is said when ``watch`` starts and
when the fleet file gains one; a host that may stop says what it waits for on ``watch``'s
console, once per kind of reason (not once per sample)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.replay import ReplayMonitor
from support.samples import Clock, agent_sample, gpu
from support.waiting import wait_for

from rgt_tui.domain.health import HealthState
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.watcher import Watcher

BOX = """\
[[hosts]]
name = "{name}"
ssh = "root@10.0.0.{n}:22"
profile = "{profile}"
stop = "touch /tmp/{name}-STOPPED"
autostop_minutes = 1
"""


async def test_refusals_at_start_and_on_change_and_the_waiting_reason_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hosts.toml"
    path.write_text(
        BOX.format(name="box2", n=2, profile="generic-ssh")
        + BOX.format(name="box3", n=3, profile="vastai")
    )
    fleet = load_fleet(path)
    clock, lines = Clock(), []
    box3 = ReplayMonitor(fleet.host("box3"), clock)
    watcher = Watcher(
        fleet,
        hosts=[fleet.host("box3")],
        clock=clock,
        monitors={"box3": box3},
        report=lines.append,
        fleet_file_every_s=0.05,
    )
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(box3.started.wait(), 30)
        (refused,) = [line for line in lines if "autostop refused" in line]
        assert refused.startswith("box2: autostop refused — profile generic-ssh")
        # box3 may stop: it says what it waits for, once while the reason stays the same.
        for _ in range(3):
            clock.t += 10
            box3.sample(agent_sample("box3", t=clock.t, gpus=[gpu(0, 97, 1305, 61.5, 66)]))
            await watcher.check_now()
        await wait_for(lambda: any("box3: autostop waits" in line for line in lines), 30)
        waits = [line for line in lines if line.startswith("box3: autostop waits: ")]
        assert len(waits) == 1, lines
        # A host added with an autostop its profile refuses: said when the file changes.
        path.write_text(path.read_text() + BOX.format(name="box4", n=4, profile="lambda"))
        await wait_for(lambda: any(line.startswith("box4: autostop refused") for line in lines), 30)
        assert sum("box2: autostop refused" in line for line in lines) == 1  # not again
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_a_changed_queue_reason_is_said_and_gpu_flips_are_not(tmp_path: Path) -> None:
    """A user's hour: "the queue has not been read" (the first sample's) stood for the
    whole watch once the queue was read and had a cell not run; and once the GPUs
    decided, every idle/busy flip of a replayed GPU printed a line."""
    from rgt_tui.services.connections import FleetConnections
    from rgt_tui.services.journal import Journal
    from rgt_tui.services.runtime.locks import HostLocks
    from rgt_tui.services.watch.drivers.autostop import AutoStop

    path = tmp_path / "hosts.toml"
    path.write_text(BOX.format(name="box3", n=3, profile="vastai"))
    fleet = load_fleet(path)
    lines: list[str] = []
    now = [1000.0]
    auto = AutoStop(
        fleet,
        FleetConnections(fleet.hosts),
        emit=lambda e: None,
        locks=HostLocks(),
        journal=Journal(tmp_path / "journal"),
        report=lines.append,
        clock=lambda: now[0],
    )
    unread = "the queue has not been read (no queue, or the box not reached yet)"
    auto.say("box3", "queue", unread)
    auto.say("box3", "queue", unread)
    auto.say("box3", "queue", "cells still to run: box1_wide")
    for seconds in (0, 10, 20):
        auto.say("box3", "busy", "GPUs not idle: GPU 0 at 100 % (idle under 5 %)")
        auto.say("box3", "idle", f"GPUs idle {seconds}s of 1 min")
    auto.say("box3", "teardown", "teardown: started 10s ago")
    auto.say("box3", "teardown", "teardown: started 20s ago")  # only its figures changed
    assert [line.removeprefix("box3: autostop waits: ") for line in lines] == [
        unread,
        "cells still to run: box1_wide",
        "GPUs not idle: GPU 0 at 100 % (idle under 5 %)",
        "teardown: started 10s ago",
    ]
    assert auto.reasons["box3"] == "teardown: started 20s ago"

    # The first idle a minute after the GPUs' last line is said: the standing line is not
    # "not idle" while the idle minute counts (a user's hour).
    lines.clear()
    auto.say("box3", "busy", "GPUs not idle: GPU 0 at 100 % (idle under 5 %)")
    now[0] += 6
    auto.say("box3", "idle", "GPUs idle 0s of 1 min")  # a flip 6 s later: not said
    now[0] += 60
    auto.say("box3", "idle", "GPUs idle 60s of 1 min")
    assert [line.removeprefix("box3: autostop waits: ") for line in lines] == [
        "GPUs not idle: GPU 0 at 100 % (idle under 5 %)",
        "GPUs idle 60s of 1 min",
    ], lines

    # A box with no GPU readings: the first sample's "no sample" is replaced by the reason
    # as soon as it is known, not kept for the whole watch (hour s20c #4).
    lines.clear()
    auto.say("box3", "unknown", "no sample from the box now (connection connected)")
    auto.say("box3", "unknown", "cannot tell whether the GPUs are idle: nvidia-smi not found")
    assert [line.removeprefix("box3: autostop waits: ") for line in lines] == [
        "no sample from the box now (connection connected)",
        "cannot tell whether the GPUs are idle: nvidia-smi not found",
    ], lines


async def test_a_refused_host_key_is_said_on_the_console_at_once(tmp_path: Path) -> None:
    """watch said nothing of a refused host key until its silent event five minutes
    later, which blamed the network (a user's hour): it is said at once, once."""
    from rgt_tui.domain.errors import HostKeyError
    from rgt_tui.services.telemetry import ConnectionState, HostUpdate

    path = tmp_path / "hosts.toml"
    path.write_text(BOX.format(name="box3", n=3, profile="vastai"))
    fleet = load_fleet(path)
    clock, lines = Clock(), []
    refused = HostKeyError(
        "box3",
        "HOST KEY CHANGED for 10.0.0.3: the box now shows ssh-ed25519 SHA256:new",
        "ssh-keygen -R 10.0.0.3, then check the new key",
        kind="changed",
        presented="ssh-ed25519 SHA256:new",
    )
    conn = ConnectionState("lost", clock.t, error=refused.message, key_error=refused)
    update = HostUpdate("box3", conn, None, (), HealthState())
    box3 = ReplayMonitor(fleet.host("box3"), clock, updates=[update, update])
    watcher = Watcher(fleet, clock=clock, monitors={"box3": box3}, report=lines.append)
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(box3.started.wait(), 30)
        await wait_for(lambda: any("HOST KEY CHANGED" in line for line in lines), 30)
        await watcher.check_now()
        said = [line for line in lines if "HOST KEY CHANGED" in line]
        assert said == [
            "box3: HOST KEY CHANGED for 10.0.0.3: the box now shows ssh-ed25519 SHA256:new "
            "— ssh-keygen -R 10.0.0.3, then check the new key"
        ], lines
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_torn_down_hosts_refusal_is_not_said(tmp_path: Path) -> None:
    """s37 money hour #11: box3, torn down and no longer watched, had its "autostop
    refused — profile lambda …" said at start and again at each edit of the file."""
    from rgt_tui.paths import journal_dir
    from rgt_tui.services.journal import Journal, TeardownRecord

    path = tmp_path / "hosts.toml"
    path.write_text(
        BOX.format(name="box2", n=2, profile="generic-ssh")
        + BOX.format(name="box3", n=3, profile="lambda")
    )
    Journal(journal_dir(path)).add_teardown("box3", TeardownRecord(1000.0, "true", 0, "", True))
    fleet = load_fleet(path)
    clock, lines = Clock(), []
    watcher = Watcher(
        fleet, hosts=[], clock=clock, monitors={}, report=lines.append, fleet_file_every_s=0.05
    )
    task = asyncio.create_task(watcher.run())
    try:
        await wait_for(lambda: any("box2: autostop refused" in ln for ln in lines), 30)
        path.write_text("# an edit above every block\n" + path.read_text())
        await wait_for(lambda: any("fleet file" in ln for ln in lines), 30, "the edit taken")
        assert not any("box3: autostop refused" in line for line in lines), lines
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
