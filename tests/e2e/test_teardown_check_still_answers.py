"""`rgt-tui teardown HOST --check` on a box recorded as torn down that still answers
(GEN1): the check has just reached the box, so it says so as loudly as `status` does —
never only "already recorded" and "ready" (a user's second hour, s41: `status` said STILL
ANSWERS while this check read every line ticked)."""

from __future__ import annotations

from support.fleet_files import set_host_key
from support.teardown_ui import results_on_box
from test_teardown_e2e import Cli


async def test_the_check_says_a_torn_down_box_still_answers(loopback_fleet, tmp_path):
    results_on_box(loopback_fleet.box("box1").root)
    cli = Cli(loopback_fleet.hosts_file, tmp_path / "state", tmp_path)
    assert (await cli("pull", "box1")).returncode == 0
    assert (await cli("verify", "box1")).returncode == 0
    before = await cli("teardown", "box1", "--check")
    assert "STILL ANSWERS" not in before.stdout, before.stdout  # not torn down yet

    # A teardown command that destroys nothing: the provider's API said yes, the box goes on.
    set_host_key(loopback_fleet.hosts_file, "teardown", "true")
    torn = await cli("teardown", "box1", "--confirm", "box1")
    assert torn.returncode == 0, torn.stdout + torn.stderr
    check = await cli("teardown", "box1", "--check")  # the loopback box answers on
    out = check.stdout
    assert "recorded as torn down (" in out and "but the box STILL ANSWERS" in out, out
    assert "already recorded as torn down" not in out, out
    assert "ready (again: the box still answers)" in out, out
    status = await cli("status", "box1")
    assert "STILL ANSWERS" in status.stdout, status.stdout  # the two agree
