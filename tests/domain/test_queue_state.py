"""Queue state comes from the box's records alone: pure derivation, all five cell states.
One module past 450 lines: every case derives a view from the same record fixtures."""

from __future__ import annotations

from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_state,
    parse_cells_tsv,
    parse_oom_counter,
    parse_runner_state,
    tmux_session_name,
)
from rgt_tui.domain.queue_state import (
    DONE,
    FAILED,
    FINISHED,
    INTERRUPTED,
    NEVER_LAUNCHED,
    NOT_DEPLOYED,
    NOT_IN_LAUNCH,
    PENDING,
    Q_RUNNING,
    REBOOTED,
    RUNNING,
    STOPPED,
    derive_view,
)

BOOT, OTHER = "11111111-aaaa-bbbb-cccc-000000000001", "22222222-aaaa-bbbb-cccc-000000000002"
TSV = "".join(cells_tsv_line(i, n, f"run {n}") for i, n in enumerate(["a", "b", "c", "d"]))
DEPLOYED = parse_cells_tsv(TSV)
SCRIPT = "/home/u s/.rgt/bin/run_queue.0123456789ab.sh"  # a HOME with a space


def launches(*extra: str, boot: str = BOOT, start: int = 0):
    return parse_runner_state(f"launch 1000 {boot} tmux {start} {SCRIPT} 4242\n" + "".join(extra))


def view(runner_text_launches, attempts, *, boot=BOOT, runner_alive=False, alive=(), now=1100):
    return derive_view(
        "box1",
        DEPLOYED,
        runner_text_launches,
        attempts,
        boot_id=boot,
        now=now,
        runner_alive=runner_alive,
        alive_cells=frozenset(alive),
    )


def test_records_parse_like_the_scripts_write_them():
    (launch,) = launches("done 1050 2 1\n")
    assert (launch.ts, launch.boot_id, launch.detach, launch.start_index, launch.pid) == (
        1000, BOOT, "tmux", 0, 4242,
    )  # fmt: skip
    assert launch.script == SCRIPT
    assert launch.done is not None and (launch.done.n_ok, launch.done.n_failed) == (2, 1)
    attempts = parse_cell_state(
        f"start 1000 {BOOT} 77\nend 1010 137\nstart 1020 {BOOT} 78\nend 10",  # half-written end
        "start 1000 3\nend 1010 4\nstart 1020 ?\n",
    )
    assert [(a.pid, a.exit_code, a.oom_at_start, a.oom_at_end) for a in attempts] == [
        (77, 137, 3, 4),
        (78, None, None, None),
    ]
    assert [c.name for c in DEPLOYED] == ["a", "b", "c", "d"]
    assert parse_cells_tsv(TSV + "4\te\thalf a li") == DEPLOYED  # an incomplete line is not a cell
    assert tmux_session_name("a100.vast:2") == "rgt-a100_vast_2"
    assert parse_oom_counter("low 0\noom 2\noom_kill 2\n") == 2
    assert parse_oom_counter("oom_kill_disable 0\nunder_oom 0\n") is None


def test_every_cell_state_and_the_summary_while_running():
    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1010 0\n"),
        "b": parse_cell_state(f"start 1010 {BOOT} 11\nend 1020 3\n"),
        "c": parse_cell_state(f"start 1020 {BOOT} 12\n"),
    }
    v = view(launches(), attempts, runner_alive=True, alive={"c"})
    assert v.state == Q_RUNNING
    assert [c.status for c in v.cells] == [DONE, FAILED, RUNNING, PENDING]
    assert v.cells[1].exit_code == 3 and v.cells[1].label == "failed (exit 3)"
    assert v.current is not None and v.current.name == "c"
    assert (v.count(DONE), v.total, v.elapsed_s, v.resume_index) == (1, 4, 100, None)
    summary = v.summary()
    assert "1/4 done" in summary and "1 failed" in summary and "cell 2 (c) for 1m20s" in summary
    # One numbering: the running cell's index, as its table row and the stop line say it.
    assert v.cells[2].index == 2 and "cell 3" not in summary


def test_a_stop_requested_names_the_running_cell_as_the_summary_does():
    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1010 0\n"),
        "b": parse_cell_state(f"start 1010 {BOOT} 11\n"),
    }
    stopping = view(launches("stop 1015 user\n"), attempts, runner_alive=True, alive={"b"})
    assert stopping.stop_text() == "stop requested: the queue ends after cell 1 (b)"
    assert "cell 1 (b) for" in stopping.summary() and "stop requested" in stopping.summary()


def test_a_reboot_interrupts_the_running_cell_and_suggests_its_index():
    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1010 0\n"),
        "b": parse_cell_state(f"start 1010 {BOOT} 11\n"),
    }
    # After the reboot the old pid may belong to anything: it must not count as alive.
    v = view(launches(), attempts, boot=OTHER, runner_alive=True, alive={"b"})
    assert v.state == REBOOTED
    assert [c.status for c in v.cells] == [DONE, INTERRUPTED, PENDING, PENDING]
    assert "rebooted" in v.cells[1].note
    assert v.resume_index == 1 and "resume from cell 1" in v.summary()
    assert "--start" not in v.summary()


def test_a_killed_runner_leaves_an_interrupted_cell_but_a_live_orphan_still_runs():
    attempts = {"a": parse_cell_state(f"start 1000 {BOOT} 10\n")}
    stopped = view(launches(), attempts)
    assert stopped.state == STOPPED
    assert stopped.cells[0].status == INTERRUPTED and "diagnose" in stopped.cells[0].note
    assert stopped.resume_index == 0
    orphan = view(launches(), attempts, alive={"a"})
    assert orphan.cells[0].status == RUNNING and "runner is gone" in orphan.cells[0].note


def test_runner_between_cells_shows_the_ending_cell_as_running():
    attempts = {"a": parse_cell_state(f"start 1000 {BOOT} 10\n")}
    v = view(launches(), attempts, runner_alive=True)  # pid gone, end record not yet written
    assert v.cells[0].status == RUNNING


def test_finished_stopped_between_cells_and_not_deployed():
    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1010 0\n"),
        "b": parse_cell_state(f"start 1010 {BOOT} 11\nend 1020 0\n"),
    }
    done = view(launches("done 1030 2 0\n", start=0), attempts)
    assert done.state == FINISHED and done.elapsed_s == 30
    # A queue that finished but was started at index 2 never ran a and b: they stay pending.
    stopped = view(launches(start=1), {"b": attempts["b"]})
    assert stopped.state == STOPPED and stopped.resume_index == 2
    empty = derive_view("box1", (), (), {}, boot_id=BOOT, now=0, runner_alive=False)
    assert empty.state == NOT_DEPLOYED and empty.elapsed_s is None
    never = derive_view("box1", DEPLOYED, (), {}, boot_id=BOOT, now=0, runner_alive=True)
    assert never.state == NEVER_LAUNCHED and not never.runner_alive


def test_the_queue_line_names_the_state_once_and_the_cli_names_its_flag():
    """``queue running  running ·`` said it twice; the TUI line says it once."""
    from rgt_tui.cli.queue import format_view
    from rgt_tui.content.queue_text import queue_lines

    attempts = {"a": parse_cell_state(f"start 1000 {BOOT} 10\n")}
    running = view(launches(), attempts, runner_alive=True, alive={"a"})
    first = queue_lines(running)[0].plain
    assert first.startswith(f"queue {running.state} · ") and first.count(running.state) == 1
    # R only with a cell it can take (hour s45a #10): a running first cell alone, none.
    text = "\n".join(line.plain for line in queue_lines(running))
    assert "S stop after this cell · X kill the running cell" in text
    assert "R retry or resume" not in text, text
    with_done = view(
        launches(),
        {"a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1005 0\n"),
         "b": parse_cell_state(f"start 1006 {BOOT} 11\n")},
        runner_alive=True, alive={"b"},
    )  # fmt: skip
    assert "· R retry or resume a cell" in "\n".join(x.plain for x in queue_lines(with_done))
    # Once a stop was asked, R is refused until the queue ends: not offered (h535 #7).
    stopping = view(
        launches("stop 1007 user\n"),
        {"a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1005 0\n"),
         "b": parse_cell_state(f"start 1006 {BOOT} 11\n")},
        runner_alive=True, alive={"b"},
    )  # fmt: skip
    assert stopping.stop_requested
    assert "R retry" not in "\n".join(x.plain for x in queue_lines(stopping))
    stopped = view(launches(), attempts)
    assert "resume from cell 0" in stopped.summary()
    shown = format_view(stopped)
    assert "resume: rgt-tui launch box1 --start 0" in shown
    # Where L starts is said by the summary and the hint under it, not by a third line
    # between them (h525 #7: three lines stacked after a stop).
    text = "\n".join(line.plain for line in queue_lines(stopped))
    assert "L relaunch from cell 0" in text and "resume from index" not in text, text


def test_a_queue_never_deployed_is_not_called_zero_of_zero_done():
    empty = derive_view("box1", (), (), {}, boot_id=BOOT, now=1100, runner_alive=False)
    assert empty.summary() == "not deployed" and "0/0" not in empty.summary()


def test_a_stopped_relaunch_counts_from_the_relaunch_to_its_last_sign_of_life():
    """Relaunched from cell 2, the runner killed while cell 2 ran: not "elapsed 0s"."""
    first = f"launch 1000 {BOOT} tmux 0 {SCRIPT} 4242\n"
    relaunch = f"launch 2000 {BOOT} tmux 2 {SCRIPT} 4343\n"
    records = parse_runner_state(first + relaunch)
    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1010 0\n"),
        "b": parse_cell_state(f"start 1010 {BOOT} 11\nend 1020 0\n"),
        "c": parse_cell_state(f"start 1020 {BOOT} 12\nstart 2000 {BOOT} 13\n"),
    }
    v = derive_view(
        "box1", DEPLOYED, records, attempts, boot_id=BOOT, now=3000, runner_alive=False,
        log_mtimes={"c": 2300},
    )  # fmt: skip
    assert v.state == STOPPED and v.cells[2].status == INTERRUPTED
    # From the relaunch (2000) to cell c's last log write (2300), and said to be a floor.
    assert v.elapsed_s == 300 and v.elapsed_is_lower_bound
    assert "elapsed ≥5m00s" in v.summary()
    assert v.cells[2].ran(v.now) == "≥5m00s"  # not "16m40s" and growing with the clock
    # No log written: the relaunch's own records are all there is.
    silent = derive_view(
        "box1", DEPLOYED, records, attempts, boot_id=BOOT, now=3000, runner_alive=False
    )
    assert silent.elapsed_s == 0 and silent.cells[2].ran(3000) == ""
    # Still running: from the relaunch to now, not from the first launch.
    running = derive_view(
        "box1", DEPLOYED, records, attempts, boot_id=BOOT, now=2100, runner_alive=True,
        alive_cells=frozenset({"c"}),
    )  # fmt: skip
    assert running.elapsed_s == 100 and not running.elapsed_is_lower_bound
    assert "elapsed 1m40s" in running.summary() and running.cells[2].ran(2100) == "1m40s"


def test_a_failed_cell_says_why_from_its_last_printed_line():
    from rgt_tui.cli.queue import format_view
    from rgt_tui.content.queue_text import queue_pane_line

    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1001 1\n"),
        "b": parse_cell_state(f"start 1001 {BOOT} 11\nend 1002 1\n"),
        "c": parse_cell_state(f"start 1002 {BOOT} 12\nend 1003 0\n"),
    }
    v = derive_view(
        "box1", DEPLOYED, launches(), attempts, boot_id=BOOT, now=1100, runner_alive=True,
        reasons={
            "a": "ModuleNotFoundError: No module named 'numpy'",
            # The box's text: an escape sequence is shown, never obeyed, and cut.
            "b": "ModuleNotFoundError: No module named 'torch'\x1b[2J" + "x" * 500,
            "c": "a done cell's reason is not shown",
        },
    )  # fmt: skip
    assert v.cells[0].note == "ModuleNotFoundError: No module named 'numpy'"
    assert v.cells[1].note.startswith("ModuleNotFoundError: No module named 'torch'\\x1b[2J")
    assert len(v.cells[1].note) == 200 and "\x1b" not in v.cells[1].note
    assert v.cells[2].note == ""
    assert v.last_failed is not None and v.last_failed.name == "b"
    shown = format_view(v)
    assert "failed (exit 1)" in shown and "— ModuleNotFoundError: No module named 'numpy'" in shown
    line = queue_pane_line(v)
    assert line is not None
    summary, why = line.plain.split("\n")
    assert summary.startswith("queue 1/4 done · 2 failed")
    assert why.startswith("✖ b: ModuleNotFoundError: No module named 'torch'")


def test_a_retried_cell_says_how_often_and_where_its_outputs_went_in_both_views() -> None:
    from rgt_tui.cli.queue import format_view
    from rgt_tui.content.queue_text import cell_line
    from rgt_tui.domain.queue_state import CellView, QueueView

    aside = "/w/results/a.before-retry-20261129-095852"
    cell = CellView(0, "a", "running", started_at=90, attempts=2, retries=1, set_aside=aside)
    assert cell.retry_text() == f"retried 1×, earlier outputs in {aside}"
    assert CellView(1, "b", "done").retry_text() == ""
    view = QueueView("box1", "running", (cell,), None, "boot", 100, None)
    assert cell.retry_text() in format_view(view)  # queue show
    assert cell.retry_text() in cell_line(cell, 100).plain  # the Queue tab
    hostile = CellView(0, "a", "done", retries=1, set_aside="/w/\x1b]52;c;eA==\x07x")
    assert "\x1b" not in cell_line(hostile, 100).plain  # the box's path, escaped


def test_the_pane_counts_killed_cells_and_cells_waiting_for_a_retry() -> None:
    """A Slurm host's pane said ``1 failed · 1 OUT_OF_MEMORY`` while a killed cell and a
    pending retry sat in the queue: the retry was invisible on the pane."""
    from rgt_tui.content.queue_text import queue_pane_line
    from rgt_tui.domain.queue_state import KILLED, RETRY, CellView, QueueView
    from rgt_tui.domain.slurm_jobs import ClusterSide

    cells = (
        CellView(0, "a", DONE, exit_code=0, started_at=10, ended_at=20),
        CellView(1, "b", FAILED, exit_code=1, started_at=20, ended_at=30),
        CellView(2, "c", KILLED, started_at=30, ended_at=40),
        CellView(3, "d", RETRY),
        CellView(4, "e", "OUT_OF_MEMORY", started_at=40, ended_at=50),
    )
    for cluster in (ClusterSide(my_jobs=(("PENDING", 1),)), None):  # Slurm, then a box
        view = QueueView("h", "finished", cells, None, "boot", 100, None, cluster=cluster)
        line = queue_pane_line(view)
        assert line is not None
        first = line.plain.split("\n")[0]
        assert "1/5 done · 1 failed · 1 killed · 1 to retry" in first, first
        if cluster is not None:
            assert "1 OUT_OF_MEMORY" in first, first


def test_a_killed_cell_reads_killed_by_the_user_apart_from_how_long_it_ran() -> None:
    """The Queue tab's row: the state column no longer runs into the elapsed time, and a
    cell killed with X in the TUI does not name the CLI's ``rgt-tui queue kill``."""
    from rgt_tui.content.queue_text import cell_line
    from rgt_tui.domain.queue_state import KILLED, CellView

    attempts = {"a": parse_cell_state(f"start 1000 {BOOT} 10\nkill 1050 user next\nend 1060 143\n")}
    v = view(launches(), attempts, runner_alive=True)
    killed = v.cells[0]
    assert killed.status == KILLED and killed.note == "killed by the user", killed.note
    assert "rgt-tui queue kill" not in cell_line(killed, 1100).plain
    no_end = CellView(1, "b", KILLED, started_at=1000, ended_at=1099)  # the label says it all
    assert no_end.label == "killed by the user"
    assert "killed by the user  1m39s" in cell_line(no_end, 1100).plain


def test_a_cell_moved_after_it_was_cut_off_keeps_how_long_it_ran() -> None:
    """ux-h #15: a preempted box's cell, moved to a spare, ran ~1m40s, yet the queue read
    ``elapsed ≥0s`` (the skip dropped its last sign of life) and the pane left the move
    out where ``queue show`` counts it."""
    from rgt_tui.content.queue_text import queue_pane_line
    from rgt_tui.domain.queue_records import parse_cell_marks

    state = f"start 1000 {BOOT} 10\nskip 1200 moved to box4 (preempted)\n"
    v = derive_view(
        "box3", DEPLOYED, launches(), {"a": parse_cell_state(state)}, boot_id=BOOT, now=1300,
        runner_alive=False, log_mtimes={"a": 1100}, marks={"a": parse_cell_marks(state)},
    )  # fmt: skip
    assert v.cells[0].label == "moved" and v.state == STOPPED
    assert v.elapsed_text() == "≥1m40s", v.elapsed_text()
    assert "1 moved/skipped" in v.summary()
    line = queue_pane_line(v)
    assert line is not None and "0/4 done · 1 moved · stopped · elapsed ≥1m40s" in line.plain, (
        line.plain
    )


def test_the_pane_says_how_long_the_running_cell_ran_apart_from_the_queue() -> None:
    """ux-g #7: ``queue 1/3 done · b1b · 5m01s`` read as "b1b has run 5 minutes" while it
    had run one; 5m01s was the queue's time since its launch. The pane says both, named as
    the Queue tab names them (``cell 1 (b) for 1m10s · elapsed 5m10s``)."""
    from rgt_tui.content.queue_text import queue_pane_line

    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1240 0\n"),
        "b": parse_cell_state(f"start 1240 {BOOT} 11\n"),
    }
    v = view(launches(), attempts, runner_alive=True, alive={"b"}, now=1310)
    assert v.state == Q_RUNNING and v.current is not None and v.current.name == "b"
    assert "cell 1 (b) for 1m10s · elapsed 5m10s" in v.summary(), v.summary()
    line = queue_pane_line(v)
    assert line is not None
    assert line.plain == "queue 1/4 done · b for 1m10s · elapsed 5m10s", line.plain


def test_the_queue_tab_offers_relaunch_beside_retry_for_a_cell_cut_short() -> None:
    """ux-h #13: under a killed cell the tab offered only R (retry: outputs set aside,
    started over), though L (relaunch from it) is what resumes it from its checkpoint."""
    from rgt_tui.content.queue_text import IDLE_HINT, queue_lines

    attempts = {"a": parse_cell_state(f"start 1000 {BOOT} 10\nkill 1050 user stop\nend 1060 143\n")}
    killed = view(launches(), attempts)
    text = "\n".join(line.plain for line in queue_lines(killed))
    # The plan starts after a cell the user killed and stopped at: the hint says which
    # start resumes it (it read "L relaunch from it" and L planned cell 1: a user's hour).
    assert (
        "R retry or resume a cell · L relaunch from cell 1 (start at 0 to rerun a from its "
        "checkpoint, if any)" in text
    ), text
    failed = {"a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1060 1\n")}
    text = "\n".join(line.plain for line in queue_lines(view(launches("done 1060 0 1\n"), failed)))
    assert "L relaunch from cell 0 (reruns a from its checkpoint, if any)" in text, text
    # Done cells after it run again on that relaunch: said (a user's hour: left out).
    ran_on = {**failed, "b": parse_cell_state(f"start 1061 {BOOT} 11\nend 1070 0\n")}
    text = "\n".join(line.plain for line in queue_lines(view(launches("done 1070 1 1\n"), ran_on)))
    assert (
        "(start at 0 to rerun a from its checkpoint, if any; done cell 1 after it runs again "
        "too)" in text
    ), text
    # With a line added to the file and not sent, L's plan starts at it (the first new
    # cell after the last done one): the hint says that start, not the box's cells' own
    # (both s43 hours read "L relaunch from cell 0" over a plan that started at 4).
    from dataclasses import replace

    from rgt_tui.domain.queue_file import QueueCell
    from rgt_tui.domain.queue_prefix import NotSent

    every = {**ran_on, **{n: ran_on["b"] for n in ("c", "d")}}
    added = NotSent(
        "queues/box1.txt", ((4, QueueCell("queues/box1.txt", 5, "e", "e.yaml", "t", 1, True)),)
    )
    grown = replace(view(launches("done 1070 3 1\n"), every), not_sent=added)
    plain = " ".join("\n".join(line.plain for line in queue_lines(grown)).split())
    assert "L relaunch from cell 4 (start at 0 to rerun a from its checkpoint" in plain, plain
    done = {"a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1060 0\n")}
    plain = "\n".join(line.plain for line in queue_lines(view(launches(), done)))
    assert IDLE_HINT not in plain and "L relaunch" not in plain  # nothing to resume
    # The cells that never ran are said as the pane says them (s37 dev-loop #12).
    assert (
        "nothing runs · 3 cells not run: L starts from cell 1 · R retry or resume a cell" in plain
    )
    all_done = {n: done["a"] for n in ("a", "b", "c", "d")}
    plain = "\n".join(
        line.plain for line in queue_lines(view(launches("done 1060 4 4\n"), all_done))
    )
    assert IDLE_HINT in plain, plain  # nothing left to run: R alone
    # Nothing R can take (no cell ran: h461 #3, after the killed cell was moved away):
    # R is not offered, as it answered "no failed, killed or finished cell to retry".
    idle = view(launches(), {})
    assert not idle.retry_pickable
    plain = "\n".join(line.plain for line in queue_lines(idle))
    assert "nothing runs · 4 cells not run: L starts from cell 0" in plain, plain
    assert "R retry" not in plain, plain


def test_a_cell_its_group_stopped_reads_so_and_an_old_user_kill_reads_as_before() -> None:
    """The kill record says who stopped the cell: ``group`` (rgt-tui stopped this rank
    because another rank failed) reads "stopped with its group" in the row, the stop line
    and the teardown gate's words; ``user`` (what every kill said before, and what a box
    an older rgt-tui wrote to still holds) reads "killed by the user" as it did."""
    from rgt_tui.content.queue_text import cell_line
    from rgt_tui.domain.queue_state import GROUP_STOPPED, KILLED, USER_STOPPED
    from rgt_tui.domain.unfinished import queue_cells_seen

    stopped = launches("stop 1050 kill\nstopped 1061 1\ndone 1062 0 1\n")
    for who in ("group", "user"):
        state = f"start 1000 {BOOT} 10\nkill 1050 {who} stop\nend 1060 143\n"
        v = view(stopped, {"a": parse_cell_state(state)})
        cell = v.cells[0]
        assert cell.status == KILLED and cell.killed_by == who
        row = cell_line(cell, 1100).plain
        gate = queue_cells_seen(v, {}, lambda name: ()).unfinished
        if who == "group":
            assert cell.label == "stopped with its group (exit 143)", cell.label
            assert cell.note == "stopped with its group (another rank failed or went silent)"
            assert v.state == GROUP_STOPPED and v.resume_index == 0  # it runs again
            assert v.stop_text() == (
                "stopped with its group (another rank failed or went silent) in cell 0 (a); "
                "cell 1 and later not started"
            )
            assert gate[0][2] == "stopped with its group (exit 143) after 1m00s", gate
            assert "user" not in row + v.summary() + v.stop_text(), (row, v.summary())
        else:
            assert cell.label == "killed (exit 143)" and cell.note == "killed by the user"
            assert v.state == USER_STOPPED and v.resume_index == 1
            assert v.stop_text().startswith("stopped by the user after cell 0 (a)")
            assert gate[0][2] == "killed (exit 143) after 1m00s", gate
    # Asked, not yet ended; and killed with no end record (its runner died too).
    asked = parse_cell_state(f"start 1000 {BOOT} 10\nkill 1050 group stop\n")
    running = view(launches(), {"a": asked}, runner_alive=True, alive=("a",))
    assert (
        running.cells[0].note
        == "stopped with its group (another rank failed or went silent): ending"
    )
    gone = view(launches(), {"a": asked}).cells[0]
    assert gone.status == KILLED and gone.label == "stopped with its group"
    assert gone.note == "stopped with its group (another rank failed or went silent); no end record"


def test_a_retrys_launch_runs_its_cell_alone_and_finished_counts_the_cells_not_run():
    """A retry's launch starts past the last cell: nothing follows its cell (the kill
    dialog said "then run the next cell"), and its end reads finished with the cells it
    never ran counted, not as if every cell had run (a user's hour)."""
    retried = {"a": parse_cell_state(f"start 1001 {BOOT} 10\n")}
    running = view(launches(start=4), retried, runner_alive=True, alive={"a"})
    assert running.current is not None and running.current.name == "a"
    assert running.next_cell is None
    # Its other cells wait, but not for this launch: said on each (they read "pending"
    # like cells about to run, a user's second hour, s41).
    assert [c.note for c in running.cells[1:]] == [NOT_IN_LAUNCH] * 3
    # A plain launch from cell 0: b comes next.
    plain = view(launches(), retried, runner_alive=True, alive={"a"})
    assert plain.next_cell is not None and plain.next_cell.name == "b"
    assert not any(c.note for c in plain.cells)
    # Launched from cell 2: b is not run by it, c and d are.
    later = view(launches(start=2), retried, runner_alive=True, alive={"a"})
    assert [c.note for c in later.cells[1:]] == [NOT_IN_LAUNCH, "", ""]
    ended = {"a": parse_cell_state(f"start 1001 {BOOT} 10\nend 1010 0\n")}
    done = view(launches("done 1010 1 0\n", start=4), ended)
    assert done.state == FINISHED
    assert done.summary().startswith("finished · 1/4 done · 3 not run"), done.summary()
    # Its rows say so once it ended too, not plain "pending" (h493 #1).
    assert [c.note for c in done.cells[1:]] == [NOT_IN_LAUNCH] * 3
    assert "only a launch that starts at or before it runs it" in NOT_IN_LAUNCH


def test_a_launch_without_a_start_never_runs_a_done_cell_again_when_it_can_avoid_it():
    from types import SimpleNamespace

    from rgt_tui.domain.queue_state import KILLED, SKIPPED, relaunch_start

    def cells(*statuses: str):
        return [SimpleNamespace(index=i, status=s) for i, s in enumerate(statuses)]

    # A user's hour: launched from 2 (0 and 1 never ran), 2 done, 3 and 4 appended. The
    # append said "launch from cell 3"; L planned from 0 and would have run 2 again.
    assert relaunch_start(None, cells(PENDING, PENDING, DONE, PENDING, PENDING)) == 3
    assert relaunch_start(None, cells(DONE, FAILED, PENDING)) == 1  # the failed one resumes
    assert relaunch_start(None, cells(DONE, DONE, SKIPPED, PENDING)) == 3  # moved away
    assert relaunch_start(None, cells(KILLED, DONE, PENDING)) == 2
    # Nothing runnable after the last done cell: the first runnable one (the plan warns).
    assert relaunch_start(None, cells(FAILED, DONE)) == 0
    assert relaunch_start(None, cells(DONE, DONE)) == 0  # all done: all again, warned
    assert relaunch_start(2, cells(PENDING, DONE, PENDING, DONE)) == 2  # a resume index rules


def test_the_queue_tabs_code_column_lines_up_whatever_the_duration() -> None:
    """``4s  code`` above ``21s  code`` shifted the column by the duration's width."""
    from rgt_tui.content.queue_text import cell_line
    from rgt_tui.domain.queue_state import CellView

    rows = [
        cell_line(CellView(i, name, DONE, started_at=1000, ended_at=1000 + took, attempts=1), 2000)
        for i, (name, took) in enumerate([("a", 4), ("b", 21), ("c", 62), ("d", 3725)])
    ]
    starts = {row.plain.index("code") for row in rows}
    assert len(starts) == 1, [row.plain for row in rows]
    alone = cell_line(CellView(4, "e", DONE, started_at=1000, ended_at=1004), 2000)
    assert alone.plain.endswith("  4s")  # nothing follows: no padding at the row's end


def test_a_queue_state_reads_as_a_sentence() -> None:
    """ "the queue is never launched" read wrong (a user's hour)."""
    from rgt_tui.domain.queue_state import FINISHED, NEVER_LAUNCHED, queue_is

    assert queue_is(NEVER_LAUNCHED) == "the queue was never launched"
    assert queue_is(FINISHED) == "the queue is finished"


def test_a_stop_after_a_retried_earlier_cell_goes_on_from_the_first_cell_not_started():
    """hour s17a #2, #3: cell a, retried, runs again while b is done; a stop after it
    told --start 1 (b: done, paid again) where the dialog said c does not start. After
    the stop, an interrupted cell from before the last done one is not where to go on."""
    retried = {
        "a": parse_cell_state(
            f"start 1000 {BOOT} 10\nkill 1005 user next\nend 1006 137\n"
            f"retry 1020 -\nstart 1030 {BOOT} 12\n"
        ),
        "b": parse_cell_state(f"start 1006 {BOOT} 11\nend 1020 0\n"),
    }
    running = view(launches(), retried, runner_alive=True, alive={"a"})
    assert running.current is not None and running.current.name == "a"
    assert running.start_after_stop == 2 == running.next_cell.index  # c, as the dialog says
    # An earlier launch's interrupted cell (a, its runner gone), then a relaunch from 1
    # that finished b and was stopped before c.
    attempts = {
        "a": parse_cell_state(f"start 1000 {OTHER} 10\n"),
        "b": parse_cell_state(f"start 1030 {BOOT} 12\nend 1040 0\n"),
    }
    relaunched = parse_runner_state(
        f"launch 1000 {OTHER} tmux 0 {SCRIPT} 4242\n"
        f"launch 1030 {BOOT} tmux 1 {SCRIPT} 4343\nstop 1035 user\nstopped 1040 2\n"
    )
    stopped = view(relaunched, attempts)
    assert stopped.cells[0].status == INTERRUPTED and stopped.cells[1].status == DONE
    assert stopped.resume_index == 2  # not 0: a start there runs b again


def test_a_done_cell_of_an_earlier_launch_is_next_when_this_launch_reruns_it():
    """Hour s34 TUI #2: launched from 1 while c (2) and d (3) were done by an earlier
    launch, the runner runs them again (it skips only a cell moved away); the kill dialog
    offered no "Kill, go on" and the stop dialog said the queue ends anyway."""
    earlier = {n: parse_cell_state(f"start 900 {BOOT} 10\nend 950 0\n") for n in "cd"}
    b = {"b": parse_cell_state(f"start 1001 {BOOT} 10\n")}
    running = view(launches(start=1), {**earlier, **b}, runner_alive=True, alive={"b"})
    assert running.current is not None and running.current.name == "b"
    assert running.cells[2].status == DONE
    assert running.next_cell is not None and running.next_cell.name == "c"
    # Done in this launch (a retry of b while c and d ran): not started again.
    this = {n: parse_cell_state(f"start 1020 {BOOT} 10\nend 1030 0\n") for n in "cd"}
    again = view(launches(start=1), {**this, **b}, runner_alive=True, alive={"b"})
    assert again.next_cell is None


def test_a_stop_names_the_later_of_two_cells_started_in_the_same_second():
    """A cell killed at once and the next begun within its second: the stop is after the
    later one (a CI run read "after cell 0 (a)" of a stop after cell 1 (b))."""
    from rgt_tui.domain.queue_state import USER_STOPPED

    stopped = launches("stop 1005 user\nstopped 1010 2\ndone 1010 1 1\n")
    killed = parse_cell_state(f"start 1001 {BOOT} 10\nkill 1001 user next\nend 1001 143\n")
    done = parse_cell_state(f"start 1001 {BOOT} 11\nend 1009 0\n")
    v = view(stopped, {"a": killed, "b": done})
    assert v.state == USER_STOPPED, v.state
    assert v.stop_text().startswith("stopped by the user after cell 1 (b); cell 2"), v.stop_text()


def test_a_slurm_stop_says_it_holds_every_waiting_task_a_requeued_one_too() -> None:
    """h501 #5: cell a, requeued and waiting, was held by the stop of running cell b,
    while the dialog said "it is the last cell to run, so the queue ends after it"."""
    from rgt_tui.domain.queue_state import PENDING, RUNNING, CellView, QueueView
    from rgt_tui.domain.slurm_jobs import ClusterSide

    cells = (
        CellView(0, "a", PENDING),  # requeued: waits before the running one
        CellView(1, "b", RUNNING, started_at=10),
        CellView(2, "c", DONE, exit_code=0, started_at=10, ended_at=20),
    )
    slurm = QueueView("h", "running", cells, None, "boot", 100, None, cluster=ClusterSide())
    assert slurm.stop_effect() == "the waiting task 0 (a) is held and does not start"
    # A cell queued to retry, its task pending in squeue, is held too (review h504 #5).
    from rgt_tui.domain.queue_state import RETRY
    from rgt_tui.domain.slurm_jobs import SlurmCell

    retry = CellView(0, "a", RETRY, slurm=SlurmCell("a", 0, "3_0", "PENDING"))
    retried = QueueView(
        "h", "running", (retry, *cells[1:]), None, "boot", 100, None, cluster=ClusterSide()
    )
    assert retried.stop_effect() == "the waiting task 0 (a) is held and does not start"
    done = tuple(c if c.index else CellView(0, "a", DONE, exit_code=0) for c in cells)
    ended = QueueView("h", "running", done, None, "boot", 100, None, cluster=ClusterSide())
    assert ended.stop_effect().startswith("no task waits, so the queue ends once the running")


def test_a_cell_done_while_the_oom_kill_counter_rose_says_so():
    """h583 #5: a script whose python child was OOM-killed, the script itself exiting 0,
    read plain "done" in queue show, the Queue tab and diagnose."""
    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 10\nend 1010 0\n", "start 1000 0\nend 1010 1\n"),
        "b": parse_cell_state(f"start 1010 {BOOT} 11\nend 1020 0\n", "start 1010 1\nend 1020 1\n"),
        "c": parse_cell_state(f"start 1020 {BOOT} 12\nend 1030 0\n", "start 1020 ?\nend 1030 2\n"),
    }
    v = view(launches("done 1030 3 0\n"), attempts)
    a, b, c = v.cells[:3]
    assert a.status == b.status == c.status == DONE
    assert a.note.startswith("the box's oom_kill counter rose while it ran (0 → 1)"), a.note
    assert b.note == "" and c.note == ""  # unchanged, or not known at its start


def test_cells_named_with_wide_characters_keep_the_columns():
    """h583 #6: a name of CJK characters or an emoji (two cells each) pushed the status
    column right in the Queue tab, queue show and the pickers."""
    from dataclasses import replace

    from rich.cells import cell_len

    from rgt_tui.content.queue_text import cell_line
    from rgt_tui.domain.text import pad

    assert pad("宽字符", 8) == "宽字符  " and cell_len(pad("ü😀", 5)) == 5
    assert pad("x" * 30, 28) == "x" * 30  # never cut: the name is whole
    attempts = {n: parse_cell_state(f"start 1000 {BOOT} 10\nend 1010 0\n") for n in "abcd"}
    v = view(launches("done 1030 4 0\n"), attempts)
    rows = []
    for name in ("plain", "宽字符名前", "ünï€😀"):
        line = cell_line(replace(v.cells[0], name=name), 1100).plain
        rows.append(line[: line.index("done")])
    assert len({cell_len(r) for r in rows}) == 1, rows


def test_a_failed_cell_with_no_exit_code_reads_failed_not_exit_none() -> None:
    """h614 #7: a group cell whose rank was interrupted read "failed (exit None)"."""
    from rgt_tui.domain.queue_state import FAILED, CellView

    assert CellView(0, "g1", FAILED).label == "failed"
    assert CellView(0, "g1", FAILED, exit_code=3).label == "failed (exit 3)"
