"""The TUI's preflight panel says why checks were not run, as ``rgt-tui preflight`` does:
a Slurm login node's report carries the scope's note (it runs no cell, so only disk,
durable and code are checked), and the panel's first line is that note."""

from __future__ import annotations

from rgt_tui.content.ready_text import preflight_lines
from rgt_tui.domain.preflight import Check, PreflightReport
from rgt_tui.domain.preflight_checks import LOGIN_NODE_CHECKS, PreflightScope


def test_a_login_nodes_report_shows_its_note_first() -> None:
    note = "a Slurm login node: disk, durable, code only (it runs no cell)"
    report = PreflightReport(
        "hpc", tuple(Check(name, True, "ok") for name in LOGIN_NODE_CHECKS), note=note
    )
    lines = [line.plain for line in preflight_lines(report)]
    assert lines[0] == note
    assert lines[1].startswith("passed ") and "✓ durable" in lines[1]


def test_a_box_report_has_no_note_line() -> None:
    report = PreflightReport("box1", (Check("disk", True, "ok"),))
    assert PreflightScope(("disk",)).note == ""
    assert [line.plain for line in preflight_lines(report)] == ["passed ✓ disk"]
