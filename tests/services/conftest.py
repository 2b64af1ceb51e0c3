"""Fixtures the service tests share (helpers live in ``tests/support``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fleet_files import set_host_key
from support.gate_box import Setup


@pytest.fixture
async def ready(make_loopback_fleet, tmp_path: Path) -> Setup:  # type: ignore[no-untyped-def]
    """box1 pulled and verified: its gate holds all but the typed name."""
    setup = Setup(await make_loopback_fleet(1), tmp_path)
    set_host_key(setup.loopback.hosts_file, "teardown", f"echo destroyed > {setup.marker}")
    await setup.pull_and_verify()
    report = await setup.check()
    assert report.ready_but_confirmation, report.conditions
    return setup
