"""SLURM2: a runtime (TUI, ``watch``) that sees a host's timed checkpoint writes keeps
their median beside the fleet's journal, and the ``signal-lead`` check reads it back."""

from __future__ import annotations

import json
from pathlib import Path

from support.samples import FROZEN, agent_sample, make_update

from rgt_tui.domain.config import Fleet, SlurmConfig
from rgt_tui.domain.slurm_lead import signal_lead_check
from rgt_tui.paths import journal_dir
from rgt_tui.services.ckpt_record import MAX_AGE_S, ckpt_dir, observed_write
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.runtime.runtime import FleetRuntime

FLEET = """\
[[hosts]]
name = "box1"
ssh = "root@10.0.0.5:40022"
"""
CKPT = {"name": "ckpt/step_40.pt", "mtime": FROZEN - 60, "size": 10,
        "writes": [[FROZEN - 900, 80.0, 10], [FROZEN - 600, 95.0, 10], [FROZEN - 60, 99.0, 10]]}  # fmt: skip


def fleet_in(folder: Path) -> Fleet:
    (folder / "hosts.toml").write_text(FLEET)
    return load_fleet(folder / "hosts.toml")


def runtime(fleet: Fleet) -> FleetRuntime:
    return FleetRuntime(
        fleet, FleetConnections(fleet.hosts), monitors={}, start_added=False,
        clock=lambda: FROZEN, sample_allocations=False,
    )  # fmt: skip


def test_a_sample_with_timed_writes_is_recorded_and_the_check_reads_it(tmp_path: Path):
    fleet = fleet_in(tmp_path)
    rt = runtime(fleet)
    rt.apply(make_update("box1", agent_sample("box1", t=FROZEN, ckpt=CKPT)))
    path = journal_dir(fleet.path) / "ckpt" / "box1.json"
    assert ckpt_dir(fleet) == path.parent
    assert json.loads(path.read_text()) == {"write_s": 95.0, "at": FROZEN}

    seen = observed_write(fleet, "box1", now=FROZEN + 3600)
    assert seen is not None and seen.write_s == 95.0
    check = signal_lead_check("box1", SlurmConfig(signal_lead_s=150), seen)
    assert not check.ok and "observed" in check.detail and "= 155 s" in check.detail
    # A week later the record says nothing about today's run: the configured 60 s stands.
    assert observed_write(fleet, "box1", now=FROZEN + MAX_AGE_S + 1) is None


def test_a_sample_without_timed_writes_records_nothing(tmp_path: Path):
    fleet = fleet_in(tmp_path)
    rt = runtime(fleet)
    rt.apply(make_update("box1", agent_sample("box1", t=FROZEN)))
    assert not (journal_dir(fleet.path) / "ckpt").exists()
    assert observed_write(fleet, "box1", now=FROZEN) is None


def test_a_damaged_record_is_left_out(tmp_path: Path):
    fleet = fleet_in(tmp_path)
    folder = journal_dir(fleet.path) / "ckpt"
    folder.mkdir(parents=True)
    for text in ("{not json", '{"write_s": "95", "at": 1}', "[1, 2]", '{"write_s": -1, "at": 1}'):
        (folder / "box1.json").write_text(text)
        assert observed_write(fleet, "box1", now=FROZEN) is None, text
