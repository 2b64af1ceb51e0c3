"""The Queue tab's control keys against real loopback boxes: X kills the running cell
after a dialog naming it, R retries a cell picked from a list, S stops after the current
cell; the records on the box are checked afterwards."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.pilot import SIZE, click, make_app, notes, palette_titles, text_of, wait_for
from support.queues import SCRIPT_RUN, wait_view
from textual.widgets import OptionList, Static

from rgt_tui.domain.queue_state import DONE, KILLED, RUNNING, USER_STOPPED, QueueView
from rgt_tui.screens.dialog import ConfirmScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.queue_control import CellPickScreen
from rgt_tui.screens.retry_confirm import RetryConfirmScreen
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.launch import launch, plan_launch


def gate(name: str) -> str:
    return f'while [ ! -e "$HOME/{name}" ]; do sleep 0.05; done; echo "{name} open"'


async def modal(pilot: Any, kind: type) -> Any:
    return await wait_for(
        lambda: pilot.app.screen if isinstance(pilot.app.screen, kind) else None,
        what=kind.__name__,
        pilot=pilot,
    )


async def test_x_kills_r_retries_and_s_stops_from_the_queue_tab(
    make_queue_fleet, tmp_path: Path, monkeypatch: Any
):
    from rgt_tui.controllers import queue_control

    # A kill answered before "killing…" is due is said once, by its outcome (s39 new user
    # #5: the two toasts stacked). Due never here, whatever the machine's load.
    monkeypatch.setattr(queue_control, "KILLING_SAID_AFTER_S", 600.0)
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hold = qf.cell_script("hold", gate("never"))
    a = qf.cell_script("a", gate("go_a"))
    b = qf.cell_script("b", "echo b ran")
    qf.write_queue(f"{hold} t\n{a} t\n{b} t\n")
    transport = qf.transport()
    plan = await plan_launch(qf.fleet, qf.host(), transport)
    await launch(plan, transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="cell hold to run")

    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        assert any(t.startswith("Kill running cell: box1") for t in await palette_titles(app))
        app.open_host("box1", "queue")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None,
            what="the detail screen",
            pilot=pilot,
        )
        await wait_for(lambda: screen.active_tab == "queue", what="the Queue tab", pilot=pilot)
        await wait_for(
            lambda: screen.queue_view is not None and screen.queue_view.current is not None,
            what="the poller's view with the running cell",
            pilot=pilot,
        )
        body = screen.query_one(".queue-body", Static)
        await wait_for(lambda: "S stop after this cell" in text_of(body), pilot=pilot)

        await pilot.press("X")
        confirm = await modal(pilot, ConfirmScreen)
        assert "Kill cell hold on box1 now?" in text_of(confirm.query_one("#confirm-body", Static))
        assert app.focused is not None and app.focused.id == "confirm-cancel"  # Enter alone: cancel
        await click(pilot, "#confirm-next")
        view = await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="the next cell")
        assert view.cells[0].status == KILLED
        assert "kill " in qf.state("hold") and " user next" in qf.state("hold")
        await wait_for(lambda: any("killed (exit 143)" in n for n in notes(app)), pilot=pilot)
        assert not any("killing hold…" in n for n in notes(app)), notes(app)

        await wait_for(  # the dialog names the cell the poller saw last
            lambda: screen.queue_view.current is not None and screen.queue_view.current.name == "a",
            pilot=pilot,
        )
        await pilot.press("S")
        confirm = await modal(pilot, ConfirmScreen)
        assert "after cell 1 (a)" in text_of(confirm.query_one("#confirm-body", Static))
        assert app.focused is not None and app.focused.id == "confirm-cancel"  # as X's
        await click(pilot, "#confirm-stop")
        await wait_for(lambda: "stop " in (qf.qdir() / "runner.state").read_text(), pilot=pilot)
        await wait_for(  # the notice says how to go on
            lambda: any("rgt-tui launch box1 --start 2" in n for n in notes(app)), pilot=pilot
        )
        # Asked: S leaves the tab's line and the footer, and a second S says so (h471 #8).
        await wait_for(lambda: "S stop after this cell" not in text_of(body), pilot=pilot)
        assert "stop requested: the queue ends after cell 1 (a)" in text_of(body), text_of(body)
        assert "X kill the running cell" in text_of(body), text_of(body)
        await wait_for(
            lambda: "Kill cell" in _footer(app) and "Stop after" not in _footer(app),
            pilot=pilot,
            show=lambda: _footer(app),
        )
        await pilot.press("S")
        await wait_for(lambda: any("(asked already)" in n for n in notes(app)), pilot=pilot)
        (qf.root() / "go_a").touch()
        await wait_view(qf, lambda v: v.state == USER_STOPPED, what="the queue to stop")
        await wait_for(lambda: "stopped by the user after cell 1 (a)" in text_of(body), pilot=pilot)
        # Nothing runs now: S and X are not offered under the summary.
        assert "nothing runs · R retry or resume hold (alone) · L relaunch from cell 2" in " ".join(
            text_of(body).split()
        ), text_of(body)
        assert "S stop after this cell" not in text_of(body)

        (qf.root() / "never").touch()  # the retry of hold now succeeds
        await pilot.press("R")
        picker = await modal(pilot, CellPickScreen)
        options = picker.query_one(OptionList)
        assert [name for name, _ in picker.cells] == ["hold", "a"]
        assert options.option_count == 2
        await pilot.press("enter")  # the first: hold
        confirm = await modal(pilot, RetryConfirmScreen)  # plans the retry, then asks
        assert "Retry or resume cell hold on box1?" in text_of(
            confirm.query_one("#retry-title", Static)
        )
        await wait_for(lambda: confirm.plan is not None and confirm.plan.ok, pilot=pilot)
        await click(pilot, "#retry-go")
        await wait_for(  # on failure, the screen shows why (the dialog says "Not retried")
            lambda: not isinstance(app.screen, RetryConfirmScreen),
            what="the retry dialog to close, retried",
            pilot=pilot,
        )
        view = await wait_view(
            qf, lambda v: v.cells[0].status == DONE and v.state != "running", what="the retry"
        )
        assert [c.status for c in view.cells][:2] == [DONE, DONE]
        assert qf.state("b") == ""  # the retry launch runs only the retried cell
        assert [r.split()[0] for r in qf.state("hold").splitlines()] == [
            "start", "kill", "end", "retry", "start", "end",
        ]  # fmt: skip


async def test_r_pressed_as_the_detail_screen_opens_is_kept_for_its_queue_tab(
    tmp_path: Path,
) -> None:
    """R arriving before the Queue tab is mounted (a busy machine) opens the picker once
    it is, instead of being dropped (a fresh-clone CI run lost it so)."""
    from rgt_tui.domain.queue_state import FAILED, CellView, QueueView

    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        host = app.fleet.hosts[0].name
        failed = CellView(0, "one", FAILED, exit_code=3, started_at=90, ended_at=95)
        app.runtime.queues.views[host] = QueueView(
            host, "finished", (failed,), None, "boot", 100, None
        )
        app.open_host(host, "queue")
        screen = app.screen
        assert isinstance(screen, HostDetailScreen)
        assert not screen.tabs["queue"].is_mounted  # the same moment: not yet
        screen.action_queue_control("retry")
        picker = await modal(pilot, CellPickScreen)
        options = await wait_for(lambda: next(iter(picker.query(OptionList)), None), pilot=pilot)
        assert options.option_count == 1


async def test_the_palette_offers_no_queue_control_for_a_torn_down_box(tmp_path: Path) -> None:
    """A user's hour (session 29): "Kill running cell: box2" stood in the palette for a
    box torn down minutes before. A host whose telemetry stopped (torn down) has none."""
    (tmp_path / "q.txt").write_text("cells/a.sh t\n")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        "".join(
            f'[[hosts]]\nname = "{name}"\nssh = "root@10.0.0.{i}"\nqueue = "{tmp_path / "q.txt"}"\n'
            for i, name in enumerate(("box1", "box2"), 1)
        )
    )
    app = make_app(tmp_path, fleet=load_fleet(hosts))
    async with app.run_test(size=SIZE):
        before = await palette_titles(app)
        assert "Kill running cell: box2" in before and "Kill running cell: box1" in before
        app.runtime.stopped.add("box2")  # as a recorded teardown stops its telemetry
        after = await palette_titles(app)
        controls = ("Stop queue after cell", "Kill running cell", "Retry cell")
        assert not [t for t in after if t.endswith(": box2") and t.startswith(controls)], after
        assert "Kill running cell: box1" in after
        # Nothing that sends to the box either, even once `r` heard it again (hour s33
        # TUI #11: "Launch queue: box2" after its teardown); a move of its cells stays.
        app.jobs._set("box2", torn_down_at=1.0, still_answers_at=2.0)  # as r hearing it
        last = await palette_titles(app)
        assert "Launch queue: box2" not in last and "Append to queue: box2" not in last, last
        assert "Move cells…: box2" in last and "Launch queue: box1" in last, last


async def test_the_palette_offers_stop_and_kill_only_while_a_cell_runs(tmp_path: Path) -> None:
    """Hour s30: "Stop queue after cell: box1" stood in the palette for a host with
    nothing running, where the Queue tab's footer offers neither S nor X. Retry stays."""
    (tmp_path / "q.txt").write_text("cells/a.sh t\n")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[[hosts]]\nname = "box1"\nssh = "root@10.0.0.1"\nqueue = "{tmp_path / "q.txt"}"\n'
    )
    app = make_app(tmp_path, fleet=load_fleet(hosts))
    async with app.run_test(size=SIZE):
        # Not read yet: offered, and the dialog says what it finds (as S and X are).
        assert "Stop queue after cell: box1" in await palette_titles(app)
        idle = QueueView(host="box1", state="done", cells=(), launch=None, boot_id="b", now=0,
                         resume_index=None)  # fmt: skip
        app.runtime.queues.views["box1"] = idle
        titles = await palette_titles(app)
        assert "Stop queue after cell: box1" not in titles, titles
        assert "Kill running cell: box1" not in titles, titles
        assert "Retry cell: box1" in titles, titles


async def test_x_and_s_on_the_logs_tab_ask_as_on_the_queue_tab(make_queue_fleet, tmp_path: Path):
    """Hour s34 TUI #9: watching the running cell's log, X and S did nothing and said
    nothing (the palette offered Kill); they now ask, as on the Queue tab."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('hold', gate('never'))} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="cell hold to run")

    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("box1", "logs")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None,
            what="the detail screen",
            pilot=pilot,
        )
        await wait_for(lambda: screen.active_tab == "logs", what="the Logs tab", pilot=pilot)
        await wait_for(
            lambda: screen.queue_view is not None and screen.queue_view.current is not None,
            what="the poller's view with the running cell",
            pilot=pilot,
        )
        await pilot.press("X")
        confirm = await modal(pilot, ConfirmScreen)
        assert "Kill cell hold on box1 now?" in text_of(confirm.query_one("#confirm-body", Static))
        await pilot.press("escape")  # nothing is done
        await wait_for(lambda: app.screen is screen, pilot=pilot)
        assert screen.active_tab == "logs"
        await pilot.press("S")
        stop = await modal(pilot, ConfirmScreen)
        assert "hold" in text_of(stop.query_one("#confirm-body", Static))
        await pilot.press("escape")
    assert "kill " not in qf.state("hold")
    (qf.root() / "never").touch()


def _footer(app: Any) -> str:
    """The footer row as drawn (its bindings are worked out as it draws)."""
    from support.pilot import screen_text

    from rgt_tui.widgets.key_footer import KeyFooter

    return screen_text(app).splitlines()[app.screen.query_one(KeyFooter).region.y]
