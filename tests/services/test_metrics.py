"""FleetMetrics' exposition: names, labels and values from real parsed samples and real
health rules; alerts, throttle reasons and a lost host's figures coming and going;
box text made safe as label values; the HTTP server; the shipped rules and the
exposition accepted by promtool."""

from __future__ import annotations

import asyncio
import errno
import socket
import subprocess
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from support import GIB
from support.samples import (
    FROZEN,
    agent_sample,
    disk,
    gpu,
    healthy_update,
    inode_update,
    lost_update,
    make_update,
    write_fleet,
)

from rgt_tui.domain.queue_state import CellView, QueueView
from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.services.watch.events import HostState, WatchEvent
from rgt_tui.services.watch.sinks.metrics import FleetMetrics, parse_listen_address

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docs" / "prometheus" / "rgt-tui.rules.yml"
Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def state_of(update: HostUpdate, **fields: object) -> HostState:
    """The HostState the watch would hand its sinks for this monitor update."""
    conn = update.connection
    base = HostState(
        snapshot=update.snapshot,
        alerts=update.alerts,
        connection=conn.status,
        lost_since=None if conn.status == "connected" else conn.since,
        queue=None,
        cost_per_hour=None,
        cost_so_far=None,
        now=FROZEN,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def scrape(metrics: FleetMetrics) -> Series:
    """Every sample of one scrape, parsed back by prometheus_client's own parser."""
    text = generate_latest(metrics.registry).decode()
    out: Series = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(series: Series, metric: str, **labels: str) -> float | None:
    return series.get((metric, frozenset(labels.items())))


def names(series: Series, host: str) -> set[str]:
    return {name for name, labels in series if ("host", host) in labels}


@pytest.fixture
def fleet(tmp_path: Path):  # type: ignore[no-untyped-def]
    return write_fleet(tmp_path)


def host(fleet, name: str):  # type: ignore[no-untyped-def]
    return next(h for h in fleet.hosts if h.name == name)


def test_a_connected_hosts_figures_per_host_and_gpu(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    queue = QueueView(
        host="a100-train",
        state="running",
        cells=tuple(
            CellView(i, f"c{i}", status)
            for i, status in enumerate(["done", "done", "running", "pending", "failed"])
        ),
        launch=None,
        boot_id="boot-a100-train",
        now=int(FROZEN),
        resume_index=None,
    )
    state = state_of(healthy_update(), queue=queue, cost_per_hour=1.89, cost_so_far=3.78)
    metrics.on_host(host(fleet, "a100-train"), state)
    s = scrape(metrics)
    h, g0, g1 = {"host": "a100-train"}, {"host": "a100-train", "gpu": "0"}, {"host": "a100-train", "gpu": "1"}  # fmt: skip

    assert value(s, "rgt_host_info", host="a100-train", profile="vastai") == 1
    assert value(s, "rgt_host_info", host="spot-4090", profile="runpod") == 1  # no state yet
    assert value(s, "rgt_connection_state", **h, state="connected") == 1
    assert value(s, "rgt_connection_state", **h, state="lost") == 0
    assert value(s, "rgt_connection_state", **h, state="ended") == 0  # as docs/metrics.md lists
    assert value(s, "rgt_gpu_utilization_ratio", **g0) == pytest.approx(0.97)
    assert value(s, "rgt_gpu_utilization_ratio", **g1) == pytest.approx(0.95)
    assert value(s, "rgt_gpu_sm_clock_ratio", **g0) == pytest.approx(1305 / 1410)
    assert value(s, "rgt_gpu_sm_clock_hertz", **g0) == 1305e6
    assert value(s, "rgt_gpu_memory_used_bytes", **g0) == int(61.5 * GIB)
    assert value(s, "rgt_gpu_memory_capacity_bytes", **g0) == 80 * GIB
    assert value(s, "rgt_gpu_power_watts", **g1) == 251
    assert value(s, "rgt_gpu_power_limit_watts", **g1) == 400
    assert value(s, "rgt_gpu_temperature_celsius", **g1) == 68
    assert value(s, "rgt_gpu_throttle_reasons", **g0) == 0
    info = {**g0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-5f1c-0"}
    assert value(s, "rgt_gpu_info", **info) == 1
    ws = {**h, "mount": "/workspace"}
    assert value(s, "rgt_disk_used_bytes", **ws) == int(500 * GIB * 55 / 100)
    assert value(s, "rgt_disk_capacity_bytes", **ws) == 500 * GIB
    assert value(s, "rgt_disk_inodes_used", **ws) == int(32_768_000 * 20 / 100)
    assert value(s, "rgt_disk_inodes_capacity", **ws) == 32_768_000
    assert value(s, "rgt_cgroup_memory_used_bytes", **h) == 40 * GIB
    assert value(s, "rgt_cgroup_memory_limit_bytes", **h) == 64 * GIB
    assert value(s, "rgt_cgroup_oom_kills_total", **h) == 0
    assert value(s, "rgt_queue_cells", **h, state="done") == 2
    assert value(s, "rgt_queue_cells", **h, state="running") == 1
    assert value(s, "rgt_queue_cells", **h, state="interrupted") == 0  # every status shown
    assert value(s, "rgt_queue_state", **h, state="running") == 1
    assert value(s, "rgt_cost_per_hour", **h) == 1.89
    assert value(s, "rgt_cost_so_far", **h) == 3.78
    assert value(s, "rgt_sample_timestamp_seconds", **h) == FROZEN
    assert not [k for k in s if k[0] == "rgt_alert"]  # a healthy host has none


def test_an_alert_is_a_series_while_it_is_open_and_gone_once_it_clears(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    box = host(fleet, "h100-eval")
    metrics.on_host(box, state_of(inode_update()))
    labels = {"host": "h100-eval", "alert": "disk.inodes", "severity": "critical", "gotcha": "U7", "subject": "/workspace"}  # fmt: skip
    assert value(scrape(metrics), "rgt_alert", **labels) == 1

    fixed = agent_sample("h100-eval", disks=[disk("/", "/", 31, 9), disk("/workspace", "/workspace", 41, 30)])  # fmt: skip
    metrics.on_host(box, state_of(make_update("h100-eval", fixed)))
    assert not [k for k in scrape(metrics) if k[0] == "rgt_alert"]


def test_throttle_reasons_come_and_go_and_a_gone_gpu_leaves_no_series(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    box = host(fleet, "a100-train")
    hot = gpu(1, 99, 900, 70, 88, throttle_reasons=["hw_slowdown", "sw_thermal_slowdown"])
    data = agent_sample("a100-train", gpus=[gpu(0, 97, 1305, 61.5, 66), hot])
    metrics.on_host(box, state_of(make_update("a100-train", data)))
    s = scrape(metrics)
    g1 = {"host": "a100-train", "gpu": "1"}
    assert value(s, "rgt_gpu_throttle_reasons", **g1) == 2
    assert value(s, "rgt_gpu_throttle", **g1, reason="hw_slowdown") == 1
    assert value(s, "rgt_gpu_throttle", **g1, reason="sw_thermal_slowdown") == 1

    one = agent_sample("a100-train", gpus=[gpu(0, 97, 1305, 61.5, 66)])
    metrics.on_host(box, state_of(make_update("a100-train", one)))
    s = scrape(metrics)
    assert not [k for k in s if k[0] == "rgt_gpu_throttle"]
    assert value(s, "rgt_gpu_utilization_ratio", **g1) is None


def test_a_lost_host_keeps_its_alerts_and_cost_but_not_its_last_figures(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    update = lost_update()
    metrics.on_host(host(fleet, "spot-4090"), state_of(update, cost_per_hour=0.34))
    s = scrape(metrics)
    h = {"host": "spot-4090"}
    assert value(s, "rgt_connection_state", **h, state="lost") == 1
    assert value(s, "rgt_connection_state", **h, state="connected") == 0
    assert value(s, "rgt_connection_lost_since_timestamp_seconds", **h) == FROZEN - 600
    assert value(s, "rgt_sample_timestamp_seconds", **h) == FROZEN - 660
    assert value(s, "rgt_cost_per_hour", **h) == 0.34
    assert names(s, "spot-4090") & {"rgt_gpu_utilization_ratio", "rgt_disk_used_bytes"} == set()
    alerts = {dict(labels)["alert"] for name, labels in s if name == "rgt_alert"}
    assert alerts == {a.id for a in update.alerts} and alerts  # what the rules said


def test_box_text_becomes_a_safe_bounded_label(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    evil_name = 'H100"} 1\nrgt_cost_per_hour{host="x"} 99\x1b[2J' + "A" * 500
    evil_mount = "/data\n/\\x"
    data = agent_sample(
        "a100-train",
        gpus=[gpu(0, 50, 1000, 10, 50, name=evil_name, throttle_reasons=["a\nb"])],
        disks=[disk("/data", evil_mount, 10, 10)],
    )
    metrics.on_host(host(fleet, "a100-train"), state_of(make_update("a100-train", data)))
    s = scrape(metrics)  # the parser would choke on, or be fooled by, an injected line
    assert value(s, "rgt_cost_per_hour", host="x") is None
    [info] = [dict(labels) for name, labels in s if name == "rgt_gpu_info"]
    assert "\n" not in info["name"] and "\x1b" not in info["name"]
    assert info["name"].startswith('H100"} 1\\n') and len(info["name"]) <= 120
    [mount] = [dict(labels)["mount"] for name, labels in s if name == "rgt_disk_used_bytes"]
    assert mount == "/data\\n/\\x"
    [reason] = [dict(labels)["reason"] for name, labels in s if name == "rgt_gpu_throttle"]
    assert reason == "a\\nb"


def test_a_bidi_override_in_box_text_is_an_escape_in_the_label(fleet) -> None:  # type: ignore[no-untyped-def]
    """U+202E would turn the label around in Grafana, U+200B hide in it (ux-b #12)."""
    metrics = FleetMetrics(fleet)
    data = agent_sample(
        "a100-train", gpus=[gpu(1, 50, 1000, 10, 50, name="H100 \u202e0803 PCIe\u200b")]
    )
    metrics.on_host(host(fleet, "a100-train"), state_of(make_update("a100-train", data)))
    [info] = [dict(labels) for name, labels in scrape(metrics) if name == "rgt_gpu_info"]
    assert info["name"] == "H100 \\u202e0803 PCIe\\u200b"


def test_events_are_counted_by_kind(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    for key in ("a", "b"):
        metrics.on_event(WatchEvent("alert", "a100-train", key, "t", "b", "critical"))
    metrics.on_event(WatchEvent("queue_done", "a100-train", "q", "t", "b"))
    s = scrape(metrics)
    assert value(s, "rgt_watch_events_total", kind="alert") == 2
    assert value(s, "rgt_watch_events_total", kind="queue_done") == 1
    assert value(s, "rgt_watch_events_total", kind="reboot") == 0


def test_an_entry_watch_started_without_is_a_series_until_the_file_is_applied(fleet) -> None:  # type: ignore[no-untyped-def]
    """No other series names a left-out entry, so RgtHostLost could not fire for it (hour
    s34 CLI #2): its ``left_out`` event makes one, gone once the file is applied whole."""
    metrics = FleetMetrics(fleet)
    assert value(scrape(metrics), "rgt_fleet_entry_left_out", host="box7") is None
    metrics.on_event(WatchEvent("left_out", "box7", "l", "t", "b", "warning"))
    s = scrape(metrics)
    assert value(s, "rgt_fleet_entry_left_out", host="box7") == 1
    assert value(s, "rgt_watch_events_total", kind="left_out") == 1
    metrics.on_fleet(fleet)
    assert value(scrape(metrics), "rgt_fleet_entry_left_out", host="box7") is None


async def test_serve_answers_on_the_port_and_close_frees_it(fleet) -> None:  # type: ignore[no-untyped-def]
    metrics = FleetMetrics(fleet)
    metrics.on_host(host(fleet, "a100-train"), state_of(healthy_update()))
    server = await metrics.serve("127.0.0.1", 0)
    try:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}/metrics"

        def get() -> str:  # in a thread: the server answers on this test's event loop
            with urllib.request.urlopen(server.url, timeout=10) as response:
                return response.read().decode()

        body = await asyncio.to_thread(get)
        assert 'rgt_gpu_utilization_ratio{gpu="0",host="a100-train"} 0.97' in body
        assert "process_cpu_seconds_total" in body  # the watch process's own figures
        with pytest.raises(OSError) as taken:
            await metrics.serve("127.0.0.1", server.port)
        assert taken.value.errno == errno.EADDRINUSE
    finally:
        server.close()
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", server.port))


def test_parse_listen_address() -> None:
    assert parse_listen_address("127.0.0.1:9101") == ("127.0.0.1", 9101)
    assert parse_listen_address("[::1]:9101") == ("::1", 9101)
    assert parse_listen_address(":9101") == ("0.0.0.0", 9101)
    for bad in ("9101", "host:", "host:99999", "host:x"):
        with pytest.raises(ValueError, match="ADDR:PORT"):
            parse_listen_address(bad)


def test_a_hosts_periodic_pulls_are_series_failing_and_last_through(fleet) -> None:  # type: ignore[no-untyped-def]
    """An overnight hour (s39 watch #5): /metrics said nothing per host of pulls, so a full
    local disk all night read green. Failing while they fail, and when one last came
    through; a host taken out of the fleet file takes its series with it."""
    metrics = FleetMetrics(fleet)
    assert value(scrape(metrics), "rgt_pull_failing", host="a100-train") is None
    metrics.on_pull("a100-train", True, 1000.0)
    metrics.on_pull("a100-train", False, 1060.0)
    s = scrape(metrics)
    assert value(s, "rgt_pull_failing", host="a100-train") == 1
    assert value(s, "rgt_pull_last_success_timestamp_seconds", host="a100-train") == 1000.0
    metrics.on_pull("a100-train", True, 1120.0)
    s = scrape(metrics)
    assert value(s, "rgt_pull_failing", host="a100-train") == 0
    assert value(s, "rgt_pull_last_success_timestamp_seconds", host="a100-train") == 1120.0
    metrics.on_fleet(replace(fleet, hosts=tuple(h for h in fleet.hosts if h.name != "a100-train")))
    assert value(scrape(metrics), "rgt_pull_failing", host="a100-train") is None
    # A pull that was running when the fleet file dropped the host ends after it: it
    # must not bring the series back (the s40 audit: it fired RgtPullFailing for good).
    metrics.on_pull("a100-train", False, 1180.0)
    assert value(scrape(metrics), "rgt_pull_failing", host="a100-train") is None


def test_promtool_accepts_the_rules_and_lints_the_exposition_clean(fleet) -> None:  # type: ignore[no-untyped-def]
    rules = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)  # fmt: skip
    assert rules.returncode == 0, rules.stdout + rules.stderr
    assert "SUCCESS: 8 rules found" in rules.stdout

    metrics = FleetMetrics(fleet)
    q = QueueView("a100-train", "running", (CellView(0, "c", "done"),), None, "b", 0, None)
    metrics.on_host(host(fleet, "a100-train"), state_of(healthy_update(), queue=q, cost_per_hour=1.0, cost_so_far=2.0))  # fmt: skip
    metrics.on_host(host(fleet, "h100-eval"), state_of(inode_update()))
    metrics.on_event(WatchEvent("alert", "h100-eval", "k", "t", "b"))
    metrics.on_event(WatchEvent("left_out", "box7", "l", "t", "b", "warning"))
    metrics.on_pull("a100-train", True, 1767268800.0)
    metrics.on_pull("h100-eval", False, 1767268800.0)
    text = generate_latest(metrics.registry)
    started = time.perf_counter()
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True)
    assert lint.returncode == 0, (lint.stdout + lint.stderr).decode()
    assert time.perf_counter() - started < 30


def test_each_help_text_says_what_docs_metrics_md_says_it_counts(fleet) -> None:  # type: ignore[no-untyped-def]
    """s37 money hour #9: rgt_cost_so_far's HELP said "since first seen" while it counts
    from started_at when that is set (the docs and every other figure do)."""
    metrics = FleetMetrics(fleet)
    state = state_of(healthy_update(), cost_per_hour=1.0, cost_so_far=2.0)
    metrics.on_host(host(fleet, "a100-train"), state)
    helps = {
        f.name: f.documentation
        for f in text_string_to_metric_families(generate_latest(metrics.registry).decode())
    }
    assert "since started_at, else since first seen" in helps["rgt_cost_so_far"]


def test_a_torn_down_box_gone_bills_nothing_in_the_cost_series(fleet) -> None:  # type: ignore[no-untyped-def]
    """h491 #6: a box torn down while watch ran kept rgt_cost_per_hour at its rate, so
    sum(rgt_cost_per_hour) counted it; gone, it reads 0 and its cost stops growing."""
    from rgt_tui.services.runtime.monitors import as_torn_down
    from rgt_tui.services.watch.state import host_state

    metrics = FleetMetrics(fleet)
    box = replace(host(fleet, "spot-4090"), cost_per_hour=0.34)
    gone = as_torn_down(lost_update())
    metrics.on_host(box, host_state(box, gone, None, FROZEN))
    first = scrape(metrics)
    h = {"host": "spot-4090"}
    assert value(first, "rgt_connection_state", **h, state="ended") == 1
    assert value(first, "rgt_connection_state", **h, state="lost") == 0
    assert value(first, "rgt_cost_per_hour", **h) == 0
    metrics.on_host(box, host_state(box, gone, None, FROZEN + 3600))
    so_far = value(first, "rgt_cost_so_far", **h)
    assert so_far is not None and so_far > 0
    assert value(scrape(metrics), "rgt_cost_so_far", **h) == so_far
