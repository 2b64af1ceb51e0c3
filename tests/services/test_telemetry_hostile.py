"""What a hostile box's telemetry does to a host's monitor (ux-i 1): nothing it sends
ends the monitor.

The box is a loopback SSH box whose ``python3`` (first on its PATH) is the test's agent
stand-in: it reads the agent source from stdin, then prints the file ``lines`` every
0.2 s, whatever the test last put there (a sample with ``Infinity`` in it, a 2 MiB line,
nothing at all)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support.pulls import host_of
from support.samples import agent_sample
from support.telemetry import Watch

from rgt_tui.services.telemetry import HostMonitor
from rgt_tui.transport import transport_for


class Lines:
    """What the stand-in prints every 0.2 s (replaced whole: never read half-written)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def put(self, text: str) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.path)

    def sample(self, **overrides: object) -> None:
        self.put(json.dumps(agent_sample("box1", t=time.time(), **overrides)) + "\n")


@pytest.fixture
async def hostile(make_loopback_fleet, tmp_path):  # type: ignore[no-untyped-def]
    """(fleet, lines): box1's python3 prints ``lines`` every 0.2 s."""
    fleet = await make_loopback_fleet(1)
    bin_dir = tmp_path / "hostile-bin"
    bin_dir.mkdir()
    lines = Lines(tmp_path / "lines")
    lines.put("")
    script = bin_dir / "python3"
    script.write_text(
        f"#!/bin/sh\ncat > /dev/null\nwhile :; do cat '{lines.path}'; sleep 0.2; done\n"
    )
    script.chmod(0o755)
    fleet.box("box1").extra_path.append(bin_dir)
    return fleet, lines


async def test_infinity_and_nan_in_a_sample_are_refused_by_field_and_the_monitor_goes_on(
    hostile,
):  # type: ignore[no-untyped-def]
    fleet, lines = hostile
    good = json.dumps(agent_sample("box1", t=time.time()))
    lines.put(good.replace('"host_cpus": 128', '"host_cpus": Infinity').replace('"seq": 1', '"seq": NaN') + "\n")  # fmt: skip
    host = host_of(fleet)
    watch = Watch(HostMonitor(host, transport_for(host), interval=0.2))
    try:
        bad = await watch.until(lambda u: u.snapshot is not None, 30, "a sample")
        assert bad.connection.status == "connected" and bad.snapshot is not None
        assert bad.snapshot.host_cpus is None and bad.snapshot.seq == 0
        problems = bad.snapshot.problems
        assert "sample.host_cpus: expected a number, got Infinity" in problems, problems
        assert "sample.seq: expected a number, got NaN" in problems, problems
        # The monitor still runs: the box's next good sample arrives.
        lines.sample()
        back = await watch.until(
            lambda u: u.snapshot is not None and u.snapshot.host_cpus == 128, 30, "a good sample"
        )
        assert back.connection.status == "connected" and back.snapshot.problems == ()
    finally:
        await watch.stop()
