"""The ``#moved-to HOST:`` line: a moved cell keeps its index, and the prefix rule accepts
exactly this rewrite of a sent line (``queue move``)."""

from __future__ import annotations

from rgt_tui.domain.queue_file import (
    duplicate_names,
    moved_marker,
    parse_queue_text,
)
from rgt_tui.domain.queue_prefix import held_lines, prefix_problem, sent_prefix_end, unsent_text


def parse(text: str, file: str = "q.txt"):
    return parse_queue_text(text, file=file, default_epochs=20)


def test_a_moved_line_keeps_its_index_but_is_no_live_cell():
    parsed = parse("a.yaml t 1\n#moved-to box2: b.yaml t 2\n# note\nc.yaml t\n")
    assert [c.name for c in parsed.cells] == ["a", "c"]
    assert [(c.name, c.moved_to, c.line, c.epochs) for c in parsed.moved] == [("b", "box2", 2, 2)]
    assert [c.name for c in parsed.slots] == ["a", "b", "c"]  # cell 2 is still c
    assert not parsed.problems
    # The name is the destination's now: it takes no part in the fleet's name check.
    there = parse("b.yaml t 2\n", file="box2.txt")
    assert duplicate_names([*parsed.cells, *there.cells]) == ()


def test_a_moved_line_with_a_bad_inner_line_is_a_problem_and_other_comments_stay_comments():
    parsed = parse("#moved-to box2: b.yaml\n#moved to box2: c.yaml t\n#moved-to: d.yaml t\n")
    assert not parsed.cells and not parsed.moved
    (problem,) = parsed.problems
    assert problem.line == 1 and "in the #moved-to line: missing task" in problem.message


def test_the_prefix_rule_accepts_exactly_the_moved_rewrite_of_a_sent_line():
    box = "a.yaml t\nb.yaml t\n"
    moved = "a.yaml t\n" + moved_marker("box2", "b.yaml t") + "\nc.yaml t\n"
    assert prefix_problem(box, moved) is None
    assert moved[sent_prefix_end(box, moved) :] == "c.yaml t\n"  # what an append sends
    crlf_box = "a.yaml t\r\nb.yaml t\r\n"
    crlf = "a.yaml t\r\n" + moved_marker("box2", "b.yaml t\r") + "\n"
    assert prefix_problem(crlf_box, crlf) is None and sent_prefix_end(crlf_box, crlf) == len(crlf)
    unterminated = moved_marker("box2", "a.yaml t") + "\nb.yaml t\n"
    assert sent_prefix_end("a.yaml t", unterminated) == len(moved_marker("box2", "a.yaml t"))
    # Anything else stays refused: another edit inside the marker, a plain comment, a
    # marker without the line, and a deleted line.
    for local in (
        "a.yaml t\n" + moved_marker("box2", "b.yaml t 5") + "\n",
        "a.yaml t\n# b.yaml t\n",
        "a.yaml t\n#moved-to box2:\n",
        "a.yaml t\n",
    ):
        assert sent_prefix_end(box, local) is None, local
        assert prefix_problem(box, local), local


def test_the_old_prefix_rule_is_unchanged():
    old = "a.yaml t\nb.yaml t\n"
    assert sent_prefix_end(old, old) == len(old)
    assert sent_prefix_end(old, old + "c.yaml t\n") == len(old)
    assert sent_prefix_end("", "x\n") == 0
    assert sent_prefix_end("a.yaml t", "a.yaml t\nb.yaml t\n") == len("a.yaml t")
    assert sent_prefix_end("a.yaml t", "a.yaml tx\n") is None


def test_a_crlf_line_ended_after_it_was_sent_unended_is_the_line_sent():
    """Notepad saves no final newline: the box got ``a\\r\\nb``, the user added a line, and
    append and launch were refused ('b' on the box, 'b\\r' locally), pointing to --fresh."""
    box = "a.yaml t\r\nb.yaml t"
    local = box + "\r\nc.yaml t\r\n"
    assert prefix_problem(box, local) is None
    assert sent_prefix_end(box, local) == len(box)
    assert held_lines(box, local) == 2
    sent = unsent_text(box, local)
    assert sent == "\r\nc.yaml t\r\n" and box + sent == local  # the box's copy: the file
    moved = "a.yaml t\r\n" + moved_marker("box2", "b.yaml t") + "\r\nc.yaml t\r\n"
    assert unsent_text(box, moved) == "\r\nc.yaml t\r\n"
    # Only the ending is forgiven: the line itself changed, or another line, still shows.
    assert sent_prefix_end(box, "a.yaml t\r\nb.yaml tx\r\n") is None
    changed = prefix_problem(box, "a2.yaml t\r\nb.yaml t\r\nc.yaml t\r\n")
    assert changed == "  line 1 on the box: 'a.yaml t\\r'\n  line 1 locally:    'a2.yaml t\\r'"


def test_a_file_that_only_lost_its_final_newline_is_the_copy_sent():
    """``a\\nb\\n`` on the box, ``a\\nb`` locally: the same file, nothing to send (it was
    refused as 'only comment or blank lines differ')."""
    for box, local in (
        ("a.yaml t\nb.yaml t\n", "a.yaml t\nb.yaml t"),
        ("a.yaml t\r\nb.yaml t\r\n", "a.yaml t\r\nb.yaml t"),
        ("a.yaml t\n", "a.yaml t"),
    ):
        assert prefix_problem(box, local) is None, local
        assert sent_prefix_end(box, local) == len(local), local
        assert unsent_text(box, local) == "", local
        assert held_lines(box, local) == box.count("\n"), local
    # A last line that changed, or went, is still refused.
    assert sent_prefix_end("a.yaml t\nb.yaml t\n", "a.yaml t\nb.yaml tx") is None
    assert prefix_problem("a.yaml t\nb.yaml t\n", "a.yaml t\n")
