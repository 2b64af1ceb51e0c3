"""The unfinished line says what is known of the cell's files (h618 #3): while a cell ran
that had started after the pull, a failed cell's line read "nothing of it is pulled and
verified here" though its metrics.json was pulled and verified; and with a valid
manifest, "no checkpoint of it" left its verified files unsaid."""

from __future__ import annotations

from support.gate import happy_events

from rgt_tui.domain import teardown_gate as g

FAILED_B = g.QueueCellsSeen(unfinished=(("cellB", "failed", "failed (exit 3) after 25s"),))


def _line(*events) -> g.Condition:
    state = g.GateState("h1", box_id=happy_events()[-1].box_id)
    for event in events:
        state = g.apply(state, event)
    (line,) = [c for c in g.conditions(state) if c.key == "unfinished"]
    return line


def test_the_cells_verified_files_are_named_beside_no_checkpoint() -> None:
    line = _line(*happy_events()[:8], FAILED_B)
    assert line.evidence == (
        "cellB failed (exit 3) after 25s — no checkpoint of it is pulled and verified here "
        "(only cellB/metrics.json is)"
    )


def test_with_no_valid_manifest_it_says_none_counts_not_that_none_was_pulled() -> None:
    started = g.CellsRunning(("cellD",), (("cellD", "1/250/"),))  # after the pull (200)
    line = _line(*happy_events()[:8], FAILED_B, started)
    assert "nothing of it is pulled" not in line.evidence, line.evidence
    assert line.evidence == (
        "cellB failed (exit 3) after 25s — none of it counts as pulled and verified while "
        "no manifest is valid (the manifest line says why)"
    )
