"""Pilot tests of the queue keys (l, a, f, d), the Queue and Logs tabs and the pane's
queue line, against real loopback boxes running the real demo workload.

Over 450 lines: the launch dialog's whole path (plan, refusal, Start over, launch) and
the tabs it feeds are one user story, with the helpers (``queue_app``, ``planned``) here."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path
from typing import Any

from rich.style import Style
from support.pilot import SIZE, make_app, notes, palette_titles, text_of, wait_for
from support.queues import wait_view
from textual import events
from textual.widgets import Button, DataTable, Input, OptionList, RichLog, Select, Static

from rgt_tui.app import RgtApp
from rgt_tui.domain.queue_state import FINISHED, RUNNING
from rgt_tui.domain.vanished import HANGUP, MANUAL_KILL, OOM, REBOOT
from rgt_tui.screens.diagnosis import DiagnosisScreen
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen, plan_notes
from rgt_tui.screens.tabs.logs import LogsTab
from rgt_tui.screens.tabs.queue import QueueTab
from rgt_tui.services.queue.launch import launch, plan_launch


def queue_app(qf: Any, tmp_path: Path) -> RgtApp:
    """The App on the queue fleet with its real monitors, polling the queue every 0.5 s."""
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    app.runtime.queues.poll_s = 0.5
    return app


async def planned(pilot: Any, app: RgtApp) -> LaunchConfirmScreen:
    """The launch modal once its plan arrived."""

    def ready() -> LaunchConfirmScreen | None:
        screen = app.screen
        if isinstance(screen, LaunchConfirmScreen) and screen.plan is not None:
            return screen
        return None

    return await wait_for(ready, what="the launch plan", pilot=pilot)


async def test_l_confirms_runs_the_queue_shows_it_and_refuses_a_second_launch(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, workload=True)
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        modal = await planned(pilot, app)
        table = modal.query_one(DataTable)
        # Box text in the plan is Content (issue 39): the cells as the user reads them.
        rows = [
            [getattr(c, "plain", c) for c in table.get_row_at(i)] for i in range(table.row_count)
        ]
        assert [r[1] for r in rows] == ["box1_lr3e-4", "box1_lr1e-3", "box1_wide"]
        assert [r[0] for r in rows] == ["0", "1", "2"]
        assert [r[2] for r in rows] == ["reconstruction", "reconstruction", "classification"]
        assert rows[0][3] == "3 (the line)" and rows[2][3] == "5 (the line)"
        assert "(the host's default: the line gives none)" in rows[1][3]  # U32
        assert modal.query_one("#launch-start", Input).value == "0"
        notes_text = text_of(modal.query_one("#launch-notes", Static))
        assert "detach tmux" in notes_text and f"session {modal.plan.session}" in notes_text
        # The first cell's command, as the CLI's plan prints it (h522 #2).
        assert f"command $ {modal.plan.runs[0].command}  (cell 0;" in notes_text, notes_text
        # A queue under setsid nohup (no tmux on the box) has no session to name.
        assert modal.plan is not None
        nohup = plan_notes(dataclasses.replace(modal.plan, detach="nohup")).plain
        assert "detach nohup" in nohup and "session" not in nohup
        go = modal.query_one("#launch-go", Button)
        assert go.display and not go.disabled

        # The ready plan puts focus on Launch: Enter confirms, as in any dialog.
        assert app.focused is go
        await pilot.press("enter")
        await wait_for(
            lambda: isinstance(app.screen, FleetScreen), what="the modal to close", pilot=pilot
        )
        # The toast is a message to the app, posted before the modal's dismiss: a loaded
        # run can show the fleet screen before the app has read it (CI, stop 63's run).
        await wait_for(
            lambda: any("queue launched" in n and "3 cells" in n for n in notes(app)),
            what="the launch's toast",
            pilot=pilot,
        )
        await wait_view(qf, lambda v: v.state == RUNNING, what="the queue to run")

        # A second L while it runs: the refusal, and no Launch button.
        await pilot.press("L")
        modal = await planned(pilot, app)
        assert modal.plan is not None and not modal.plan.ok
        status = text_of(modal.query_one("#launch-status", Static))
        assert "Refused" in status
        assert "already running" in text_of(modal.query_one("#launch-refused", Static))
        assert not modal.query_one("#launch-go", Button).display
        # A start over settles nothing here: not offered (review h526 #6).
        assert not modal.plan.starts_over and not modal.query_one("#launch-fresh", Button).display
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)

        view = await wait_view(qf, lambda v: v.state == FINISHED, timeout=120, what="the end")
        assert view.count("done") == 3
        pane = app.fleet_screen.panes["box1"]
        await wait_for(
            lambda: pane.queue_line is not None and "3/3 done" in pane.queue_line.plain,
            what="the pane's queue line",
            pilot=pilot,
        )
        assert "queue 3/3 done" in pane.render().plain

        await pilot.press("enter")
        detail = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        detail.action_show_tab("queue")
        tab = detail.tabs["queue"]
        assert isinstance(tab, QueueTab)
        await wait_for(lambda: tab.view is not None, what="the queue tab's view", pilot=pilot)
        body = text_of(tab.query_one(".queue-body", Static))
        for name in ("box1_lr3e-4", "box1_lr1e-3", "box1_wide"):
            line = next(line for line in body.splitlines() if name in line)
            assert "done" in line, body
        assert "3/3 done" in body


async def test_f_follows_the_queue_log_and_highlights_crashes_only_in_a_cell_log(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, workload=True)
    host, transport = qf.host(), qf.transport()
    plan = await plan_launch(qf.fleet, host, transport)
    await launch(plan, transport)
    await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, timeout=120, what="the queue to finish")
    # A crash-looking line in the queue log must NOT be highlighted there (it concatenates
    # cells); the same in a cell's own log must be.
    with (qf.qdir() / "queue.log").open("a") as f:
        f.write("Traceback (most recent call last):\nValueError: from the queue log\n")
    with (qf.qdir() / "cells" / "box1_wide.log").open("a") as f:
        f.write('Traceback (most recent call last):\n  File "train.py", line 1\n')
        f.write("RuntimeError: CUDA out of memory in the cell\n")

    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        detail = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        await wait_for(lambda: detail.active_tab == "logs", what="the logs tab", pilot=pilot)
        tab = detail.tabs["logs"]
        assert isinstance(tab, LogsTab)
        await wait_for(
            lambda: any("QUEUE DONE" in t for t in tab.lines), what="queue log", pilot=pilot
        )
        await wait_for(lambda: any("from the queue log" in t for t in tab.lines), pilot=pilot)
        assert tab.source == "queue" and tab.crash_lines == []
        assert tab.status == "following"

        select = tab.query_one(Select)
        choices = select.query_one(OptionList)  # the queue log, then a line per cell
        await wait_for(lambda: choices.option_count == 4, what="the cell list", pilot=pilot)
        select.value = "box1_wide"
        await wait_for(lambda: tab.crash_lines, what="crash lines of the cell log", pilot=pilot)
        assert tab.source == "box1_wide"
        assert any("CUDA out of memory" in t for t in tab.crash_lines)
        assert not any("from the queue log" in t for t in tab.lines)

        log = tab.query_one(RichLog)
        error = Style.parse(app.theme_variables["error"]).color
        styles = {
            strip.text: {seg.style.color for seg in strip if seg.style} for strip in log.lines
        }
        crash = next(t for t in styles if "CUDA out of memory" in t)
        assert error in styles[crash]
        plain = next(t for t in styles if "epoch" in t.lower() or "step" in t.lower())
        assert error not in styles[plain]

        # Leaving the tab stops the follower; coming back resumes where it stopped.
        detail.action_show_tab("overview")
        await wait_for(lambda: not tab.following, what="the follower to stop", pilot=pilot)
        with (qf.qdir() / "cells" / "box1_wide.log").open("a") as f:
            f.write("written while the tab was hidden\n")
        await pilot.pause(1.2)
        assert not tab.following and "written while" not in " ".join(tab.lines)
        detail.action_show_tab("logs")
        await wait_for(
            lambda: any("written while" in t for t in tab.lines), what="resume", pilot=pilot
        )
        assert sum("CUDA out of memory" in t for t in tab.lines) == 1


async def test_d_diagnoses_a_reboot_and_l_resumes_where_it_stopped(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, workload=True)
    host, transport = qf.host(), qf.transport()
    plan = await plan_launch(qf.fleet, host, transport)
    await launch(plan, transport)
    await transport.close()
    await wait_view(qf, lambda v: v.current is not None, what="a cell to run")
    qf.reboot()
    view = await wait_view(qf, lambda v: v.resume_index is not None, what="the interrupted view")

    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        modal = await wait_for(
            lambda: isinstance(app.screen, DiagnosisScreen) and app.screen.diagnosis and app.screen,
            what="the diagnosis",
            pilot=pilot,
        )
        assert modal.diagnosis.cause == REBOOT
        body = text_of(modal.query_one("#diagnosis-body", Static))
        assert "cause  reboot" in body
        # The four ways a run vanishes always have a row; a GPU fault (dead GPU, CUDA
        # OOM) has one only when the box shows it (issue 42), and this box shows none.
        for cause in (REBOOT, OOM, HANGUP, MANUAL_KILL):
            assert f"  {cause}" in body, body
        assert "next step" in body
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)

        # L after the reboot: the start index defaults to the resume index.
        await pilot.press("L")
        modal = await planned(pilot, app)
        assert modal.plan is not None and modal.plan.start_index == view.resume_index
        await wait_for(
            lambda: modal.query_one("#launch-start", Input).value == str(view.resume_index),
            pilot=pilot,
        )
        # Editing the start index re-plans.
        start = modal.query_one("#launch-start", Input)
        start.value = "2"
        await wait_for(lambda: modal.plan is not None and modal.plan.start_index == 2, pilot=pilot)
        assert [c.name for c in modal.plan.to_run] == ["box1_wide"]
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        await asyncio.sleep(0)


async def test_a_appends_new_lines_or_shows_the_refusal(make_queue_fleet, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, workload=True)
    host, transport = qf.host(), qf.transport()
    plan = await plan_launch(qf.fleet, host, transport)
    await launch(plan, transport)
    await transport.close()
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        original = qf.queue_file().read_text()
        configs = qf.root() / "configs"
        (configs / "box1_extra.json").write_text((configs / "box1_wide.json").read_text())
        qf.append_queue("configs/box1_extra.json classification 1\n")
        await pilot.press("a")
        await wait_for(lambda: any("appended" in n for n in notes(app)), what="append", pilot=pilot)
        assert any("box1_extra" in n for n in notes(app)), notes(app)

        qf.write_queue(original.replace("reconstruction", "classification", 1) + "\n")
        await pilot.press("a")
        await wait_for(
            lambda: any("append refused" in n for n in notes(app)), what="refusal", pilot=pilot
        )
        refusal = next(n for n in notes(app) if "append refused" in n)
        assert "configs/box1_lr3e-4.json" in refusal, refusal
        # The title names the host; the text does not again (a user's hour).
        assert refusal.startswith("box1: append refused: refused: "), refusal


async def test_queue_keys_are_in_help_and_the_palette(make_queue_fleet, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, workload=True)
    app = RgtApp(qf.fleet, start_monitors=False, config_dir=tmp_path / "config")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        text = text_of(app.screen.query_one("#help-body", Static))
        for words in ("Launch the host's queue", "Follow the host's queue", "vanish", "Send new"):
            assert words in text, words
        titles = await palette_titles(app)
        for title in ("Launch queue: box1", "Follow logs: box1", "Diagnose queue: box1"):
            assert title in titles


async def test_the_start_index_box_edits_like_an_input_and_a_refused_plan_runs_nothing(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Typing in the start box while plans come back never rewrites it (End, ⌫, 2, 0
    gave 201: a late plan put its own index back under the cursor); a start past the
    queue is refused and says nothing will run."""
    qf = await make_queue_fleet(1, workload=True)
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        modal = await planned(pilot, app)
        box = modal.query_one("#launch-start", Input)
        box.focus()
        await pilot.press("end", "backspace", "2", "0")
        await wait_for(lambda: modal.plan is not None and modal.plan.start_index == 20, pilot=pilot)
        await pilot.pause(0.3)
        assert box.value == "20" and box.cursor_position == 2
        notes_text = text_of(modal.query_one("#launch-notes", Static))
        assert "will run nothing" in notes_text and "will run 0 of" not in notes_text
        assert "outside the queue" in text_of(modal.query_one("#launch-refused", Static))
        # Refused before the box was asked: said so, not "the box was not reached".
        assert "detach not asked" in notes_text and "detach ?" not in notes_text
        body = " ".join(text_of(w) for w in modal.query(Static))
        assert "preflight: not run (the launch was refused first)" in body, body
        await pilot.press("backspace")  # "2": the last cell, a plan that runs it
        await wait_for(
            lambda: modal.plan is not None and modal.plan.start_index == 2 and modal.plan.ok,
            pilot=pilot,
        )
        assert box.value == "2"
        assert "will run 1 of 3 cells" in text_of(modal.query_one("#launch-notes", Static))
        # End, ⌫ and a digit in one burst, as a terminal sends them: the digit stays
        # (the ⌫ ran as a binding after the digit was typed: a user's hour saw it lost).
        for key in ("end", "backspace", "1"):
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await wait_for(lambda: box.value == "1", pilot=pilot)
        await pilot.pause(0.3)
        assert box.value == "1"
        await wait_for(lambda: modal.plan is not None and modal.plan.start_index == 1, pilot=pilot)


def test_no_queue_hint_names_hosts_and_the_real_file(tmp_path: Path) -> None:
    """``l`` on a host with no queue names ``[[hosts]]`` and the file to edit (or none)."""
    from rgt_tui.controllers.queue_actions import no_queue_hint
    from rgt_tui.services.fleet.file import load_fleet

    none = no_queue_hint("local", load_fleet(None))
    assert "there is no fleet file" in none and "rgt-tui add" in none and "[[hosts]]" in none
    empty = tmp_path / "hosts.toml"
    empty.write_text("[fleet]\npoll_seconds = 2\n")
    said = no_queue_hint("local", load_fleet(empty))
    assert f"{empty} has no [[hosts]] entry" in said
    hosts = tmp_path / "fleet.toml"
    hosts.write_text('[[hosts]]\nname = "box"\nssh = "root@10.0.0.1"\n')
    said = no_queue_hint("box", load_fleet(hosts))
    assert f"[[hosts]] entry in {hosts}" in said
    for text in (none, said):
        assert "[[host]]" not in text
    # A group's entry is [[groups]], its template torchrun's (a user's hour was sent to
    # a [[hosts]] entry, with a plain python command).
    hosts.write_text(
        hosts.read_text() + '[[hosts]]\nname = "two"\nssh = "root@10.0.0.2"\n'
        '[[groups]]\nname = "pair"\nhosts = ["box", "two"]\n'
    )
    group = no_queue_hint("pair", load_fleet(hosts))
    assert f"[[groups]] entry in {hosts}" in group and "[[hosts]]" not in group
    assert 'run = "torchrun --nnodes {nnodes} --node-rank {node_rank}' in group


async def test_p_reads_the_fleet_files_preflight_ack_as_the_cli_does(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The box has no GPU and its cells no torch: gpu, driver and torch fail there, and
    the fleet file acknowledges them (preflight_ack). P's panel says acknowledged and
    ready, as `rgt-tui preflight` and the launch plan do, not "3 failed" in red."""
    qf = await make_queue_fleet(1, workload=True)
    text = await preflight_panel(qf, tmp_path)
    acked = qf.fleet.host("box1").ready.preflight_ack
    assert "ready to launch" in text and "failed" not in text, text
    assert "acknowledged" in text and "✖" not in text, text
    failed = [line for line in text.splitlines() if line.startswith("⚠ ")]
    assert failed and all(line.split()[1] in acked for line in failed), text


async def test_p_does_not_say_ready_when_the_queue_file_has_a_problem_a_launch_refuses(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Every check may pass on the box while a launch refuses the queue file (a format
    error, a name twice, a config the code tree lacks): P's panel names the queue file's
    problems and does not say "ready to launch", as `rgt-tui preflight` does (ux-h #16)."""
    qf = await make_queue_fleet(1, workload=True)
    qf.write_queue("configs/a.yaml base 1\nconfigs/a.yaml base 1\n")  # one cell name twice
    text = await preflight_panel(qf, tmp_path)
    assert "ready to launch" not in text, text
    assert "a launch refuses the 1 problem below" in text, text
    assert "the credentials'" not in text  # none was read: each line says whose it is
    queue_lines = [line for line in text.splitlines() if line.startswith("queue file")]
    assert queue_lines and "used 2 times" in queue_lines[0], text


async def preflight_panel(qf, tmp_path: Path) -> str:  # type: ignore[no-untyped-def]
    """P on box1's Queue tab; the readiness panel's text once preflight's outcome is in."""
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        detail = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        detail.action_show_tab("queue")
        tab = detail.tabs["queue"]
        await pilot.press("P")

        def ready_text() -> str:
            body = tab.query_one(".ready-body", Static)
            text = text_of(body) if body.display else ""
            return text if "preflight on box1:" in text else ""

        return await wait_for(ready_text, 120, what="the preflight's outcome", pilot=pilot)


async def test_the_queue_tab_opened_on_its_own_keeps_the_acknowledged_checks(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Hour s34 TUI #5: opened straight on the Queue tab (the palette's Retry or Tunnel),
    the tab drew the preflight outcome before it knew its host, so the fleet file's
    acknowledged checks read as failures with a fix ("✖ gpu failed … install a CUDA
    build"), while P on the same tab said they were acknowledged."""
    qf = await make_queue_fleet(1, workload=True)
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        detail = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        detail.action_show_tab("queue")
        await pilot.press("P")

        def ready_text(tab) -> str:  # type: ignore[no-untyped-def]
            bodies = list(tab.query(".ready-body").results(Static))  # none until mounted
            text = text_of(bodies[0]) if bodies and bodies[0].display else ""
            return text if "preflight on box1:" in text else ""

        first = await wait_for(lambda: ready_text(detail.tabs["queue"]), 120, pilot=pilot)
        assert "acknowledged" in first and "✖" not in first, first
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, HostDetailScreen), pilot=pilot)
        app.open_host("box1", "queue")  # as the palette opens it
        again = await wait_for(
            lambda: (
                isinstance(app.screen, HostDetailScreen) and ready_text(app.screen.tabs["queue"])
            ),
            30,
            pilot=pilot,
        )
        assert "acknowledged" in again and "✖" not in again and "failed (" not in again, again


async def test_l_pressed_twice_quickly_opens_one_launch_dialog(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """s43 hour: L L stacked two launch dialogs, each running its own preflight; one
    Escape left the second open, with a stale plan and Launch focused."""
    qf = await make_queue_fleet(1, workload=True)
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        # Both keys queued before either is handled, as a terminal delivers a quick pair.
        for _ in range(2):
            app.post_message(events.Key("L", "L"))
        await planned(pilot, app)
        await pilot.pause()
        launches = [s for s in app.screen_stack if isinstance(s, LaunchConfirmScreen)]
        assert len(launches) == 1, app.screen_stack
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, LaunchConfirmScreen), pilot=pilot)


async def test_start_over_in_the_launch_dialog_after_a_refusal_that_names_fresh(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """h522 #5: with the run template changed after a launch, L (and R) refused with
    "rgt-tui launch box1 --fresh (the Launch dialog has no --fresh)": the only way on was
    a second terminal. The dialog now offers Start over beside that refusal; its plan
    sets the box's queue aside (kept), and focus waits on Cancel: Launch is a deliberate
    Shift+Tab, never the Enter that follows."""
    from support.fleet_files import set_host_key

    qf = await make_queue_fleet(1, run="bash {cfg} {name} {out} {task} {epochs}")
    qf.write_queue(f"{qf.cell_script('quick', 'echo hi')} t 1\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the first queue to finish")
    set_host_key(qf.loopback.hosts_file, "run", "bash {cfg} {name} {out} {task} 99")
    qf._fleet = None  # the changed template
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        modal = await planned(pilot, app)
        assert modal.plan is not None and not modal.plan.ok
        assert "Start over in the Launch dialog" in text_of(
            modal.query_one("#launch-refused", Static)
        )
        assert modal.plan.starts_over  # a refusal a fresh start settles
        # From the done cell: refused all the same, and its "will run again" not said
        # against the refusal's "will run nothing" (h525 #3).
        modal.query_one("#launch-start", Input).value = "0"
        await wait_for(
            lambda: modal.plan is not None and modal.plan.start_index == 0 and not modal.replanning,
            what="the plan from cell 0",
            pilot=pilot,
        )
        notes_text = text_of(modal.query_one("#launch-notes", Static))
        assert "will run nothing" in notes_text and "will run again" not in notes_text, notes_text
        assert any("will run again" in w for w in modal.plan.warnings), modal.plan.warnings
        fresh = modal.query_one("#launch-fresh", Button)
        assert fresh.display and not modal.query_one("#launch-go", Button).display
        fresh.press()
        await wait_for(
            lambda: modal.plan is not None and modal.plan.fresh and not modal.replanning,
            what="the fresh plan",
            pilot=pilot,
        )
        assert modal.plan.ok, modal.plan.problems
        assert not fresh.display
        assert "Start over: the box's queue is set aside (kept)" in text_of(
            modal.query_one("#launch-status", Static)
        )
        assert "will be moved aside to ~/.rgt/queue.archived." in text_of(
            modal.query_one("#launch-notes", Static)
        )
        assert app.focused is modal.query_one("#launch-cancel", Button)
        await pilot.press("shift+tab")
        assert app.focused is modal.query_one("#launch-go", Button)
        await pilot.press("enter")
        await wait_for(
            lambda: isinstance(app.screen, FleetScreen), what="the modal to close", pilot=pilot
        )
    archived = list((qf.root() / ".rgt").glob("queue.archived.*"))
    assert len(archived) == 1 and (archived[0] / "runner.state").is_file(), archived
    await wait_view(qf, lambda v: v.state == FINISHED, what="the fresh queue to finish")
