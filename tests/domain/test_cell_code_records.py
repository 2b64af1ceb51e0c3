"""The code each cell ran (U42): the ``code`` record after a start, read as the box's
text, and carried into the queue view."""

from __future__ import annotations

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.queue_records import cells_tsv_line, parse_cell_state, parse_cells_tsv
from rgt_tui.domain.queue_state import CODE_UNKNOWN, DONE, code_brief, code_text, derive_view

BOOT = "11111111-aaaa-bbbb-cccc-000000000001"
A = CodeIdentity("a" * 64, "89abcdef0123", False)
B = CodeIdentity("b" * 64, "", False)
DIRTY = CodeIdentity("c" * 64, "0123456789", True)


def test_each_attempt_carries_the_code_recorded_after_its_start():
    attempts = parse_cell_state(
        f"start 1000 {BOOT} 77\ncode {A.record()}\nend 1010 0\n"
        f"start 1020 {BOOT} 78\nend 1030 1\n"  # relaunched by an rgt-tui that knew no code
        f"start 1040 {BOOT} 79\ncode {B.record()}\ncode {DIRTY.record()}\nend 1050 0\n"
    )
    assert [a.code for a in attempts] == [A, None, B]  # the first code line of an attempt


def test_a_code_line_that_is_not_an_identity_is_no_identity():
    hostile = [
        "code",
        "code tree=xyz commit=- dirty=0",
        f"code tree={'a' * 64} commit=- dirty=2",
        f"code tree={'A' * 64} commit=- dirty=0",  # upper case: not what record() writes
        f"code tree={'a' * 64} commit=$(reboot) dirty=0",
        "code \x1b[2J" + "x" * 10_000,
    ]
    for line in hostile:
        (attempt,) = parse_cell_state(f"start 1000 {BOOT} 7\n{line}\nend 1001 0\n")
        assert attempt.code is None and attempt.exit_code == 0, line
    # A code line before any start belongs to no attempt.
    assert parse_cell_state(f"code {A.record()}\n") == ()


def test_the_view_shows_the_last_attempts_code_per_cell():
    deployed = parse_cells_tsv(cells_tsv_line(0, "a", "run a") + cells_tsv_line(1, "b", "run b"))
    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 7\ncode {A.record()}\nend 1010 0\n"),
        "b": parse_cell_state(f"start 1011 {BOOT} 8\nend 1012 0\n"),
    }
    view = derive_view("box1", deployed, (), attempts, boot_id=BOOT, now=1100, runner_alive=False)
    a, b = view.cells
    assert (a.status, a.code, b.code) == (DONE, A, None)
    assert code_brief(a.code) == "code aaaaaaaaaaaa · git 89abcde"
    assert code_brief(DIRTY) == "code cccccccccccc · git 0123456 (uncommitted changes)"
    assert code_brief(B) == "code bbbbbbbbbbbb" and code_brief(None) == "code unknown"
    assert (
        code_text(A) == "code tree aaaaaaaaaaaa, git 89abcdef01" and code_text(None) == CODE_UNKNOWN
    )
