"""The gate knows unfinished work, over a real loopback box (issue 40): a cell killed
mid-run whose checkpoint was pulled and verified locks `teardown --check` with a line
naming the cell, its state, the checkpoint and the move command; `--ack-unfinished` of
that cell opens it, and a name that is not an unfinished cell is refused with the list
(exit 2). A failed cell locks it the same way; a cell moved to another host (its
`#moved-to` line, and the cell in that host's queue file) does not, and a `#moved-to` line
typed by hand, with no cell at the destination, moves nothing."""

from __future__ import annotations

from pathlib import Path

from support.cli import arun
from support.queues import GATE, SCRIPT_RUN, QueueFleet, wait_view
from support.unfinished import CHECKPOINT, FAILING, METRICS, launch_queue, pull_and_verify
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, FAILED, INTERRUPTED, RUNNING


async def _cli(qf: QueueFleet, tmp_path: Path, *args: str):  # type: ignore[no-untyped-def]
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(qf.loopback.hosts_file)}
    return await arun(*args, env=env, cwd=tmp_path)


async def test_a_killed_cell_with_a_verified_checkpoint_locks_until_acknowledged(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    alpha = qf.cell_script("alpha", METRICS)
    eta = qf.cell_script("eta_long", f"{CHECKPOINT}\n{GATE}")
    qf.write_queue(f"{alpha} t\n{eta} t\n")
    await launch_queue(qf)
    checkpoint = qf.root() / "results" / "eta_long" / "ckpt_epoch3.safetensors"
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="eta_long to run")
    await wait_for(checkpoint.exists, 30, "eta_long's checkpoint")
    qf.kill_session()  # killed at epoch 3 of 300: the runner and the cell die
    view = await wait_view(qf, lambda v: v.cells[1].status == INTERRUPTED, what="interrupted")
    assert view.cells[0].status == DONE and "resume from cell 1" in view.summary()
    await pull_and_verify(qf)

    locked = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    out = locked.stdout
    assert locked.returncode == 1, out + locked.stderr
    (line,) = [x for x in out.splitlines() if "[ ] unfinished" in x] or [out]
    assert "eta_long interrupted after" in line, out
    assert (
        "its checkpoint from" in line and "ckpt_epoch3.safetensors) is pulled and verified" in line
    )
    assert "`rgt-tui queue move eta_long --to HOST` resumes it elsewhere" in out
    assert "--ack-unfinished eta_long" in out
    assert (
        "[x] roster     every cell has results, or is accepted │ found: 1/2 cells have results"
        in out
    )  # eta_long's checkpoint: not results
    assert "locked: unfinished eta_long" in out

    refused = await _cli(qf, tmp_path, "teardown", "box1", "--ack-unfinished", "alpha")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "'alpha' is not an unfinished cell of box1" in refused.stderr
    assert "Its unfinished cells: eta_long" in refused.stderr

    ready = await _cli(qf, tmp_path, "teardown", "box1", "--check", "--ack-unfinished", "eta_long")
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert (
        "[x] unfinished the cell finished, moved or accepted │ found: eta_long interrupted"
        in ready.stdout
        and "acknowledged" in ready.stdout
    )
    assert "ready: every condition holds but the typed confirmation" in ready.stdout

    # The acknowledgement was of that run: a retry is another run, interrupted again, and
    # the gate asks again (s35 Slurm hour #2 found it opened on the retry's kill).
    retried = await _cli(qf, tmp_path, "queue", "retry", "box1", "eta_long", "--yes")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    await wait_view(
        qf, lambda v: v.cells[1].status == RUNNING and v.cells[1].attempts == 2, what="the retry"
    )
    await wait_for(checkpoint.exists, 30, "the retry's checkpoint")
    qf.kill_session()
    await wait_view(qf, lambda v: v.cells[1].status == INTERRUPTED, what="interrupted again")
    await pull_and_verify(qf)
    again = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    assert again.returncode == 1, again.stdout + again.stderr
    (line,) = [x for x in again.stdout.splitlines() if "[ ] unfinished" in x] or [again.stdout]
    assert "eta_long interrupted after" in line and "acknowledged" not in line
    ready = await _cli(qf, tmp_path, "teardown", "box1", "--check", "--ack-unfinished", "eta_long")
    assert ready.returncode == 0, ready.stdout + ready.stderr

    # A cell appended to the queue file since the verify (never sent, never run): the
    # gate held to the queue file as it is now (a user's hour found it open).
    qf.append_queue(f"{qf.cell_script('zeta', METRICS)} t\n")
    added = await _cli(qf, tmp_path, "teardown", "box1", "--check", "--ack-unfinished", "eta_long")
    assert added.returncode == 1, added.stdout + added.stderr
    roster = next(x for x in added.stdout.splitlines() if x.startswith("  [ ] roster"))
    assert roster.startswith("  [ ] roster") and "the queue file now also has zeta" in roster
    assert (
        "which the last verify did not count (run since: pull and verify; never run: launch it, or accept it as missing)"
        in added.stdout
    )

    # The same line again: its name is counted (alpha ran) but the line never runs, so
    # the work written down is not done (s37 money hour #12 found the gate open).
    qf.write_queue(f"{alpha} t\n{eta} t\n{alpha} t\n")
    twice = await _cli(qf, tmp_path, "teardown", "box1", "--check", "--ack-unfinished", "eta_long")
    assert twice.returncode == 1, twice.stdout + twice.stderr
    roster = next(x for x in twice.stdout.splitlines() if x.startswith("  [ ] roster"))
    assert "the queue file names alpha on more than one line" in twice.stdout, twice.stdout
    assert (
        "→ in the queue file, give the extra line a config of its own (a cell's name is its "
        "config's) and send it (append, while the queue runs; else launch), or delete the "
        "line; then `rgt-tui teardown box1 --check`"
    ) in twice.stdout


async def test_a_running_cell_is_accepted_for_its_run_and_asked_again_for_the_next(
    make_queue_fleet, tmp_path: Path
) -> None:
    """h551 #1: --ack-running of a pending cell was recorded by name; when that cell ran
    later, the old acceptance opened the gate for a run the user never saw. Refused
    while it waits; accepted while it runs, for that run; its retry is asked again."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    alpha = qf.cell_script("alpha", METRICS)
    eta = qf.cell_script("eta_long", GATE)
    qf.write_queue(f"{alpha} t\n{eta} t\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="eta_long to run")
    await pull_and_verify(qf)
    early = await _cli(qf, tmp_path, "teardown", "box1", "--check", "--ack-running", "alpha")
    assert early.returncode == 2, early.stdout + early.stderr
    said = " ".join(early.stderr.split())
    assert "alpha is not running on box1" in said and "Its running cells: eta_long" in said

    ready = await _cli(qf, tmp_path, "teardown", "box1", "--check", "--ack-running", "eta_long")
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert "running: eta_long (acknowledged)" in ready.stdout, ready.stdout

    qf.kill_session()  # its run ends; the retry is another run of the same cell
    await wait_view(qf, lambda v: v.cells[1].status == INTERRUPTED, what="interrupted")
    retried = await _cli(qf, tmp_path, "queue", "retry", "box1", "eta_long", "--yes")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    await wait_view(
        qf, lambda v: v.cells[1].status == RUNNING and v.cells[1].attempts == 2, what="the retry"
    )
    await pull_and_verify(qf)
    again = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    assert again.returncode == 1, again.stdout + again.stderr
    (line,) = [x for x in again.stdout.splitlines() if "[ ] idle" in x] or [again.stdout]
    assert "running: eta_long" in line and "acknowledged" not in line, again.stdout


async def test_a_failed_cell_locks_and_a_moved_one_does_not(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    alpha = qf.cell_script("alpha", METRICS)
    broken = qf.cell_script("broken", FAILING)
    qf.write_queue(f"{alpha} t\n{broken} t\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: v.cells[1].status == FAILED, what="broken to fail")
    await pull_and_verify(qf)

    locked = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    assert locked.returncode == 1, locked.stdout + locked.stderr
    (line,) = [x for x in locked.stdout.splitlines() if "[ ] unfinished" in x] or [locked.stdout]
    assert "broken failed (exit 3)" in line and "loss is nan" in line
    assert "no checkpoint of it is pulled and verified here" in line

    # A '#moved-to' line typed by hand moves nothing (ux-h 3): box2's queue file does not
    # hold the cell, so it is still box1's unfinished work, and the line says so.
    qf.write_queue(f"{alpha} t\n#moved-to box2: {broken} t\n")
    typed = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    out = typed.stdout
    assert typed.returncode == 1, out + typed.stderr
    (line,) = [x for x in out.splitlines() if "[ ] unfinished" in x] or [out]
    assert (
        "broken is marked '#moved-to box2' in box1's queue file, but no move is on record" in line
    )
    assert "box2's queue file (" in out and "queues/box2.txt) holds no cell broken" in out
    assert "turn its '#moved-to HOST: ' line back into the plain line" in out
    assert "--ack-unfinished broken" in out
    assert "[x] moved" not in out and "locked: unfinished broken" in out

    # Moved to box2 as `queue move` leaves it (the source queue's '#moved-to' line, and
    # the cell in box2's queue file): box2's work now, no lock.
    qf.write_queue(f"# moved from box1 on 2026-01-01\n{broken} t\n", name="box2")
    moved = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "[x] moved      moved to another host │ found: broken moved to box2" in moved.stdout
    assert "unfinished" not in moved.stdout

    # Moved on from box2 to box3 (a spot run moved twice): the gate follows it there,
    # not "box2's queue file holds it" after it left box2 (a user's hour).
    qf.write_queue(f"# moved from box1 on 2026-01-01\n#moved-to box3: {broken} t\n", "box2")
    qf.write_queue(f"# moved from box2 on 2026-01-02\n{broken} t\n", name="box3")
    on = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    assert on.returncode == 0, on.stdout + on.stderr
    assert "broken moved to box2 → box3 (the queue file's #moved-to; box3's queue file" in (
        " ".join(on.stdout.split())
    ), on.stdout
    # The preempted pane's and the commands' words follow it too: "already moved to box2"
    # read while it ran on box3 (s43 spot hour #2).
    from rgt_tui.services.queue.moved_skips import moved_on

    assert moved_on(qf.fleet, qf.host())["broken"] == "box2 → box3"
