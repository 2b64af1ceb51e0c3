"""The GPU tab's process lines: one line says when the list was taken and, when it names
none for this GPU, that it is empty (a user's hour read "processes as listed 7s ago:"
over "processes: none listed" as two lists)."""

from __future__ import annotations

from support.samples import agent_sample

from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.screens.tabs.gpus import gpu_block


def test_an_empty_list_from_an_earlier_sample_is_one_line():
    snap = snapshot_from_agent("box1", agent_sample("box1"))
    gpu = snap.gpus[0]
    text = gpu_block(gpu, (), Thresholds(), 100, ago=7.0).plain
    assert "processes as listed 7s ago: none (containers often hide them)" in text, text
    assert text.count("processes") == 1
    now = gpu_block(gpu, (), Thresholds(), 100).plain  # listed in this very sample
    assert "processes: none (containers often hide them)" in now, now
    unpolled = gpu_block(gpu, None, Thresholds(), 100).plain
    assert "processes: not polled in this sample" in unpolled
