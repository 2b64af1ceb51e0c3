"""One figures text per view (issue 38): the command line's pull block and the TUI's
Pulls tab write a pull's totals and each file's figures with the same function."""

from __future__ import annotations

from rich.console import Console

from rgt_tui.cli.pull_progress import render_progress
from rgt_tui.content.pull_view import progress_lines
from rgt_tui.services.pull.progress import FileProgress, PullProgress

FILE = FileProgress("cell-a/ckpt.pt", 4 << 30, 1 << 30, 52.3 * (1 << 20), 54.0, "pulling")
PULL = PullProgress(
    "box1", "pulling", files_total=12, files_done=3, bytes_total=45 << 30,
    bytes_done=(5 << 30) // 4, rate=52.3 * (1 << 20), eta_s=840.0, active=(FILE,),
)  # fmt: skip


def cli_text(p: PullProgress) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(render_progress(p))
    return console.export_text()


def tui_text(p: PullProgress) -> str:
    return "\n".join(line.plain for line in progress_lines(p, 120))


def test_the_cli_and_the_tui_show_the_same_figures() -> None:
    totals, file = PULL.figures(), FILE.figures()
    assert totals.startswith("3/12 files ") and " eta 14m" in totals, totals
    assert " eta 54s" in file, file
    for text in (cli_text(PULL), tui_text(PULL)):
        assert totals in text and file in text, text


def test_an_unknown_eta_reads_a_question_mark() -> None:
    unknown = PullProgress("box1", "pulling", files_total=1, bytes_total=10, eta_s=None)
    assert unknown.figures().endswith("eta ?")


def test_a_narrow_terminal_narrows_the_bars_before_the_figures() -> None:
    """At 40 columns the bars keep to a quarter of the width: the figures are cut later
    (a user's hour read "314/3…" behind a 20-cell bar)."""
    console = Console(record=True, width=40, color_system=None)
    console.print(render_progress(PULL))
    top, file_line = console.export_text().splitlines()[:2]
    assert len(top) <= 40 and top.startswith("box1 pulling ")
    assert "3/12 files" in top, top  # the count whole, whatever is cut after it
    assert "cell-a/ckpt.pt" in file_line, file_line
    wide = Console(record=True, width=200, color_system=None)
    wide.print(render_progress(PULL))
    assert PULL.figures() in wide.export_text()  # wide: the bar at full width, all figures
