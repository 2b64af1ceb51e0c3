"""A real Prometheus server scrapes a watched loopback fleet.

Two loopback boxes (asyncssh servers running the real agent, with the replayed H100 as
their GPU) are watched by real HostMonitors; every update goes to FleetMetrics as the
watch hands it over, and FleetMetrics serves /metrics. Debian's ``prometheus`` scrapes
it every second with the shipped alerting rules loaded, and queries through its HTTP
API must return what the hosts' states said: GPU utilization, disk size, connection
state, cost. The rules must load and evaluate without error on the real series.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from support.machine import free_port
from support.waiting import wait_for

from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.telemetry import HostMonitor, HostUpdate
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.sinks.metrics import FleetMetrics
from rgt_tui.services.watch.state import host_state
from rgt_tui.transport import transport_for

RULES = Path(__file__).resolve().parents[2] / "docs" / "prometheus" / "rgt-tui.rules.yml"
PROMETHEUS = shutil.which("prometheus")


def api(port: int, path: str, **params: str) -> Any:
    """One Prometheus HTTP API call's ``data`` (None while the server is not up yet)."""
    url = f"http://127.0.0.1:{port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
    except OSError:
        return None
    assert body["status"] == "success", body
    return body["data"]


def start_prometheus(tmp_path: Path, target: str, port: int) -> subprocess.Popen[bytes]:
    """Prometheus scraping ``target`` every second, with the shipped rules."""
    shutil.copy(RULES, tmp_path / "rgt-tui.rules.yml")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "rule_files: [rgt-tui.rules.yml]\n"
        "scrape_configs:\n  - job_name: rgt-tui\n"
        f"    static_configs:\n      - targets: [{json.dumps(target)}]\n"
    )
    log = (tmp_path / "prometheus.log").open("wb")
    return subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--web.console.templates={tmp_path}",
            f"--web.console.libraries={tmp_path}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )


async def test_prometheus_scrapes_a_watched_loopback_fleet(tmp_path: Path) -> None:
    assert PROMETHEUS, "prometheus is required on PATH: scripts/install_system_deps.sh"
    costs = (("runpod", 2.49), ("vastai", 1.89))
    async with LoopbackFleet(2, tmp_path / "fleet", gpus=True, costs=costs) as loopback:
        fleet = load_fleet(loopback.hosts_file)
        metrics = FleetMetrics(fleet)
        seen: dict[str, list[HostState]] = {h.name: [] for h in fleet.hosts}

        def sink(host, update: HostUpdate) -> None:  # type: ignore[no-untyped-def]
            # What the watch hands its sinks for a monitor update.
            state = host_state(host, update, None, time.time())
            seen[host.name].append(state)
            metrics.on_host(host, state)

        monitors = [
            HostMonitor(h, transport_for(h), interval=0.5, thresholds=fleet.thresholds)
            for h in fleet.hosts
        ]
        tasks = [
            asyncio.create_task(m.run(lambda u, h=m.host: sink(h, u)))  # type: ignore[misc]
            for m in monitors
        ]
        server = await metrics.serve("127.0.0.1", 0)
        port = free_port()
        prometheus = start_prometheus(tmp_path, f"127.0.0.1:{server.port}", port)
        try:
            await wait_for(
                lambda: all(any(s.snapshot and s.snapshot.gpus for s in v) for v in seen.values()),
                60,
                "a GPU sample from every box",
            )

            async def query(q: str) -> list[dict[str, Any]] | None:
                if prometheus.poll() is not None:
                    raise AssertionError(f"prometheus exited: {(tmp_path / 'prometheus.log').read_text()[-3000:]}")  # fmt: skip
                data = await asyncio.to_thread(api, port, "query", query=q)
                return (data or {}).get("result") or None

            util = await wait_for(
                lambda: query('rgt_gpu_utilization_ratio{host="box1",gpu="0"}'),
                90,
                "box1's GPU utilization through Prometheus",
            )
            said = {g.util_pct / 100 for s in seen["box1"] if s.snapshot for g in s.snapshot.gpus}
            assert float(util[0]["value"][1]) in said

            last = seen["box2"][-1].snapshot
            assert last is not None and last.disks
            mount = last.disks[0]
            size = await wait_for(
                lambda: query(f'rgt_disk_capacity_bytes{{host="box2",mount="{mount.mount}"}}'),
                30,
                "box2's disk size",
            )
            assert float(size[0]["value"][1]) == mount.bytes_total

            connected = await query('rgt_connection_state{host="box2",state="connected"}')
            assert connected and connected[0]["value"][1] == "1"
            cost = await query("sum(rgt_cost_per_hour)")
            assert cost and float(cost[0]["value"][1]) == pytest.approx(2.49 + 1.89)
            so_far = await query('rgt_cost_so_far{host="box1"}')
            billed = {s.cost_so_far for s in seen["box1"]}
            assert so_far and float(so_far[0]["value"][1]) in billed

            async def rules_evaluated() -> list[dict[str, Any]] | None:
                data = await asyncio.to_thread(api, port, "rules")
                rules = [r for g in (data or {}).get("groups", []) for r in g["rules"]]
                done = rules and all(r["lastEvaluation"] > "2000" for r in rules)
                return rules if done else None

            rules = await wait_for(rules_evaluated, 30, "the shipped rules evaluated")
            assert len(rules) == 8
            assert [r["name"] for r in rules if r["health"] != "ok"] == [], rules
        finally:
            prometheus.terminate()
            try:
                prometheus.wait(20)
            except subprocess.TimeoutExpired:
                prometheus.kill()
                prometheus.wait()
            server.close()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for m in monitors:
                await m.transport.close()
