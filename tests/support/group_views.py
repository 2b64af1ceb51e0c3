"""Group views built from records as the boxes write them (through the real parsers and
``group_view``), for tests of what is told of a group's job."""

from __future__ import annotations

from dataclasses import replace

from rgt_tui.domain.group_run import RankView, group_view
from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_state,
    parse_cells_tsv,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import QueueView, derive_view


def _rank(rank: int, box: str, fit_state: str, runner_tail: str) -> RankView:
    deployed = parse_cells_tsv(cells_tsv_line(0, "fit", "run fit") + cells_tsv_line(1, "b", "b"))
    launches = parse_runner_state("launch 100 boot tmux 0 /r/run_queue.sh 42\n" + runner_tail)
    view = derive_view(box, deployed, launches, {"fit": parse_cell_state(fit_state)},
                       boot_id="boot", now=200, runner_alive=False)  # fmt: skip
    return RankView(rank, box, replace(view, group_job=True))


def stopped_group_view() -> QueueView:
    """Group pair's view once rank 1 (b2) failed cell fit and rgt-tui's watch killed
    rank 0's (b1): its runner stopped after it."""
    rank0 = _rank(0, "b1", "start 110 boot 7\nkill 150 group stop\nend 152 143\n",
                  "stop 150 kill\nstopped 153 1\ndone 153 0 1\n")  # fmt: skip
    rank1 = _rank(1, "b2", "start 110 boot 8\nend 111 1\n", "done 112 0 1\n")
    return group_view("pair", [rank0, rank1])
