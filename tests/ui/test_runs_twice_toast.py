"""h592 #2: a cell moved to another box that runs on its old box too (a box back from a
network drop) was said only on the old box's Queue tab: the panes, the header and the
notices were silent unless `[fleet] tui_notify` was on. The TUI toasts it as watch sends
it, once per attempt and outcome, in watch's words."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.pilot import make_app, notes, wait_for
from support.samples import healthy_update

from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_state,
    parse_cells_tsv,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import DONE, derive_view
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.queue_keys import QueueViewed

HOST = "a100-train"
BOOT = "11111111-aaaa-bbbb-cccc-000000000001"


def view_running(started: int):  # type: ignore[no-untyped-def]
    """The old box's view: cell `lr3` runs there, moved to spare by the queue file."""
    deployed = parse_cells_tsv(cells_tsv_line(0, "lr3", "x"))
    launches = parse_runner_state(f"launch {started} {BOOT} tmux 0 /s.sh 42\n")
    attempts = {"lr3": parse_cell_state(f"start {started} {BOOT} 9\n")}
    view = derive_view(
        HOST, deployed, launches, attempts, boot_id=BOOT, now=started + 60, runner_alive=True
    )
    # As the records' derivation marks it (services.queue.records): moved to spare.
    note = "RUNS TWICE: moved to spare by the queue file, yet it runs here — keep one run: kill it here (rgt-tui queue kill a100-train lr3)"
    cell = replace(view.cells[0], moved_to="spare", note=note)
    return replace(view, cells=(cell,))


async def test_a_cell_that_runs_twice_is_toasted_once_per_outcome(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        app.post_message(HostUpdated(healthy_update()))
        await wait_for(lambda: HOST in app.latest, pilot=pilot)
        first = view_running(1000)
        assert "RUNS TWICE" in first.cells[0].note
        for _ in range(2):  # read again: told once
            app.post_message(QueueViewed(HOST, first))
        title = f"{HOST}: cell lr3 runs here, yet is queued on spare"

        def told() -> list[str]:
            return [n for n in notes(app) if n.startswith(title)]

        await wait_for(lambda: len(told()) == 1, what="the runs-twice toast", pilot=pilot)
        assert "kill it here (rgt-tui queue kill a100-train lr3)" in told()[0]
        await pilot.pause()
        assert len(told()) == 1
        # It finished here since: news of its own ("finished here, yet is queued on").
        done = view_running(1000)
        cell = replace(done.cells[0], status=DONE, exit_code=0, ended_at=1500)
        app.post_message(QueueViewed(HOST, replace(done, cells=(cell,))))
        finished = f"{HOST}: cell lr3 finished here, yet is queued on spare"
        await wait_for(
            lambda: any(n.startswith(finished) for n in notes(app)),
            what="the finished-here toast",
            pilot=pilot,
        )
