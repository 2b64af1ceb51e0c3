"""The Teardown tab of a box that does not answer (ux-e 1), under the Pilot over a real
loopback box: the checklist does not tick ``box`` or ``idle`` for it, and says to check
again once it answers; the gate stays locked."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, text_of
from support.teardown_ui import checklist, pull_and_verify, teardown_app
from textual.widgets import Static


async def test_a_box_that_does_not_answer_ticks_neither_box_nor_idle(
    tmp_path: Path, state_dir: Path, loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    app = teardown_app(loopback_fleet, tmp_path, "true")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pull_and_verify(app, pilot)
        text = await checklist(app, pilot)
        assert "✓ box" in text and "✓ idle" in text and "ready: type 'box1'" in text
        await loopback_fleet.box("box1").stop()
        shown = await checklist(app, pilot)
        # The whole checklist, in view or not: the refusal names the address, the port and
        # the fix, and at this size its lines push the box line above the name box.
        text = " ".join(text_of(app.screen.query_one("#teardown-checklist", Static)).split())
        text += "\n" + shown
        assert "✖ box" in text and "found: not answering now; last seen: box " in text, text
        assert "✖ idle" in text and "found: unknown: the box does not answer" in text
        assert "the queue is idle" not in text
        assert "press Ctrl+R to re-check once the box answers" in text
        assert "locked: nothing will be torn down" in text
        assert not app.jobs.state("box1").gate.ready_but_confirmation
