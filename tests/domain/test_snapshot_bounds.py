"""A box cannot make a snapshot (or the alerts read from it) as large as it likes: the
parser keeps the first MAX_GPUS GPUs, MAX_DISKS disks, MAX_GPU_PROCESSES processes and
MAX_THROTTLE_REASONS reasons per GPU, and what it dropped is an alert naming the host."""

from __future__ import annotations

import json

from support.samples import agent_sample, disk, gpu

from rgt_tui.domain.gotchas import gotcha
from rgt_tui.domain.health import HealthContext, HealthState, evaluate
from rgt_tui.domain.snapshot import (
    MAX_DISKS,
    MAX_GPU_PROCESSES,
    MAX_GPUS,
    MAX_THROTTLE_REASONS,
    carry_processes,
    snapshot_from_agent,
)
from rgt_tui.transport.base import MAX_STREAM_LINE


def flood_line(n: int = 50_000) -> dict:
    """The issue's reproduction: ``n`` bare GPU entries, one agent line under the line cap."""
    data = agent_sample("flood", gpus=[{"index": i} for i in range(n)])
    assert (
        len(json.dumps(data, separators=(",", ":"))) < MAX_STREAM_LINE
    )  # the transport would hand it over whole
    return data


def alerts_of(data: dict, host: str = "flood"):  # type: ignore[no-untyped-def]
    snap = snapshot_from_agent(host, data)
    return snap, evaluate(snap, HealthState().observe(snap), HealthContext())


def test_the_limits_are_documented_numbers() -> None:
    assert MAX_GPUS == 64 and MAX_DISKS == 64


def test_fifty_thousand_gpus_keep_the_first_64_and_say_so() -> None:
    snap, alerts = alerts_of(flood_line())
    assert [g.index for g in snap.gpus] == list(range(MAX_GPUS))
    [alert] = [a for a in alerts if a.id == "host.overflow"]
    assert alert.message.startswith("box sent 50,000 GPUs; only the first 64 are kept")
    assert alert.subject == "GPUs" and alert.severity == "warning"
    assert gotcha(alert.gotcha) is not None  # the Alerts tab explains it


def test_disks_processes_and_throttle_reasons_are_bounded_too() -> None:
    disks = [disk(f"/d{i}", f"/d{i}", 10, 10) for i in range(MAX_DISKS + 6)]
    procs = [
        {"gpu_index": 0, "pid": 1000 + i, "name": "p", "used_mem": 1}
        for i in range(MAX_GPU_PROCESSES + 1)
    ]
    reasons = [f"r{i}" for i in range(5000)]
    data = agent_sample(
        "wide",
        disks=disks,
        gpu_processes=procs,
        gpus=[gpu(0, 50, 1000, 1, 50, throttle_reasons=reasons)],
    )
    snap, alerts = alerts_of(data, "wide")
    assert len(snap.disks) == MAX_DISKS and snap.disks[-1].mount == f"/d{MAX_DISKS - 1}"
    assert snap.gpu_processes is not None and len(snap.gpu_processes) == MAX_GPU_PROCESSES
    assert snap.gpus[0].throttle_reasons == tuple(reasons[:MAX_THROTTLE_REASONS])
    said = {a.subject: a.message for a in alerts if a.id == "host.overflow"}
    assert said["disks"].startswith(f"box sent {MAX_DISKS + 6} disks; only the first 64")
    assert said["GPU processes"].startswith(f"box sent {MAX_GPU_PROCESSES + 1:,} GPU processes")
    assert said["throttle reasons of GPU 0"].startswith("box sent 5,000 throttle reasons")


def test_an_honest_box_has_no_overflow_alert() -> None:
    snap, alerts = alerts_of(agent_sample("honest"), "honest")
    assert snap.overflows == () and not [a for a in alerts if a.id == "host.overflow"]


def test_a_cut_process_list_keeps_its_alert_between_listings() -> None:
    procs = [
        {"gpu_index": 0, "pid": 1000 + i, "name": "p", "used_mem": 1}
        for i in range(MAX_GPU_PROCESSES + 10)
    ]
    listing = snapshot_from_agent("box", agent_sample("box", seq=5, proc_every=5, gpu_processes=procs))  # fmt: skip
    between = snapshot_from_agent("box", agent_sample("box", seq=6, proc_every=5, gpu_processes=None))  # fmt: skip
    carried = carry_processes(listing, between)
    alerts = evaluate(carried, HealthState().observe(carried), HealthContext())
    assert [a.subject for a in alerts if a.id == "host.overflow"] == ["GPU processes"]


def test_unread_disks_from_the_box_are_bounded_printable_and_told_as_info() -> None:
    """``disks_unread`` is the box's text: kept to MAX_DISKS pairs, escapes shown, and
    anything not a [path, why] pair of strings dropped (hour s34 CLI #3)."""
    unread = [["/workspce", "No such file or directory"], ["/x\x1b[2J", "gone\n"]]
    unread += [["/a"], "not a pair", [1, 2], *[[f"/d{i}", "why"] for i in range(100)]]
    snap = snapshot_from_agent("box", agent_sample("box", disks_unread=unread))
    # Told only for the paths the fleet file names (hour s34: a default durable_dir not
    # made yet is no typo), as it writes them: the agent says ~/x as ~/x.
    named = HealthContext(mounts_named=("/workspce", "~/d3"))
    alerts = evaluate(snap, HealthState().observe(snap), named)
    assert snap.disks_unread[:2] == (
        ("/workspce", "No such file or directory"),
        ("/x\\x1b[2J", "gone\\n"),
    )
    assert len(snap.disks_unread) < MAX_DISKS  # the first 64 entries, bad ones dropped
    told = [a for a in alerts if a.id == "disk.unread"]
    assert {a.severity for a in told} == {"info"}
    assert [a.subject for a in told] == ["/workspce"]  # /d3 is not ~/d3
    home = ("~/d3", "No such file or directory")
    snap2 = snapshot_from_agent("box", agent_sample("box", disks_unread=[list(home)]))
    tilde = evaluate(snap2, HealthState().observe(snap2), named)
    assert [a.subject for a in tilde if a.id == "disk.unread"] == ["~/d3"]
    unnamed = evaluate(snap2, HealthState().observe(snap2), HealthContext())
    assert not [a for a in unnamed if a.id == "disk.unread"]
    _, flood = alerts_of(agent_sample("box", disks_unread=unread), "box")
    assert any(a.id == "host.overflow" and a.subject == "unread disks" for a in flood)
