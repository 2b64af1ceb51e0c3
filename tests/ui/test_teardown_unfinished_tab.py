"""The Teardown tab shows each unfinished cell as a line of its own (issue 40): its state,
what of it is pulled and verified, and the key that settles it; the cell's name typed
under 'Acknowledge a cell by name' and Unfinished: accept acknowledges it, and a name the
checklist does not show unfinished is refused with the ones it does. Over a loopback
queue box whose cell failed, with its results pulled and verified."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, click, screen_text, wait_for
from support.queues import SCRIPT_RUN, wait_view
from support.teardown_ui import checklist
from support.unfinished import FAILING, METRICS, launch_queue, pull_and_verify
from textual.widgets import Input

from rgt_tui.app import RgtApp
from rgt_tui.domain.queue_state import FAILED
from rgt_tui.services.fleet.file import load_fleet


async def _acknowledge(app: RgtApp, pilot, name: str) -> None:  # type: ignore[no-untyped-def]
    box = app.screen.query_one("#ack-cell", Input)
    box.focus()
    await pilot.pause()
    await pilot.press(*name)
    assert app.focused is box  # typing stays in the box: no key fired
    await click(pilot, "#ack-unfinished")
    await pilot.pause()
    await wait_for(lambda: not app.jobs.state("box1").running, 60, pilot=pilot)


async def test_a_failed_cell_is_a_line_and_unfinished_accept_settles_it(
    tmp_path: Path, make_queue_fleet
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    alpha = qf.cell_script("alpha", METRICS)
    broken = qf.cell_script("broken", FAILING)
    qf.write_queue(f"{alpha} t\n{broken} t\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: v.cells[1].status == FAILED, what="broken to fail")
    await pull_and_verify(qf)
    app = RgtApp(load_fleet(qf.loopback.hosts_file), start_monitors=False, config_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = await checklist(app, pilot)
        assert "✖ unfinished" in text and "broken failed (exit 3)" in text, text
        # Wherever the line wraps (its evidence now names the cell's verified files too).
        assert "type broken under 'Acknowledge a cell by name' and press Unfinished: accept" in (
            " ".join(text.split())
        )
        assert "1/2 cells have results" in text

        await _acknowledge(app, pilot, "alpha")  # done: not unfinished
        refusal = app.jobs.state("box1").ack_refusal or ""
        assert "'alpha' is not an unfinished cell of box1" in refusal
        await wait_for(lambda: "Its unfinished cells: broken" in screen_text(app), pilot=pilot)

        await _acknowledge(app, pilot, "broken")
        await wait_for(lambda: "✓ unfinished" in screen_text(app), 60, pilot=pilot)
        assert "acknowledged" in screen_text(app) and not app.jobs.state("box1").ack_refusal

        # Typed again and Enter: said to be done, not "not a cell the checklist asks to
        # acknowledge … Tab to Missing: accept or Running: accept" (h491 #10).
        box = app.screen.query_one("#ack-cell", Input)
        box.focus()
        await pilot.pause()
        await pilot.press(*"broken", "enter")
        await wait_for(
            lambda: (
                "'broken' is acknowledged already (unfinished): nothing more to do for it"
                in screen_text(app)
            ),
            pilot=pilot,
        )
