"""Queue control over the loopback boxes: stop, kill, retry and skip, each checked in the
box's records and files afterwards. Cells wait on gate files the test creates, never on
a sleep. Over 450 lines on purpose: the four verbs share the runner, its gate cells and
their records; each case reads them the same way."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from support.queues import SCRIPT_RUN, wait_view
from support.waiting import wait_for

from rgt_tui.domain.queue_state import (
    DONE,
    FAILED,
    FINISHED,
    GROUP_STOPPED,
    KILLED,
    PENDING,
    RETRY,
    RUNNING,
    SKIPPED,
    USER_STOPPED,
)
from rgt_tui.domain.unfinished import queue_cells_seen
from rgt_tui.services.box_ctl import run_ctl
from rgt_tui.services.queue.append import against_box
from rgt_tui.services.queue.control import (
    kill_cell,
    plan_retry,
    retry_cells,
    skip_cell,
    stop_queue,
)
from rgt_tui.services.queue.launch import QueueError, launch, plan_launch
from rgt_tui.services.queue.view import read_queue_view


def gate(name: str) -> str:
    """A cell body that waits for ``$HOME/<name>`` (the test opens it), then succeeds."""
    return f'echo "waiting for {name}"; while [ ! -e "$HOME/{name}" ]; do sleep 0.05; done; echo "{name} open"'


async def launched(qf, text: str, **kwargs):
    qf.write_queue(text)
    transport = qf.transport()
    plan = await plan_launch(qf.fleet, qf.host(), transport, **kwargs)
    assert plan.ok, plan.problems
    result = await launch(plan, transport)
    return transport, result


async def test_stop_ends_the_queue_after_the_current_cell_and_a_later_launch_goes_on(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    a = qf.cell_script("a", gate("go_a"))
    b = qf.cell_script("b", "echo b ran")
    c = qf.cell_script("c", "echo c ran")
    transport, _ = await launched(qf, f"{a} t\n{b} t\n{c} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="cell a to run")

    first = await stop_queue(host, transport)
    assert not first.already and first.current is not None and first.current.name == "a"
    again = await stop_queue(host, transport)
    assert again.already  # one request per launch: a second press changes nothing
    shown = await read_queue_view(host, transport)
    assert (
        shown.stop_requested
        and "stop requested: the queue ends after cell 0 (a)" in shown.stop_text()
    )
    assert "stop requested" in shown.summary()

    (qf.root() / "go_a").touch()
    view = await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")
    assert [(c.name, c.status) for c in view.cells] == [("a", DONE), ("b", PENDING), ("c", PENDING)]
    assert qf.state("b") == "" and qf.state("c") == ""  # never started
    runner = (qf.qdir() / "runner.state").read_text().splitlines()
    assert re.fullmatch(r"stop \d+ user", runner[1]) and runner[2].startswith("stopped ")
    assert runner[2].endswith(" 1") and re.fullmatch(r"done \d+ 1 0", runner[3])
    assert len([r for r in runner if r.startswith("stop ")]) == 1
    log = (qf.qdir() / "queue.log").read_text().splitlines()
    assert log[-1] == "QUEUE DONE: 1/1 succeeded; failed: none; stopped by the user after cell 0 a"
    assert view.stop_text() == (
        "stopped by the user after cell 0 (a); cell 1 and later not started"
    )
    assert view.resume_index == 1

    with pytest.raises(QueueError) as idle:  # nothing runs now: nothing to stop
        await stop_queue(host, transport)
    assert idle.value.code == "not-running"
    # A pending cell of a stopped queue waits for nobody: the refusal says how it runs.
    pending = await plan_retry(qf.fleet, host, transport, ["b"])
    assert pending.problems == (
        "cell b never ran, and no queue runs on box1: rgt-tui launch box1 --start 1 runs it",
    )

    plan = await plan_launch(qf.fleet, host, transport, start_index=view.resume_index)
    assert plan.ok, plan.problems
    await launch(plan, transport)
    await transport.close()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the relaunch to finish")
    assert [c.status for c in view.cells] == [DONE, DONE, DONE]


async def test_kill_then_next_kills_the_cell_tree_and_the_queue_goes_on(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    # The cell holds a child (a DataLoader worker, say): the kill must reach it too.
    hold = qf.cell_script("hold", 'sleep 600 & echo $! > "$HOME/child.pid"; echo started; wait')
    after = qf.cell_script("after", "echo after ran")
    transport, _ = await launched(qf, f"{hold} t\n{after} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the hold cell to run")
    await wait_for(lambda: (qf.root() / "child.pid").exists(), what="the child to start")
    child = int((qf.root() / "child.pid").read_text())

    result = await kill_cell(host, transport, then="next", grace_s=5)
    assert result.ended and result.cell is not None and result.cell.status == KILLED
    assert result.cell.exit_code == 143 and result.cell.label == "killed (exit 143)"
    assert "killed by the user" in result.cell.note and result.pid > 0
    state = qf.state("hold").splitlines()
    assert re.fullmatch(r"kill \d+ user next", state[-2]) and state[-1].split()[::2] == [
        "end",
        "143",
    ]
    await wait_for(lambda: not _alive(child), what="the cell's child to die")

    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to go on and finish")
    assert [(c.name, c.status) for c in view.cells] == [("hold", KILLED), ("after", DONE)]
    log = (qf.qdir() / "queue.log").read_text().splitlines()
    assert log[-1] == "QUEUE DONE: 1/2 succeeded; failed: hold(killed by the user, exit 143)"
    # The pids as words: one space after "to", none at the end (it read "TERM to  8614 ").
    said = [line for line in (qf.qdir() / "cells" / "hold.log").read_text().splitlines()
            if "cell hold: killed by the user: TERM to" in line]  # fmt: skip
    assert said and re.search(r": TERM to \d+( \d+)*$", said[0]), said

    with pytest.raises(QueueError) as nothing:  # refused: no cell runs
        await kill_cell(host, transport)
    assert nothing.value.code == "not-running"
    box = await run_ctl(
        transport, "kill", "rgt-box1", "after", "next", 1, "user"
    )  # the box's check
    assert box.stdout.startswith("refused\tnot-running\t")
    await transport.close()
    assert "kill " not in qf.state("after")


async def test_kill_then_stop_kills_a_cell_ignoring_term_and_stops_the_queue(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    # Ignores SIGTERM: only the KILL after the grace ends it.
    stubborn = qf.cell_script("stubborn", "trap '' TERM; echo up; while :; do sleep 0.05; done")
    nxt = qf.cell_script("never", "echo never ran")
    transport, _ = await launched(qf, f"{stubborn} t\n{nxt} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the stubborn cell to run")

    result = await kill_cell(host, transport, "stubborn", then="stop", grace_s=1)
    assert result.ended and result.cell is not None and result.cell.exit_code == 137
    # Whatever the check read (before or after the runner's stop record), it never says
    # "the queue is running" of a queue told to stop (a user's hour read that toast).
    assert "the queue is running" not in result.summary(), result.summary()
    # And the cell the stop leaves is counted (h481 #2: the only toast of a kill-and-stop
    # said nothing of the cells that never start).
    assert result.summary().endswith(
        tuple(
            f"{how}; 1 cell not run"
            for how in (
                "the queue stops, as asked: no further cell starts",
                "the queue stopped, as asked",
            )
        )
    ), result.summary()
    view = await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")
    await transport.close()
    assert [(c.name, c.status) for c in view.cells] == [("stubborn", KILLED), ("never", PENDING)]
    assert qf.state("never") == ""
    assert re.search(r"^kill \d+ user stop$", qf.state("stubborn"), re.M)
    assert re.search(r"^stop \d+ kill$", (qf.qdir() / "runner.state").read_text(), re.M)
    assert (
        "still running 1 s after TERM: KILL" in (qf.qdir() / "cells" / "stubborn.log").read_text()
    )


async def test_a_group_stop_between_cells_is_recorded_as_the_groups_and_a_bad_who_is_refused(
    make_queue_fleet,
):
    """A rank the group stops where no cell of it runs (between cells, or past its cell)
    gets a ``stop`` record saying ``group``: its runner's QUEUE DONE line, its view and
    `watch`'s words say "stopped with its group", never "by the user"."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    a = qf.cell_script("a", gate("go_a"))
    b = qf.cell_script("b", "echo b ran")
    transport, _ = await launched(qf, f"{a} t\n{b} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="cell a to run")
    runner = qf.qdir() / "runner.state"
    for bad in (("admin",), ("",), ()):
        refused = await run_ctl(transport, "stop", "rgt-box1", *bad)
        assert refused.stdout.startswith("refused\tusage\tstop"), refused.stdout
    assert "stop " not in runner.read_text()  # nothing recorded

    await stop_queue(host, transport, who="group")
    assert re.search(r"^stop \d+ group$", runner.read_text(), re.M), runner.read_text()
    (qf.root() / "go_a").touch()
    view = await wait_view(qf, lambda v: v.state == GROUP_STOPPED, what="the queue to stop")
    await transport.close()
    assert [(c.name, c.status) for c in view.cells] == [("a", DONE), ("b", PENDING)]
    assert view.stop_text() == (
        "stopped with its group (another rank failed or went silent); cell 1 and later not started"
    )
    assert "by the user" not in view.summary() and view.resume_index == 1
    done = (qf.qdir() / "queue.log").read_text().splitlines()[-1]
    assert done == (
        "QUEUE DONE: 1/1 succeeded; failed: none; "
        "stopped with its group (another rank failed or went silent) after cell 0 a"
    ), done


async def test_a_kill_by_the_group_is_recorded_as_the_groups_and_a_bad_who_is_refused(
    make_queue_fleet,
):
    """A rank rgt-tui stops because another rank of its group failed: the box records
    ``group`` (not ``user``), its cell log and its own views say "stopped with its
    group", and the kill verb refuses a WHO that is neither, recording nothing."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hold = qf.cell_script("hold", gate("never_opened"))
    nxt = qf.cell_script("next", "echo never ran")
    transport, _ = await launched(qf, f"{hold} t\n{nxt} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the hold cell to run")

    for bad in ("admin", "", "group user"):
        refused = await run_ctl(transport, "kill", "rgt-box1", "hold", "stop", 1, bad)
        assert refused.stdout.startswith("refused\tusage\tkill: WHO must be user or group"), (
            refused.stdout
        )
    refused = await run_ctl(transport, "kill", "rgt-box1", "hold", "stop", 1)  # no WHO
    assert refused.stdout.startswith("refused\tusage\tkill needs 5 arguments"), refused.stdout
    assert "kill " not in qf.state("hold")  # nothing recorded, nothing signalled
    with pytest.raises(ValueError, match="who must be user or group"):
        await kill_cell(host, transport, "hold", who="admin")

    result = await kill_cell(host, transport, "hold", then="stop", grace_s=2, who="group")
    assert result.ended and result.cell is not None and result.cell.status == KILLED
    assert result.cell.label == "stopped with its group (exit 143)", result.cell.label
    assert result.cell.note == "stopped with its group (another rank failed or went silent)"
    assert re.search(r"^kill \d+ group stop$", qf.state("hold"), re.M), qf.state("hold")
    assert re.search(r"^stop \d+ kill$", (qf.qdir() / "runner.state").read_text(), re.M)
    log = (qf.qdir() / "cells" / "hold.log").read_text()
    assert (
        "cell hold: stopped with its group (another rank failed or went silent): TERM to" in log
    ), log
    assert "by the user" not in log

    view = await wait_view(qf, lambda v: v.state == GROUP_STOPPED, what="the queue to stop")
    await transport.close()
    assert [(c.name, c.status) for c in view.cells] == [("hold", KILLED), ("next", PENDING)]
    assert view.stop_text() == (
        "stopped with its group (another rank failed or went silent) in cell 0 (hold); cell 1 and later "
        "not started"
    )
    assert "by the user" not in view.summary() and view.resume_index == 0
    done = (qf.qdir() / "queue.log").read_text().splitlines()[-1]
    assert done == (
        "QUEUE DONE: 0/1 succeeded; failed: hold(stopped with its group, exit 143); "
        "stopped with its group (another rank failed or went silent) after cell 0 hold"
    ), done
    seen = queue_cells_seen(view, {}, lambda name: ())  # the teardown gate's fact
    (what,) = [w for name, _, w in seen.unfinished if name == "hold"]
    assert what.startswith("stopped with its group (exit 143) after"), what


async def test_retry_sets_outputs_aside_and_reruns_only_that_cell_under_its_name(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    # Fails until the test "fixes" it; each attempt writes into its {out} ($2).
    flaky = qf.cell_script(
        "flaky",
        'mkdir -p "$2"; if [ -e "$HOME/fixed" ]; then echo second > "$2/result"; exit 0; fi; '
        'echo first > "$2/result"; echo "boom"; exit 4',
    )
    ok = qf.cell_script("steady", 'mkdir -p "$2"; echo steady > "$2/result"')
    transport, _ = await launched(qf, f"{flaky} t\n{ok} t\n")
    host = qf.host()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the first run")
    assert [c.status for c in view.cells] == [FAILED, DONE]

    refused = await plan_retry(qf.fleet, host, transport, ["steady", "nope"])
    assert not refused.ok
    assert any(
        "steady is done (exit 0): retrying a done cell needs --done" in p for p in refused.problems
    )
    assert any("no cell named nope" in p for p in refused.problems)
    box = await run_ctl(transport, "retry", "rgt-box1", 0, "steady", "-")  # the box checks too
    assert box.stdout.startswith("refused\tdone\t")

    (qf.root() / "fixed").touch()
    # A line added to the file meanwhile, not sent: the retry leaves it for append (s37
    # dev-loop #4: sent half-way with the retry, it never ran and append saw nothing new).
    qf.append_queue(f"{qf.cell_script('later', 'echo later ran')} t\n")
    plan = await plan_retry(qf.fleet, host, transport, ["flaky"])
    assert plan.ok, plan.problems
    assert plan.launch is not None and any(
        "1 line of" in w and "not sent yet stays unsent by this retry" in w
        for w in plan.launch.warnings
    ), plan.launch.warnings
    out = str(qf.root() / "results" / "flaky")
    assert plan.outs == (out,) and plan.launch is not None and not plan.running
    result = await retry_cells(plan, transport)
    await transport.close()
    assert result.launched is not None and not result.running
    ((name, aside),) = result.aside
    assert name == "flaky" and re.fullmatch(re.escape(out) + r"\.before-retry-\d{8}-\d{6}", aside)

    view = await wait_view(qf, lambda v: v.state == FINISHED and v.cells[0].status == DONE,
                           what="the retry to finish")  # fmt: skip
    assert (qf.root() / "results" / "flaky" / "result").read_text() == "second\n"
    assert (Path(aside) / "result").read_text() == "first\n"  # set aside, intact
    records = [line.split()[0] for line in qf.state("flaky").splitlines()]
    assert records == ["start", "end", "retry", "start", "end"]
    assert qf.state("flaky").splitlines()[2].endswith(" " + aside)
    assert len(qf.state("steady").splitlines()) == 2  # ran once: only the retried cell ran
    assert view.cells[0].retries == 1 and view.cells[0].set_aside == aside
    runner = (qf.qdir() / "runner.state").read_text().splitlines()
    assert runner[-2].split()[4] == "2"  # the retry launch starts past the last cell
    assert qf.state("later") == ""  # never ran, and is still not sent: append sends it
    transport = qf.transport()
    try:
        await transport.connect()
        compared = await against_box(host, transport, view, qf.fleet)
        assert compared.not_sent is not None, compared
        assert [c.name for _, c in compared.not_sent.cells] == ["later"]
    finally:
        await transport.close()


async def test_retry_while_running_runs_before_the_next_cell_and_a_running_cell_is_refused(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    bad = qf.cell_script("bad", 'if [ -e "$HOME/fixed" ]; then echo fine; else exit 2; fi')
    a = qf.cell_script("a", gate("go_a"))
    c = qf.cell_script("c", "echo c ran")
    transport, _ = await launched(qf, f"{bad} t\n{a} t\n{c} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="cell a to run")

    running = await plan_retry(qf.fleet, host, transport, ["a"])
    assert not running.ok and "cell a is running now: kill it first" in running.problems[0]
    box = await run_ctl(transport, "retry", "rgt-box1", 0, "a", "-")
    assert box.stdout.startswith("refused\trunning\t")

    (qf.root() / "fixed").touch()
    plan = await plan_retry(qf.fleet, host, transport, ["bad"])
    assert plan.ok and plan.running and plan.launch is None
    assert plan.outs == (str(qf.root() / "results" / "bad"),) and not plan.warnings
    result = await retry_cells(plan, transport)
    # bad never made its {out}: nothing was there to set aside
    assert result.running and result.launched is None and result.aside == (("bad", "-"),)
    shown = await read_queue_view(host, transport)
    assert shown.cells[0].status == RETRY and shown.cells[0].label == "queued to retry"
    # Asked again, the box says how it is queued (a resume's record: "=").
    again = await run_ctl(transport, "retry", "rgt-box1", 0, "bad", "-")
    assert again.stdout == "refused\tqueued\tcell bad is already queued to retry\n"
    await transport.close()

    (qf.root() / "go_a").touch()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert [c.status for c in view.cells] == [DONE, DONE, DONE]
    log = (qf.qdir() / "queue.log").read_text()
    assert log.index("cell 0 bad: retry asked by the user") < log.index("cell 2 c: start")
    # In words, not the record (a user's hour read "(retry 1796515003 =)").
    assert "retry asked by the user (from the start: no earlier outputs to set aside)" in log
    with (qf.qdir() / "cells" / "bad.state").open("a") as state:
        state.write("retry 1 =\n")  # a resume asked of it since (its record's "=")
    transport = qf.transport()
    await transport.connect()
    again = await run_ctl(transport, "retry", "rgt-box1", 0, "bad", "-")
    await transport.close()
    assert again.stdout == "refused\tqueued\tcell bad is already queued to resume\n"


async def test_skip_keeps_a_cell_from_running_and_is_refused_for_a_running_cell(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    a = qf.cell_script("a", gate("go_a"))
    moved = qf.cell_script("moved_away", 'echo must not run > "$HOME/ran"')
    c = qf.cell_script("c", "echo c ran")
    transport, _ = await launched(qf, f"{a} t\n{moved} t\n{c} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="cell a to run")

    with pytest.raises(QueueError) as busy:
        await skip_cell(transport, "box1", "a", "moved to box2")
    assert busy.value.code == "running" and "skip" not in qf.state("a")
    await skip_cell(transport, "box1", "moved_away", "moved to box2\nsecond line\x1b[31m")
    shown = await read_queue_view(host, transport)
    assert (shown.cells[1].status, shown.cells[1].label) == (SKIPPED, "moved")
    assert shown.cells[1].note == "moved to box2 second line[31m"  # one line, no control
    await transport.close()

    (qf.root() / "go_a").touch()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert [c.status for c in view.cells] == [DONE, SKIPPED, DONE]
    assert not (qf.root() / "ran").exists()
    assert [line.split()[0] for line in qf.state("moved_away").splitlines()] == ["skip"]
    log = (qf.qdir() / "queue.log").read_text().splitlines()
    assert any(
        line.endswith("cell 1 moved_away skipped: moved to box2 second line[31m") for line in log
    )
    assert log[-1] == "QUEUE DONE: 2/2 succeeded; failed: none; skipped: moved_away"


async def test_a_failed_cell_moved_away_while_the_queue_runs_is_skipped_not_failed(
    make_queue_fleet,
):
    # queue move takes a cell that ran and failed to another host to resume there: its
    # box gets a skip record while the runner is on a later cell. The QUEUE DONE line
    # and the done record must not count it as this queue's failure.
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    bad = qf.cell_script("bad", "echo bad; exit 3")
    b = qf.cell_script("b", gate("go_b"))
    transport, _ = await launched(qf, f"{bad} t\n{b} t\n")
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="cell b to run")
    await skip_cell(transport, "box1", "bad", "moved to box2")
    await transport.close()

    (qf.root() / "go_b").touch()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert [c.status for c in view.cells] == [SKIPPED, DONE]
    log = (qf.qdir() / "queue.log").read_text().splitlines()
    assert log[-1] == "QUEUE DONE: 1/1 succeeded; failed: none; skipped: bad(exit 3)"
    runner = (qf.qdir() / "runner.state").read_text().splitlines()
    assert re.fullmatch(r"done \d+ 1 0", runner[-1]), runner


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] not in "ZX"
    except OSError:
        return False


def test_a_kill_with_stop_read_before_the_runners_stop_record_says_it_stops() -> None:
    """The check can read the queue after the cell ended and before the runner wrote its
    stop: the view is still "running". The summary says the queue stops, as asked."""
    from rgt_tui.domain.queue_records import (
        cells_tsv_line,
        parse_cell_state,
        parse_cells_tsv,
        parse_runner_state,
    )
    from rgt_tui.domain.queue_state import derive_view
    from rgt_tui.services.queue.control import KillResult

    launch = "launch 1700000000 boot-box1 tmux 0 /root/.rgt/bin/run_queue.0123456789ab.sh 4242\n"
    deployed = parse_cells_tsv(cells_tsv_line(0, "a", "run a") + cells_tsv_line(1, "b", "run b"))
    a = parse_cell_state("start 1700000001 boot-box1 4300\nkill 1700000050 user stop\nend 1700000055 143\n")  # fmt: skip
    view = derive_view(
        "box1", deployed, parse_runner_state(launch), {"a": a}, boot_id="boot-box1",
        now=1700000056, runner_alive=True,
    )  # fmt: skip
    assert view.state == "running"
    cell = view.cells[0]
    said = KillResult("box1", "a", 4300, "stop", False, True, cell, view).summary()
    assert said.endswith("; the queue stops, as asked: no further cell starts; 1 cell not run"), (
        said
    )


async def test_another_entry_for_the_same_account_cannot_stop_or_kill_its_queue(
    make_queue_fleet,
):
    """One box pasted twice (vast.ai's proxy and direct forms) is two entries for one
    account, which holds one queue: the other entry's Queue tab offered to kill this
    one's cell (hour s19b #2). The box refuses, naming the entry's session."""
    import dataclasses

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    a = qf.cell_script("a", gate("go_a"))
    transport, _ = await launched(qf, f"{a} t\n")
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="cell a to run")
    other = dataclasses.replace(qf.host(), name="box1-direct")
    for act in (lambda: stop_queue(other, transport), lambda: kill_cell(other, transport, "a")):
        with pytest.raises(QueueError) as refused:
            await act()
        assert refused.value.code == "owner", refused.value
        assert "launched by another host entry (tmux session rgt-box1)" in str(refused.value)
    assert qf.state("a").count("kill") == 0  # nothing was signalled
    assert (await stop_queue(qf.host(), transport)).current is not None  # its own entry can
    (qf.root() / "go_a").touch()
    await wait_view(qf, lambda v: v.state in (FINISHED, USER_STOPPED), what="the queue to end")
    await transport.close()


async def test_a_retry_left_waiting_by_a_stop_runs_alone_and_the_stop_says_so(make_queue_fleet):
    """A cell marked for a retry, then a stop: the retry waited through it, `queue retry`
    refused it ("already waiting") and every launch ran a later done cell again (hour
    s20b #2). The stop names it; the retry launches it alone."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    a = qf.cell_script("a", gate("go_a2") + "; " + gate("go_a"))
    b = qf.cell_script("b", gate("go_b"))
    c = qf.cell_script("c", "echo c ran")
    transport, _ = await launched(qf, f"{a} t\n{b} t\n{c} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="cell a to run")
    await kill_cell(host, transport, "a", then="next", grace_s=1)
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="cell b to run")
    (qf.root() / "go_a2").touch()  # the retried a gets past its first gate
    assert (
        await retry_cells(await plan_retry(qf.fleet, host, transport, ["a"]), transport)
    ).running
    stopped = await stop_queue(host, transport)
    assert (
        "a waits to run again (a retry or resume asked earlier): rgt-tui queue retry box1 a (R on its row in the Queue tab) runs it alone"
        in stopped.summary()
    )
    (qf.root() / "go_b").touch()
    view = await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")
    assert [c.status for c in view.cells] == [RETRY, DONE, PENDING]
    assert "waiting for a retry: a" in view.stop_text()
    # A launch from the stop's cell runs the waiting retry first: its plan says so, and
    # counts it (it said "cell 0 … not run by this launch": hour s20c #6).
    relaunch = await plan_launch(qf.fleet, host, transport, start_index=2)
    assert [c.name for c in relaunch.runs] == ["a", "c"]
    assert "cell 0 waits to run again: the runner runs it first, then from start index 2" in (
        relaunch.warnings
    )
    assert not any("not run by this launch" in w for w in relaunch.warnings), relaunch.warnings

    plan = await plan_retry(qf.fleet, host, transport, ["a"])  # refused before
    assert plan.ok and [c.name for c in plan.waiting] == ["a"] and plan.cells == ()
    (qf.root() / "go_a").touch()
    result = await retry_cells(plan, transport)
    assert result.launched is not None and result.aside == ()
    view = await wait_view(qf, lambda v: v.cells[0].status == DONE, what="the retried a to end")
    assert [c.status for c in view.cells] == [DONE, DONE, PENDING]  # b did not run again
    assert qf.state("c") == ""
    await transport.close()


async def test_a_retry_after_a_stop_is_refused_until_the_queue_has_stopped(make_queue_fleet):
    """A stop, then a retry: the retry said "the running queue runs it before its next
    cell" and set the outputs aside, and the runner, reading the stop first, never ran it
    (s36 acts hour #4). Refused while the stop is pending; once stopped, it runs alone."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    a = qf.cell_script("a", 'mkdir -p "$2"; echo out > "$2/f"; exit 3')
    b = qf.cell_script("b", gate("go_b"))
    c = qf.cell_script("c", "echo c ran")
    transport, _ = await launched(qf, f"{a} t\n{b} t\n{c} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="cell b to run")
    await stop_queue(host, transport)
    plan = await plan_retry(qf.fleet, host, transport, ["a"])
    assert not plan.ok
    assert plan.problems == (
        "a stop was asked: box1's queue ends after its current cell, before any retry — "
        "retry once it has stopped (then it runs alone); nothing was set aside",
    ), plan.problems
    assert (qf.root() / "results" / "a" / "f").exists()  # nothing set aside
    (qf.root() / "go_b").touch()
    await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")
    again = await plan_retry(qf.fleet, host, transport, ["a"])
    assert again.ok, again.problems
    result = await retry_cells(again, transport)
    assert result.launched is not None
    await transport.close()


async def test_of_two_launches_at_once_one_runs_and_the_other_says_why(make_queue_fleet):
    """Two launches planned together: the box's lock starts one runner; the other said
    only the box's "runner pid N is alive" (hour s20b #13)."""
    import asyncio

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    a = qf.cell_script("a", gate("go_a"))
    qf.write_queue(f"{a} t\n")
    one, two = qf.transport(), qf.transport()
    plans = [await plan_launch(qf.fleet, qf.host(), t) for t in (one, two)]
    assert all(p.ok for p in plans), [p.problems for p in plans]
    results = await asyncio.gather(
        launch(plans[0], one), launch(plans[1], two), return_exceptions=True
    )
    (refused,) = [r for r in results if isinstance(r, QueueError)]
    assert refused.code == "running"
    assert "started meanwhile" in str(refused) and "this one did nothing" in str(refused)
    assert "rgt-tui queue show box1" in str(refused)
    (qf.root() / "go_a").touch()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the one runner to finish")
    launches = (qf.qdir() / "runner.state").read_text().count("launch ")
    assert launches == 1
    await one.close()
    await two.close()


async def test_a_launch_from_another_entry_of_the_account_names_the_entry(
    make_queue_fleet, tmp_path
):
    """The twin entry's launch read "earlier lines of its file changed since they were
    sent to it" (they never were) with --fresh as the fix, which moved the other
    entry's queue aside unnamed (hour s20c #3)."""
    import dataclasses

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    done = qf.cell_script("done_one", "echo ran")
    transport, _ = await launched(qf, f"{done} t\n")
    await wait_view(qf, lambda v: v.state == FINISHED, what="box1's queue to finish")
    twin_queue = tmp_path / "twin.txt"
    twin_queue.write_text(f"{qf.cell_script('extra', 'echo extra')} t\n")
    twin = dataclasses.replace(qf.host(), name="box1-direct", queue=twin_queue)
    fleet = dataclasses.replace(qf.fleet, hosts=(*qf.fleet.hosts, twin))
    plan = await plan_launch(fleet, twin, transport, preflight=False)
    said = "\n".join(plan.problems)
    assert "launched by another host entry (tmux session rgt-box1)" in said, said
    assert "changed since they were sent" not in said
    fresh = await plan_launch(fleet, twin, transport, preflight=False, fresh=True)
    assert any(
        "launched by another host entry (tmux session rgt-box1), will be moved aside" in w
        for w in fresh.warnings
    ), fresh.warnings
    await transport.close()


async def test_an_entry_renamed_in_place_appends_to_its_queue_and_a_twin_is_refused(
    make_queue_fleet, tmp_path
):
    """h546 #2: README's way to take a box as a new host is to rename its entry in place;
    its append was refused, naming the gone entry, while its launch went on. The same
    lines go on (the box's queue idle); another entry's own file is refused by name."""
    from rgt_tui.services.queue.append import append_cells

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    first = f"{qf.cell_script('done_one', 'echo ran')} t\n"
    transport, _ = await launched(qf, first)
    await wait_view(qf, lambda v: v.state == FINISHED, what="box1's queue to finish")
    qf.write_queue(first + f"{qf.cell_script('more', 'echo more')} t\n")
    renamed = dataclasses.replace(qf.host(), name="box1-renamed")
    fleet = dataclasses.replace(qf.fleet, hosts=(renamed,))
    result = await append_cells(fleet, renamed, transport)
    assert [c.name for c in result.added] == ["more"], result
    twin_queue = tmp_path / "twin.txt"
    twin_queue.write_text(f"{qf.cell_script('extra', 'echo extra')} t\n")
    twin = dataclasses.replace(qf.host(), name="box1-direct", queue=twin_queue)
    with pytest.raises(QueueError) as refused:
        await append_cells(dataclasses.replace(qf.fleet, hosts=(twin,)), twin, transport)
    assert refused.value.code == "owner", refused.value
    assert "launched by another host entry (tmux session rgt-box1)" in str(refused.value)
    await transport.close()


async def test_a_stop_confirmed_for_a_cell_that_ended_meanwhile_says_what_it_stops_after_now(
    make_queue_fleet,
):
    """The stop dialog named cell b; before the user confirmed, b ended and a waiting retry
    of a started. The stop then ends after a (a long retried cell runs after the dialog
    said nothing more would start: hour s20c #5): the notice leads with that, and how to
    stop now."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    a = qf.cell_script("a", gate("go_a2") + "; " + gate("go_a"))
    b = qf.cell_script("b", gate("go_b"))
    c = qf.cell_script("c", "echo c ran")
    transport, _ = await launched(qf, f"{a} t\n{b} t\n{c} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="cell a to run")
    await kill_cell(host, transport, "a", then="next", grace_s=1)
    shown = await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="cell b to run")
    assert shown.current is not None and shown.current.name == "b"  # what the dialog names
    await retry_cells(await plan_retry(qf.fleet, host, transport, ["a"]), transport)
    (qf.root() / "go_b").touch()  # b ends while the dialog is open; the retried a starts
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the retried a to run")

    stopped = await stop_queue(host, transport)
    assert stopped.current is not None and stopped.current.name == "a"
    said = stopped.summary("b")
    assert said.startswith(
        "b ended before the stop reached the box, and cell 0 (a) had started: the queue "
        "stops after that one instead — to stop now, kill it (X in the Queue tab; "
        "rgt-tui queue kill box1 a --then stop). The queue stops after cell 0 (a)"
    ), said
    assert stopped.summary("a") == stopped.summary()  # confirmed for the cell that runs
    (qf.root() / "go_a2").touch()
    (qf.root() / "go_a").touch()
    view = await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")
    assert [c.status for c in view.cells] == [DONE, DONE, PENDING]  # the stop held after a
    await transport.close()


async def test_a_retry_refused_on_the_box_says_mvs_reason(make_queue_fleet):
    """s37 dev-loop #8: a cell's {out} that is a mount point cannot be renamed aside; the
    refusal dropped mv's words ("Device or resource busy") and gave no way on."""
    from support.machine import tmpfs

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    out = qf.root() / "results" / "mounted"
    with tmpfs(out, "1m"):
        cell = qf.cell_script("mounted", 'mkdir -p "$2"; echo x > "$2/r"; exit 3')
        transport, _ = await launched(qf, f"{cell} t\n")
        await wait_view(qf, lambda v: v.state == FINISHED, what="the cell to fail")
        try:
            plan = await plan_retry(qf.fleet, qf.host(), transport, ["mounted"])
            assert plan.ok, plan.problems
            with pytest.raises(QueueError) as refused:
                await retry_cells(plan, transport)
        finally:
            await transport.close()
    said = str(refused.value)
    assert f"cannot move {out} aside to" in said and "busy" in said.lower(), said
    assert "a mount point cannot be renamed" in said and "nothing retried" in said


async def test_a_retry_the_running_queue_runs_says_the_box_runs_other_code(
    make_queue_fleet, tmp_path
):
    """s37 dev-loop #1: train.py fixed here after the launch; sync is refused while the
    queue runs; `queue retry` said only "the running queue runs it", and the retry ran
    the old code. The plan says so, naming the files that differ."""
    from support.code_trees import add_code, write

    from rgt_tui.services.code_sync import sync_code
    from rgt_tui.services.fleet.file import load_fleet

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    code = tmp_path / "proj"
    write(code, "cells/bad.sh", "echo v1; exit 3\n")
    write(code, "cells/hold.sh", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done\n')
    write(code, "train.py", "VERSION = 1\n")
    add_code(qf.loopback.hosts_file, code)
    fleet = load_fleet(qf.loopback.hosts_file)
    host = fleet.host("box1")
    qf.write_queue("cells/bad.sh t\ncells/hold.sh t\n")
    transport = qf.transport()
    try:
        await sync_code(host, transport, method="sftp")
        plan = await plan_launch(fleet, host, transport)
        assert plan.ok, plan.problems
        await launch(plan, transport)
        await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="hold to run")
        write(code, "train.py", "VERSION = 2  # the fix\n")
        retry = await plan_retry(fleet, host, transport, ["bad"])
        assert retry.ok and retry.running, retry.problems
        (note,) = [w for w in retry.warnings if "runs it with the code on box1" in w]
        assert "differs from the local tree in 1 file (train.py)" in note, note
        assert "stop it (S), sync, then retry" in note
    finally:
        (qf.root() / "go").touch()
        await transport.close()


async def test_a_retry_the_running_queue_takes_names_a_sent_line_edited_here(make_queue_fleet):
    """Both s43 hours: a cell failed on a typo in its line's task word, the line was fixed
    here, and R ran the box's copy again, typo and all, without a word. The retry plan
    now says the box runs its copy and how an edited line runs: under a new name (the
    same name appended again is refused as used twice)."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    typo = qf.cell_script("typo", 'echo "task $3"; exit 2')
    hold = qf.cell_script("hold", gate("go"))
    transport, _ = await launched(qf, f"{typo} reconstrution\n{hold} t\n")
    try:
        await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="hold to run")
        qf.write_queue(f"{typo} reconstruction\n{hold} t\n")  # the typo fixed here
        plan = await plan_retry(qf.fleet, qf.host(), transport, ["typo"])
    finally:
        (qf.root() / "go").touch()
        await transport.close()
    assert plan.ok and plan.running, plan.problems
    (said,) = [w for w in plan.warnings if "in lines already sent" in w]
    assert "the box runs its copy, not your edit" in said, said
    assert "add it at the end under a new name — a copy of its config" in said, said
    assert "line 1 on the box: 'cells/typo.sh reconstrution'" in said, said


async def test_a_plain_retry_with_no_out_on_the_box_still_records_its_time(make_queue_fleet):
    """The review of s43 #2: the box says "-" both for a resume and for a plain retry whose
    {out} was never made; only the resume may go unrecorded — the plain retry starts the
    cell over, so a copy pulled before it is an earlier attempt's (retried.py)."""
    from rgt_tui.services.queue.retried import record_path
    from rgt_tui.services.records import fleet_host_dir

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    transport, _ = await launched(qf, f"{qf.cell_script('bare', 'exit 3')} t\n")
    try:
        await wait_view(qf, lambda v: v.state == FINISHED, what="bare to fail")
        plan = await plan_retry(qf.fleet, qf.host(), transport, ["bare"])
        plan = dataclasses.replace(plan, launch=None)  # marked only: nothing launched
        result = await retry_cells(plan, transport, fleet=qf.fleet)
    finally:
        await transport.close()
    assert result.aside == (("bare", "-"),)  # nothing was there to set aside
    record = record_path(fleet_host_dir(qf.fleet, "box1"))
    assert "bare" in json.loads(record.read_text()), record


async def test_a_retry_after_a_move_still_leaves_unsent_lines_for_append(make_queue_fleet):
    """h471 #1: a move rewrites its sent line as '#moved-to …', so the local file no
    longer began with the box's copy, and the retry sent the whole file: a line never
    appended reached the box's copy, never ran, and append then saw nothing new."""
    from rgt_tui.services.queue.append import append_cells
    from rgt_tui.services.queue.move import apply_move, plan_move

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    flaky = qf.cell_script("flaky", 'if [ -e "$HOME/fixed" ]; then exit 0; fi; exit 4')
    away = qf.cell_script("away", "exit 5")
    qf.write_queue("", "box2")
    transport, _ = await launched(qf, f"{flaky} t\n{away} t\n")
    host = qf.host()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the first run")
    moving = await plan_move(qf.fleet, host, ["away"], "box2", transport)
    assert moving.ok, moving.problems
    await apply_move(moving, host, transport)
    assert "#moved-to box2" in qf.queue_file().read_text()
    qf.append_queue(f"{qf.cell_script('later', 'exit 0')} t\n")
    (qf.root() / "fixed").touch()
    plan = await plan_retry(qf.fleet, host, transport, ["flaky"])
    assert plan.ok, plan.problems
    assert plan.launch is not None and any(
        "1 line of" in w and "stays unsent by this retry" in w for w in plan.launch.warnings
    ), plan.launch.warnings
    await retry_cells(plan, transport)
    view = await wait_view(qf, lambda v: v.state == FINISHED and v.cells[0].status == DONE,
                           what="the retry to finish")  # fmt: skip
    assert [c.name for c in view.cells] == ["flaky", "away"], view.cells
    added = await append_cells(qf.fleet, host, transport)  # the line is still new to append
    await transport.close()
    assert [c.name for c in added.added] == ["later"], added


async def test_a_retry_names_the_cells_set_to_run_again_before_which_run_with_it(
    make_queue_fleet,
):
    """h481 #3 #4: with a cell set to run again earlier the queue stopped, a retry of
    another said "launched for this cell only", and the launch ran both (minutes more
    paid for); on a running queue each retry said "runs it next". The plan names the
    other cell, in the dialog, on the command line and in the toast."""
    from support.cli import arun
    from support.queues import GATE

    from rgt_tui.screens.retry_confirm import retry_notes

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    f1 = qf.cell_script("f1", "exit 3")
    f2 = qf.cell_script("f2", "exit 3")
    gate = qf.cell_script("gate", GATE)
    transport, _ = await launched(qf, f"{f1} t\n{f2} t\n{gate} t\n")
    host = qf.host()
    await wait_view(
        qf, lambda v: [c.status for c in v.cells] == [FAILED, FAILED, RUNNING],
        what="f1 and f2 failed, the gate running",
    )  # fmt: skip
    first = await plan_retry(qf.fleet, host, transport, ["f1"])
    assert first.ok and first.others_waiting == (), first.problems
    await retry_cells(first, transport)
    later = await plan_retry(qf.fleet, host, transport, ["f2"])
    assert later.running and later.others_waiting == ("f1",)
    assert "runs it before its next cell (with f1, also set to run again)." in str(
        retry_notes(later)
    )
    # Refused (the gate runs): the dialog says why, not how it would run (review h494 #4).
    refused = await plan_retry(qf.fleet, host, transport, ["gate"])
    assert refused.running and refused.problems
    assert "runs it before its next cell" not in str(retry_notes(refused))
    await stop_queue(host, transport)
    (qf.root() / "go").touch()
    view = await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")
    assert [c.status for c in view.cells] == [RETRY, FAILED, DONE]

    stopped = await plan_retry(qf.fleet, host, transport, ["f2"])
    await transport.close()
    assert stopped.launch is not None and stopped.others_waiting == ("f1",)
    said = str(retry_notes(stopped))
    assert "launched for this cell and f1, set to run again earlier" in said, said
    assert "this cell only" not in said
    cli = await arun("queue", "retry", "box1", "f2", "--hosts", qf.loopback.hosts_file)
    assert "a launch runs only these cells and f1, set to run again earlier" in cli.stdout, (
        cli.stdout + cli.stderr
    )
