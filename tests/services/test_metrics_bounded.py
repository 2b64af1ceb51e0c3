"""The metrics endpoint is bounded and its series are distinct (issue 39, item 4).

The exposition is built by prometheus_client's real registry (``generate_latest``) and
read back with its own parser: one box sending 50,000 GPUs cannot grow a 100-host
fleet's scrape past twice an honest fleet's, and GPUs sharing an index, disks without a
mount and long mounts equal after the cut each keep a series of their own (Prometheus
drops a sample whose name and labels repeat another's)."""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from support.samples import FROZEN, agent_sample, disk, gpu, make_update, many_hosts_fleet

from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.sinks.metrics import LABEL_CHARS, FleetMetrics
from rgt_tui.transport.base import MAX_STREAM_LINE

Sample = tuple[str, tuple[tuple[str, str], ...]]


def exposition(metrics: FleetMetrics) -> list[Sample]:
    """Every sample of one scrape as (name, sorted labels), in exposition order."""
    text = generate_latest(metrics.registry).decode()
    return [
        (s.name, tuple(sorted(s.labels.items())))
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def state_of(update: HostUpdate) -> HostState:
    """The HostState the watch hands its sinks for a connected host's update."""
    return HostState(
        snapshot=update.snapshot,
        alerts=update.alerts,
        connection=update.connection.status,
        lost_since=None,
        queue=None,
        cost_per_hour=None,
        cost_so_far=None,
        now=FROZEN,
    )


def watched(tmp_path: Path, samples: dict[str, dict]) -> FleetMetrics:
    """FleetMetrics of a fleet of box0..boxN-1, each host handed its agent sample."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    fleet = many_hosts_fleet(tmp_path, len(samples))
    metrics = FleetMetrics(fleet)
    for box in fleet.hosts:
        metrics.on_host(box, state_of(make_update(box.name, samples[box.name])))
    return metrics


def honest(name: str) -> dict:
    return agent_sample(name, gpus=[gpu(i, 97, 1305, 60, 66) for i in range(8)])


def test_one_flooding_box_keeps_a_100_host_scrape_under_twice_an_honest_ones(
    tmp_path: Path,
) -> None:
    boxes = [f"box{i}" for i in range(100)]
    fair = exposition(watched(tmp_path / "fair", {b: honest(b) for b in boxes}))
    flood = {b: honest(b) for b in boxes}
    flood["box7"] = agent_sample("box7", gpus=[{"index": i} for i in range(50_000)])
    assert len(json.dumps(flood["box7"], separators=(",", ":"))) < MAX_STREAM_LINE  # one line
    scraped = exposition(watched(tmp_path / "flood", flood))
    assert len(scraped) < 2 * len(fair), (len(scraped), len(fair))
    gpus = {dict(labels)["gpu"] for name, labels in scraped if name == "rgt_gpu_info" and ("host", "box7") in labels}  # fmt: skip
    assert len(gpus) == 64
    overflow = [dict(labels) for name, labels in scraped if name == "rgt_alert" and ("alert", "host.overflow") in labels]  # fmt: skip
    assert [(a["host"], a["subject"]) for a in overflow] == [("box7", "GPUs")]


def colliding_sample() -> dict:
    """Two GPUs with index 0, two disks with no mount, two long mounts equal for 200
    characters (both nearly full of inodes: their alerts' subjects collide too)."""
    long = "/mnt/" + "very/long/" * 20
    return agent_sample(
        "box0",
        gpus=[gpu(0, 97, 1305, 60, 66), gpu(0, 95, 1290, 61, 68), gpu(1, 90, 1300, 60, 90)],
        disks=[
            disk("/", "/", 40, 10),
            disk("/a", None, 40, 10),  # type: ignore[arg-type]
            disk("/b", None, 50, 10),  # type: ignore[arg-type]
            disk("/c", long + "one", 40, 96),
            disk("/d", long + "two", 40, 97),
        ],
    )


def test_label_sets_are_unique_with_stable_suffixes(tmp_path: Path) -> None:
    scraped = exposition(watched(tmp_path, {"box0": colliding_sample()}))
    repeated = [sample for sample, n in Counter(scraped).items() if n > 1]
    assert repeated == []
    util = [dict(labels)["gpu"] for name, labels in scraped if name == "rgt_gpu_utilization_ratio"]  # fmt: skip
    assert sorted(util) == ["0", "0#2", "1"]
    mounts = [dict(labels)["mount"] for name, labels in scraped if name == "rgt_disk_used_bytes"]  # fmt: skip
    cut = "/mnt/" + ("very/long/" * 20)[: LABEL_CHARS - 6] + "…"
    assert sorted(mounts) == sorted(["/", "?", "?#2", cut, cut + "#2"])
    # The suffix follows the order in the sample, so it names the same disk every scrape:
    # /a (40 % used) comes first and is "?", /b (50 %) is "?#2", scrape after scrape.
    for attempt in range(2):
        used = _values(tmp_path / f"scrape{attempt}", colliding_sample())
        assert used["?"] < used["?#2"]
    inodes = [dict(labels)["subject"] for name, labels in scraped if name == "rgt_alert" and ("alert", "disk.inodes") in labels]  # fmt: skip
    assert sorted(inodes) == [cut, cut + "#2"]


def _values(tmp_path: Path, data: dict) -> dict[str, float]:
    """Bytes used by mount label, read from the exposition."""
    metrics = watched(tmp_path, {"box0": data})
    text = generate_latest(metrics.registry).decode()
    return {
        s.labels["mount"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "rgt_disk_used_bytes"
    }


def test_every_label_value_is_printable(tmp_path: Path) -> None:
    nasty = "x\x1b]52;c;cm0gLXJmIH4=\x1b\\\x1b[2J\x07\u009b31m\x00"
    data = agent_sample(
        "box0",
        gpus=[
            gpu(0, 97, 1305, 60, 90, name=nasty, uuid=nasty, throttle_reasons=[nasty]),
            gpu(0, 97, 1305, 60, 90, name=nasty),
        ],  # fmt: skip
        disks=[disk("/", nasty, 40, 96), disk("/w", nasty + "2", 40, 96)],
    )
    scraped = exposition(watched(tmp_path, {"box0": data}))
    for _name, labels in scraped:
        for _key, value in labels:
            assert not any(unicodedata.category(ch) == "Cc" for ch in value), value
    assert not [s for s, n in Counter(scraped).items() if n > 1]
