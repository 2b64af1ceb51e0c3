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
