"""A resume move over two loopback boxes with real files: a cell checkpointing every
second is pulled and verified, its box is preempted (vast.ai style: the box stops
answering, its processes die), and `queue move` resumes it on a second box from the
verified step; a damaged local copy is never pushed and asks for --from-scratch. Over 450
lines on purpose: the preempt, plan and move helpers serve every case of one flow."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
from dataclasses import replace

import pytest
from support.cli import arun
from support.fleet_files import set_host_key
from support.machine import kill_processes_under, tmpfs
from support.pulls import fast
from support.queues import GATE, SCRIPT_RUN, wait_view
from support.resume_cell import cell_log, pull_verify, run_until_held
from support.resume_cell import plan_move as plan
from support.waiting import wait_for

from rgt_tui.domain.preemption import LOST, Preemption, preemption_line
from rgt_tui.domain.queue_state import DONE, FINISHED, RUNNING
from rgt_tui.services.box_script import after_queue_ctl, box_refusal, run_box_script
from rgt_tui.services.pull import pull_host
from rgt_tui.services.queue.move import MoveError, PartlyMoved, plan_move
from rgt_tui.services.queue.resume import (
    FROM_SCRATCH,
    NEWER_LISTED,
    resume_lines,
    resume_move,
)
from rgt_tui.services.runtime.preemption import cell_checkpoints
from rgt_tui.services.verify.run import verify_host


async def preempt(qf, name: str = "box1") -> None:
    """vast.ai style: the box stops answering and every process of its user dies at once."""
    await qf.loopback.box(name).stop()
    kill_processes_under(qf.root(name))


async def move(qf, planned, **kw):
    """Do the planned resume move from box1 to box2 over fresh connections."""
    t1, t2 = qf.transport("box1"), qf.transport("box2")
    try:
        return await resume_move(planned, qf.fleet, qf.host("box1"), t1, t2, **kw)
    finally:
        await t1.close()
        await t2.close()


async def test_a_preempted_cell_resumes_on_another_box_from_its_verified_step(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    first = await pull_verify(qf, "box1")
    # Its files verify; the cell still runs, so the roster does not count it yet.
    assert first.problems == ("cell ck missing: running: counted once it is done",)
    verified_step = json.loads(
        (qf.fleet.results_dir / "box1" / "ck" / "checkpoint.json").read_text()
    )["step"]
    assert verified_step >= 2
    # While it runs, the move is refused for that alone: its pulled mid-run files are not
    # "verified results" that a move would run again (the roster does not count them).
    running = await plan(qf)
    assert not running.ok
    assert [p for p in running.move.problems if "ck" in p] == [
        "ck is running on box1 now — stop or kill it first (S or X on its Queue tab; rgt-tui queue kill box1), then move it"
    ], running.move.problems
    # The target was not read for a refused move: its {out} as the fleet file gives it.
    out2 = qf.root("box2") / "results" / "ck"
    assert f" to box2:{out2}, checked by SHA-256 there" in "\n".join(resume_lines(running))
    # Running on past the pull (a log line, a checkpoint since): refused as running, not
    # also said to have "stopped" at its last log line (h493 #7).
    await asyncio.sleep(1.1)  # the log's mtime a whole second past the pull's listing
    with next((qf.qdir("box1") / "cells").glob("ck*.log")).open("a") as log:
        log.write("step 3\n")
    late = qf.root("box1") / "results" / "ck" / "late.pt"
    late.write_bytes(b"late")
    words = "\n".join(resume_lines(await plan(qf)))
    assert "is running on box1 now" in words and "it stopped" not in words, words
    late.unlink()
    await preempt(qf)

    planned = await plan(qf)
    assert planned.ok, planned.problems
    assert not planned.move.source_answered  # box1 is gone: its box skips nothing
    assert planned.checkpoint is not None and planned.checkpoint.rel == "checkpoint.bin"
    assert planned.step == verified_step and planned.step_from == "its sidecar checkpoint.json"
    # --from-scratch with a verified checkpoint here: nothing pushed, and the plan does not
    # say there is no checkpoint (s35 resume hour #7).
    scratch = await plan(qf, from_scratch=True)
    assert scratch.ok and scratch.files == ()
    said = "\n".join(resume_lines(scratch))
    assert "no verified checkpoint" not in said, said
    assert (
        "from scratch, as asked: the verified checkpoint checkpoint.bin stays here and is not "
        "pushed — the run starts over"
    ) in said
    assert sorted(f.rel for f in planned.files) == ["checkpoint.bin", "checkpoint.json"]
    words = "\n".join(resume_lines(planned))
    assert (
        f"checkpoint: checkpoint.bin, step {verified_step} (its sidecar checkpoint.json)" in words
    )
    assert "repeats: at most" in words and "free there" in words
    # How box2 runs it, for box2 as it is (an empty queue), not the general rule.
    assert (
        "\nthen box2's queue launched from cell 0 (ck), after its preflight (a failed check "
        "stops the launch, not the move)\n"
    ) in words

    result = await move(qf, planned)
    assert "launched from cell 0" in result.queued
    assert qf.queue_file("box1").read_text().startswith("#moved-to box2: cells/ck.sh t 1")
    assert "cells/ck.sh t 1" in qf.queue_file("box2").read_text()
    there = await wait_view(qf, lambda v: v.state == FINISHED, name="box2", what="box2's run")
    assert [(c.name, c.status) for c in there.cells] == [("ck", DONE)]
    log = cell_log(qf, "box2")
    loaded = [int(line.split()[2]) for line in log.splitlines() if line.startswith("loaded step")]
    assert loaded == [verified_step] and loaded[0] > 0, log  # the run loaded the verified step
    assert "done at step 6" in log
    second = await pull_verify(qf, "box2")
    assert second.ok, second.problems  # both halves verify
    assert not list((qf.root("box2") / "results").glob(".rgt-resume.*"))  # no staging left


async def test_a_checkpoint_pulled_and_not_verified_yet_is_sent_to_verify_first(
    make_queue_fleet,
):
    """h502 #4: the refusal of a cell whose checkpoint was pulled but not verified led
    with `--from-scratch` (a start over: 2,400 steps thrown away) where one verify made
    the move resume from it."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    transport = qf.transport("box1")
    try:
        pulled = await pull_host(qf.host("box1"), qf.fleet.results_dir, transport, options=fast())
        assert pulled.ok, pulled.failed
    finally:
        await transport.close()
    os.kill(int((qf.root("box1") / "ck.pid").read_text()), signal.SIGKILL)
    await wait_view(qf, lambda v: v.cells[0].status not in (RUNNING,), what="ck to end")
    refused = await plan(qf)
    said = "\n".join(refused.problems)
    assert "ck has no verified checkpoint" in said, said
    assert "— verify it first (rgt-tui verify box1), then plan the move again; or, to start " in (
        said
    ), said
    await pull_verify(qf, "box1")
    planned = await plan(qf)
    assert planned.ok and planned.checkpoint is not None, planned.problems


async def test_a_damaged_checkpoint_is_never_pushed_and_the_move_needs_from_scratch(
    make_queue_fleet,
):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    first = await pull_verify(qf, "box1")  # its files verify; the running cell is not counted
    assert first.problems == ("cell ck missing: running: counted once it is done",)
    local = qf.fleet.results_dir / "box1" / "ck" / "checkpoint.bin"
    data = bytearray(local.read_bytes())
    data[-1] ^= 0xFF  # bit rot after verify: same size, another hash
    local.write_bytes(bytes(data))
    # The cell dies on its box (killed); the box still answers.
    os.kill(int((qf.root("box1") / "ck.pid").read_text()), signal.SIGKILL)
    await wait_view(qf, lambda v: v.cells[0].status not in (RUNNING,), what="ck to end")

    refused = await plan(qf)
    assert not refused.ok and refused.checkpoint is None
    said = "\n".join(refused.problems)
    assert "ck has no verified checkpoint" in said and "--from-scratch" in said
    assert "checkpoint.bin: the copy here changed since it was verified" in said
    hosts = qf.loopback.hosts_file
    cli = await arun("queue", "move", "ck", "--to", "box2", "--yes", "--hosts", hosts)
    assert cli.returncode == 1 and "--from-scratch" in cli.stdout, cli.stdout + cli.stderr
    assert not (qf.root("box2") / "results" / "ck").exists()

    cli = await arun(
        "queue", "move", "ck", "--to", "box2", "--from-scratch", "--yes", "--hosts", hosts
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert FROM_SCRATCH in cli.stdout
    assert "not pushed: checkpoint.bin — the copy here changed since it was verified" in cli.stdout
    there = await wait_view(qf, lambda v: v.state == FINISHED, name="box2", what="box2's run")
    assert [(c.name, c.status) for c in there.cells] == [("ck", DONE)]
    assert "fresh start: no checkpoint" in cell_log(qf, "box2")
    assert "skip" in qf.state("ck", "box1")  # box1 answered: it skips the cell


async def test_a_resume_onto_a_box_without_the_cell_config_is_refused_before_it_moves(
    make_queue_fleet,
):
    """The cell's config (its queue line's path, ``{cfg}``) only ever on the preempted
    box: the plan passed and the cell died on the target with FileNotFoundError (hour
    s21a #5). The target's box is asked; the plan refuses, naming the path and the fix."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    script = qf.root("box2") / "cells" / "ck.sh"
    kept = script.read_text()
    script.unlink()  # box2 never had the cell's script
    await preempt(qf)

    refused = await plan(qf)
    assert not refused.ok and refused.checkpoint is not None
    assert refused.problems == (
        f"cells/ck.sh is not on box2 ({script}): ck would fail at its start there — put it "
        f"in box2's workdir ({qf.root('box2')}), then plan the move again",
    ), refused.problems
    assert "cells/ck.sh is not on box2" in "\n".join(resume_lines(refused))

    script.write_text(kept)  # put there: the move goes
    assert (await plan(qf)).ok


async def test_a_resume_onto_an_idle_spare_runs_the_spare_own_pending_cells_too(make_queue_fleet):
    # ux-h 14: launched from the moved cell alone, the spare's own cell 0 stayed pending
    # behind it (running it later would run the moved cell again), said only in a notice.
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    own = qf.cell_script("spare1", 'mkdir -p "$2" && echo ok > "$2/done.txt"', name="box2")
    two = qf.cell_script("spare2", 'mkdir -p "$2" && echo ok > "$2/done.txt"', name="box2")
    qf.write_queue(f"{own} t 1\n{two} t 1\n", "box2")
    await preempt(qf)

    # Hour s25a #7: the move launches box2's idle queue, its own pending cells with it;
    # the plan said "box2's queue launched from cell 0: its own pending cells … first",
    # which did not read as the move starting them. Said before it asks, and in --help.
    idle = (
        "then box2's queue is idle: the move launches it from cell 0, running its 2 other "
        "pending cells too (spare1, spare2), then ck, after its preflight (a failed check "
        "stops the launch, not the move)"
    )
    hosts = qf.loopback.hosts_file
    asked = await arun("queue", "move", "ck", "--to", "box2", "--hosts", hosts)  # no --yes
    assert asked.returncode == 2 and "pass --yes" in asked.stderr, asked.stdout + asked.stderr
    assert f"  {idle}\n" in asked.stdout, asked.stdout
    assert "cells/ck.sh" not in qf.queue_file("box2").read_text()  # asked, so not moved
    helped = (await arun("queue", "move", "--help")).stdout
    assert "an idle one is launched by the move, and HOST's own pending cells just before it " in (
        " ".join(helped.split())
    ), helped

    planned = await plan(qf)
    assert planned.ok, planned.problems
    assert idle in resume_lines(planned)  # the plan knew
    # ...and counts them, for the dialog's Enter line ("…, after 2 pending cells of its
    # own": hour s34 TUI #6, it named the moved cell alone).
    assert planned.own_first == 2
    result = await move(qf, planned)
    said = "box2's queue launched from cell 0: its own pending cells 0 (spare1), 1 (spare2) first"
    assert result.queued == f"{said}, then ck"
    there = await wait_view(qf, lambda v: v.state == FINISHED, name="box2", what="box2's run")
    assert [(c.name, c.status) for c in there.cells] == [
        ("spare1", DONE),
        ("spare2", DONE),
        ("ck", DONE),
    ]
    assert "done at step 6" in cell_log(qf, "box2")


async def test_a_cell_killed_from_outside_repeats_at_least_what_its_last_sign_of_life_says(
    make_queue_fleet,
):
    """No end record (the runner and the cell killed from outside, the box still up): the
    moment it stopped is only its last sign of life, often the checkpoint itself, so the
    work a resume repeats is a lower bound, said so; not "repeats: 0s of work"."""
    from rgt_tui.domain.queue_state import INTERRUPTED

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    qf.kill_session()  # the tmux session and all in it: no end record
    await wait_view(qf, lambda v: v.cells[0].status == INTERRUPTED, what="ck interrupted")
    planned = await plan(qf)
    assert planned.ok, planned.problems
    assert planned.interrupted_at is not None and not planned.stopped_exact
    words = "\n".join(resume_lines(planned))
    assert "repeats: at least " in words and "last sign of life" in words, words
    assert "may have run on after it" in words


async def test_a_resume_onto_a_running_queue_says_so_in_the_plan(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    # Preempted first: on this machine both boxes' queues share one tmux server, which
    # box1 started and the preemption's kill ends.
    await preempt(qf)
    qf.write_queue(f"{qf.cell_script('gate', GATE, name='box2')} t 1\n", "box2")
    hosts = qf.loopback.hosts_file
    launched = await arun("launch", "box2", "--hosts", hosts, "--yes")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, name="box2", what="box2's gate")

    planned = await plan(qf)
    assert planned.ok, planned.problems
    words = resume_lines(planned)
    said = "then box2's running queue runs it after its current cells (appended)"
    assert said in words, "\n".join(words)
    result = await move(qf, planned)
    assert result.queued == "box2's running queue runs it after its current cells"
    (qf.root("box2") / "go").touch()
    there = await wait_view(qf, lambda v: v.state == FINISHED, name="box2", what="box2's run")
    assert [(c.name, c.status) for c in there.cells] == [("gate", DONE), ("ck", DONE)]


async def test_a_cell_that_wrote_nothing_is_not_sent_to_pull_first(make_queue_fleet):
    """No checkpoint pulled, and its box holds no file under the cell's {out}: pulling
    cannot help, and the refusal says so rather than "pull, then verify"."""
    from rgt_tui.domain.queue_state import INTERRUPTED

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    line = qf.cell_script("ck", 'echo "no checkpoints here"; ' + GATE)
    qf.cell_script("ck", 'echo "no checkpoints here"; ' + GATE, name="box2")  # its code there
    qf.write_queue(f"{line} t 1\n", "box1")
    qf.write_queue("", "box2")
    hosts = qf.loopback.hosts_file
    launched = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="ck to run")
    qf.kill_session()
    await wait_view(qf, lambda v: v.cells[0].status == INTERRUPTED, what="ck interrupted")

    refused = await plan(qf)
    assert not refused.ok
    out = qf.root("box1") / "results" / "ck"
    assert refused.problems == (
        f"ck has no verified checkpoint (box1 holds no file under {out} either: the run "
        "wrote none) — move it with --from-scratch to run it again from the start",
    )
    assert resume_lines(refused)[0].startswith("REFUSED: ck has no verified checkpoint")
    # Its line does not move: the plan says what a move would do, as a condition.
    assert (
        "ck [interrupted]: if moved, line 1 becomes '#moved-to box2: …'; box1's box skips cell 0; "
        "it becomes box2's cell 0" in (resume_lines(refused))
    )
    (out / "ckpt.pt").parent.mkdir(parents=True)
    (out / "ckpt.pt").write_bytes(b"x")  # now the box has one: pull and verify it first
    again = await plan(qf)
    assert (
        "nothing of ck pulled here: rgt-tui pull box1, then rgt-tui verify box1"
        in (again.problems[0])
    )
    # h541 #3: a pull that refused its checkpoint (a newline in its name) refuses it
    # again; the plan says so and gives the pull's own fix, not "pull, then verify".
    (out / "ckpt.pt").rename(out / "step 9\nx.pt")
    transport = qf.transport()
    try:
        pulled = await pull_host(qf.host("box1"), qf.fleet.results_dir, transport, options=fast())
    finally:
        await transport.close()
    assert pulled.manifest.refused, pulled
    again = await plan(qf)
    assert "the last pull of box1 refused " in again.problems[0], again.problems
    assert (
        "and refuses it again until it changes on the box: rename it on the box to a plain "
        "name, then pull again (rgt-tui pull box1 names each; rgt-tui shell box1 opens a "
        "shell there), then rgt-tui verify box1" in (again.problems[0])
    )
    assert "\n" not in again.problems[0]
    # A file caught mid-write is not such a refusal: the next pull brings it (review
    # h544 #2: it was told to rename it).
    from rgt_tui.domain.manifest import Refusal
    from rgt_tui.services.queue.resume import _refused_of

    (first,) = pulled.manifest.refused
    assert _refused_of(pulled.manifest, qf.host("box1"), "ck")
    mid_write = Refusal(first.root, first.path, "changed while being hashed (still written?)")
    caught = replace(pulled.manifest, refused=(mid_write,))
    assert _refused_of(caught, qf.host("box1"), "ck") == ""


async def test_a_copy_pulled_before_a_retry_is_never_resumed_from(make_queue_fleet):
    """hour s17a #1: the retry set the cell's checkpoint aside to start over; after a
    preemption the resume move pushed the copy pulled before the retry, and the cell
    resumed from the attempt the user had discarded. That copy vouches for nothing now."""
    from rgt_tui.services.queue.verified_checkpoint import newest_verified

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    assert newest_verified(qf.fleet, qf.host("box1"), "ck") is not None  # before the retry
    os.kill(int((qf.root("box1") / "ck.pid").read_text()), signal.SIGKILL)
    await wait_view(qf, lambda v: v.cells[0].status not in (RUNNING,), what="ck to end")
    hosts = qf.loopback.hosts_file
    retry = await arun("queue", "retry", "box1", "ck", "--yes", "--hosts", hosts)
    assert retry.returncode == 0, retry.stdout + retry.stderr
    await wait_view(qf, lambda v: v.cells[0].attempts == 2, what="ck's retried attempt")
    # The pane's "verified here" age is not the retried attempt's either.
    assert newest_verified(qf.fleet, qf.host("box1"), "ck") is None
    await preempt(qf)

    refused = await plan(qf)
    assert not refused.ok and refused.checkpoint is None
    said = "\n".join(refused.problems)
    assert "ck has no verified checkpoint" in said and "--from-scratch" in said, said
    assert "pulled before the retry at" in said and "set that attempt aside" in said, said


def test_the_panes_cache_key_changes_when_a_retry_is_recorded(tmp_path):
    """The pane asks for a cell's verified checkpoint again only when the records'
    signature changes: a retry with no pull since kept the discarded attempt's "verified
    here" age on the pane."""
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.services.queue.retried import record_retries
    from rgt_tui.services.queue.verified_checkpoint import signature

    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:22"\n')
    fleet = load_fleet(hosts)
    before = signature(fleet, fleet.host("box1"))
    assert record_retries(fleet, "box1", {"ck": 1_800_000_000}) == ""
    assert signature(fleet, fleet.host("box1")) != before


async def test_a_resume_onto_a_stopped_spare_says_its_waiting_retry_runs_first(make_queue_fleet):
    """The spare's queue was stopped while a retry of its own cell waited: the runner runs
    that retry before the moved cell, and the unattended move said nothing of it (hour
    s21a #4). The plan and the move's words name it."""
    from rgt_tui.domain.queue_state import USER_STOPPED
    from rgt_tui.services.queue.control import kill_cell, plan_retry, retry_cells, stop_queue
    from rgt_tui.services.queue.launch import launch, plan_launch

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    await preempt(qf)  # first: the boxes' queues share one tmux server, which this ends
    own = qf.cell_script("own", 'while [ ! -e "$HOME/go_own" ]; do sleep 0.05; done', name="box2")
    two = qf.cell_script("two", 'while [ ! -e "$HOME/go_two" ]; do sleep 0.05; done', name="box2")
    qf.write_queue(f"{own} t 1\n{two} t 1\n", "box2")
    t2 = qf.transport("box2")
    try:
        await launch(await plan_launch(qf.fleet, qf.host("box2"), t2), t2)
        await wait_view(qf, lambda v: v.cells[0].status == RUNNING, name="box2", what="own")
        await kill_cell(qf.host("box2"), t2, "own", then="next", grace_s=1)
        await wait_view(qf, lambda v: v.cells[1].status == RUNNING, name="box2", what="two")
        await retry_cells(await plan_retry(qf.fleet, qf.host("box2"), t2, ["own"]), t2)
        await stop_queue(qf.host("box2"), t2)
    finally:
        await t2.close()
    (qf.root("box2") / "go_two").touch()
    await wait_view(qf, lambda v: v.state == USER_STOPPED, name="box2", what="box2 to stop")

    planned = await plan(qf)
    assert planned.ok, planned.problems
    first = "its cell 0 (own), waiting to run again, runs first"
    assert any(first in line for line in resume_lines(planned)), resume_lines(planned)
    result = await move(qf, planned)
    assert result.queued.endswith(f"; {first}"), result.queued
    (qf.root("box2") / "go_own").touch()
    there = await wait_view(qf, lambda v: v.state != RUNNING and v.cells[-1].status == DONE,
                            name="box2", what="box2's run")  # fmt: skip
    assert [(c.name, c.status) for c in there.cells] == [("own", DONE), ("two", DONE), ("ck", DONE)]


async def test_a_cell_that_had_not_started_on_a_box_that_is_down_is_not_sent_to_pull(
    make_queue_fleet,
):
    """Hour s24a #5: box1 preempted while its first cell ran; the next one had never
    started. Its move was refused with "rgt-tui pull box1" (down) and "run it again"."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    first = qf.cell_script("first", GATE)
    later = qf.cell_script("later", "echo later")
    qf.cell_script("later", "echo later", name="box2")
    qf.write_queue(f"{first} t 1\n{later} t 1\n", "box1")
    qf.write_queue("", "box2")
    hosts = qf.loopback.hosts_file
    launched = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="first to run")
    (qf.root("box1") / "results" / "first").mkdir(parents=True, exist_ok=True)
    (qf.root("box1") / "results" / "first" / "a.json").write_text("{}")
    await pull_verify(qf, "box1")
    await preempt(qf)

    refused = await plan(qf, "later")
    (problem,) = refused.problems
    assert "as box1's records were last pulled (" in problem, problem
    assert "later had not started there; box1 does not answer" in problem
    assert "rgt-tui pull box1" not in problem


async def test_a_box_that_answers_and_ran_on_after_the_pull_is_to_be_pulled_first(
    make_queue_fleet,
):
    """Hour s34 TUI #3: the source box answered and had checkpointed on after the last
    pull; the resume move started from the older verified copy and repeated 8 minutes,
    saying nothing of the newer checkpoint one pull away."""
    from rgt_tui.domain.queue_state import KILLED
    from rgt_tui.services.queue.control import kill_cell

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    # The end record is in whole seconds: the kill a second past the pull, whatever the
    # load (a wait for an ordering, not a timing).
    pulled = time.time()
    await wait_for(lambda: time.time() >= pulled + 1.05, 10, "a second past the pull")
    t1 = qf.transport("box1")
    try:
        await kill_cell(qf.host("box1"), t1, "ck", then="stop", grace_s=1)
    finally:
        await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == KILLED, what="ck killed")
    planned = await plan(qf)
    assert planned.ok, planned.problems
    assert planned.pulled_at is not None and planned.interrupted_at is not None
    assert planned.pulled_at < planned.interrupted_at
    # It ran on, and wrote no checkpoint since (it was held): nothing to pull first — by
    # the times alone the plan said there was (s43 spot hour #4).
    words = "\n".join(resume_lines(planned))
    assert "ran on after the last pull" not in words, words

    # A checkpoint written on the box after the pull: the plan names it.
    out = qf.root("box1") / "results" / "ck"
    data = b"step 99\n" + b"w" * 8192
    (out / "checkpoint.bin").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    (out / "checkpoint.json").write_text(json.dumps({"step": 99, "sha256": sha}))
    words = "\n".join(resume_lines(await plan(qf)))
    assert "box1 answers, and ck ran on after the last pull here" in words, words
    assert "the checkpoint it wrote since (checkpoint.bin" in words, words
    assert "pull and verify box1 first" in words
    # Then more files than the box lists (samples, event files): the checkpoint is past
    # the cut, so it may be there — not "nothing written since" (review s44 #3).
    samples = out / "samples"
    samples.mkdir()
    later = time.time() + 5
    for i in range(NEWER_LISTED + 1):
        (samples / f"img_{i}.png").write_bytes(b"p")
        os.utime(samples / f"img_{i}.png", (later, later))
    words = "\n".join(resume_lines(await plan(qf)))
    assert "a checkpoint it wrote since may be on box1 only" in words, words

    await pull_verify(qf, "box1")  # pulled since it stopped: nothing newer on the box
    again = "\n".join(resume_lines(await plan(qf)))
    assert "ran on after the last pull" not in again, again


async def test_a_move_refused_after_its_push_takes_the_pushed_copy_back(make_queue_fleet):
    """s35 resume hour #2: a move refused after its push ("nothing was moved") left the
    checkpoint on the target, and every later move of the cell there was refused ("holds
    files already"). What the move stands on is checked before the push, and a refusal
    after it takes the pushed copy back."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    await preempt(qf)
    planned = await plan(qf)
    assert planned.ok, planned.problems
    out2 = qf.root("box2") / "results" / "ck"
    source = qf.queue_file("box1")
    sound = source.read_text()

    # Changed before the move: refused before anything is pushed.
    source.write_text(sound + "# a note\n")
    with pytest.raises(MoveError) as early:
        await move(qf, planned)
    assert "changed since the move was planned — nothing was moved" in str(early.value)
    assert "taken back" not in str(early.value) and not out2.exists()

    # Changed while the files go (another terminal): refused after the push, taken back.
    source.write_text(sound)
    touched: list[int] = []

    def change_once(n: int) -> None:
        if not touched:
            touched.append(n)
            source.write_text(sound + "# another note\n")

    with pytest.raises(MoveError) as late:
        await move(qf, planned, on_bytes=change_once)
    said = str(late.value)
    assert touched and "changed since the move was planned" in said
    assert f"the copy pushed to box2:{out2} was taken back" in said, said
    assert not out2.exists() and not list(out2.parent.glob(".rgt-resume.*"))

    # Nothing is in the way of the move itself now.
    source.write_text(sound)
    result = await move(qf, await plan(qf))
    assert "launched from cell 0" in result.queued and (out2 / "checkpoint.bin").exists()


async def test_a_pulled_checkpoint_not_yet_verified_asks_for_a_verify_not_a_fresh_start(
    make_queue_fleet,
):
    """s35 resume hour #5: pulled (p) but not verified, then preempted: the pane and the
    notice said a move starts it from scratch; a verify, which needs no box, was the way."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    t1 = qf.transport("box1")
    try:
        pulled = await pull_host(qf.host("box1"), qf.fleet.results_dir, t1, options=fast())
    finally:
        await t1.close()
    assert pulled.ok, pulled.failed
    await preempt(qf)
    host = qf.host("box1")
    assert cell_checkpoints(qf.fleet, host, "ck") == (None, "ck/checkpoint.bin")
    p = Preemption("box1", LOST, time.time(), "s", "ck", unverified="ck/checkpoint.bin")
    line = preemption_line(p)
    assert "its checkpoint ck/checkpoint.bin is pulled but not verified: verify box1" in line
    assert "from scratch" not in line
    # As said: a verify with the box down, and the move resumes from that checkpoint.
    await verify_host(host, qf.fleet.results_dir)
    verified, unverified = cell_checkpoints(qf.fleet, host, "ck")
    assert unverified == "" and verified is not None
    planned = await plan(qf)
    assert planned.ok and planned.checkpoint is not None, planned.problems
    # Its step from its sidecar, as the move's plan says it: the preemption line said no
    # step where the plan said "step 3" (spot hour s43 #2).
    sidecar = qf.fleet.results_dir / "box1" / "ck" / "checkpoint.json"
    step = json.loads(sidecar.read_text())["step"]
    assert verified.step == step == planned.step
    named = replace(p, checkpoint=verified, step=verified.step, unverified="")
    assert f"last verified step {step}, from " in preemption_line(named)


async def test_a_copy_changed_here_during_the_push_is_said_as_such_not_as_the_transfer(
    make_queue_fleet,
):
    """s35 resume hour #7: a local copy changed between the plan and the push read "did
    not arrive whole on box2 … move again", which would push the changed copy."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    await preempt(qf)
    planned = await plan(qf)
    assert planned.ok and [f.rel for f in planned.files] == ["checkpoint.bin", "checkpoint.json"]
    sidecar = qf.fleet.results_dir / "box1" / "ck" / "checkpoint.json"

    def change_once(n: int) -> None:  # while checkpoint.bin goes: the sidecar is next
        if b"edited" not in sidecar.read_bytes():
            sidecar.write_bytes(sidecar.read_bytes() + b" edited")

    with pytest.raises(MoveError) as refused:
        await move(qf, planned, on_bytes=change_once)
    said = str(refused.value)
    assert "the copy here changed since the move was planned: checkpoint.json (" in said, said
    assert "did not arrive whole" not in said and "plan the move again" in said
    assert not (qf.root("box2") / "results" / "ck").exists()


async def test_a_several_cell_move_says_to_move_an_interrupted_verified_cell_alone(
    make_queue_fleet,
):
    """s35 resume hour #7: in a move of several cells, an interrupted cell with verified
    files was refused with "give the new run a config of another name", which starts it
    over; moved alone, it resumes from them."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    qf.append_queue(f"{qf.cell_script('later', GATE)} t 1\n", "box1")
    qf.kill_session("box1")
    await wait_view(qf, lambda v: v.cells[0].status == "interrupted", what="ck interrupted")
    await pull_verify(qf, "box1")
    t1 = qf.transport("box1")
    try:
        both = await plan_move(qf.fleet, qf.host("box1"), ["ck", "later"], "box2", t1)
    finally:
        await t1.close()
    said = "\n".join(both.problems)
    assert (
        "it stopped before its end and has verified files — move it alone to resume from " in said
    )
    assert "(rgt-tui queue move ck --to box2)" in said and "another name" not in said, said
    alone = await plan(qf)
    assert alone.ok and alone.checkpoint is not None, alone.problems


async def test_a_take_back_never_removes_a_file_the_move_did_not_push(make_queue_fleet):
    """Review s35: the take-back removes the cell's {out} on the target only when every
    file in it is one the move pushed; a run started there meanwhile keeps its files."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    out = qf.root("box1") / "results" / "ck"
    (out / "sub").mkdir(parents=True)
    (out / "checkpoint.bin").write_bytes(b"pushed")
    (out / "sub" / "metrics.json").write_text("{}")
    durable = str(qf.root("box1") / "results")
    t = qf.transport("box1")
    try:
        await t.connect()
        ctl = after_queue_ctl("resume_ctl.sh")
        pushed = "checkpoint.bin\0"  # sub/metrics.json was not this move's
        kept = await run_box_script(
            t, ctl, "resume_ctl", "takeback", durable, "ck", "ab12", input=pushed, timeout=30
        )
        refused = box_refusal(kept, "box1's resume_ctl")
        assert refused is not None and "holds a file this move did not push" in refused.message
        assert (out / "checkpoint.bin").exists() and (out / "sub" / "metrics.json").exists()
        both = "checkpoint.bin\0sub/metrics.json\0"
        taken = await run_box_script(
            t, ctl, "resume_ctl", "takeback", durable, "ck", "ab12", input=both, timeout=30
        )
        assert box_refusal(taken, "box1") is None and f"taken\t{out}" in taken.stdout
        assert not out.exists() and not list(out.parent.glob(".rgt-resume.*"))
    finally:
        await t.close()


@contextlib.asynccontextmanager
async def preempted_with_read_only_queue(qf, tmp_path):  # type: ignore[no-untyped-def]
    """box1's ck checkpointed, pulled and verified, then preempted; box1's queue file on a
    read-only file system (root writes through a chmod) while the block runs."""
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    await preempt(qf)
    text = qf.queue_file("box1").read_bytes()
    with tmpfs(tmp_path / "ro") as folder:
        (folder / "box1.txt").write_bytes(text)
        ro = ["mount", "-o", "remount,ro", str(folder)]
        await asyncio.to_thread(subprocess.run, ro, check=True)
        set_host_key(qf.loopback.hosts_file, "queue", str(folder / "box1.txt"))
        qf._fleet = None
        yield


async def test_a_move_whose_source_file_cannot_be_written_keeps_its_pushed_copy(
    make_queue_fleet, tmp_path
):
    """Review s35: box2's queue file got the cell, box1's could not be written; the take-
    back then removed the pushed checkpoint, and the cell, once run on box2 as the message
    said, started over. A move stopped half way keeps what it pushed."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    async with preempted_with_read_only_queue(qf, tmp_path):
        planned = await plan(qf)
        assert planned.ok, planned.problems
        with pytest.raises(PartlyMoved) as half:
            await move(qf, planned)
    said = str(half.value)
    assert "has the moved lines, but" in said and "could not be written" in said, said
    out2 = qf.root("box2") / "results" / "ck"
    assert f"the copy pushed to box2:{out2} stays there for the cell" in said
    assert (out2 / "checkpoint.bin").exists() and "taken back" not in said


async def test_the_dialog_s_move_that_stopped_half_way_is_said_as_moved_not_refused(
    make_queue_fleet, tmp_path
):
    """s44 spot hour #5: files pushed and a queue file rewritten, yet the move dialog said
    "Not moved: …" with Move enabled again, as if nothing had been done. Its controller
    says it as a move not all done (the dialog closes on it with a warning)."""
    from rgt_tui.controllers.move import MoveControl
    from rgt_tui.services.connections import FleetConnections

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    async with preempted_with_read_only_queue(qf, tmp_path):
        connections = FleetConnections(qf.fleet.hosts)
        try:
            control = MoveControl(qf.fleet, qf.host("box1"), connections)
            planned, error = await control.plan(["ck"], "box2", from_scratch=False, acks=())
            assert planned is not None and not error, error
            moved = await control.resume(planned, ())
        finally:
            await connections.close_all()
    assert moved.partly and not moved.error, moved
    assert "has the moved lines, but" in moved.message, moved.message


async def test_the_cli_move_runs_the_targets_preflight_before_moving_anything(make_queue_fleet):
    """`queue move --yes` moved the cell, then box2's launch refused a failed preflight
    check: the cell sat "not sent" on an idle, billing box (s36 acts hour #5). The TUI's
    dialog showed that preflight with its plan; the CLI now does too, and refuses first."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('ck', 'exit 3')} t 1\n")
    qf.cell_script("ck", "echo ran on box2", "box2")  # the code is there too
    qf.write_queue("", "box2")
    hosts = qf.loopback.hosts_file
    launched = await arun("launch", "box1", "--yes", "--hosts", hosts)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    await wait_view(qf, lambda v: v.state == FINISHED, what="ck to fail")
    qf.set_preflight_ack((), "box2")  # box2's launch then fails its GPU checks (none here)
    before = qf.queue_file("box1").read_text()

    cli = await arun(
        "queue", "move", "ck", "--to", "box2", "--from-scratch", "--yes", "--hosts", hosts
    )
    said = cli.stdout + cli.stderr
    assert cli.returncode == 1, said
    assert "preflight on box2:" in said and "FAILED" in said, said
    refusal = next(line for line in said.splitlines() if "box2's launch would refuse ck" in line)
    assert refusal.endswith("; nothing was moved"), refusal
    assert "--ack gpu" in refusal, refusal
    assert qf.queue_file("box1").read_text() == before  # nothing moved
    assert "ck" not in qf.queue_file("box2").read_text()

    acks = [a for word in refusal.split("--ack ")[1:] for a in ["--ack", word.split()[0]]]
    acks = [a.rstrip(";") for a in acks]
    moved = await arun(
        "queue", "move", "ck", "--to", "box2", "--from-scratch", "--yes", *acks, "--hosts", hosts
    )
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "ACKNOWLEDGED" in moved.stdout, moved.stdout
    assert "#moved-to box2" in qf.queue_file("box1").read_text()


def test_a_config_in_the_code_tree_names_sync_and_the_ways_on_when_the_spare_is_busy(
    tmp_path,
) -> None:
    """s38 spot hour #7: the refusal sent the user to `rgt-tui sync box2`, which box2's
    running queue then refused; in a preemption the spare is often busy. The words name
    the other ways on too."""
    import dataclasses

    from support.samples import FLEET_TOML, write_fleet

    from rgt_tui.services.queue.resume import config_missing_words

    host = write_fleet(tmp_path, FLEET_TOML).hosts[0]
    (tmp_path / "proj" / "configs").mkdir(parents=True)
    (tmp_path / "proj" / "configs" / "a.yaml").write_text("lr: 1\n")
    host = dataclasses.replace(host, ready=dataclasses.replace(host.ready, code=tmp_path / "proj"))
    said = config_missing_words(host, "a", "configs/a.yaml", "~/proj/configs/a.yaml")
    assert f"rgt-tui sync {host.name} sends it with the code tree, then plan the move again" in said
    assert f"while {host.name}'s own queue runs, sync is refused there: move to an idle spare" in (
        said
    )
    assert f"rgt-tui shell {host.name}" in said


async def test_a_killed_cell_waiting_for_its_resume_moves_with_its_checkpoint(make_queue_fleet):
    """Review h481 #5: a killed cell, pulled and verified, then set to resume (it waits
    behind the running cell) was refused a move as "it ran and its results are kept —
    moving it would run it again". A cell waiting to run again is unfinished: it moves
    with its verified checkpoint."""
    from support.resume_cell import give_cell

    from rgt_tui.domain.queue_state import KILLED, RETRY
    from rgt_tui.services.queue.launch import launch, plan_launch

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    line = give_cell(qf, "box1")
    give_cell(qf, "box2")
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{line} t 1\n{gate} t 1\n", "box1")
    qf.write_queue("", "box2")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    side = qf.root("box1") / "results" / "ck" / "checkpoint.json"

    def stepped() -> bool:
        with contextlib.suppress(OSError, ValueError):
            return json.loads(side.read_text())["step"] >= 2
        return False

    await wait_for(stepped, 60, "two checkpoints on box1")
    # Held still (it writes no more, and never ends by itself): the kill's command line
    # starts in seconds on a loaded machine, by when the 6-step cell had ended on its own
    # ("cell ck is not running: nothing to kill", a CI run of session 54).
    (qf.root("box1") / "hold").touch()
    await wait_for((qf.root("box1") / "held").exists, 30, "ck to stop writing")
    hosts = qf.loopback.hosts_file
    killed = await arun("queue", "kill", "box1", "ck", "--grace", "1", "--yes", "--hosts", hosts)
    assert killed.returncode == 0, killed.stdout + killed.stderr
    await wait_view(
        qf, lambda v: v.cells[0].status == KILLED and v.cells[1].status == RUNNING,
        what="ck killed, the gate cell running",
    )  # fmt: skip
    (qf.root("box1") / "hold").unlink()  # its resume, later, runs on as before
    await pull_verify(qf, "box1")  # its checkpoint, pulled and verified here
    retried = await arun("queue", "retry", "box1", "ck", "--resume", "--yes", "--hosts", hosts)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    await wait_view(qf, lambda v: v.cells[0].status == RETRY, what="ck waiting for its resume")

    # A plain move (of several cells, say) sends it to the resume move, in words true of
    # a cell set to run again, which may have finished before (review h483 #7).
    t1 = qf.transport("box1")
    try:
        plain = await plan_move(qf.fleet, qf.host("box1"), ["ck"], "box2", t1)
    finally:
        await t1.close()
    assert any(
        "it is set to run again and has verified files — move it alone" in p for p in plain.problems
    ), plain.problems

    planned = await plan(qf)
    said = "\n".join(resume_lines(planned))
    assert "its results are kept" not in said, said
    assert planned.ok, said
    assert planned.checkpoint is not None and planned.checkpoint.rel == "checkpoint.bin"
    (qf.root("box1") / "go").touch()
