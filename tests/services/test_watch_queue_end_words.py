"""What the end-of-queue notification says (issue 43.10a): a kill says the user killed the
cell and whether the queue stopped, an interrupted cell says so, and both advise running
it again, never tearing the box down; only a queue with nothing left to run advises the
teardown. Fed the records exactly as run_queue.sh and queue_ctl.sh write them."""

from __future__ import annotations

from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_marks,
    parse_cell_state,
    parse_cells_tsv,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import derive_view
from rgt_tui.services.watch.events import HostState, WatchEvent
from rgt_tui.services.watch.tracker import HostMemory, derive

BOOT = "boot-box1"
LAUNCH = "launch 1700000000 boot-box1 tmux 0 /root/.rgt/bin/run_queue.0123456789ab.sh 4242\n"


def told(
    names: str,
    runner: str,
    cells: dict[str, str],
    *,
    interruptible: bool = False,
    cost_per_hour: float | None = None,
) -> WatchEvent:
    """The one queue_done event a fresh memory owes for these records."""
    deployed = parse_cells_tsv(
        "".join(cells_tsv_line(i, n, f"run {n}") for i, n in enumerate(names.split()))
    )
    attempts = {name: parse_cell_state(text) for name, text in cells.items()}
    marks = {name: parse_cell_marks(text) for name, text in cells.items()}  # skip, retry
    view = derive_view(
        "box1", deployed, parse_runner_state(LAUNCH + runner), attempts, boot_id=BOOT,
        now=1700000100, runner_alive=False, marks=marks,
    )  # fmt: skip
    state = HostState(
        None, (), "connected", None, view, cost_per_hour, None, 1700000100.0,
        interruptible=interruptible,
    )  # fmt: skip
    _, events = derive("box1", HostMemory(), state, reminder_s=0)
    (event,) = [e for e in events if e.kind == "queue_done"]
    return event


def test_a_killed_only_cell_says_killed_by_you_and_the_queue_stopped() -> None:
    # rgt-tui queue kill box1 alpha --then stop on a one-cell queue: the runner found no
    # next cell and wrote its ordinary done record (0 ok, 1 failed).
    event = told(
        "alpha",
        "stop 1700000050 kill\ndone 1700000060 0 1\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nkill 1700000050 user stop\nend 1700000055 143\n"
        },
    )
    assert event.title == "box1: cell alpha killed by you; the queue stopped: 0/1 done"
    assert "tear" not in event.body
    # Every way on: R starts it over or resumes it alone, L relaunches from it (ux-h #13).
    assert "R on the Queue tab starts it over (rgt-tui queue retry box1 alpha)" in event.body
    assert "or resumes it from its checkpoint, if one was written" in event.body, event.body
    assert "(the same with --resume)" in event.body, event.body
    assert "L relaunches from it on, resuming likewise" in event.body, event.body
    assert "(rgt-tui launch box1 --start 0)" in event.body, event.body
    assert "run it again with R" not in event.body
    # Nothing finished: nothing to pull (a user's hour read "pull what finished").
    assert "Pull what finished" not in event.body, event.body


def test_a_queue_with_a_done_cell_says_to_pull_it() -> None:
    event = told(
        "alpha beta",
        "done 1700000060 1 1\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nend 1700000010 0\n",
            "beta": "start 1700000011 boot-box1 4301\nend 1700000020 1\n",
        },
    )
    assert "Pull what finished with p meanwhile." in event.body, event.body


def test_a_rank_the_group_stopped_says_so_not_killed_by_you() -> None:
    # rgt-tui's watch of a group stopped this rank because another rank failed first.
    event = told(
        "alpha",
        "stop 1700000050 kill\ndone 1700000060 0 1\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nkill 1700000050 group stop\nend 1700000055 143\n"
        },
    )
    assert event.title == "box1: cell alpha stopped with its group; the queue stopped: 0/1 done"
    assert "killed by you" not in event.body, event.body


def test_a_kill_that_went_on_says_so() -> None:
    event = told(
        "alpha beta",
        "done 1700000090 1 1\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nkill 1700000050 user next\nend 1700000055 143\n",
            "beta": "start 1700000056 boot-box1 4301\nend 1700000080 0\n",
        },
    )
    assert event.title == "box1: cell alpha killed by you; the queue went on: 1/2 done"
    assert "tear" not in event.body


def test_an_interrupted_cell_says_interrupted_and_advises_running_it_again() -> None:
    # The cell's run_one was killed from outside (no end record); the runner went on.
    event = told(
        "alpha",
        "done 1700000060 0 1\n",
        {"alpha": "start 1700000001 boot-box1 4300\n"},
    )
    # Its last cell: the queue finished (the kill's own notice says so too: h481 #1).
    assert event.title == "box1: cell alpha interrupted; the queue finished: 0/1 done"
    assert "tear" not in event.body and "rgt-tui queue retry box1 alpha" in event.body
    assert "L relaunches from it" in event.body and "launch box1 --start 0" in event.body


def test_an_interrupted_cell_on_an_interruptible_box_leads_with_saving_its_checkpoint() -> None:
    """A RunPod-style TERM interrupts the cell before the box goes: this notice came first,
    and its "R starts it over" was read before any preemption was named (s35 resume hour
    #8). On an interruptible box it leads with pulling while the box answers."""
    records = ("alpha", "done 1700000060 0 1\n", {"alpha": "start 1700000001 boot-box1 4300\n"})
    event = told(*records, interruptible=True)
    assert event.body.index(
        "verify now while it answers (p, then v; or rgt-tui pull box1, then"
    ) < (event.body.index("R on the Queue tab starts it over")), event.body
    assert "m moves the cell to another box, resuming from that checkpoint" in event.body
    assert "preemption" not in told(*records).body  # a box that is not interruptible
    killed = (
        "alpha",
        "stop 1700000050 kill\ndone 1700000060 0 1\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nkill 1700000050 user stop\nend 1700000055 143\n"
        },
    )
    assert "preemption" not in told(*killed, interruptible=True).body  # the user's own kill


def test_several_cells_cut_short_offer_a_retry_of_each_and_a_relaunch_from_the_first() -> None:
    event = told(
        "alpha beta gamma",
        "done 1700000090 1 2\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nend 1700000010 0\n",
            "beta": "start 1700000011 boot-box1 4301\nend 1700000020 1\n",
            "gamma": "start 1700000021 boot-box1 4302\nkill 1700000050 user next\nend 1700000055 143\n",
        },
    )
    body = event.body
    assert "R on the Queue tab starts them over (rgt-tui queue retry box1 beta gamma)" in body
    assert "or resumes them from their checkpoint" in body, body
    assert "L relaunches from cell 1 on" in body, body
    assert "(rgt-tui launch box1 --start 1)" in body, body


def test_a_user_stop_advises_resuming_from_where_it_stopped() -> None:
    event = told(
        "alpha beta",
        "stop 1700000050 user\nstopped 1700000060 1\ndone 1700000060 1 0\n",
        {"alpha": "start 1700000001 boot-box1 4300\nend 1700000055 0\n"},
    )
    assert event.title == "box1: queue stopped by you: 1/2 done, 1 not run"
    assert "tear" not in event.body and "rgt-tui launch box1 --start 1" in event.body


def test_a_group_stop_between_cells_is_said_as_the_groups() -> None:
    event = told(
        "alpha beta",
        "stop 1700000050 group\nstopped 1700000060 1\ndone 1700000060 1 0\n",
        {"alpha": "start 1700000001 boot-box1 4300\nend 1700000055 0\n"},
    )
    assert event.title == "box1: queue stopped with its group: 1/2 done, 1 not run", event.title
    assert "by you" not in event.body


def test_a_queue_with_nothing_left_advises_pull_verify_and_teardown() -> None:
    event = told(
        "alpha",
        "done 1700000060 1 0\n",
        {"alpha": "start 1700000001 boot-box1 4300\nend 1700000055 0\n"},
    )
    assert event.title == "box1: queue finished: 1/1 done"
    assert "tear the box down" in event.body
    assert "bills" not in event.body  # no cost given: none said


def test_a_finished_queue_says_what_the_idle_box_costs() -> None:
    """Hour s24a #9: box3 finished and sat idle, never pulled, at $1.20/h; the
    notification said nothing of what waiting cost."""
    event = told(
        "alpha",
        "done 1700000060 1 0\n",
        {"alpha": "start 1700000001 boot-box1 4300\nend 1700000055 0\n"},
        cost_per_hour=1.2,
    )
    assert event.body.endswith("It bills $1.20/h while it idles."), event.body


def test_a_resumed_queue_counts_every_cell_not_only_its_last_launch() -> None:
    """ux-b #9: the done record of a launch from cell 2 says "1 ok, 0 failed"; the title
    counts as the body does ("finished · 3/3 done")."""
    cells = {
        "alpha": "start 1700000001 boot-box1 4300\nend 1700000010 0\n",
        "beta": "start 1700000011 boot-box1 4301\nend 1700000020 3\n",
        "gamma": "start 1700000071 boot-box1 4302\nend 1700000080 0\n",
    }
    resumed = "launch 1700000070 boot-box1 tmux 2 /root/.rgt/bin/run_queue.0123456789ab.sh 4343\n"
    event = told(
        "alpha beta gamma", "done 1700000060 1 1\n" + resumed + "done 1700000090 1 0\n", cells
    )
    assert event.title == "box1: queue finished: 2/3 done, 1 failed"
    assert "2/3 done · 1 failed" in event.body


def test_a_relaunch_by_hand_after_a_kill_then_stop_tells_its_own_end() -> None:
    """kill alpha --then stop, then the user launched again from beta: the second launch's
    end is its own ("queue finished"), not the first launch's kill with "the queue went
    on" (a user's hour read that after a relaunch by hand)."""
    event = told(
        "alpha beta",
        "stop 1700000050 kill\ndone 1700000060 0 1\n"
        "launch 1700000070 boot-box1 tmux 1 /root/.rgt/bin/run_queue.0123456789ab.sh 4343\n"
        "done 1700000090 1 0\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nkill 1700000050 user stop\nend 1700000055 143\n",
            "beta": "start 1700000071 boot-box1 4344\nend 1700000089 0\n",
        },
    )
    assert event.title == "box1: queue finished: 1/2 done, 1 killed", event.title
    # alpha is still to run again: both ways are offered, the teardown is not.
    assert "rgt-tui queue retry box1 alpha" in event.body and "tear" not in event.body


def test_a_runner_gone_without_its_done_record_is_told() -> None:
    """kill -9 of the runner and its cell (or the box's OOM killer): no done record, the
    runner dead on the same boot. Nothing said so before (a user's hour)."""
    event = told(
        "alpha beta",
        "",
        {"alpha": "start 1700000001 boot-box1 4300\n"},
    )
    assert event.title == (
        "box1: the queue stopped: its runner is gone (0/2 done, 1 interrupted, 1 not run)"
    ), event.title
    assert event.severity == "warning" and event.key == "queue_gone:box1:1700000000"
    assert "rgt-tui diagnose box1" in event.body
    assert "resume from cell 0 with L (rgt-tui launch box1 --start 0)" in event.body, event.body
    assert "(killed by hand, or by the box's OOM killer)" in event.body
    # On an interruptible box a preemption is named first (hour s21a #6).
    spot = told(
        "alpha beta", "", {"alpha": "start 1700000001 boot-box1 4300\n"}, interruptible=True
    )
    assert (
        "(a preemption of this interruptible box, killed by hand, or the box's OOM killer)"
        in spot.body
    ), spot.body
    # And, as the end of a launch says it there, to pull now while it answers (h502 #2).
    assert spot.body.startswith(
        "This box is interruptible: pull and verify now while it answers (p, then v; or "
        "rgt-tui pull box1, then rgt-tui verify box1); if it goes, m moves the cell"
    ), spot.body
    assert "pull and verify now" not in event.body


def test_the_pane_says_a_runner_is_gone_and_what_to_press() -> None:
    """The TUI says it on the pane too (without tui_notify no watch event reaches it)."""
    from rgt_tui.content.queue_text import queue_pane_line

    deployed = parse_cells_tsv(
        "".join(cells_tsv_line(i, n, f"run {n}") for i, n in enumerate(["alpha", "beta"]))
    )
    attempts = {"alpha": parse_cell_state("start 1700000001 boot-box1 4300\n")}
    view = derive_view(
        "box1", deployed, parse_runner_state(LAUNCH), attempts, boot_id=BOOT,
        now=1700000100, runner_alive=False,
    )  # fmt: skip
    line = queue_pane_line(view)
    assert line is not None and "✖ its runner is gone" in line.plain, line
    assert "d says why, L resumes from cell 0" in line.plain
    gone = queue_pane_line(view, torn_down=True)
    assert gone is not None and "runner is gone" not in gone.plain and "L resumes" not in gone.plain


def test_the_pane_says_a_cell_appended_after_the_end_has_not_run() -> None:
    """Hour s24c #9: "queue 3/6 done · … · finished" while a cell appended after the end
    waited for a launch, the box idle and billing."""
    from rgt_tui.content.queue_text import queue_pane_line

    deployed = parse_cells_tsv(
        "".join(cells_tsv_line(i, n, f"run {n}") for i, n in enumerate(["alpha", "extra"]))
    )
    attempts = {"alpha": parse_cell_state("start 1700000001 boot-box1 4300\nend 1700000055 0\n")}
    view = derive_view(
        "box1", deployed, parse_runner_state(LAUNCH + "done 1700000060 1 0\n"), attempts,
        boot_id=BOOT, now=1700000100, runner_alive=False,
    )  # fmt: skip
    assert view.state == "finished"
    line = queue_pane_line(view)
    assert line is not None and "finished · 1 not run: L starts" in line.plain, line
    # A torn-down box's pane offers no launch: L is refused there (h581 #10).
    gone = queue_pane_line(view, torn_down=True)
    assert gone is not None and "finished · 1 not run" in gone.plain and "L " not in gone.plain


def test_cells_a_start_index_passed_over_are_not_counted_as_left_to_run() -> None:
    """Review s24 #8: launched from cell 1, cell 0 never ran; L's default start does not
    run it either, so the pane's count must not name it."""
    from rgt_tui.content.queue_text import queue_pane_line

    deployed = parse_cells_tsv(
        "".join(cells_tsv_line(i, n, f"run {n}") for i, n in enumerate(["early", "alpha"]))
    )
    attempts = {"alpha": parse_cell_state("start 1700000001 boot-box1 4300\nend 1700000055 0\n")}
    launched = LAUNCH.replace(" tmux 0 ", " tmux 1 ")
    view = derive_view(
        "box1", deployed, parse_runner_state(launched + "done 1700000060 2 0\n"), attempts,
        boot_id=BOOT, now=1700000100, runner_alive=False,
    )  # fmt: skip
    assert view.state == "finished" and view.cells[0].status == "pending", view.summary()
    line = queue_pane_line(view)
    assert line is not None and "finished" in line.plain and "not run" not in line.plain, line


def test_a_killed_cell_before_done_cells_is_offered_its_resume_alone() -> None:
    """A user's hour (session 29): cell 0 killed after cells 1 and 2 had finished, and
    the notice offered L "from it" without a word that the launch runs 1 and 2 again.
    Then (s43) the only way on from its checkpoint was that relaunch: R's Resume now
    runs it alone, and L, which would run 1 and 2 again, is not offered."""
    event = told(
        "alpha beta gamma",
        "stop 1700000050 kill\ndone 1700000060 2 1\n",
        {
            "alpha": "start 1700000030 boot-box1 4300\nkill 1700000050 user stop\nend 1700000055 143\n",
            "beta": "start 1700000001 boot-box1 4301\nend 1700000010 0\n",
            "gamma": "start 1700000011 boot-box1 4302\nend 1700000020 0\n",
        },
    )
    body = event.body
    assert "or resumes it from its checkpoint, if one was written, and runs no other cell " in body
    assert "(the same with --resume)" in body and "L relaunches" not in body, body
    assert "--start" not in body, body


def test_the_body_never_contradicts_how_the_title_says_the_queue_ended() -> None:
    """s35 docs audit: "cell alpha killed by you; the queue stopped" over a body that
    began "finished · 0/2 done"."""
    event = told(
        "alpha beta",
        "stop 1700000050 kill\ndone 1700000060 0 1\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nkill 1700000050 user stop\nend 1700000051 143\n"
        },
    )
    assert event.title == (
        "box1: cell alpha killed by you; the queue stopped: 0/2 done, 1 not run"
    ), event.title
    assert event.body.startswith("0/2 done"), event.body
    assert "finished" not in event.body.split(".")[0]


def test_a_kill_of_the_last_cell_that_goes_on_says_the_queue_finished() -> None:
    """h481 #1: X (kill, the queue goes on) on the last cell gave two toasts that
    disagreed: the kill's "the queue is finished", then "the queue stopped". With no
    cell after it, the queue finished, and both say so."""
    event = told(
        "alpha beta",
        "done 1700000060 1 1\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nend 1700000010 0\n",
            "beta": "start 1700000011 boot-box1 4301\nkill 1700000050 user next\nend 1700000055 143\n",
        },
    )
    assert event.title == "box1: cell beta killed by you; the queue finished: 1/2 done", event.title


def test_a_kill_counts_the_cells_an_earlier_launch_killed() -> None:
    """Review h483 #9: the title counted no killed cell once it named the one cut now,
    so a cell killed in the launch before appeared nowhere."""
    event = told(
        "alpha beta",
        "launch 1700000070 boot-box1 tmux 1 /root/.rgt/bin/run_queue.0123456789ab.sh 4343\n"
        "done 1700000090 0 1\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nkill 1700000050 user stop\nend 1700000055 143\n",
            "beta": "start 1700000071 boot-box1 4344\nkill 1700000080 user next\nend 1700000085 143\n",
        },
    )
    assert event.title == (
        "box1: cell beta killed by you; the queue finished: 0/2 done, 1 killed"
    ), event.title


def test_a_cell_its_group_stopped_says_the_queue_stopped_without_the_stop_record() -> None:
    """Review h483 #2: a group's view has no stop records (group_run._without_stop), and
    a rank's cell the group stopped read "the queue finished"."""
    event = told(
        "alpha beta",
        "done 1700000060 0 1\n",
        {
            "alpha": "start 1700000001 boot-box1 4300\nkill 1700000050 group stop\nend 1700000055 143\n"
        },
    )
    assert event.title == (
        "box1: cell alpha stopped with its group; the queue stopped: 0/2 done, 1 not run"
    ), event.title


def test_a_runner_gone_with_every_other_cell_moved_away_offers_no_relaunch() -> None:
    """h541 #6: its cells done or moved to another box, the notice still said "launch it
    again with L", which would run nothing, or done work again."""
    event = told(
        "alpha beta gamma",
        "",
        {
            "alpha": "start 1700000001 boot-box1 4300\nend 1700000002 0\n",
            "beta": "skip 1700000003 moved to box2 (resumed from step-9.pt)\n",
            "gamma": "skip 1700000003 moved to box2\n",
        },
    )
    assert "launch it again" not in event.body and "resume from cell" not in event.body
    assert (
        "nothing is left to run here: 2 cells moved to another box (rgt-tui queue show box1 "
        "says where)" in event.body
    ), event.body
    # On a spot box: no "if it goes, m moves the cell" beside nothing left (review h544).
    cells = {
        "alpha": "start 1700000001 boot-box1 4300\nend 1700000002 0\n",
        "beta": "skip 1700000003 moved to box2\n",
        "gamma": "skip 1700000003 moved to box2\n",
    }
    spot = told("alpha beta gamma", "", cells, interruptible=True)
    assert "m moves the cell" not in spot.body and "nothing is left to run here" in spot.body


def test_a_box_back_after_a_told_silence_names_its_queue_only_when_it_has_one() -> None:
    """h582 #8: a host with no queue was sent to `rgt-tui queue show`, which says only
    "not deployed"; one with a queue still is."""
    from dataclasses import replace

    deployed = parse_cells_tsv(cells_tsv_line(0, "alpha", "run alpha"))
    attempts = {"alpha": parse_cell_state("start 1700000001 boot-box1 4300\n")}
    view = derive_view(
        "box1", deployed, parse_runner_state(LAUNCH), attempts, boot_id=BOOT,
        now=1700000100, runner_alive=True, alive_cells=frozenset({"alpha"}),
    )  # fmt: skip
    memory = HostMemory(boot_id=BOOT, lost_since=1700000000.0, silent_told=1700000000.0)
    said = {}
    for name, queue in (("queued", view), ("none", None)):
        state = HostState(None, (), "connected", None, queue, None, None, 1700000400.0)
        _, events = derive("box1", replace(memory), state, reminder_s=0)
        (back,) = [e for e in events if e.kind == "back"]
        said[name] = back.body
    assert "Where its queue stands: rgt-tui queue show box1" in said["queued"]
    assert "queue show" not in said["none"] and "It did not answer from" in said["none"]
