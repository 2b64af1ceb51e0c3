"""`teardown GROUP` is refused (ux-h 4): a group's boxes each have their own gate, so
nothing is checked, acknowledged or recorded under the group's name. The command line
names each box's own teardown (exit 2) before it connects anywhere; the gate the TUI shows
for a group is one locked line naming the boxes, and a typed confirmation or a manual
teardown of the group is refused with nothing recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import rgt

from rgt_tui.domain.gate_fixes import fix
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.teardown import (
    GateLocked,
    check_gate,
    confirm_and_tear_down,
    record_manual_teardown,
)

FLEET = """\
[[hosts]]
name = "box1"
ssh = "root@127.0.0.1:9"
durable_dir = "~/persist"
cost_per_hour = 2.0

[[hosts]]
name = "box2"
ssh = "root@127.0.0.1:9"
cost_per_hour = 2.0

[[groups]]
name = "pair"
hosts = ["box1", "box2"]
run = "torchrun --nnodes {nnodes} --node-rank {node_rank} train.py {out}"
"""


def _fleet_file(tmp_path: Path) -> Path:
    path = tmp_path / "hosts.toml"
    path.write_text(FLEET)
    return path


def _env(tmp_path: Path) -> dict[str, str | None]:
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


@pytest.mark.parametrize("mode", [("--check",), ("--confirm", "pair"), ("--destroyed", "pair"), ()])
def test_the_command_line_refuses_a_group_naming_each_box(tmp_path: Path, mode) -> None:
    hosts = _fleet_file(tmp_path)
    done = rgt("teardown", "pair", *mode, "--hosts", hosts, env=_env(tmp_path), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    err = " ".join(done.stderr.split())
    assert "pair is a group of 2 boxes (box1, box2), not a box" in err
    assert "`rgt-tui teardown box1`; `rgt-tui teardown box2`" in err
    assert "nothing was checked" in err
    assert "recorded as torn down" not in done.stdout
    journal = Journal(journal_dir(hosts, _env(tmp_path)))
    assert journal.load("pair").torn_down_at is None and not journal.load("pair").events


async def test_the_gate_of_a_group_is_one_locked_line_and_nothing_is_recorded(
    tmp_path: Path,
) -> None:
    hosts = _fleet_file(tmp_path)
    fleet = load_fleet(hosts)
    pair = fleet.host("pair")
    journal = Journal(tmp_path / "journal")
    report = await check_gate(fleet, pair, None, journal)
    (line,) = report.conditions
    assert line.key == "members" and not line.ok and not report.ready_but_confirmation
    assert "pair is a group of 2 boxes (box1, box2)" in line.evidence
    assert "select box1 and check its gate here, then select box2" in line.evidence
    assert (
        fix(line, "pair", tui=False) == "run `rgt-tui teardown box1`; run `rgt-tui teardown box2`"
    )
    assert "box1, box2" in fix(line, "pair", tui=True)

    with pytest.raises(GateLocked) as locked:
        await confirm_and_tear_down(fleet, pair, journal, "pair", None)  # type: ignore[arg-type]
    assert "pair is a group of 2 boxes" in str(locked.value)
    with pytest.raises(ValueError, match="pair is a group"):
        record_manual_teardown(journal, pair, "pair", None)
    jh = journal.load("pair")
    assert jh.torn_down_at is None and not jh.events and jh.box is None
