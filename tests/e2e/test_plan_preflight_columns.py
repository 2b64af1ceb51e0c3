"""The launch plan's preflight table (``rgt-tui launch``, ``queue retry``) keeps its
columns for check names of ten characters or more (ux-h #16): a group's ``same-stack``
and ``rendezvous``, a Slurm host's ``signal-lead``."""

from __future__ import annotations

from rgt_tui.cli.launch import preflight_lines
from rgt_tui.domain.preflight import Check, PreflightReport
from rgt_tui.services.queue.launch import LaunchPlan


def test_every_mark_and_detail_starts_in_one_column() -> None:
    report = PreflightReport(
        "pair",
        (
            Check("gpu", True, "torch sees 8"),
            Check("same-stack", True, "every box: torch 2.7.0 (CUDA 12.8)"),
            Check("rendezvous", False, "rank 0 (box1) cannot listen", "set another master_port"),
            Check("signal-lead", True, "120 s"),
        ),
    )
    plan = LaunchPlan(
        host="pair", cells=(), start_index=0, detach="tmux", session="rgt-pair",
        box_queue_dir="~/.rgt/queue", workdir="~/work", preflight=report,
    )  # fmt: skip
    rows = preflight_lines(plan)[1:]
    words = ["ok", "ok", "FAILED", "", "ok"]
    marks = {row.index(word) for row, word in zip(rows, words, strict=True) if word}
    assert len(marks) == 1, rows
    details = [
        rows[0].index("torch sees"),
        rows[1].index("every box"),
        rows[2].index("rank 0"),
        rows[3].index("fix:"),
        rows[4].index("120 s"),
    ]
    assert len(set(details)) == 1, rows
