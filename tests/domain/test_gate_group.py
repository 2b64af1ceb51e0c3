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


def test_a_group_whose_folder_cannot_be_counted_keeps_its_box_locked() -> None:
    """Review h504 #4, #8: a group whose pull is refused (a whole home) ticked "its files
    here", and a listing that failed read as records the box would not give."""
    refused = g.group_condition(g.GroupRunSeen("pair", 1, refused="pulls the whole home"))
    assert not refused.ok and "the group's pull is refused (pulls the whole home)" in (
        refused.evidence
    )
    unlisted = g.group_condition(g.GroupRunSeen("pair", 1, unlisted="scan over its cap"))
    assert not unlisted.ok
    assert "cannot list the group's folder on this box (scan over its cap)" in unlisted.evidence
    unsaved = g.group_condition(
        g.GroupRunSeen("pair", 1, unsaved=("/r/g/a.pt", "/r/g/b\\xff (not text)"), fix="pull")
    )
    assert not unsaved.ok and "holds 2 files no verified pull here holds" in unsaved.evidence
