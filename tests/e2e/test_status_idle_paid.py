"""`rgt-tui status --json` says what one sample can of idle paid time (issue 28).

The real console script samples this machine through the real agent, whose nvidia-smi
is a stand-in replaying a recorded H100 (support.gpu_sequence): idle (0 %) or under load
(100 %). One sample measures no interval, so ``idle_paid_s`` is 0.0 on a billed box and
``idle_now`` says whether the sample is idle; both are null on a box that is not billed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import arun, cli_env
from support.gpu_sequence import replay_script

FLEET = """\
[[hosts]]
name = "billed"
ssh = "local"
cost_per_hour = 2.5

[[hosts]]
name = "free"
ssh = "local"
"""


@pytest.mark.parametrize(("state", "idle_now"), [("idle", True), ("load", False)])
async def test_status_json_reports_idle_paid_time(
    tmp_path: Path, state: str, idle_now: bool
) -> None:
    smi = replay_script(tmp_path / "smi", [state], lists=[False])
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(FLEET)
    path = f"{smi.parent}:{cli_env()['PATH']}"  # the stand-in first, as a box's own would be
    out = await arun("status", "--hosts", str(hosts), "--json", env={"PATH": path})
    assert out.returncode == 0, out.stderr
    by_name = {h["name"]: h for h in json.loads(out.stdout)}
    billed, free = by_name["billed"], by_name["free"]
    assert billed["gpu_source"] == "nvidia-smi" and billed["gpus"], billed
    assert billed["idle_now"] is idle_now
    assert billed["idle_paid_s"] == 0.0  # one sample: no interval measured yet
    assert free["idle_now"] is None and free["idle_paid_s"] is None  # not billed


async def test_status_says_what_a_billed_box_has_cost_as_the_pane_does(tmp_path: Path) -> None:
    """`status` is the panes' scriptable twin for money too: the rate and the spend, from
    started_at (else from when rgt-tui first saw the box: the journal's)."""
    import time

    smi = replay_script(tmp_path / "smi", ["idle"], lists=[False])
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 7200))
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        FLEET.replace("cost_per_hour = 2.5", f"cost_per_hour = 2.5\nstarted_at = {started}")
        + '\n[[hosts]]\nname = "seen"\nssh = "local"\ncost_per_hour = 1.0\n'
    )
    env = {"PATH": f"{smi.parent}:{cli_env()['PATH']}", "XDG_STATE_HOME": str(tmp_path / "state")}
    out = await arun("status", "--hosts", str(hosts), "--json", env=env)
    assert out.returncode == 0, out.stderr
    by_name = {h["name"]: h for h in json.loads(out.stdout)}
    billed, free, seen = by_name["billed"], by_name["free"], by_name["seen"]
    assert billed["cost_per_hour"] == 2.5 and billed["cost_from"] == "started_at"
    assert 4.99 <= billed["cost_so_far"] <= 5.2, billed["cost_so_far"]  # two hours at $2.50
    assert (
        free["cost_per_hour"] is None and free["cost_so_far"] is None and free["cost_from"] is None
    )
    assert seen["cost_from"] == "first_seen" and 0 <= seen["cost_so_far"] < 0.01  # seen just now

    table = await arun("status", "--hosts", str(hosts), env=env)
    assert table.returncode == 0, table.stderr
    assert "$2.50/h · $5.0" in table.stdout and " so far" in table.stdout, table.stdout
    assert "$1.00/h · $0.00 since first seen" in table.stdout, table.stdout
