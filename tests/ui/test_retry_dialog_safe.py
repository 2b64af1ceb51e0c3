"""The retry dialog (``R`` on the Queue tab) against a real loopback box: it opens on
Cancel, as the stop and kill dialogs do, so Enter on a done cell's retry sets nothing
aside (it used to focus Retry, and Enter renamed a finished cell's results away); it
says that Retry starts the cell over and that Resume goes on from its checkpoint; and
Resume runs that cell alone with its {out} kept."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from support.pilot import SIZE, make_app, notes, screen_text, text_of, wait_for
from support.queues import SCRIPT_RUN, QueueFleet, wait_view
from textual.widgets import Button, OptionList, Static

from rgt_tui.app import RgtApp
from rgt_tui.domain.queue_state import DONE, FAILED, FINISHED
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.queue_control import CellPickScreen
from rgt_tui.screens.retry_confirm import RetryConfirmScreen
from rgt_tui.services.queue.launch import launch, plan_launch

# Each cell writes a checkpoint into its {out} ($2), as a resumable train.py does, and
# says first whether it found one there (what a resume goes on from).
SAVES = (
    '[ -e "$2/checkpoint.pt" ] && echo "found $(cat "$2/checkpoint.pt")"; '
    'mkdir -p "$2"; echo step >> "$2/checkpoint.pt"; '
)


async def finished_queue(make_queue_fleet: Any) -> QueueFleet:
    """A box whose queue ran: ``broke`` failed (exit 3), ``fine`` is done; both left a
    checkpoint in their {out}."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    broke = qf.cell_script("broke", SAVES + "exit 3")
    fine = qf.cell_script("fine", SAVES + "exit 0")
    qf.write_queue(f"{broke} t\n{fine} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert [c.status for c in view.cells] == [FAILED, DONE]
    return qf


async def open_retry(pilot: Any, app: RgtApp, downs: int, cells: int = 2) -> RetryConfirmScreen:
    """``R`` on box1's Queue tab, the picker's cell ``downs`` below the first chosen with
    Enter; the dialog once its plan is shown."""
    app.open_host("box1", "queue")
    screen = await wait_for(
        lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
    )
    await wait_for(lambda: screen.active_tab == "queue", what="the Queue tab", pilot=pilot)
    await wait_for(
        lambda: screen.queue_view is not None and screen.queue_view.state == FINISHED,
        90,
        what="the poller's view of the finished queue",
        pilot=pilot,
    )
    await pilot.press("R")
    picker = await wait_for(
        lambda: app.screen if isinstance(app.screen, CellPickScreen) else None, 60, pilot=pilot
    )
    await wait_for(lambda: picker.query_one(OptionList).option_count == 2, pilot=pilot)
    await pilot.press(*["down"] * downs, "enter")
    return await wait_for(
        lambda: (
            app.screen
            if isinstance(app.screen, RetryConfirmScreen)
            and app.screen.plan is not None
            and not app.screen.replanning
            else None
        ),
        60,
        what="the retry plan",
        pilot=pilot,
    )


async def test_enter_in_a_done_cells_retry_cancels_and_sets_nothing_aside(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    qf = await finished_queue(make_queue_fleet)
    results = qf.root() / "results"
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        retry = await open_retry(pilot, app, 1)  # the second cell: fine, done
        assert retry.cell.name == "fine"
        assert retry.plan is not None and retry.plan.ok  # a Retry that would go ahead
        assert app.focused is retry.query_one("#retry-cancel", Button)
        await wait_for(lambda: "▶ Cancel ◀" in screen_text(app), pilot=pilot)
        assert "Enter: cancel" in screen_text(app)
        hint = retry.query_one("#retry-hint")
        assert "Tab: next button" in text_of(hint)
        # While it plans every button is disabled: no Tab is offered (h481 #8: a Shift+Tab
        # to Resume was dropped there, and the Enter after it cancelled).
        retry.replan()
        assert retry.replanning and "Tab" not in text_of(hint), text_of(hint)
        await wait_for(lambda: not retry.replanning, 60, pilot=pilot)
        assert "Tab: next button" in text_of(hint)
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, RetryConfirmScreen), pilot=pilot)
    assert (results / "fine" / "checkpoint.pt").exists()
    assert sorted(p.name for p in results.iterdir()) == ["broke", "fine"]  # nothing renamed
    assert "retry" not in qf.state("fine")


async def test_the_retry_dialog_says_retry_starts_over_and_resume_goes_on(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    """A retry renames {out} aside, so the run starts over: the dialog says so, names the
    checkpoint it sets aside and, for a cell that did not finish, that Resume goes on from
    it instead and runs no other cell again (a relaunch from it, once the only way said,
    ran the done cell after it again). A done cell has nothing to resume: no Resume."""
    qf = await finished_queue(make_queue_fleet)
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        retry = await open_retry(pilot, app, 0)  # the first cell: broke, failed
        assert retry.cell.name == "broke"
        about = " ".join(text_of(retry.query_one("#retry-about", Static)).split())
        assert (
            "Retry starts it over: its {out} folder, if the run made one, is renamed to " in about
        )
        assert "(kept, not deleted), so the run finds no checkpoint there to resume from" in about
        assert "Resume goes on from where it stopped: its {out} is kept as it is" in about
        said = " ".join(text_of(retry.query_one("#retry-notes", Static)).split())
        assert "⚠ Its {out} holds a checkpoint (checkpoint.pt): a retry sets it aside" in said
        assert (
            "To resume from it instead: press Resume — its {out} is kept as it is, and no "
            "done cell runs again." in said
        ), said
        assert "relaunch" not in said
        assert "No checkpoint in its {out}" not in said  # there is one
        assert retry.query_one("#retry-resume", Button).display
        assert "Retry or resume cell broke on box1?" in screen_text(app)
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, RetryConfirmScreen), pilot=pilot)

        # Its checkpoint gone from the box: Resume's "goes on from where it stopped" is
        # no promise then — the notes say it would start over (the review of s43).
        (qf.root() / "results" / "broke" / "checkpoint.pt").rename(qf.root() / "kept.pt")
        retry = await open_retry(pilot, app, 0)
        said = " ".join(text_of(retry.query_one("#retry-notes", Static)).split())
        assert "No checkpoint in its {out} on the box now: Resume would run it from its start" in (
            said
        ), said
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, RetryConfirmScreen), pilot=pilot)
        (qf.root() / "kept.pt").rename(qf.root() / "results" / "broke" / "checkpoint.pt")

        retry = await open_retry(pilot, app, 1)  # fine, done
        said = text_of(retry.query_one("#retry-notes", Static))
        assert "holds a checkpoint (checkpoint.pt)" in said
        assert "relaunch" not in said and "Resume" not in said
        about = text_of(retry.query_one("#retry-about", Static))
        assert "Retry starts it over" in about and "Resume" not in about
        assert not retry.query_one("#retry-resume", Button).display
        # That a done cell's results are made again is said once (it read three times).
        whole = text_of(retry.query_one("#retry-about", Static)) + said
        assert len(re.findall(r"exit 0", whole)) == 1, whole
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, RetryConfirmScreen), pilot=pilot)
    assert (qf.root() / "results" / "broke" / "checkpoint.pt").exists()


async def test_resume_runs_the_cell_alone_from_its_kept_checkpoint(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    """s43: a killed or failed cell with done cells after it could go on from its
    checkpoint only by a relaunch from it, which ran the done cells again. Resume keeps
    its {out}: the cell runs alone, finds its checkpoint, and nothing is set aside."""
    qf = await finished_queue(make_queue_fleet)
    results = qf.root() / "results"
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        retry = await open_retry(pilot, app, 0)  # broke, failed
        await pilot.press("shift+tab")  # from Cancel, which has the focus
        assert app.focused is retry.query_one("#retry-resume", Button)
        await wait_for(lambda: "Enter: resume it, {out} kept" in screen_text(app), pilot=pilot)
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, RetryConfirmScreen), 60, pilot=pilot)
        # Its toast is a resume's, not "retry" (the review of s43).
        assert any(t.startswith(f"{qf.host().name}: resume: ") for t in notes(app)), notes(app)
    view = await wait_view(
        qf, lambda v: v.state == FINISHED and v.cells[0].retries == 1, what="broke resumed"
    )
    assert [c.status for c in view.cells] == [FAILED, DONE]
    assert sorted(p.name for p in results.iterdir()) == ["broke", "fine"]  # nothing set aside
    assert len(re.findall(r"^start ", qf.state("broke"), re.M)) == 2
    assert len(re.findall(r"^start ", qf.state("fine"), re.M)) == 1  # not run again
    log = (qf.qdir() / "cells" / "broke.log").read_text()
    assert "found step" in log, log  # the resumed run found its checkpoint
    assert (results / "broke" / "checkpoint.pt").read_text() == "step\nstep\n"
    # Said as what it was (s44 note: a resumed cell read "retried 1×").
    assert view.cells[0].retry_text() == "resumed 1×"
    assert qf.state("broke").splitlines()[-3].endswith(" =")  # the box's record: kept


async def test_escape_while_the_retry_runs_waits_for_it(
    make_queue_fleet: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The retry runs as the dialog's worker: Escape while it ran closed the dialog and
    cut the retry short (its {out} set aside, no launch), the key line saying "Esc:
    cancel, nothing retried" (the move dialog's twin, hour s21a #13). The box's queue
    lock is held by a stalled flock, so the retry waits where a slow box would."""
    from support.machine import stalled_tool

    stall = stalled_tool("flock", tmp_path, monkeypatch)
    qf = await finished_queue(make_queue_fleet)
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        retry = await open_retry(pilot, app, 0)  # broke, failed
        stall.touch()
        retry.query_one("#retry-go", Button).focus()
        await pilot.press("enter")
        await wait_for(lambda: "retrying…" in screen_text(app), pilot=pilot)
        assert "nothing retried" not in screen_text(app)
        # Nothing to press while it runs, Cancel too (s38's move dialog twin): a focused
        # Cancel that did nothing drew Enter after Enter onto the Queue tab beneath.
        assert all(b.disabled for b in retry.query(Button)), [
            b.id for b in retry.query(Button) if not b.disabled
        ]
        await pilot.press("enter", "enter", "escape")
        await pilot.pause()
        assert app.screen is retry  # still open: closing it would cut the retry short
        stall.unlink()
        await wait_for(lambda: app.screen is not retry, what="the retry's end", pilot=pilot)
        await pilot.pause()
        assert isinstance(app.screen, HostDetailScreen)  # no Enter left over opened a thing
    view = await wait_view(qf, lambda v: v.cells[0].retries == 1, what="broke retried")
    assert view.cells[0].retries == 1


async def test_a_retry_refused_on_the_box_gives_cancel_back(
    make_queue_fleet: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """A retry the box refuses (another retry of the cell, from the command line, reached
    the box's lock first: its record says the cell waits for its retry) leaves the dialog
    open with why, and Cancel enabled and focused again, so Enter closes it instead of
    doing nothing. The dialog's retry waits at the box's lock (a stalled flock) while
    the other one's record is written."""
    from support.machine import stalled_tool

    stall = stalled_tool("flock", tmp_path, monkeypatch)
    qf = await finished_queue(make_queue_fleet)
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        retry = await open_retry(pilot, app, 0)  # broke, failed
        stall.touch()
        retry.query_one("#retry-go", Button).focus()
        await pilot.press("enter")
        await wait_for(lambda: retry.retrying, what="the retry to start", pilot=pilot)
        assert retry.query_one("#retry-cancel", Button).disabled
        with (qf.qdir() / "cells" / "broke.state").open("a") as state:
            state.write(f"retry {int(time.time())} -\n")  # the other retry's record
        stall.unlink()
        await wait_for(lambda: "Not retried" in screen_text(app), 60, pilot=pilot)
        assert "cell broke is already queued to retry" in screen_text(app)
        cancel = retry.query_one("#retry-cancel", Button)
        assert not cancel.disabled and app.focused is cancel
        await pilot.press("enter")
        await wait_for(lambda: app.screen is not retry, what="Cancel to close it", pilot=pilot)


async def test_a_cell_waiting_for_its_retry_is_launched_as_it_was_marked(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    """A cell marked for a retry before its queue stopped (its {out} set aside by that
    mark) offered Retry and Resume, and each did what the mark had done (s44 note): the
    dialog says how it was marked, and offers one Launch that runs it so."""
    qf = await finished_queue(make_queue_fleet)
    results = qf.root() / "results"
    aside = results / "broke.before-retry-20261205-120000"
    (results / "broke").rename(aside)  # what the box's retry did, with its record
    with (qf.qdir() / "cells" / "broke.state").open("a") as state:
        state.write(f"retry {int(time.time())} {aside}\n")
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        retry = await open_retry(pilot, app, 0)
        assert retry.cell.name == "broke" and retry.plan is not None and retry.plan.ok
        about = " ".join(text_of(retry.query_one("#retry-about", Static)).split())
        assert about.startswith("It is queued to retry; it runs again as broke."), about
        assert (
            "Marked for a retry before the queue stopped: a launch runs it as it was marked — "
            f"its {{out}} was set aside then (to {aside}), so it starts over." in about
        ), about
        assert "Resume" not in about
        assert not retry.query_one("#retry-resume", Button).display
        go = retry.query_one("#retry-go", Button)
        assert "Launch" in str(go.label) and not go.disabled
        assert "Launch runs it as marked; Cancel leaves the box alone" in screen_text(app)
        go.focus()
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, RetryConfirmScreen), 60, pilot=pilot)
    view = await wait_view(qf, lambda v: v.cells[0].attempts == 2, what="broke run again")
    assert view.cells[0].status == FAILED
    assert (results / "broke" / "checkpoint.pt").read_text() == "step\n"  # started over
    assert (aside / "checkpoint.pt").exists()  # the set-aside attempt, kept


async def test_a_refused_retry_offers_neither_retry_nor_resume(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    """h522 #5: with the run template changed since the launch, the retry was refused,
    yet Retry and Resume stood below the refusal, explained as if offered. A refusal no
    acknowledgement lifts now shows neither (as the launch dialog shows no Launch); its
    words name the way on, Start over in the Launch dialog."""
    from support.fleet_files import set_host_key

    qf = await finished_queue(make_queue_fleet)
    set_host_key(qf.loopback.hosts_file, "run", SCRIPT_RUN + " --changed")
    qf._fleet = None
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        retry = await open_retry(pilot, app, 0)
        assert retry.plan is not None and not retry.plan.ok
        assert "Refused" in text_of(retry.query_one("#retry-status", Static))
        assert "Start over in the Launch dialog (L)" in text_of(
            retry.query_one("#retry-refused", Static)
        )
        assert not retry.query_one("#retry-go", Button).display
        assert not retry.query_one("#retry-resume", Button).display
        # Nor what they would do, nor the acks' toggle (h525 #1: "press Resume" stood there).
        assert "press Resume" not in screen_text(app)
        assert not retry.query_one("#retry-about", Static).display
        assert not retry.query_one("#retry-revoke", Button).display
        assert app.focused is retry.query_one("#retry-cancel", Button)
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, RetryConfirmScreen), pilot=pilot)
