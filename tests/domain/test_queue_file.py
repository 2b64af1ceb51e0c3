"""Queue files parse like the sweep files they replace; problems name file:line."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from rgt_tui.domain.queue_file import (
    QueueCell,
    duplicate_names,
    epochs_note,
    expand_home,
    parse_queue_text,
    render_command,
    strip_comment,
    template_problem,
)
from rgt_tui.domain.queue_prefix import prefix_problem, sent_prefix_end

SWEEP = """\
# comments and blank lines are ignored
configs/ablation/baseline.yaml        reconstruction 20
configs/ablation/det_baseline.yaml    detection      50

configs/ablation/no_aug.yaml          reconstruction
"""


def parse(text: str, default: int = 20, file: str = "q.txt"):
    return parse_queue_text(text, file=file, default_epochs=default)


def test_the_sweep_file_parses_to_three_cells_with_their_epochs():
    parsed = parse(SWEEP, default=7)
    assert parsed.problems == ()
    assert [(c.name, c.task, c.epochs, c.epochs_given, c.line) for c in parsed.cells] == [
        ("baseline", "reconstruction", 20, True, 2),
        ("det_baseline", "detection", 50, True, 3),
        ("no_aug", "reconstruction", 7, False, 5),
    ]
    assert parsed.cells[0].cfg == "configs/ablation/baseline.yaml"
    assert parsed.cells[2].where == "q.txt:5"


def test_comments_after_fields_quotes_and_crlf():
    text = (
        "a/one.yaml recon 3   # three epochs\r\n"
        "'my configs/two words.yaml' \"det ection\" 4\n"
        "run#2.yaml recon   # a # inside a word is part of it\n"
        "\t# indented comment\n"
    )
    parsed = parse(text)
    assert parsed.problems == ()
    assert [(c.cfg, c.name, c.task, c.epochs) for c in parsed.cells] == [
        ("a/one.yaml", "one", "recon", 3),
        ("my configs/two words.yaml", "two words", "det ection", 4),
        ("run#2.yaml", "run#2", "recon", 20),
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("cfg.yaml", "missing task after 'cfg.yaml'"),
        ("cfg.yaml recon 20 extra", "too many fields (4; extra: 'extra')"),
        ("cfg.yaml recon twenty", "bad epochs 'twenty'"),
        ("cfg.yaml recon 0", "bad epochs '0'"),
        ("cfg.yaml recon -3", "bad epochs '-3'"),
        ("cfg.yaml recon 3#x", "bad epochs '3#x'"),
        ("'cfg.yaml recon", "a quote is not closed — close it"),
        ("cfg.yaml recon \\", "the line ends in a backslash"),
        # int() of 4300 digits or more raised ValueError: a traceback (hour s33 CLI #1).
        pytest.param(
            f"cfg.yaml recon {'9' * 5000}", "is more than 2147483647 — a typo?", id="5000-digits"
        ),
        ("cfg.yaml recon 99999999999999999999", "epochs 99999999999999999999 is more than"),
        ("cfg.yaml recon 000", "bad epochs '000'"),
        # What the line was read as, when a word in front shifted the fields.
        ("!retry cfg.yaml recon", "bad epochs 'recon' (the line reads config '!retry', task"),
        # Refused by length before shlex reads it (hour s33 CLI #2: 10 MB never finished).
        pytest.param(
            f"{'x' * 9000}.yaml recon", "the line is 9011 characters long", id="9011-chars"
        ),
        ("..yaml recon", "no file stem"),
        # Read as an option by every command naming the cell (h583 #4).
        ("configs/-rf.yaml recon", "the cell name '-rf' (the config file's stem) starts with '-'"),
        # Over 200 bytes: its folders and logs on the box could not be made (a user's hour).
        (f"/tmp/{'L' * 201}.json recon", "is 201 bytes: a cell's name makes its folders"),
        (f"{'é' * 101}.json recon", "is 202 bytes"),
        ("\ufeffb.json recon", "a UTF-8 byte-order mark inside the line"),
        # What launch's records refuse, refused here by line (hour s20a #5: a traceback).
        ("c\u2028d.yaml recon", "holds a control character"),
        ("a\x85b.yaml recon", "holds a control character"),
        ("a\u202eb.yaml recon", "holds a control character"),
    ],
)
def test_format_errors_name_file_line_and_the_fix(line: str, expected: str):
    parsed = parse(f"ok.yaml recon\n{line}\n", file="queues/a.txt")
    assert [c.name for c in parsed.cells] == ["ok"]
    assert len(parsed.problems) == 1
    problem = parsed.problems[0]
    assert (problem.file, problem.line) == ("queues/a.txt", 2)
    assert expected in problem.message
    assert str(problem).startswith("queues/a.txt:2: ")


def test_epochs_up_to_a_32_bit_int_are_taken():
    parsed = parse("a.yaml recon 2147483647\nb.yaml recon 0007\n")
    assert parsed.problems == ()
    assert [c.epochs for c in parsed.cells] == [2147483647, 7]


def test_a_long_comment_line_is_still_a_comment():
    parsed = parse(f"# {'notes ' * 5000}\na.yaml recon\n")
    assert parsed.problems == () and [c.name for c in parsed.cells] == ["a"]


def test_strip_comment_keeps_quoted_hashes():
    assert strip_comment("'a # b' c # d") == "'a # b' c "
    assert strip_comment('"x\\"#" y') == '"x\\"#" y'
    assert strip_comment("# all") == ""


def test_duplicate_names_across_files_list_every_place():
    a = parse("x/base.yaml recon\ny/other.yaml recon\n", file="a.txt").cells
    b = parse("# b\nz/base.yml det 5\n", file="b.txt").cells
    dups = duplicate_names(a + b)
    assert [d.name for d in dups] == ["base"]
    message = dups[0].message()
    assert "a.txt:1" in message and "b.txt:2" in message and "isolation key" in message
    # A name repeated 200,000 times made one 3.9 MB line (hour s45b #6): the first few.
    many = parse("x/base.yaml recon\n" * 1000, file="c.txt").cells
    (dup,) = duplicate_names(many)
    said = dup.message()
    assert "is used 1000 times: c.txt:1 and c.txt:2 and c.txt:3 and c.txt:4 and c.txt:5 " in said
    assert "c.txt:5 and 995 more — " in said and "c.txt:6" not in said and len(said) < 400


def test_render_quotes_every_value_and_the_shell_gets_them_literally(tmp_path):
    cell = QueueCell("q", 1, "it's; rm -rf ~", "cfg/it's; rm -rf ~.yaml", 'a "task" $(x)', 5, True)
    command = render_command("printf '%s\\n' {cfg} {task} {epochs} {name} {out}", cell, "/d ir")
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "cfg/it's; rm -rf ~.yaml", 'a "task" $(x)', "5", "it's; rm -rf ~", "/d ir/it's; rm -rf ~",
    ]  # fmt: skip
    assert shlex.quote("/d ir/it's; rm -rf ~") in command


def test_expand_home_and_templates():
    assert expand_home("~", "/h") == "/h"
    assert expand_home("~/results", "/h/") == "/h/results"
    assert expand_home("/abs", "/h") == "/abs"
    assert template_problem("python t.py {cfg}") is None
    assert "one line" in (template_problem("a\nb") or "")
    assert "braces" in (template_problem("python {cfg") or "")


def test_prefix_rule_allows_appends_only():
    old = "a.yaml t\nb.yaml t\n"
    assert prefix_problem(old, old) is None
    assert prefix_problem(old, old + "c.yaml t\n") is None
    assert prefix_problem("", "anything\n") is None
    assert prefix_problem("a.yaml t", "a.yaml t\nb.yaml t\n") is None  # last line ended later
    changed = prefix_problem(old, "a.yaml t\nb2.yaml t\nc.yaml t\n")
    assert changed is not None
    assert (
        "line 2 on the box: 'b.yaml t'" in changed and "line 2 locally:    'b2.yaml t'" in changed
    )
    grown = prefix_problem("a.yaml t", "a.yaml tx\n")  # the unterminated last line grew
    assert grown is not None and "line 1" in grown
    commented = prefix_problem(old, "a.yaml t\n# b.yaml t\n")
    assert commented is not None and "'# b.yaml t'" in commented
    deleted = prefix_problem(old, "a.yaml t\n")
    assert deleted is not None and "line 2 locally:    (missing)" in deleted, deleted
    # A line blanked in the middle is a line: it reads ''.
    blanked = prefix_problem(old, "\nb.yaml t\n")
    assert blanked is not None and "line 1 locally:    ''" in blanked, blanked


def test_a_comment_added_above_sent_lines_is_named_as_one():
    """A comment typed at the top of a queue file refused the next launch with two lines
    of text that did not say a comment was the whole difference (a user's hour)."""
    old = "a.yaml t\nb.yaml t\n"
    hint = "only comment or blank lines differ"
    top = prefix_problem(old, "# sweep 2\na.yaml t\nb.yaml t\nc.yaml t\n")
    assert top is not None and hint in top
    assert "put new comments below the last line sent ('b.yaml t')" in top
    blank = prefix_problem(old, "a.yaml t\n\nb.yaml t\n")
    assert blank is not None and hint in blank
    # A sent cell commented out, changed or dropped is more than a comment.
    for local in ("a.yaml t\n# b.yaml t\n", "# x\na.yaml t\nb2.yaml t\n", "# x\nb.yaml t\n"):
        problem = prefix_problem(old, local)
        assert problem is not None and hint not in problem, local


def test_crlf_lines_sent_then_converted_here_are_the_same_lines():
    """h553 #1: an append sent CRLF lines and advised dos2unix; once converted, the launch
    refused every line as changed on the box. A line's ending is no part of its cell."""
    box = "a.yaml t\r\nb.yaml t\r\n"
    converted = "a.yaml t\nb.yaml t\nc.yaml t\n"
    assert prefix_problem(box, converted) is None
    assert converted[sent_prefix_end(box, converted) :] == "c.yaml t\n"
    assert prefix_problem("a.yaml t\n", "a.yaml t\r\nb.yaml t\r\n") is None  # and back
    assert prefix_problem(box, "a.yaml t\nb2.yaml t\n") is not None  # a real change


def test_prefix_problem_names_only_the_changed_line_when_lines_were_also_appended():
    # The box's copy ends on a newline: the empty text after it is no line, and the line
    # appended locally at that number is no difference.
    old = "a.yaml t\nb.yaml t\nc.yaml t\n"
    changed = prefix_problem(old, "a.yaml t\nb2.yaml t\nc.yaml t\nd.yaml t 1\n")
    assert changed == "  line 2 on the box: 'b.yaml t'\n  line 2 locally:    'b2.yaml t'"
    deleted = prefix_problem(old, "a.yaml t\nb.yaml t\n")
    assert deleted == "  line 3 on the box: 'c.yaml t'\n  line 3 locally:    (missing)"
    assert prefix_problem(old, old + "d.yaml t 1\ne.yaml t\n") is None


def test_prefix_problem_names_a_line_whenever_the_prefix_test_refuses():
    """prefix_problem and sent_prefix_end once tested the box's last line with different
    line-ending rules: a CRLF typed into a line the box held ended refused an append with
    an empty reason (no differing line shown, and nothing in the TUI)."""
    # A line's ending alone is no change (h553 #1); a changed line is named.
    assert prefix_problem("a\nb\n", "a\nb\r\nc\n") is None
    assert prefix_problem("a\r\nb\r\n", "a\r\nb\nc\n") is None
    changed = prefix_problem("a\r\nb\r\n", "a\r\nbb\nc\n")
    assert changed == "  line 2 on the box: 'b\\r'\n  line 2 locally:    'bb'"
    # Every pair of short texts: the two agree, and a refusal always names a line.
    texts = [""]
    for _ in range(4):
        texts += [t + c for t in texts if len(t) == max(map(len, texts)) for c in "ab\r\n"]
    for box in texts:
        for local in texts:
            problem = prefix_problem(box, local)
            assert (problem is None) == (sent_prefix_end(box, local) is not None), (box, local)
            assert problem is None or "line " in problem, (box, local)


OPTIONAL = "python t.py --config {cfg} [--epochs {epochs}] --out {out}"
BARE = "python t.py --config {cfg} --epochs {epochs} --out {out}"


def test_an_optional_epochs_part_is_kept_only_when_the_line_gives_epochs():
    """U32: a line without epochs gets no blanket --epochs from an optional part."""
    given, left_out = parse("a.yaml t 5\nb.yaml t\n", default=20).cells
    assert (
        render_command(OPTIONAL, given, "/d") == "python t.py --config a.yaml --epochs 5 --out /d/a"
    )
    assert "--epochs" not in render_command(OPTIONAL, left_out, "/d")
    assert render_command(OPTIONAL, left_out, "/d").split() == [
        "python", "t.py", "--config", "b.yaml", "--out", "/d/b",
    ]  # fmt: skip
    # A bare {epochs} keeps the host's default (and the plan says so: epochs_note).
    assert render_command(BARE, left_out, "/d").endswith("--epochs 20 --out /d/b")
    # Literal shell brackets (no placeholder inside) are left alone.
    shell = "[ -d x ] && ls r[0-9] && run {cfg} [--epochs {epochs}]"
    assert render_command(shell, left_out, "/d") == "[ -d x ] && ls r[0-9] && run b.yaml "


def test_values_in_an_optional_part_stay_shell_quoted():
    cell = QueueCell("q", 1, "a", "a.yaml", "t", 7, True)
    command = render_command("printf '%s\\n' [{name}x{epochs}] {cfg}", cell, "/d")
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["ax7", "a.yaml"]
    hostile = QueueCell("q", 1, "it's; x", "c.yaml", "t", 3, True)
    command = render_command("run [--name {name} --epochs {epochs}]", hostile, "/d")
    assert shlex.quote("it's; x") in command


@pytest.mark.parametrize(
    ("template", "phrase"),
    [
        ("run {cfg} [--epochs {epochs}", "is never closed"),
        ("run {cfg} --epochs {epochs}]", "closes no '['"),
        ("run [[--epochs {epochs}]]", "nested brackets"),
        ("run [ -d {out} ] {cfg}", "holds no {epochs}"),
    ],
)
def test_malformed_optional_parts_are_template_problems(template, phrase):
    assert phrase in (template_problem(template) or "")


def test_epochs_note_names_the_value_and_its_source():
    given, left_out = parse("a.yaml t 5\nb.yaml t\n", default=20).cells
    assert epochs_note(OPTIONAL, given) == "epochs 5 (the line)"
    assert epochs_note(BARE, given) == "epochs 5 (the line)"
    assert epochs_note(BARE, left_out) == "epochs 20 (the host's default: the line gives none)"
    assert epochs_note(OPTIONAL, left_out) == "epochs: none passed (the config decides)"
    assert "none passed" in epochs_note("python t.py {cfg}", given)


def test_a_200_byte_name_is_a_cell() -> None:
    parsed = parse(f"{'L' * 200}.json recon\n", file="queues/a.txt")
    assert parsed.problems == () and len(parsed.cells[0].name) == 200


def test_a_byte_order_mark_or_a_byte_that_is_not_utf8_is_named_by_line(tmp_path) -> None:
    """A Windows editor's BOM became part of the first cell's path, and a bad byte was
    named by its offset in the file, not its line (a user's hour)."""
    from rgt_tui.services.queue.check import read_queue_file

    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfconfigs/a.json recon\n")
    (problem,) = read_queue_file(bom, host="box1", default_epochs=1).parsed.problems
    assert problem.line == 1 and "byte-order mark" in problem.message
    assert "without BOM" in problem.message
    # The rest is read too: its problems came one fix at a time, after the mark's (s36
    # faults #7); and nothing of it is sent (no text).
    bom.write_bytes(b"\xef\xbb\xbfconfigs/a.json recon\nconfigs/b.json recon -3\n")
    source = read_queue_file(bom, host="box1", default_epochs=1)
    assert [p.line for p in source.parsed.problems] == [1, 2], source.parsed.problems
    assert "bad epochs '-3'" in source.parsed.problems[1].message and source.text is None
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"a.json recon\nb.json recon\nc\xe9.json recon\n")
    (problem,) = read_queue_file(latin, host="box1", default_epochs=1).parsed.problems
    assert problem.line == 3 and "byte 0xe9 at column 2 is not UTF-8" in problem.message


def test_every_line_of_a_file_with_a_byte_that_is_not_utf8_is_checked(tmp_path) -> None:
    """The first bad byte hid every later mistake: a user fixed it and met nine more
    (hour s33 CLI #7). Each bad line is named; the others parse, shown but never sent."""
    from rgt_tui.services.queue.check import read_queue_file

    mixed = tmp_path / "mixed.txt"
    mixed.write_bytes(b"a.json recon\nb\xff.json recon\nc.json\nd.json recon 2\ne\xe9 x\n")
    source = read_queue_file(mixed, host="box1", default_epochs=1)
    assert source.text is None  # nothing of it is sent to a box
    assert [(c.name, c.line) for c in source.parsed.cells] == [("a", 1), ("d", 4)]
    assert [(p.line, p.message.split(" — ")[0]) for p in source.parsed.problems] == [
        (2, "byte 0xff at column 2 is not UTF-8"),
        (3, "missing task after 'c.json'"),
        (5, "byte 0xe9 at column 2 is not UTF-8"),
    ]


def test_a_no_break_space_between_fields_is_named():
    """Hour s45b #7: `configs/nbsp.json<U+00A0>t 1` (pasted from a chat) read as the path
    "configs/nbsp.json t", named missing from the code tree, the invisible character
    never mentioned."""
    (problem,) = parse("configs/nbsp.json\u00a0t 1\n", file="q.txt").problems
    said = str(problem)
    assert said.startswith("q.txt:1: the config path 'configs/nbsp.json\\xa0t' holds a "), said
    assert "no-break space (U+00A0)" in said and "type a plain space there" in said
    assert not parse("'configs/my run.yaml' t 1\n", file="q.txt").problems  # a real space
