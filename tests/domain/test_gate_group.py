"""A box of a running group cannot be torn down alone (issue 41): the gate's pure rule."""

from __future__ import annotations

from rgt_tui.domain import teardown_gate as g


def test_a_rank_of_a_running_group_locks_naming_the_group_and_the_fix() -> None:
    c = g.group_condition(g.GroupRunSeen("pair", 1, ("fit",)))
    assert c.key == "group" and not c.ok
    assert "rank 1 of group pair" in c.evidence and "fit runs" in c.evidence
    assert "`rgt-tui queue kill pair`" in c.evidence and "torn down alone" in c.evidence
    assert c.settle == ("fit",)


def test_an_idle_group_lets_its_box_go_and_an_unread_one_does_not() -> None:
    assert g.group_condition(g.GroupRunSeen("pair", 0)).ok
    unread = g.group_condition(g.GroupRunSeen("pair", 0, error="no answer"))
    assert not unread.ok and "cannot read the group's records" in unread.evidence


def test_box_text_in_the_group_line_is_made_printable() -> None:
    c = g.group_condition(g.GroupRunSeen("pair", 1, ("a\x1b[31mred",)))
    assert "\x1b" not in c.evidence
