"""SLURM2: the ``signal-lead`` check sizes the lead from the larger of the configured
``checkpoint_write_s`` and the write time observed on the box, and says which."""

from __future__ import annotations

from rgt_tui.domain.at_risk import CheckpointsSeen
from rgt_tui.domain.config import SlurmConfig
from rgt_tui.domain.slurm_lead import ObservedWrite, median_write_s, signal_lead_check
from rgt_tui.domain.young_daly import CheckpointWrite

SLURM = SlurmConfig(signal_lead_s=150, checkpoint_write_s=60)  # 150 ≥ 60 + 60


def test_an_observed_write_longer_than_the_configured_one_refuses_the_lead():
    assert signal_lead_check("cluster", SLURM).ok
    short = signal_lead_check("cluster", SLURM, ObservedWrite(94.2, "14:02"))
    assert not short.ok
    assert "shorter than write 95 s observed 14:02 (checkpoint_write_s 60)" in short.detail
    assert "= 155 s" in short.detail
    assert "set signal_lead_s = 155 or more for cluster" in short.fix
    assert "make the checkpoint write faster" in short.fix


def test_the_detail_says_which_write_time_it_used():
    none = signal_lead_check("cluster", SLURM)
    assert "checkpoint_write_s 60 s (configured; none observed yet)" in none.detail
    quick = signal_lead_check("cluster", SLURM, ObservedWrite(12.0, "Nov 27 09:15"))
    assert quick.ok
    assert "(configured; observed 12 s at Nov 27 09:15 is shorter)" in quick.detail


def test_the_median_of_the_timed_writes():
    writes = (CheckpointWrite(10, 30.0), CheckpointWrite(20, None), CheckpointWrite(30, 90.0),
              CheckpointWrite(40, 95.0))  # fmt: skip
    assert median_write_s(CheckpointsSeen("c.pt", 40, 1, writes)) == 90.0
    assert median_write_s(CheckpointsSeen("c.pt", 40, 1, (CheckpointWrite(10),))) is None
    assert median_write_s(None) is None
