"""The teardown gate of a box that does not answer, and of a box whose cell runs (ux-e 1
and 17), over real loopback queue boxes and the real command line:

- while no box answers, the ``box`` line is not ticked (the recorded box is the last
  seen, not the one there), ``idle`` is unknown, and a cell the local queue file records
  as moved (``#moved-to``) reads ``(moved)`` and is never offered to ``--ack-missing``;
  the gate stays locked, and reads as before once the box answers again;
- while the box answers and a cell runs, the ``rescan`` line names the running cell as
  what keeps it locked, not "once the box answers".
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

from support.cli import arun
from support.fleet_files import set_host_key
from support.queues import GATE, SCRIPT_RUN, QueueFleet, wait_view
from support.unfinished import METRICS, launch_queue, pull_and_verify

from rgt_tui.domain.queue_state import DONE, RUNNING
from rgt_tui.paths import journal_dir
from rgt_tui.services.journal import Journal
from rgt_tui.services.records import atomic_write_json
from rgt_tui.services.runtime.preemption import Seen, preempt_dir
from rgt_tui.services.teardown import observe_now


async def _cli(qf: QueueFleet, tmp_path: Path, *args: str):  # type: ignore[no-untyped-def]
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(qf.loopback.hosts_file)}
    return await arun(*args, env=env, cwd=tmp_path)


def _line(out: str, key: str) -> str:
    """The checklist line of ``key`` and the fix under it, if any."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"  [x] {key} ") or line.startswith(f"  [ ] {key} "):
            under = lines[i + 1] if i + 1 < len(lines) and "→" in lines[i + 1] else ""
            return f"{line}\n{under}"
    raise AssertionError(f"no {key} line in:\n{out}")


async def _running_queue(qf: QueueFleet) -> tuple[str, str]:
    """box1's queue: bravo done with results, alpha running (and writing nothing)."""
    bravo = qf.cell_script("bravo", METRICS)
    alpha = qf.cell_script("alpha", GATE)
    qf.write_queue(f"{bravo} t\n{alpha} t\n")
    await launch_queue(qf)
    view = await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="alpha to run")
    assert view.cells[0].status == DONE
    await pull_and_verify(qf)
    return bravo, alpha


async def test_a_box_that_does_not_answer_is_not_ticked_and_its_moved_cell_reads_moved(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    bravo, alpha = await _running_queue(qf)
    # The box as the TUI's telemetry records it (no gate check yet: nothing says alpha runs).
    journal = Journal(
        journal_dir(qf.loopback.hosts_file, {"XDG_STATE_HOME": str(tmp_path / "state")})
    )
    transport = qf.transport()
    try:
        seen = await observe_now(qf.host(), transport, journal)
    finally:
        await transport.close()
    await qf.loopback.box("box1").stop()  # lost mid-run (preempted)
    qf.write_queue(f"{bravo} t\n#moved-to box2: {alpha} t\n")  # what `queue move` leaves,
    qf.write_queue(f"# moved from box1 on 2026-01-01\n{alpha} t\n", name="box2")  # both

    gone = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    out = gone.stdout
    assert gone.returncode == 1, out + gone.stderr
    assert "ready" not in out
    box = _line(out, "box")
    assert box.startswith("  [ ] box") and "found: not answering now; last seen: box " in box
    assert seen.short() in box
    assert "once the box answers" in box
    idle = _line(out, "idle")
    assert idle.startswith("  [ ] idle") and "found: unknown: the box does not answer" in idle
    assert "the queue is idle" not in out
    roster = _line(out, "roster")
    assert "alpha (moved)" in roster and "missing" not in roster, roster
    assert "--ack-missing" not in out
    assert "[x] moved      moved to another host │ found: alpha moved to box2" in out
    assert "[ ] rescan" in out and "cannot re-scan the box" in out
    # With its next step (s36 faults #5).
    assert "— check again once box1 answers" in out, out

    await qf.loopback.box("box1").start()  # back: what it says counts again
    back = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    out = back.stdout
    assert back.returncode == 1, out + back.stderr  # alpha still runs there
    assert _line(out, "box").startswith("  [x] box") and "not answering" not in out
    assert "found: running: alpha" in _line(out, "idle")
    assert "found: alpha moved to box2" in _line(out, "moved") and "--ack-missing" not in out


async def test_check_while_a_cell_runs_names_the_cell_not_the_box_answering(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    await _running_queue(qf)
    (qf.root() / "results" / "alpha").mkdir(parents=True)
    (qf.root() / "results" / "alpha" / "step.log").write_text("step 1\n")  # it writes

    running = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    out = running.stdout
    assert running.returncode == 1, out + running.stderr
    rescan = _line(out, "rescan")
    assert rescan.startswith("  [ ] rescan"), rescan
    assert "once the box answers" not in rescan
    assert "while alpha runs and changes the box's files" in rescan
    # The fix is said once, under the first line it settles; the lines after it that the
    # same fix settles point there (six lines said it six times: a user's hour).
    manifest = _line(out, "manifest")
    assert "wait for the running cell to end (the idle line names it)" in manifest
    assert "`rgt-tui queue kill box1`" in manifest
    assert rescan.endswith("→ as for manifest"), rescan
    assert out.count("wait for the running cell to end") == 1, out
    assert _line(out, "box").startswith("  [x] box")
    assert "found: running: alpha" in _line(out, "idle")


async def test_a_cell_last_seen_running_on_a_box_that_does_not_answer_is_not_offered_as_missing(
    make_queue_fleet, tmp_path: Path
) -> None:
    # ux-h 12: the roster offered `--ack-missing alpha` for the cell last seen running on
    # an unreachable spot box, while the rest of the product says to move it.
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    set_host_key(qf.loopback.hosts_file, "interruptible", True)  # type: ignore[arg-type]
    await _running_queue(qf)
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    journal = Journal(journal_dir(qf.loopback.hosts_file, env))
    transport = qf.transport()
    try:
        await observe_now(qf.host(), transport, journal)
    finally:
        await transport.close()
    # What the runtime (the TUI, `watch`) keeps of the box's last answer: alpha running.
    memory = preempt_dir(journal_dir(qf.loopback.hosts_file, env))
    memory.mkdir(parents=True, exist_ok=True)
    atomic_write_json(memory / "box1.json", asdict(Seen("start-1", time.time(), "alpha")))
    await qf.loopback.box("box1").stop()

    gone = await _cli(qf, tmp_path, "teardown", "box1", "--check")
    out = gone.stdout
    assert gone.returncode == 1, out + gone.stderr
    roster = _line(out, "roster")
    assert roster.startswith("  [ ] roster") and "missing: alpha" in roster, roster
    assert "move the interrupted cell: rgt-tui queue move alpha --to HOST" in roster
    assert "once the box answers: which cells ran there is unknown" in roster
    assert "--ack-missing" not in out


async def test_a_box_never_reached_whose_pull_is_refused_is_not_idle(tmp_path: Path) -> None:
    """No pull folders named (a whole home): the gate asked the box nothing and read
    "[x] idle … the queue is idle" for a box that never answered (a user's hour). It now
    reads what runs there, and a box that does not answer is "unknown"."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "dead"\nssh = "root@127.0.0.1:1"\npull = ["~"]\n')
    checked = await arun("teardown", "dead", "--check", "--hosts", hosts)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    (idle,) = [line for line in checked.stdout.splitlines() if line.lstrip()[4:9] == "idle "]
    assert idle.lstrip().startswith("[ ] idle") and "unknown: the box does not answer" in idle
