"""The ``#moved-to HOST:`` line: a moved cell keeps its index, and the prefix rule accepts
exactly this rewrite of a sent line (``queue move``)."""

from __future__ import annotations

from rgt_tui.domain.queue_file import (
    duplicate_names,
    moved_marker,
    parse_queue_text,
    prefix_problem,
    sent_prefix_end,
)


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
    assert sent_prefix_end(old, "a.yaml t\nb.yaml t") is None
