"""The stop dialog (S on the Queue tab) and `rgt-tui queue stop` name the cell a stop
keeps from starting, and on the last cell say there is none, against a real loopback box."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from support.cli import arun
from support.pilot import SIZE, make_app, shown_notifications, text_of, wait_for
from support.queues import SCRIPT_RUN, wait_view
from textual.widgets import Static

from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.screens.dialog import ConfirmScreen, DialogButton
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.queue.launch import launch, plan_launch

LAST = "it is the last cell to run, so the queue ends after it anyway"


def gate(name: str) -> str:
    return f'while [ ! -e "$HOME/{name}" ]; do sleep 0.05; done'


async def first_running(make_queue_fleet: Any) -> Any:
    """box1's queue launched, its cell "first" running until $HOME/go, then "last"."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    first, last = qf.cell_script("first", gate("go")), qf.cell_script("last", gate("never"))
    qf.write_queue(f"{first} t\n{last} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="cell first to run")
    return qf


def polling_app(qf: Any, tmp_path: Path) -> Any:
    """The app on ``qf``'s fleet, its queue polled every half second."""
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    return app


async def queue_tab(app: Any, pilot: Any) -> HostDetailScreen:
    """box1's detail screen on its Queue tab."""
    app.open_host("box1", "queue")
    return await wait_for(
        lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
    )


async def test_a_stop_on_the_last_cell_says_no_next_cell_starts(make_queue_fleet, tmp_path: Path):
    qf = await first_running(make_queue_fleet)
    app = polling_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await queue_tab(app, pilot)

        async def stop_dialog(current: str) -> str:
            await wait_for(
                lambda: (
                    screen.queue_view is not None
                    and screen.queue_view.current is not None
                    and screen.queue_view.current.name == current
                ),
                what=f"{current} running in the poller's view",
                pilot=pilot,
            )
            await pilot.press("S")
            confirm = await wait_for(
                lambda: app.screen if isinstance(app.screen, ConfirmScreen) else None, pilot=pilot
            )
            said = text_of(confirm.query_one("#confirm-body", Static))
            await pilot.press("escape")  # cancel: nothing recorded
            await wait_for(lambda: app.screen is screen, what="the dialog to close", pilot=pilot)
            return said

        said = await stop_dialog("first")
        assert "finishes: the next cell, 1 (last), does not start." in said, said
        (qf.root() / "go").touch()
        said = await stop_dialog("last")
        assert f"after cell 1 (last) finishes: {LAST}" in said, said
        assert "next cell" not in said
    assert "stop " not in (qf.qdir() / "runner.state").read_text()

    stop = await arun("queue", "stop", "box1", "--hosts", qf.loopback.hosts_file, "--yes")
    assert stop.returncode == 0, stop.stderr
    assert f"box1: the queue stops after cell 1 (last); {LAST}" in stop.stdout
    (qf.root() / "never").touch()


async def test_the_kill_dialog_names_what_runs_after_it_and_a_second_stop_asks_nothing(
    make_queue_fleet, tmp_path: Path
):
    """X's "Kill, go on" names the cell that runs next; once a stop is asked it says the
    queue stops anyway (it promised "run the next cell" and the queue stopped: a user's
    hour); S a second time asks nothing new."""
    qf = await first_running(make_queue_fleet)
    app = polling_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await queue_tab(app, pilot)

        async def go_on_says() -> str:
            await pilot.press("X")
            confirm = await wait_for(
                lambda: app.screen if isinstance(app.screen, ConfirmScreen) else None, pilot=pilot
            )
            buttons = {b.id: b for b in confirm.query(DialogButton) if b.id != "confirm-cancel"}
            # One button when the queue ends after the kill either way (its label had
            # said "Kill, go on" beside "the queue then stops").
            go_on = buttons.get("confirm-next") or buttons["confirm-stop"]
            label = str(go_on.label).strip(" ▶◀")
            said = f"{label}: {go_on.does}" if len(buttons) == 1 else go_on.does
            # Said in the body too, not only by the button once focused (s36 acts #9).
            body = " ".join(str(confirm.query_one("#confirm-body", Static).render()).split())
            if len(buttons) == 2:
                assert "Next in the queue: cell 1 (last) — Kill, go on runs it" in body, body
            await pilot.press("escape")  # cancel: nothing killed
            await wait_for(lambda: app.screen is screen, what="the dialog to close", pilot=pilot)
            return said

        await wait_for(
            lambda: screen.queue_view is not None and screen.queue_view.current is not None,
            what="first running in the poller's view",
            pilot=pilot,
        )
        assert await go_on_says() == "kill it, then run cell 1 (last)"
        stop = await arun("queue", "stop", "box1", "--hosts", qf.loopback.hosts_file, "--yes")
        assert stop.returncode == 0, stop.stderr
        await wait_for(
            lambda: screen.queue_view is not None and screen.queue_view.stop_requested,
            what="the stop in the poller's view",
            pilot=pilot,
        )
        assert await go_on_says() == "Kill: kill it; the queue then stops, as asked"
        await pilot.press("S")
        await wait_for(
            lambda: any("(asked already)" in str(n.message) for n in shown_notifications(app)),
            what="the second stop's notice",
            pilot=pilot,
        )
        assert not isinstance(app.screen, ConfirmScreen)
        # Titled with its host: the notices listed these as "(no title)" (a user's hour).
        (asked,) = [n for n in shown_notifications(app) if "(asked already)" in str(n.message)]
        assert asked.title == "box1: stop" and not str(asked.message).startswith("box1:"), asked
    assert (qf.qdir() / "runner.state").read_text().count("stop ") == 1
    assert "kill " not in qf.state("first")
    (qf.root() / "go").touch()


def offered(app: Any) -> set[str]:
    """The Queue tab's control keys the footer offers now."""
    return {
        str(b.binding.action)
        for b in app.screen.active_bindings.values()
        if b.enabled and b.binding.action.startswith("queue_control")
    }


async def test_s_and_x_are_offered_only_while_a_cell_runs(make_queue_fleet, tmp_path: Path):
    """A user's hour read "S Stop after cell" and "X Kill cell" in the footer with nothing
    running; R only with a cell to take (hour s45c #3: offered beside a lone running one)."""
    qf = await first_running(make_queue_fleet)
    app = polling_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await queue_tab(app, pilot)
        running = {"queue_control('stop')", "queue_control('kill')"}
        await wait_for(lambda: offered(app) == running, what="S X while first runs", pilot=pilot)
        await pilot.press("R")  # unlisted, yet answered, never silence
        await wait_for(
            lambda: any("no failed, killed or finished cell" in str(n.message)
                        for n in shown_notifications(app)),
            what="R answered",
            pilot=pilot,
        )  # fmt: skip
        for name in ("go", "never"):
            (qf.root() / name).touch()  # both cells end: nothing runs
        await wait_for(
            lambda: screen.queue_view is not None and screen.queue_view.current is None,
            what="the queue finished in the poller's view",
            pilot=pilot,
        )
        await wait_for(lambda: offered(app) == {"queue_control('retry')"}, pilot=pilot)
        # Hidden, yet a press is answered, never silence (hour s17a #18); no dialog. (A
        # runner still alive between its last cell and its end may still be stopped.)
        await wait_for(lambda: not screen.queue_view.runner_alive, pilot=pilot)
        await pilot.press("S")
        await wait_for(
            lambda: any("nothing to stop" in str(n.message) for n in shown_notifications(app)),
            what="S answered with nothing running",
            pilot=pilot,
        )
        await pilot.press("X")
        await wait_for(
            lambda: any("nothing to kill" in str(n.message) for n in shown_notifications(app)),
            what="X answered with nothing running",
            pilot=pilot,
        )
        assert isinstance(app.screen, HostDetailScreen)  # no dialog was opened


async def test_an_80_column_queue_tab_footer_draws_s_x_and_r(make_queue_fleet, tmp_path: Path):
    """Hour s45a #10: at 80 columns the Queue tab of a running queue drew p, v, t and L
    (refused while the queue runs) and none of its own S X R. (first is killed here, so R
    has a cell to take.)"""
    from support.pilot import screen_text

    from rgt_tui.services.queue.control import kill_cell
    from rgt_tui.widgets.key_footer import KeyFooter

    qf = await first_running(make_queue_fleet)
    transport = qf.transport()
    await kill_cell(qf.host(), transport, "first", then="next", grace_s=1)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="last to run")
    app = polling_app(qf, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await queue_tab(app, pilot)
        every = {"queue_control('stop')", "queue_control('kill')", "queue_control('retry')"}
        await wait_for(lambda: offered(app) == every, what="S X R while first runs", pilot=pilot)

        def row() -> str:
            return screen_text(app).splitlines()[app.screen.query_one(KeyFooter).region.y]

        await wait_for(
            lambda: all(k in row() for k in (" S Stop after ", " X Kill cell ", " R Retry ")),
            what="S X R drawn",
            pilot=pilot,
            show=row,
        )
        for name in ("go", "never"):
            (qf.root() / name).touch()


async def test_a_kill_of_the_last_cell_says_the_queue_finished_not_stopped_as_asked(
    make_queue_fleet, tmp_path: Path
):
    """h493 #3: X on the last cell sent a stop nobody asked for, and the kill's toast
    said "the queue stopped, as asked" beside a header reading "queue finished"."""
    qf = await first_running(make_queue_fleet)
    (qf.root() / "go").touch()
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="cell last to run")
    app = polling_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await queue_tab(app, pilot)
        await wait_for(
            lambda: (
                screen.queue_view is not None
                and screen.queue_view.current is not None
                and screen.queue_view.current.name == "last"
            ),
            what="last running in the poller's view",
            pilot=pilot,
        )
        await pilot.press("X")
        confirm = await wait_for(
            lambda: app.screen if isinstance(app.screen, ConfirmScreen) else None, pilot=pilot
        )
        [kill] = [b for b in confirm.query(DialogButton) if b.id != "confirm-cancel"]
        assert (
            kill.id == "confirm-end" and kill.does == "kill it; no cell follows, so the queue ends"
        )
        kill.focus()
        await pilot.press("enter")
        told = await wait_for(
            lambda: next(
                (str(n.message) for n in shown_notifications(app) if "cell last" in str(n.message)),
                None,
            ),
            60,
            what="the kill's notice",
            pilot=pilot,
        )
        # Read after the runner's stop record, or just before it (a loaded machine): both
        # are the kill's words, never "as asked".
        ended = ("the queue ended: no cell followed it", "the queue stops: no further cell starts")
        assert "as asked" not in told and told.endswith(ended), told
    # A stop all the same, so that a cell appended meanwhile does not start (review h494 #5).
    assert re.search(r"^kill \d+ user stop$", qf.state("last"), re.M), qf.state("last")
