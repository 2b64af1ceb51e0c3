"""`rgt-tui queue stop|kill|retry` end to end: the real entry point, its questions, exit
codes, and the box's records afterwards.

Just past 450 lines on purpose: each verb's cases share one launched loopback queue and
its terminal helper; split, each file would start them again."""

from __future__ import annotations

import json
import re

import pytest
from support.cli import Terminal, arun
from support.queues import SCRIPT_RUN, launched_holding, wait_view

from rgt_tui.domain.queue_state import (
    DONE,
    FAILED,
    FINISHED,
    KILLED,
    PENDING,
    RUNNING,
    USER_STOPPED,
)
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.retried import record_path
from rgt_tui.services.records import fleet_host_dir


def gate(name: str) -> str:
    return f'while [ ! -e "$HOME/{name}" ]; do sleep 0.05; done; echo "{name} open"'


# Fifteen runs of the command line, each a Python start with its imports: past 120 s on a
# loaded 2-core machine (a CI run with other work beside it), with no step stuck.
@pytest.mark.timeout(300)
async def test_stop_kill_retry_ask_first_and_need_yes_off_a_terminal(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    hold = qf.cell_script("hold", gate("never"))
    a = qf.cell_script("a", gate("go_a"))
    b = qf.cell_script("b", "echo b")
    qf.write_queue(f"{hold} t\n{a} t\n{b} t\n")

    idle = await arun("queue", "kill", "box1", "--hosts", hosts, "--yes")
    assert idle.returncode == 1 and "no cell is running: nothing to kill" in idle.stderr

    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")

    # No terminal and no --yes: refused, and nothing is recorded on the box.
    for args in (("stop", "box1"), ("kill", "box1"), ("kill", "box1", "hold")):
        asked = await arun("queue", *args, "--hosts", hosts)
        assert asked.returncode == 2 and "pass --yes" in asked.stderr, asked.stderr
    assert "stop " not in (qf.qdir() / "runner.state").read_text()
    assert "kill " not in qf.state("hold")

    # On a terminal it asks, naming the cell; "n" does nothing.
    no = Terminal("queue", "kill", "box1", "--hosts", hosts)
    await no.expect("Kill cell 0 (hold) on box1, running for")
    await no.expect("and go on to the next cell? [y/N]")
    no.type("n")
    code, out, _ = await no.finish()
    assert code == 1 and "nothing done" in out and "kill " not in qf.state("hold")

    yes = Terminal("queue", "kill", "box1", "hold", "--hosts", hosts, "--grace", "2")
    await yes.expect("[y/N]")
    yes.type("y")
    code, out, err = await yes.finish()
    assert code == 0, out + err
    assert "box1: cell hold killed (exit 143); the queue went on to cell 1 (a)" in out
    assert re.search(r"^kill \d+ user next$", qf.state("hold"), re.M)

    running = await arun("queue", "retry", "box1", "a", "--hosts", hosts, "--yes")
    assert running.returncode == 1 and "cell a is running now: kill it first" in running.stdout
    # Why first, and not how it would have run (h493 #8: "the running queue runs it before
    # its next cell" stood above the refusal).
    assert running.stdout.splitlines()[1].startswith("  REFUSED: "), running.stdout
    assert "runs it before its next cell" not in running.stdout, running.stdout
    typo = await arun("queue", "retry", "box1", "nosuch", "--hosts", hosts, "--yes")
    assert typo.returncode == 2, typo.stdout  # no cell of the queue: bad input, not a refusal
    assert "no cell named nosuch in the box's queue; its cells: hold, a, b" in typo.stdout
    # A typo near a cell's name is named as one (hour s20b #9).
    near = await arun("queue", "retry", "box1", "hodl", "--hosts", hosts, "--yes")
    assert "no cell named hodl in the box's queue (did you mean 'hold'?)" in near.stdout
    # Only the refusal, not a plan above it that read as if the retry would go on.
    assert typo.stdout.splitlines()[0] == "Retry on box1", typo.stdout
    assert all(line.startswith("  REFUSED: ") for line in typo.stdout.splitlines()[1:])

    stop = await arun("queue", "stop", "box1", "--hosts", hosts, "--yes")
    assert stop.returncode == 0, stop.stderr
    assert "box1: the queue stops after cell 1 (a)" in stop.stdout
    assert "later: rgt-tui launch box1 --start 2 goes on" in stop.stdout  # the index, not N
    (qf.root() / "go_a").touch()
    view = await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")
    assert [c.status for c in view.cells] == [KILLED, DONE, PENDING]
    shown = await arun("queue", "show", "box1", "--hosts", hosts)
    assert "killed (exit 143)" in shown.stdout
    assert "stopped by the user after cell 1 (a); cell 2 and later not started" in shown.stdout
    assert "resume: rgt-tui launch box1 --start 2" in shown.stdout

    done = await arun("queue", "retry", "box1", "a", "--hosts", hosts, "--yes")
    assert done.returncode == 1 and "retrying a done cell needs --done" in done.stdout
    (qf.root() / "never").touch()
    retried = await arun("queue", "retry", "box1", "hold", "--hosts", hosts, "--yes")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "box1: hold will run again" in retried.stdout and "launched runner pid" in retried.stdout
    view = await wait_view(qf, lambda v: v.cells[0].status == DONE and v.state != RUNNING)
    assert [c.status for c in view.cells] == [DONE, DONE, PENDING]  # b still waits
    assert view.cells[0].retries == 1
    assert FAILED not in [c.status for c in view.cells]


async def test_retry_says_the_cell_starts_over_and_names_the_checkpoint_it_sets_aside(
    make_queue_fleet,
):
    """`queue retry` says what the dialog says: the cell starts over ({out} renamed aside)
    and, when {out} holds a checkpoint, names it (the box's name made printable) and that
    --resume goes on from it instead; "n" leaves the checkpoint where it is. With
    --resume the cell runs alone with its {out} kept (s43: a relaunch from it, once the
    only way said, ran the done cell after it again)."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    saves = (
        'ls "$2" 2>/dev/null | grep -q . && echo "found a checkpoint"; '
        'mkdir -p "$2"; echo step > "$2/$(printf \'ck\\033[2J.pt\')"; exit 3'
    )
    ok = 'mkdir -p "$2"; echo done > "$2/done.txt"'
    qf.write_queue(f"{qf.cell_script('broke', saves)} t\n{qf.cell_script('ok', ok)} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(
        qf, lambda v: [c.status for c in v.cells] == [FAILED, DONE], what="broke to fail"
    )

    asked = Terminal("queue", "retry", "box1", "broke", "--hosts", hosts)
    await asked.expect("[y/N]")
    asked.type("n")
    code, out, _ = await asked.finish()
    assert code == 1 and "nothing done" in out
    assert "each starts over: its {out} is renamed aside (kept, not deleted)" in out
    assert (
        "⚠ broke: Its {out} holds a checkpoint (ck\\x1b[2J.pt): a retry sets it aside and "
        "starts over." in out
    ), out
    assert (
        "To resume from it instead: answer no, then rgt-tui queue retry box1 broke --resume — "
        "its {out} is kept as it is, and no done cell runs again." in out
    ), out
    assert "\x1b[2J" not in out  # the box's escape is shown, never sent to the terminal
    assert (qf.root() / "results" / "broke" / "ck\x1b[2J.pt").exists()

    resumed = await arun("queue", "retry", "box1", "broke", "--resume", "--hosts", hosts, "--yes")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    out = resumed.stdout
    assert out.startswith("Resume on box1\n"), out
    assert f"{qf.root()}/results/broke is kept as it is" in out, out
    assert "each runs again with its {out} as it is" in out, out
    assert "It resumes from ck\\x1b[2J.pt, the newest checkpoint in its {out}" in out, out
    assert "box1: broke will run again; its {out} kept as it is" in out, out
    assert "reads as a checkpoint" not in out, out
    view = await wait_view(
        qf, lambda v: v.cells[0].retries == 1 and v.state == FINISHED, what="broke resumed"
    )
    assert [c.status for c in view.cells] == [FAILED, DONE]
    shown = (await arun("queue", "show", "box1", "--hosts", hosts)).stdout
    assert "resumed 1×" in shown and "retried" not in shown, shown  # s44 note
    assert sorted(p.name for p in (qf.root() / "results").iterdir()) == ["broke", "ok"]
    assert len(re.findall(r"^start ", qf.state("ok"), re.M)) == 1  # ok did not run again
    assert "found a checkpoint" in (qf.qdir() / "cells" / "broke.log").read_text()
    # Nothing was set aside, so no retry time is kept here: a copy pulled before it is
    # still the checkpoint the cell goes on from.
    assert not record_path(fleet_host_dir(qf.fleet, "box1")).exists()
    # A done cell has nothing to resume: said at once, with or without --done (not
    # "needs --done" first, then this: the review of s43 #4).
    for extra in ((), ("--done",)):
        done = await arun(
            "queue", "retry", "box1", "ok", "--resume", *extra, "--hosts", hosts, "--yes"
        )
        assert done.returncode == 1, done.stdout
        assert "cell ok is done (exit 0): it has nothing to resume" in done.stdout, done.stdout
        assert "needs --done" not in done.stdout, done.stdout
    # No checkpoint left in its {out}: "goes on from it" is said to start over (review s43).
    (qf.root() / "results" / "broke" / "ck\x1b[2J.pt").unlink()
    asked = Terminal("queue", "retry", "box1", "broke", "--resume", "--hosts", hosts)
    await asked.expect("[y/N]")
    asked.type("n")
    code, out, _ = await asked.finish()
    assert code == 1 and "nothing done" in out
    said = (
        "⚠ no file rgt-tui reads as a checkpoint (*.pt, *.pth, *.ckpt, *.safetensors) in "
        "its {out} on the box now: unless the run keeps its state under "
        "another name, the resume runs it from the start"
    )
    assert said in " ".join(out.split()), out


async def test_queue_show_says_a_sent_line_edited_here_is_not_what_the_box_runs(
    make_queue_fleet,
):
    """A pending line's epochs changed, or a sent line deleted, locally: the box runs its
    own copy, and nothing said so until an append (hour s20b #3). `queue show` names the
    lines; the append's refusal leads with putting them back, not --fresh (s20b #5)."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    hold = qf.cell_script("hold", gate("never"))
    wide = qf.cell_script("wide", "echo wide")
    qf.write_queue(f"{hold} t\n{wide} t 5\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
    clean = await arun("queue", "show", "box1", "--hosts", hosts)
    assert "differs from the copy on box1" not in clean.stdout
    qf.write_queue(f"{hold} t\n{wide} t 50\n")
    shown = await arun("queue", "show", "box1", "--hosts", hosts)
    assert "note: " in shown.stdout and "differs from the copy on box1 in lines already sent" in (
        shown.stdout
    )
    assert "line 2 on the box:" in shown.stdout and "t 50" in shown.stdout
    assert shown.stdout.count("the box runs its") == 1, shown.stdout  # said once (an hour)
    # --json carries the note too: a script reading it saw nothing wrong (review s26 #2).
    as_json = json.loads((await arun("queue", "show", "box1", "--hosts", hosts, "--json")).stdout)
    assert "differs from the copy on box1 in lines already sent" in as_json["sent_changed"]
    assert "line 2 locally:" in as_json["sent_changed"] and as_json["not_sent"] == []
    appended = await arun("queue", "append", "box1", "--hosts", hosts)
    assert appended.returncode != 0
    said = appended.stdout + appended.stderr
    assert "Put the lines shown back" in said, said
    assert said.index("Put the lines shown back") < said.index("--fresh"), said


async def test_queue_show_lists_the_lines_added_since_the_last_send_as_not_sent(
    make_queue_fleet,
):
    """Lines added to the queue file since the launch: `queue show` listed only the box's
    cells, so a user who had just edited the file could not tell whether they would run
    (hour s25a #6). Listed after the box's cells, in the file's order, marked not sent,
    with the command that sends them; a line that cannot run is counted, never echoed."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    sent = qf.cell_script("sent", "echo sent")
    await launched_holding(qf, f"{sent} t\n")
    first = await arun("queue", "show", "box1", "--hosts", hosts)
    assert first.returncode == 0 and "not sent" not in first.stdout, first.stdout
    late_b, late_a = qf.cell_script("late_b", "echo b"), qf.cell_script("late_a", "echo a")
    qf.append_queue(f"# added later\n{late_b} t\ncells/bad\x1b[2J.sh t\n{late_a} t 3\n")

    shown = await arun("queue", "show", "box1", "--hosts", hosts)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert (
        "not sent: 2 cells of queues/box1.txt (lines 4–6), not on box1 yet: once the lines "
        "at fault below are put right, rgt-tui queue append box1 sends them, and the running "
        "queue runs them after its cells"
    ) in out.replace(str(qf.base) + "/", ""), out
    rows = [line.split() for line in out.splitlines() if "not sent" in line][1:]
    assert rows[:2] == [
        ["2", "late_b", "not", "sent", "line", "4"],
        ["3", "late_a", "not", "sent", "line", "6"],
    ], out  # the file's order, with the index each takes on the box
    assert out.index("  1  sent") < out.index("  2  late_b"), out  # after the box's cells
    assert "and 1 line added to" in out and "cannot run as written: rgt-tui queue check" in out
    assert "\x1b" not in out and "bad" not in out, out  # the broken line is never echoed
    as_json = json.loads((await arun("queue", "show", "box1", "--hosts", hosts, "--json")).stdout)
    assert [(c["index"], c["name"], c["line"]) for c in as_json["not_sent"]] == [
        (2, "late_b", 4),
        (3, "late_a", 6),
    ]

    qf.write_queue(qf.queue_file().read_text().replace("cells/bad\x1b[2J.sh t\n", ""))
    (qf.root() / "go").touch()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    idle = (await arun("queue", "show", "box1", "--hosts", hosts)).stdout
    assert (
        "not on box1 yet: rgt-tui launch box1 sends and runs them (the queue is not running; "
        "rgt-tui queue append box1 only sends them)"
    ) in idle, idle
    appended = await arun("queue", "append", "box1", "--hosts", hosts)
    assert appended.returncode == 0, appended.stderr
    after = (await arun("queue", "show", "box1", "--hosts", hosts)).stdout
    assert "not sent" not in after and "late_a" in after, after


async def test_queue_stop_says_a_waiting_retry_stays_waiting(make_queue_fleet):
    """`queue stop` with a retry waiting said only "the next cell … does not start"; the
    docs promise the retry's words (hour s21a #12)."""
    from rgt_tui.services.queue.control import kill_cell, plan_retry, retry_cells

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    hold = qf.cell_script("hold", gate("go_hold"))
    a = qf.cell_script("a", gate("go_a"))
    b = qf.cell_script("b", "echo b")
    qf.write_queue(f"{hold} t\n{a} t\n{b} t\n")
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
        await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
        await kill_cell(qf.host(), transport, "hold", then="next", grace_s=1)
        await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="a to run")
        await retry_cells(await plan_retry(qf.fleet, qf.host(), transport, ["hold"]), transport)
    finally:
        await transport.close()
    stop = await arun("queue", "stop", "box1", "--hosts", hosts, "--yes")
    assert stop.returncode == 0, stop.stderr
    assert "box1: the queue stops after cell 1 (a)" in stop.stdout
    assert (
        "box1: hold waits to run again (a retry or resume asked earlier): rgt-tui "
        "queue retry box1 hold (R on its row in the Queue tab) runs it alone" in stop.stdout
    )
    (qf.root() / "go_a").touch()
    (qf.root() / "go_hold").touch()
    await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")


async def test_a_retry_whose_queue_ended_before_the_answer_names_the_retry_that_runs_it(
    make_queue_fleet,
):
    """The queue ended between the plan and the `y`: the cell was set to run again with
    nothing to run it, and the fix said `launch box1 --start N`, which runs the done cells
    again (hour s33 CLI #5). The retry said once more launches the queue for it alone."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    once = 'if [ -e "$HOME/second" ]; then echo fine; else touch "$HOME/second"; exit 3; fi'
    qf.write_queue(f"{qf.cell_script('flaky', once)} t\n{qf.cell_script('hold', gate('go'))} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: [c.status for c in v.cells] == [FAILED, RUNNING], what="hold")

    asked = Terminal("queue", "retry", "box1", "flaky", "--hosts", hosts)
    await asked.expect("[y/N]")
    assert "the running queue runs it before its next cell" in asked.out.decode()
    (qf.root() / "go").touch()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to end")
    asked.type("y")
    code, out, _ = await asked.finish()
    assert code == 0, out
    assert (
        "the queue ended before the retry reached it: flaky is set to run again, but nothing "
        "runs it yet — rgt-tui queue retry box1 flaky once more launches the queue for it "
        "alone" in out
    ), out
    assert "--start" not in out

    again = await arun("queue", "retry", "box1", "flaky", "--hosts", hosts, "--yes")
    assert again.returncode == 0 and "launched runner pid" in again.stdout, again.stdout
    final = await wait_view(
        qf, lambda v: v.state == FINISHED and v.cells[0].status == DONE, what="flaky again"
    )
    assert final.cells[1].status == DONE and final.cells[1].attempts == 1  # hold not re-run


async def test_queue_show_says_cells_still_to_run_run_the_box_s_older_code(
    make_queue_fleet, tmp_path
):
    """s37 dev-loop #2: a config edited here while the queue runs is in none of the cells
    still to run (sync is refused then), and `queue show` listed them pending with
    nothing said. It names them, the files that differ, and the way to run the edit."""
    from support.code_trees import add_code, write

    from rgt_tui.services.code_sync import sync_code
    from rgt_tui.services.fleet.file import load_fleet

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    code = tmp_path / "proj"
    write(code, "cells/hold.sh", gate("never") + "\n")
    write(code, "cells/next.sh", "echo next\n")
    write(code, "configs/next.yaml", "lr: 0.1\n")
    add_code(qf.loopback.hosts_file, code)
    fleet = load_fleet(qf.loopback.hosts_file)
    qf.write_queue("cells/hold.sh t\ncells/next.sh t\n")
    transport = qf.transport()
    try:
        await sync_code(fleet.host("box1"), transport, method="sftp")
        await launch(await plan_launch(fleet, fleet.host("box1"), transport), transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")

    same = await arun("queue", "show", "box1", "--hosts", hosts)
    assert same.returncode == 0 and "still to run" not in same.stdout, same.stdout
    write(code, "configs/next.yaml", "lr: 0.01  # the fix\n")
    shown = await arun("queue", "show", "box1", "--hosts", hosts)
    (note,) = [x for x in shown.stdout.splitlines() if "still to run" in x] or [shown.stdout]
    assert note.startswith("note: 1 cell still to run (next) will run the code on box1"), note
    assert "differs from the local tree in 1 file (configs/next.yaml)" in note
    assert "sync is refused while the queue runs" in note
    assert "(rgt-tui queue stop box1; rgt-tui sync box1; rgt-tui launch box1)" in note
    as_json = json.loads((await arun("queue", "show", "box1", "--hosts", hosts, "--json")).stdout)
    assert "1 file (configs/next.yaml)" in as_json["code_differs"]


@pytest.mark.timeout(300)
async def test_queue_show_is_not_held_up_by_a_box_slow_to_list_its_code(
    make_queue_fleet, tmp_path, monkeypatch
):
    """A review (s38): `queue show` waited for the code comparison, and a workdir slow to
    list (a network mount; here `find` stalled on the box) held the whole command for
    minutes, then printed a stale view. The view comes first, and the comparison gives
    up after its own bound, saying nothing it does not know."""
    from support.code_trees import add_code, write
    from support.machine import stalled_tool

    from rgt_tui.services.code_sync import sync_code
    from rgt_tui.services.fleet.file import load_fleet

    stall = stalled_tool("find", tmp_path, monkeypatch)
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    code = tmp_path / "proj"
    write(code, "cells/hold.sh", gate("never") + "\n")
    write(code, "cells/next.sh", "echo next\n")
    add_code(qf.loopback.hosts_file, code)
    fleet = load_fleet(qf.loopback.hosts_file)
    qf.write_queue("cells/hold.sh t\ncells/next.sh t\n")
    transport = qf.transport()
    try:
        await sync_code(fleet.host("box1"), transport, method="sftp")
        await launch(await plan_launch(fleet, fleet.host("box1"), transport), transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
    write(code, "train.py", "x = 1\n")  # differs: only an answer from the box could say so
    stall.touch()
    # The find stalls until the test ends it: arun's own timeout fails a command that waits.
    shown = await arun("queue", "show", "box1", "--hosts", hosts, timeout=150)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("box1: running · 0/2 done"), shown.stdout
    assert "still to run" not in shown.stdout  # not compared: nothing claimed
    stall.unlink()  # the box's stalled find goes on and ends


async def test_a_retry_of_a_cell_waiting_for_its_retry_says_it_runs_as_marked(make_queue_fleet):
    """`--resume` on a cell marked for a retry before its queue stopped said "each runs
    again with its {out} as it is", while its mark had set that {out} aside (s44 note)."""
    import time

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('broke', 'mkdir -p $2; echo step > $2/ck.pt; exit 3')} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to end")
    results = qf.root() / "results"
    aside = results / "broke.before-retry-20261205-120000"
    (results / "broke").rename(aside)  # the box's retry, and its record
    with (qf.qdir() / "cells" / "broke.state").open("a") as state:
        state.write(f"retry {int(time.time())} {aside}\n")

    asked = Terminal("queue", "retry", "box1", "broke", "--resume", "--hosts", hosts)
    await asked.expect("[y/N]")
    said = asked.out.decode()
    assert (
        f"marked before the queue stopped: runs as marked ({{out}} set aside then, to {aside})"
        in said
    ), said
    assert "each runs again with its {out} as it is" not in said
    # Not "Resume" over a cell that starts over (review s45 #1): header and question.
    assert said.lstrip().startswith("Run as marked on box1"), said
    assert "Run as marked 1 cell on box1: broke" in said and "Resume" not in said, said
    asked.type("n")
    code, _, _ = await asked.finish()
    assert code != 0 and aside.exists() and not (results / "broke").exists()


async def test_a_retry_refused_for_bad_unsent_lines_says_why_and_names_the_check(
    make_queue_fleet,
):
    """h612 #5: two bad lines appended to the file (not sent) refused a retry that sends
    none of them, naming the bad epochs and nothing of why a retry cares, nor the check."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('broke', 'exit 3')} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to end")
    qf.append_queue("cells/more.sh t abc\n")
    done = await arun("queue", "retry", "box1", "broke", "--yes", "--hosts", hosts)
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "bad epochs 'abc'" in said, said
    assert "a retry sends none of" in said and "unsent lines, but reads the whole file" in said
    assert "rgt-tui queue check" in said, said
