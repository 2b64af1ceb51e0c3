"""The queue-control records (stop, stopped, kill, retry, skip) parsed, and what the view
makes of them; records written before them parse as they did."""

from __future__ import annotations

from rgt_tui.content.queue_text import queue_pane_line
from rgt_tui.domain.queue_records import (
    DeployedCell,
    parse_cell_marks,
    parse_cell_state,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import (
    FAILED,
    FINISHED,
    KILLED,
    PENDING,
    Q_RUNNING,
    RETRY,
    RUNNING,
    SKIPPED,
    USER_STOPPED,
    derive_view,
)

BOOT = "b0"
CELLS = tuple(DeployedCell(i, n, f"run {n}") for i, n in enumerate(["a", "b", "c"]))


def test_old_records_parse_as_before_and_new_ones_are_read():
    old = "start 10 b0 100\nend 20 3\n"
    (attempt,) = parse_cell_state(old)
    assert (attempt.exit_code, attempt.killed_by) == (3, "")
    assert parse_cell_marks(old).retries == () and parse_cell_marks(old).skipped is None

    killed = (
        "start 10 b0 100\ncode tree="
        + "a" * 64
        + " commit=- dirty=0\nkill 15 user stop\nend 16 143\n"
    )
    (attempt,) = parse_cell_state(killed)
    assert (attempt.killed_by, attempt.kill_then, attempt.exit_code) == ("user", "stop", 143)
    assert attempt.code is not None
    late = parse_cell_state("start 10 b0 100\nend 16 0\nkill 17 user next\n")
    assert late[0].killed_by == ""  # recorded after the end: it did not end it

    marks = parse_cell_marks(killed + "retry 30 /r/a.before-retry-20260101-000000\n")
    assert marks.retry_pending and marks.retry_aside == "/r/a.before-retry-20260101-000000"
    ran_again = parse_cell_marks(killed + "retry 30 -\nstart 31 b0 200\n")
    assert not ran_again.retry_pending and ran_again.retries == ((30, "-"),)
    skip = parse_cell_marks("skip 40 moved to box2 (queue move)\n")
    assert skip.skipped == "moved to box2 (queue move)" and skip.skipped_at == 40
    assert parse_cell_marks("skip 40 x\nstart 41 b0 1\n").skipped is None
    assert parse_cell_marks("skip\nretry x\n") == parse_cell_marks("")  # half-written


def test_runner_stop_records_make_the_stopped_state_and_the_resume_index():
    running = parse_runner_state("launch 1 b0 tmux 0 /s/run_queue.x.sh 9\nstop 5 user\n")
    assert running[0].stop_requested_at == 5 and running[0].stop_by == "user"
    attempts = {"a": parse_cell_state("start 2 b0 100\n")}
    view = derive_view(
        "h", CELLS, running, attempts, boot_id=BOOT, now=8, runner_alive=True,
        alive_cells=frozenset({"a"}),
    )  # fmt: skip
    assert view.state == Q_RUNNING and view.stop_requested
    assert view.stop_text() == "stop requested: the queue ends after cell 0 (a)"

    text = "launch 1 b0 tmux 0 /s/run_queue.x.sh 9\nstop 5 user\nstopped 9 1\ndone 9 1 0\n"
    launches = parse_runner_state(text)
    attempts = {"a": parse_cell_state("start 2 b0 100\nend 8 0\n")}
    view = derive_view("h", CELLS, launches, attempts, boot_id=BOOT, now=20, runner_alive=False)
    assert view.state == USER_STOPPED and view.resume_index == 1
    assert view.stop_text() == "stopped by the user after cell 0 (a); cell 1 and later not started"
    relaunched = parse_runner_state(
        text + "launch 30 b0 tmux 1 /s/run_queue.x.sh 12\ndone 40 2 0\n"
    )
    assert relaunched[-1].stopped_before is None
    view = derive_view("h", CELLS, relaunched, {}, boot_id=BOOT, now=50, runner_alive=False)
    assert view.state == FINISHED


def test_cell_statuses_for_killed_retry_and_skipped_cells():
    launches = parse_runner_state("launch 1 b0 tmux 0 /s/r.sh 9\ndone 50 0 1\n")
    states = {
        "a": "start 2 b0 100\nkill 3 user next\nend 4 143\n",
        "b": "start 5 b0 101\nend 6 2\nretry 7 /out/b.before-retry-x\n",
        "c": "skip 8 moved to box2\n",
    }
    view = derive_view(
        "h", CELLS, launches, {n: parse_cell_state(t) for n, t in states.items()},
        boot_id=BOOT, now=60, runner_alive=False,
        marks={n: parse_cell_marks(t) for n, t in states.items()},
    )  # fmt: skip
    a, b, c = view.cells
    assert (a.status, a.label, a.exit_code) == (KILLED, "killed (exit 143)", 143)
    assert (b.status, b.label, b.retries) == (RETRY, "queued to retry", 1)
    # Where they went is said once, by retry_text, not again in the note (hour s17a #13).
    assert b.note == "" and b.retry_text() == "retried 1×, earlier outputs in /out/b.before-retry-x"
    assert (c.status, c.label, c.note) == (SKIPPED, "moved", "moved to box2")
    assert "1 killed" in view.summary() and "1 to retry" in view.summary()
    # A resume ("=": its {out} kept) is told apart from a retry (s44 note), and keeps
    # where the retry before it set outputs aside.
    marks = parse_cell_marks(states["b"] + "start 9 b0 102\nend 10 2\nretry 11 =\n")
    assert marks.retry_aside == "=" and len(marks.retries) == 2
    view = derive_view(
        "h", CELLS, launches, {n: parse_cell_state(t) for n, t in states.items()},
        boot_id=BOOT, now=60, runner_alive=False, marks={**{n: parse_cell_marks(t) for n, t in states.items()}, "b": marks},
    )  # fmt: skip
    b = view.cells[1]
    assert (b.status, b.retries, b.resumes, b.note) == (RETRY, 2, 1, "its {out} kept as it is")
    assert b.retry_text() == "retried 1×, resumed 1×, earlier outputs in /out/b.before-retry-x"
    # Queued as a resume, it is said so in its row, the summary and the pane (it read
    # "retry queued" and "1 to retry": h484).
    assert b.label == "queued to resume"
    assert "1 killed · 1 to resume" in view.summary() and "to retry" not in view.summary()
    pane = queue_pane_line(view)
    assert pane is not None and "1 killed · 1 to resume" in pane.plain
    assert view.last_failed is None and FAILED not in [x.status for x in view.cells]
    assert PENDING not in [x.status for x in view.cells] and RUNNING not in [
        x.status for x in view.cells
    ]
