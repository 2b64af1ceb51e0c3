"""A GPU whose utilisation becomes unknown leaves a gap in its chart, not its last bars
drawn again: a chart that kept old 100 % bars read as live while the GPU had stopped
answering (a user's hour). A GPU never read has no chart, as before."""

from __future__ import annotations

import math
from dataclasses import replace

from support.samples import agent_sample

from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.widgets.spark import spark_rows


def _snap(seq: int, util: float | None):  # type: ignore[no-untyped-def]
    snap = snapshot_from_agent("box1", agent_sample("box1"))
    gpus = tuple(replace(g, util_pct=util) for g in snap.gpus)
    return replace(snap, t=1000.0 + seq, seq=seq, gpus=gpus)


def test_an_unknown_utilisation_is_a_gap_in_the_series_and_a_dotted_column() -> None:
    history = HostHistory()
    for seq, util in enumerate([100.0, 100.0, None, None, 50.0]):
        history.add(_snap(seq, util))
    series = list(history.gpu_util)
    assert series[:2] == [1.0, 1.0] and series[4] == 0.5
    assert math.isnan(series[2]) and math.isnan(series[3])
    (index, per_gpu), *_ = history.per_gpu_util.items()
    assert math.isnan(per_gpu[2]) and len(per_gpu) == len(history.times)
    (row,) = spark_rows(series, 5, style="$primary")
    assert row.plain == "██··▄"  # a gap is a dot on the baseline, never an idle blank
    top, bottom = spark_rows(series, 5, height=2, style="$primary")
    assert bottom.plain == "██··█" and top.plain == "██   "


def test_a_gpu_never_read_has_no_chart() -> None:
    history = HostHistory()
    for seq in range(3):
        history.add(_snap(seq, None))
    assert not history.gpu_util and not history.per_gpu_util
