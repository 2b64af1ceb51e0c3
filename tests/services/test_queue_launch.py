"""Launching a queue over the loopback boxes: detached, recorded, append-only, refusals."""

from __future__ import annotations

import re
import shlex
import time

import pytest
from support.queues import GATE, SCRIPT_RUN, wait_view
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, FAILED, FINISHED, PENDING, Q_RUNNING, RUNNING
from rgt_tui.services.queue.append import append_cells
from rgt_tui.services.queue.check import check_fleet_queues
from rgt_tui.services.queue.launch import QueueError, launch, plan_launch
from rgt_tui.services.queue.view import read_queue_view


async def test_launch_returns_at_once_and_the_queue_leaves_complete_records(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    env = 'echo "PWD=$PWD OMP=$OMP_NUM_THREADS MKL=$MKL_NUM_THREADS UNBUF=$PYTHONUNBUFFERED"'
    # ok_one holds the queue at its gate until the test opens it: launch returning while
    # the queue runs is then what shows it never waits for the queue (not a timing).
    one = qf.cell_script("ok_one", f'{env}; mkdir -p "$2"; echo "$1 $3 $4" > "$2/args"; {GATE}')
    bad = qf.cell_script("fails", "echo about to fail; exit 3")
    two = qf.cell_script("ok_two", "echo second")
    local = f"# three cells\n{one} train 2\n{bad} train   # default epochs\n\n{two} eval 4\n"
    qf.write_queue(local)
    host, transport = qf.host(), qf.transport()

    plan = await plan_launch(qf.fleet, host, transport)
    assert plan.ok, plan.problems
    assert not any("has no {out}" in w for w in plan.warnings), plan.warnings
    assert (plan.detach, plan.session, plan.start_index) == ("tmux", "rgt-box1", 0)
    assert [(c.name, c.epochs, c.where.rsplit(":", 1)[1]) for c in plan.cells] == [
        ("ok_one", 2, "2"), ("fails", 20, "3"), ("ok_two", 4, "5"),
    ]  # fmt: skip
    assert plan.cells[0].command == f"bash {one} ok_one {qf.root()}/results/ok_one train 2"
    started = time.monotonic()
    result = await launch(plan, transport)
    took = time.monotonic() - started
    first = await read_queue_view(host, transport)
    await transport.close()
    assert took < 30 and first.state == Q_RUNNING, (took, first.summary())
    assert result.detach == "tmux" and result.pid > 0
    (qf.root() / "go").touch()

    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert [(c.name, c.status, c.exit_code) for c in view.cells] == [
        ("ok_one", DONE, 0), ("fails", FAILED, 3), ("ok_two", DONE, 0),
    ]  # fmt: skip
    q = qf.qdir()
    log = (q / "queue.log").read_text().splitlines()
    assert log[-1] == "QUEUE DONE: 2/3 succeeded; failed: fails(exit 3)"
    assert "about to fail" in log and "second" in log  # each cell's output is in the queue log
    runner = (q / "runner.state").read_text().splitlines()
    assert re.fullmatch(
        rf"launch \d+ \S+ tmux 0 {q.parent}/bin/run_queue\.[0-9a-f]{{12}}\.sh {result.pid}",
        runner[0],
    )
    assert re.fullmatch(r"done \d+ 2 1", runner[1])
    state = qf.state("fails").splitlines()
    assert re.fullmatch(r"start \d+ [0-9a-f-]{36} \d+", state[0]) and re.fullmatch(
        r"end \d+ 3", state[1]
    )
    cell_log = (q / "cells" / "ok_one.log").read_text()
    assert f"PWD={qf.root()} OMP=" in cell_log and "UNBUF=1" in cell_log
    omp = re.search(r"OMP=(\d+) MKL=(\d+)", cell_log)
    assert omp and omp.group(1) == omp.group(2) and int(omp.group(1)) >= 1
    assert (qf.root() / "results" / "ok_one" / "args").read_text() == "ok_one train 2\n"
    assert (
        q / "queue.txt"
    ).read_bytes() == local.encode()  # the box copy is the file, byte for byte
    assert len((q / "cells.tsv").read_text().splitlines()) == 3
    await wait_view(
        qf, lambda v: not v.session_present, what="the tmux session to end with the runner"
    )


async def test_second_launch_refused_append_runs_rewrite_refused(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\n")
    host, transport = qf.host(), qf.transport()
    plan = await plan_launch(qf.fleet, host, transport)
    await launch(plan, transport)
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")

    again = await plan_launch(qf.fleet, host, transport)
    assert not again.ok and any("already running (runner pid" in p for p in again.problems)
    # Stopped the way that records it, not by hand (a user's hour was told tmux kill-session).
    assert any("S / X on the Queue tab, queue stop / queue kill" in p for p in again.problems)
    assert not any("tmux kill-session -t" in p for p in again.problems)
    # Neutral words: the TUI (a) and the CLI (queue append) each name their own way.
    assert not any("rgt-tui" in p for p in again.problems)
    with pytest.raises(QueueError) as refused:
        await launch(plan, transport)  # a stale plan: the box itself refuses
    assert refused.value.code == "running" and "alive" in refused.value.message

    after = qf.cell_script("after", 'echo "after ran"')
    qf.append_queue(f"{after} t 1\n")
    appended = await append_cells(qf.fleet, host, transport)
    assert [c.name for c in appended.added] == ["after"] and appended.running

    original = qf.queue_file().read_text()
    # A changed line beside one added at the end: only the changed line is named, never
    # the added one against the empty text after the box copy's last newline.
    extra = qf.cell_script("extra", 'echo "extra ran"')
    qf.write_queue(original.replace("gate.sh t 1", "gate.sh t 2") + f"{extra} t 1\n")
    with pytest.raises(QueueError) as rewritten:
        await append_cells(qf.fleet, host, transport)
    message = str(rewritten.value)
    assert "line 1 on the box: 'cells/gate.sh t 1'" in message
    assert "line 1 locally:    'cells/gate.sh t 2'" in message
    assert "line 3" not in message and "extra" not in message, message
    qf.write_queue(original)
    await transport.close()

    (qf.root() / "go").touch()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert [(c.name, c.status) for c in view.cells] == [("gate", DONE), ("after", DONE)]
    assert (qf.qdir() / "queue.log").read_text().splitlines()[
        -1
    ] == "QUEUE DONE: 2/2 succeeded; failed: none"


async def test_nohup_runner_survives_the_client_and_the_box_connection_going_away(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    tail = qf.cell_script("tail_cell", "echo tail")
    qf.write_queue(f"{gate} t\n{tail} t\n")
    transport = qf.transport()
    plan = await plan_launch(qf.fleet, qf.host(), transport, detach="nohup")
    assert plan.ok and plan.detach == "nohup"
    result = await launch(plan, transport)
    await transport.close()
    await qf.loopback.box("box1").restart()  # every SSH session to the box is dropped
    await wait_for(lambda: "start" in qf.state("gate"), what="the gate cell to start")
    (qf.root() / "go").touch()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert [c.status for c in view.cells] == [DONE, DONE]
    assert " nohup 0 " in (qf.qdir() / "runner.state").read_text()
    assert view.launch is not None and view.launch.pid == result.pid


async def test_shell_metacharacters_in_cfg_and_task_run_literally(make_queue_fleet):
    qf = await make_queue_fleet(1, run="printf '%s\\n' {cfg} {task} > {out}.args")
    canary = qf.root() / "canary.txt"
    canary.write_text("still here\n")
    cfg = 'cfg dir/it\'s; rm -rf ~ $(touch PWNED) `touch PWNED2` "q".yaml'
    task = "t; rm -rf ~ && touch PWNED3 | cat"
    qf.write_queue(f"{shlex.quote(cfg)} {shlex.quote(task)} 3\n")
    transport = qf.transport()
    plan = await plan_launch(qf.fleet, qf.host(), transport)
    assert plan.ok, plan.problems
    name = 'it\'s; rm -rf ~ $(touch PWNED) `touch PWNED2` "q"'
    assert plan.cells[0].name == name
    await launch(plan, transport)
    await transport.close()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert view.cells[0].status == DONE
    assert (qf.root() / "results" / f"{name}.args").read_text() == f"{cfg}\n{task}\n"
    assert canary.read_text() == "still here\n"
    assert not [p for p in qf.base.rglob("PWNED*")]
    assert (qf.qdir() / "cells" / f"{name}.state").exists()


async def test_duplicate_names_across_two_hosts_refuse_the_launch(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    qf.write_queue("cells/base.sh t\ncells/solo.sh t\n", "box1")
    qf.write_queue("# box2\nother/base.sh t 5\n", "box2")
    transport = qf.transport()
    plan = await plan_launch(qf.fleet, qf.host("box1"), transport)
    await transport.close()
    assert not plan.ok and not plan.queue_append
    (problem,) = plan.problems
    assert "'base' is used 2 times: queues/box1.txt:1 and queues/box2.txt:2" in problem.replace(
        str(qf.base) + "/", ""
    )
    assert not (qf.qdir() / "cells.tsv").exists()  # nothing was sent
    checked = check_fleet_queues(qf.fleet)
    assert not checked.ok and [d.name for d in checked.duplicates] == ["base"]
    assert [c.where.rsplit("/", 1)[1] for c in checked.duplicates[0].places] == [
        "box1.txt:1", "box2.txt:2",
    ]  # fmt: skip


async def test_start_index_resumes_and_cells_before_it_do_not_run(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    names = [qf.cell_script(f"c{i}", f"echo c{i}") for i in range(3)]
    qf.write_queue("".join(f"{n} t 1\n" for n in names))
    transport = qf.transport()
    plan = await plan_launch(qf.fleet, qf.host(), transport, start_index=1)
    assert plan.ok and [c.name for c in plan.to_run] == ["c1", "c2"]
    assert any("before start index 1" in w for w in plan.warnings)
    await launch(plan, transport)
    view = await wait_view(qf, lambda v: v.state == FINISHED)
    assert [c.status for c in view.cells] == [PENDING, DONE, DONE]
    bad = await plan_launch(qf.fleet, qf.host(), transport, start_index=3)
    assert any("start index 3 is outside the queue" in p for p in bad.problems)
    assert not any("--start" in p for p in bad.problems)
    await transport.close()


async def test_a_start_past_the_last_cell_is_refused_before_the_box_is_asked(tmp_path):
    """Hour s25b #9: ``launch HOST --start N`` past the queue's last cell was refused only
    after ~25 s of connecting and preflight. The local file says it: refused at once,
    naming the file, its cells and the last one's index. A box that refuses every
    connection shows it: the plan never tried it."""
    from support.machine import closed_port

    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.transport import transport_for

    queue = tmp_path / "box9.txt"
    queue.write_text("a.json t 1\nb.json t 1\nc.json t 1\n")
    with closed_port() as port:
        hosts = tmp_path / "hosts.toml"
        hosts.write_text(
            f'[[hosts]]\nname = "box9"\nssh = "me@127.0.0.1:{port}"\nqueue = "{queue}"\n'
            'run = "python train.py --config {cfg} --out {out}"\n'
        )
        fleet = load_fleet(hosts)
        transport = transport_for(fleet.host("box9"))
        try:
            plan = await plan_launch(fleet, fleet.host("box9"), transport, start_index=3)
        finally:
            await transport.close()
    assert plan.problems == (
        f"start index 3 is outside the queue: {queue} has 3 cells, indices 0–2 — "
        "start index 2 runs the last one",
    )


async def test_a_changed_run_template_names_the_ways_out(make_queue_fleet):
    """A `run` template changed after cells ran refuses the launch (the same index must
    run the same command): the refusal said only "launch with --fresh", which the Launch
    dialog cannot do, and not that the done cells run again (a user's hour)."""
    from support.fleet_files import set_host_key

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('quick', 'echo hi')} t 1\n")
    host, transport = qf.host(), qf.transport()
    await launch(await plan_launch(qf.fleet, host, transport), transport)
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    set_host_key(qf.loopback.hosts_file, "run", "bash {cfg} {name} {out} {task} 99")
    qf._fleet = None  # read the changed fleet file
    again = await plan_launch(qf.fleet, qf.host(), transport)
    (problem,) = [p for p in again.problems if "no longer match" in p]
    assert "put the template back as it was" in problem, problem
    assert "rgt-tui launch box1 --fresh, or Start over in the Launch dialog (L)" in problem
    assert "the done cells run again" in problem
    # `queue append` met the same change with "run template or durable_dir changed?"
    # and no way out.
    qf.append_queue(f"{qf.cell_script('later', 'echo hi')} t 1\n")
    with pytest.raises(QueueError) as refused:
        await append_cells(qf.fleet, qf.host(), transport)
    await transport.close()
    assert "put the template back as it was" in str(refused.value), refused.value
    assert "rgt-tui launch box1 --fresh" in str(refused.value)


async def test_a_fresh_start_names_the_unfinished_cells_the_gate_then_forgets(make_queue_fleet):
    """The gate reads the box's current queue: after --fresh moved it aside, its failed
    cell no longer locked anything, and nothing had said so (h531 #3)."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(
        f"{qf.cell_script('crash', 'exit 3')} t 1\n{qf.cell_script('fine', 'echo ok')} t 1\n"
    )
    host, transport = qf.host(), qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, host, transport), transport)
        await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
        fresh = await plan_launch(qf.fleet, host, transport, fresh=True)
    finally:
        await transport.close()
    (said,) = [w for w in fresh.warnings if "unfinished in that queue" in w]
    assert said.startswith("crash is unfinished in that queue: once it is moved aside"), said
    assert "the teardown gate no longer counts it as unfinished work" in said
    assert "fine" not in said  # done: nothing unfinished of it


async def test_a_host_with_a_queue_but_no_run_template_is_refused_not_a_traceback(
    make_queue_fleet,
):
    """``add --run none`` writes such an entry; planning it raised an AssertionError (the
    TUI said "Could not plan: AssertionError"). Refused with the key and its line."""
    qf = await make_queue_fleet(1, run=None)
    qf.write_queue(f"{qf.cell_script('one', 'echo ran')} train\n")
    plan = await plan_launch(qf.fleet, qf.host(), qf.transport())
    assert not plan.ok and not plan.cells
    assert any("has no run" in p and 'run = "python3 train.py' in p for p in plan.problems), (
        plan.problems
    )


async def test_work_is_refused_on_a_box_recorded_as_torn_down(make_queue_fleet):
    """A launch there only warned (hour s17b #1): its results were then skipped by
    ``pull --all``, unwatched, and the pane said 'torn down' while the run went on. A
    launch and an append are refused, saying why and the way to use the box again."""
    from rgt_tui.domain.box_identity import BoxIdentity
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.journal import TeardownRecord, journal_for

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('one', 'echo ran')} train\n")
    box = "0123456789abcdef0123456789abcdef"
    journal = journal_for(qf.fleet)
    journal.observe_box("box1", BoxIdentity(box, None), time.time() - 60)
    journal.add_teardown("box1", TeardownRecord(time.time(), None, None, "", True, box, True))

    plan = await plan_launch(qf.fleet, qf.host(), qf.transport())
    assert not plan.ok
    said = " ".join(plan.problems)
    assert "box1 (box 0123456789ab (host key not recorded)) is recorded as torn down" in said
    assert "results made there now would be left behind" in said, said
    assert "rename its [[hosts]] entry in place" in said, said
    # Refused before the box was asked anything: no preflight of ~10 s first (s23b #9).
    assert plan.preflight is None and plan.cells == ()
    with pytest.raises(QueueError) as caught:
        await append_cells(qf.fleet, qf.host(), qf.transport())
    assert "is recorded as torn down" in str(caught.value)
    assert not (qf.qdir() / "runner.state").exists()  # nothing ran there


async def test_a_run_template_without_out_is_warned_of_in_the_plan(make_queue_fleet):
    """h522 #1: a template without {out} passed add, queue check, preflight and the
    plan unsaid; its cells wrote into the workdir, and the gate matched an earlier run's
    folders of the same names. The plan now says so (a warning: such a run still runs)."""
    qf = await make_queue_fleet(1, run="bash {cfg} {name}")
    qf.write_queue(f"{qf.cell_script('solo', 'echo hi')} train 1\n")
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport)
    finally:
        await transport.close()
    assert plan.ok, plan.problems
    (said,) = [w for w in plan.warnings if "has no {out}" in w]
    assert said.startswith("the run template has no {out}: where each cell writes is not known")
    assert "pass {out} to the command (e.g. --out {out})" in said
