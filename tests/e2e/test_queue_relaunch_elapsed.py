"""`queue show` over a loopback box: elapsed counts from a relaunch (never "elapsed 0s"
for a queue relaunched from cell 2 and stopped), and a failed cell says why — the last
line its command printed — in `queue show` and on the TUI's queue line."""

from __future__ import annotations

import json
import os
import time

from support.cli import arun
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.content.queue_text import queue_pane_line
from rgt_tui.domain.queue_state import FINISHED, INTERRUPTED, RUNNING, STOPPED
from rgt_tui.services.queue.view import read_queue_view

# Prints a line every 0.2 s until the test creates $HOME/go: a run with signs of life.
TICKING = 'while [ ! -e "$HOME/go" ]; do echo tick; sleep 0.2; done'


async def test_elapsed_counts_from_a_relaunch_from_cell_2(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(
        f"{qf.cell_script('one', 'echo one')} t\n"
        f"{qf.cell_script('two', 'echo two')} t\n"
        f"{qf.cell_script('ticking', TICKING)} t\n"
    )
    first = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert first.returncode == 0, first.stderr
    await wait_view(qf, lambda v: v.cells[2].status == RUNNING)
    qf.kill_session()
    await wait_view(qf, lambda v: v.state == STOPPED and v.resume_index == 2)

    again = await arun("launch", "box1", "--hosts", hosts, "--yes", "--start", "2")
    assert again.returncode == 0, again.stderr
    relaunched = await wait_view(
        qf, lambda v: v.state == RUNNING and v.launch is not None and v.launch.start_index == 2
    )
    relaunch_ts = relaunched.launch.ts  # type: ignore[union-attr]
    # Cell 2 keeps writing its log for a few seconds after the relaunch, then the
    # runner is killed: the queue ran at least that long.
    # (The view's clock is read before the log's mtime: a read may see a write a little
    # after its own "now", so both are waited for; the CI saw elapsed 2 with a write at 3.)
    lived = await wait_view(
        qf,
        lambda v: (v.cells[2].last_output_at or 0) - relaunch_ts >= 3 and v.now - relaunch_ts >= 3,
        timeout=60,
        what="cell 2 to write its log 3 s after the relaunch",
    )
    assert lived.elapsed_s == lived.now - relaunch_ts  # running: from the relaunch to now
    qf.kill_session()
    stopped = await wait_view(qf, lambda v: v.state == STOPPED)
    assert stopped.cells[2].status == INTERRUPTED

    shown = await arun("queue", "show", "box1", "--hosts", hosts, "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["elapsed_s"] >= 3 and data["elapsed_is_lower_bound"] is True
    text = await arun("queue", "show", "box1", "--hosts", hosts)
    assert "elapsed ≥" in text.stdout and "elapsed 0s" not in text.stdout, text.stdout
    assert "resume from cell 2" in text.stdout


async def test_a_cell_that_cannot_start_says_why(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    missing = "python3 -c 'import rgt_no_such_module'"
    qf.write_queue(f"{qf.cell_script('needs_it', missing)} t\n")
    launched = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert launched.returncode == 0, launched.stderr
    view = await wait_view(qf, lambda v: v.state == FINISHED, timeout=60)
    reason = "ModuleNotFoundError: No module named 'rgt_no_such_module'"
    assert view.cells[0].note == reason

    shown = await arun("queue", "show", "box1", "--hosts", hosts)
    assert "failed (exit 1)" in shown.stdout and f"— {reason}" in shown.stdout, shown.stdout
    line = queue_pane_line(view)
    assert line is not None and line.plain.split("\n")[1] == f"✖ needs_it: {reason}"


# Prints one line, then writes a checkpoint into its {out} ($2) every 0.2 s, silently,
# until the test creates $HOME/go: python's block-buffered stdout to a file looks so.
SILENT_CHECKPOINTS = (
    'echo started; mkdir -p "$2"\n'
    'while [ ! -e "$HOME/go" ]; do date +%s%N > "$2/ckpt.txt"; sleep 0.2; done'
)


async def test_an_interrupted_cell_lived_until_its_newest_output_not_its_log(make_queue_fleet):
    """A cell killed from outside ran at least until its last checkpoint: the newest file
    under its {out} counts as a sign of life beside its log (the log here was written once,
    at the start, so "≥0s" said the cell of minutes had barely run)."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('quiet', SILENT_CHECKPOINTS)} t\n")
    first = await arun("launch", "box1", "--hosts", str(qf.loopback.hosts_file), "--yes")
    assert first.returncode == 0, first.stderr
    running = await wait_view(qf, lambda v: v.cells[0].status == RUNNING)
    started = running.cells[0].started_at
    await wait_view(qf, lambda v: v.now - started >= 4, timeout=60, what="4 s of the cell")
    qf.kill_session()
    stopped = await wait_view(qf, lambda v: v.state == STOPPED)
    cell = stopped.cells[0]
    assert cell.status == INTERRUPTED
    assert cell.last_output_at is not None and cell.last_output_at - started >= 3, (
        cell.last_output_at,
        started,
    )
    assert cell.ran(stopped.now).startswith("≥") and cell.ran(stopped.now) not in ("≥0s", "≥1s")


# Writes one checkpoint three levels down its {out} ($2), then waits for the test's gate.
NESTED_CHECKPOINT = (
    'mkdir -p "$2/deep/er" && echo 1 > "$2/deep/er/ckpt.txt"\n'
    'while [ ! -e "$HOME/go" ]; do sleep 0.05; done'
)


async def test_a_stopped_cells_out_is_walked_once_not_on_every_poll(make_queue_fleet):
    """The walk of an interrupted cell's {out} (up to 200,000 files) is kept in
    cells/<name>.outt, not repeated by every poll, and walked again once the cell's state
    or {out} itself changes."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('nested', NESTED_CHECKPOINT)} t\n")
    first = await arun("launch", "box1", "--hosts", str(qf.loopback.hosts_file), "--yes")
    assert first.returncode == 0, first.stderr
    out = qf.root() / "results" / "nested"
    ckpt = out / "deep" / "er" / "ckpt.txt"
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING and ckpt.exists())
    qf.kill_session()
    stopped = await wait_view(qf, lambda v: v.cells[0].status == INTERRUPTED)
    walked = stopped.cells[0].last_output_at
    assert walked is not None and walked >= int(ckpt.stat().st_mtime)
    assert (qf.qdir() / "cells" / "nested.outt").read_text() == f"{walked}\n"

    # A change deep in {out} that a walk would see, but {out}'s own mtime does not show:
    # the next poll keeps the kept figure (the walk was not repeated).
    later = walked + 500
    os.utime(ckpt, (later, later))
    kept = await read_queue_view(qf.host(), qf.transport())
    assert kept.cells[0].last_output_at == walked

    # A file added to {out} changes its mtime: walked again, the deep change now seen.
    (out / "added.txt").write_text("x")
    os.utime(out / "added.txt", (walked, walked))
    again = await read_queue_view(qf.host(), qf.transport())
    assert again.cells[0].last_output_at == later

    # A retry or relaunch appends to the cell's state: walked again.
    latest = later + 500
    os.utime(ckpt, (latest, latest))
    state = qf.qdir() / "cells" / "nested.state"
    newer = time.time() + 5
    os.utime(state, (newer, newer))
    retried = await read_queue_view(qf.host(), qf.transport())
    assert retried.cells[0].last_output_at == latest
