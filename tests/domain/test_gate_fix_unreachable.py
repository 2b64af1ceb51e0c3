"""The roster's fix on a box that does not answer (a preempted spot box) offers to run the
missing cells on another box before accepting them as lost (hour s21a #11: the only way
on offered for a pending cell there was ``--ack-missing``, "accept as lost")."""

from __future__ import annotations

from rgt_tui.domain.gate_fixes import fix
from rgt_tui.domain.teardown_gate import NOT_ANSWERING, Condition

ROSTER = Condition(
    "roster", False, "missing: box1_wide (not answering)", ("box1_wide",), cause=NOT_ANSWERING
)


def test_the_command_line_names_the_move_before_the_acknowledgement() -> None:
    said = fix(ROSTER, "box1", tui=False)
    move = said.index("to run them on another box: `rgt-tui queue move box1_wide --to HOST`")
    assert move < said.index("`rgt-tui teardown box1 --ack-missing box1_wide`")
    assert said.startswith("run `rgt-tui teardown box1 --check` once the box answers")


def test_the_tui_names_its_move_key() -> None:
    said = fix(ROSTER, "box1", tui=True)
    assert "to run them on another box: the Queue tab's m moves a cell" in said
    assert "type each name below and press Missing: accept" in said


def test_no_cell_to_settle_offers_neither() -> None:
    alone = Condition("roster", False, "not answering", (), cause=NOT_ANSWERING)
    assert "queue move" not in fix(alone, "box1", tui=False)


def test_a_name_a_shell_would_split_is_quoted_in_every_command() -> None:
    """A cell named "my run" (its config "configs/my run.json") printed ``--ack-missing my
    run``, which failed pasted with "unrecognized arguments: run" (h533 #4)."""
    import shlex

    from rgt_tui.domain.teardown_gate import MOVE_NOT_ON_RECORD

    roster = Condition("roster", False, "missing", ("my run", "x;y"), cause=NOT_ANSWERING)
    said = fix(roster, "box1", tui=False)
    assert "`rgt-tui queue move 'my run' --to HOST`" in said
    assert "`rgt-tui teardown box1 --ack-missing 'my run' --ack-missing 'x;y'`" in said
    acks = said.split("`rgt-tui teardown box1 ")[-1].split("`")[0]
    assert shlex.split(acks) == ["--ack-missing", "my run", "--ack-missing", "x;y"]
    unfinished = Condition("unfinished", False, "my run", ("my run",))
    assert "--ack-unfinished 'my run'`" in fix(unfinished, "box1", tui=False)
    assert "`rgt-tui queue move 'my run' --to HOST`" in fix(unfinished, "box1", tui=False)
    moved = Condition("unfinished", False, "", ("my run",), cause=MOVE_NOT_ON_RECORD)
    assert "--ack-unfinished 'my run'`" in fix(moved, "box1", tui=False)
    # What the TUI asks to type is the name itself, unquoted.
    assert "type my run under 'Acknowledge a cell by name'" in fix(unfinished, "box1", tui=True)
