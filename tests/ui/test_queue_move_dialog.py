"""The Queue keys' "Move cells…" (m, and the palette): typed cells and host, the plan,
a refusal shown, and a move of a cell the running box holds, against loopback boxes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.pilot import SIZE, make_app, notes, palette_titles, screen_text, text_of, wait_for
from support.queues import GATE, SCRIPT_RUN, wait_view
from textual.widgets import Button, Input, Static

from rgt_tui.domain.queue_state import DONE, RUNNING
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.queue_move_dialog import QueueMoveScreen
from rgt_tui.screens.quit_confirm import QuitConfirmScreen
from rgt_tui.services.queue.launch import launch, plan_launch


async def planned(pilot: Any, screen: QueueMoveScreen, says: str) -> str:
    """The dialog's notes once they say ``says``."""

    def ready() -> str:
        text = text_of(screen.query_one("#move-notes", Static))
        return text if says in text else ""

    return await wait_for(ready, what=f"the move plan to say {says!r}", pilot=pilot)


async def gate_running(qf: Any, second: str, others: tuple[str, ...]) -> None:
    """box1's queue launched: ``gate`` running until $HOME/go, then ``second``; each of
    ``others`` given a queue of its own (somewhere to move to)."""
    qf.write_queue(f"{qf.cell_script('gate', GATE)} t 1\n{second} t 1\n", "box1")
    for box in others:
        qf.write_queue("cells/x.sh t 1\n", box)
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")


async def open_move(app: Any, pilot: Any) -> QueueMoveScreen:
    """``m`` on the fleet (box1 selected): the move dialog."""
    await pilot.press("m")
    return await wait_for(
        lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None,
        what="the move dialog",
        pilot=pilot,
    )


async def test_m_moves_a_cell_the_running_box_holds_after_naming_it(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\ncells/b.sh t 1\n", "box1")
    qf.write_queue("cells/x.sh t 1\n", "box2")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")

    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        titles = await palette_titles(app)
        assert "Move cells…: box1" in titles and "Move cells…: box2" in titles
        await pilot.press("m")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None,
            what="the move dialog",
            pilot=pilot,
        )
        assert screen.host.name == "box1"
        # Empty, it asks for the host with a verb: "to host: box2" read as filled in.
        to = screen.query_one("#move-to", Input)
        assert to.value == "" and to.placeholder == "type the host to move to (box2)"
        # A running cell first: refused, and Move stays disabled.
        await pilot.press(*"gate", "enter", *"box2", "enter")
        refused = await planned(pilot, screen, "REFUSED")
        assert "gate is running on box1 now" in refused
        assert screen.query_one("#move-go", Button).disabled

        cells = screen.query_one("#move-cells")
        cells.focus()
        await pilot.press(*["backspace"] * 4, "b", "enter", "enter")
        await planned(pilot, screen, "box1's box skips cell 1")
        go = screen.query_one("#move-go", Button)
        assert not go.disabled and app.focused is go
        # The whole caption is on screen (it was cut: "▶ Move (box1"); the hint line
        # names what the box will skip, however many cells.
        # (Waited for: a loaded machine lays the new caption out a refresh later.)
        await wait_for(lambda: f"▶ {go.caption} ◀" in screen_text(app), pilot=pilot)
        assert "Enter: move; box1 skips b" in screen_text(app)
        await pilot.press("enter")
        await wait_for(
            lambda: isinstance(app.screen, FleetScreen), what="the dialog to close", pilot=pilot
        )
        # The notification is posted as a message: wait for it, never read it at once.
        await wait_for(
            lambda: any("cells moved" in n and "box1's box skips b" in n for n in notes(app)),
            what="the moved notification",
            pilot=pilot,
        )
        # How b (never ran) gets run, in the TUI's keys, not the command line's (hour s34
        # TUI #10: "rgt-tui queue append box2 … else rgt-tui launch box2" in a toast).
        (said,) = [n for n in notes(app) if "cells moved" in n]
        assert "run them: a (Append) on box2 if a queue runs there, else L (Launch)" in said
        assert "rgt-tui " not in said, said
    assert qf.queue_file("box1").read_text() == f"{gate} t 1\n#moved-to box2: cells/b.sh t 1\n"
    assert qf.queue_file("box2").read_text().endswith("\ncells/b.sh t 1\n")
    assert "moved to box2" in qf.state("b")
    (qf.root("box1") / "go").touch()


async def test_a_plan_is_not_left_on_screen_under_what_was_typed_since(
    make_queue_fleet, tmp_path: Path
) -> None:
    """Hour s45a #8: the destination changed from box2 to box3 after a plan, the plan of
    box2 ("line 2 becomes '#moved-to box2: …'") and its "Move, 1 skipped" stayed."""
    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    await gate_running(qf, "cells/b.sh", ("box2", "box3"))
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_move(app, pilot)
        await pilot.press("b", "enter", *"box2", "enter")
        await planned(pilot, screen, "#moved-to box2")
        go = screen.query_one("#move-go", Button)
        await wait_for(lambda: not go.disabled, pilot=pilot)
        assert "box1 skips 1" in str(go.label), str(go.label)
        to = screen.query_one("#move-to", Input)
        to.focus()
        await pilot.press("backspace", "3")
        notes_now = await planned(pilot, screen, "changed since the plan")
        assert "box2" not in notes_now and go.disabled and str(go.label).strip() == "Move"
        await pilot.press("enter")  # planned again, for box3
        await planned(pilot, screen, "#moved-to box3")
        await pilot.press("escape")
    (qf.root("box1") / "go").touch()


async def test_a_move_refused_on_the_box_gives_the_focus_to_cancel(
    make_queue_fleet, tmp_path: Path
) -> None:
    """Hour s45a #8: after "Not moved: b is running on box1 now" no button had the focus
    (Move had it, disabled since) and the key line named no Enter."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    hold = 'while [ ! -e "$HOME/go_b" ]; do sleep 0.05; done'
    await gate_running(qf, qf.cell_script("b", hold), ("box2",))
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_move(app, pilot)
        await pilot.press("b", "enter", *"box2", "enter")
        await planned(pilot, screen, "#moved-to box2")
        go = screen.query_one("#move-go", Button)
        await wait_for(lambda: app.focused is go, pilot=pilot)
        (qf.root("box1") / "go").touch()  # the gate ends: b starts before the move
        await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="b to run")
        await pilot.press("enter")
        await planned(pilot, screen, "Not moved")
        cancel = screen.query_one("#move-cancel", Button)
        await wait_for(lambda: app.focused is cancel, pilot=pilot)
        await wait_for(lambda: "Enter: cancel" in screen_text(app), pilot=pilot)
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, QueueMoveScreen), pilot=pilot)
    assert "#moved-to" not in qf.queue_file("box1").read_text()
    (qf.root("box1") / "go_b").touch()


async def test_a_destination_removed_from_the_fleet_file_is_not_moved_to(
    make_queue_fleet, tmp_path: Path
) -> None:
    """h545 #1: box2 taken out of the fleet file while the plan was on screen; Move hung
    at "moving…" for good (its error swallowed by the worker), Esc refused. It says why
    and gives the focus to Cancel; nothing is moved."""
    from dataclasses import replace

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await gate_running(qf, qf.cell_script("b", "echo b"), ("box2",))
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_move(app, pilot)
        await pilot.press("b", "enter", *"box2", "enter")
        await planned(pilot, screen, "#moved-to box2")
        app.runtime.adopt(replace(qf.fleet, hosts=(qf.fleet.host("box1"),)))
        await wait_for(lambda: "box2" not in app.runtime.hosts, pilot=pilot)
        await pilot.press("enter")
        await planned(pilot, screen, "Not moved: box2 is no longer in the fleet file")
        cancel = screen.query_one("#move-cancel", Button)
        await wait_for(lambda: app.focused is cancel, pilot=pilot)
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, QueueMoveScreen), pilot=pilot)
    assert "#moved-to" not in qf.queue_file("box1").read_text()
    assert "b.sh" not in qf.queue_file("box2").read_text()
    (qf.root("box1") / "go").touch()


@pytest.mark.parametrize("between", ["enter", "tab"])
async def test_a_burst_of_cells_enter_host_lands_in_both_fields(
    tmp_path: Path, between: str
) -> None:
    """A name, Enter (or Tab) and a host typed in one burst (a paste, then a typed host;
    tmux send-keys) were all queued for the cells field before the key moved the cursor:
    the host landed there too (users' hours: ``box1_long_epochbox1``; with Tab, s21a #13
    and s21b #10: ``box2_dbox3``). The keys go to the app at once, as a terminal's burst
    does (pilot.press waits between keys)."""
    from support.samples import FLEET_TOML, write_fleet
    from textual import events
    from textual.widgets import Input

    fleet = write_fleet(tmp_path, FLEET_TOML)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(QueueMoveScreen(fleet, fleet.hosts[0], app.connections))
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None, pilot=pilot
        )
        await pilot.pause()
        burst = [*"ck_a", between, *"box2"]
        for key in burst:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        cells, to = screen.query_one("#move-cells", Input), screen.query_one("#move-to", Input)
        await wait_for(lambda: to.value == "box2", pilot=pilot)
        assert cells.value == "ck_a" and app.focused is to
        # Not left selected: the next key adds to the host (it replaced it: s22c #3).
        await pilot.press("x")
        assert to.value == "box2x"


async def test_escape_while_moving_waits_for_the_move_and_the_key_line_says_so(
    make_queue_fleet, tmp_path: Path, monkeypatch: Any
) -> None:
    """The move runs as the dialog's worker: Escape while it ran closed the dialog, and
    so cut the move short, while the key line said "Esc: cancel, nothing moved" (hour
    s21a #13). Escape now waits; the dialog closes when the move ends. The move is held
    at the box's queue lock by a stalled flock: a move that takes a while (a slow box)."""
    from support.machine import stalled_tool

    stall = stalled_tool("flock", tmp_path, monkeypatch)
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\ncells/b.sh t 1\n", "box1")
    qf.write_queue("cells/x.sh t 1\n", "box2")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None, pilot=pilot
        )
        await pilot.press(*"b", "enter", *"box2", "enter")
        await planned(pilot, screen, "box1's box skips cell 1")
        stall.touch()
        await pilot.press("enter")
        await wait_for(lambda: "moving… (it cannot be cut short" in screen_text(app), pilot=pilot)
        assert "nothing moved" not in screen_text(app)
        await pilot.press("escape")
        # Enter, again and again, starts nothing: a re-plan enabled Move, and a second
        # move cancelled the first halfway (hour s21b #1).
        await pilot.press("enter", "enter", "tab", "enter", "shift+tab", "enter")
        await pilot.pause()
        assert app.screen is screen and screen.moving  # still open: closing it would cancel
        stall.unlink()
        await wait_for(lambda: isinstance(app.screen, FleetScreen), what="the end", pilot=pilot)
    # One move, never a second: the cell is marked moved once and added to box2 once.
    assert qf.queue_file("box1").read_text() == f"{gate} t 1\n#moved-to box2: cells/b.sh t 1\n"
    assert qf.queue_file("box2").read_text().endswith("\ncells/b.sh t 1\n")
    assert qf.queue_file("box2").read_text().count("cells/b.sh t 1") == 1
    (qf.root("box1") / "go").touch()


async def test_moving_a_finished_cell_leaves_enter_on_cancel(
    make_queue_fleet, tmp_path: Path
) -> None:
    """Hour s34 TUI #7: a cell that finished (no verified results) is run again where it
    moves, paid work done twice; the dialog warned and still had Enter on Move, while a
    launch before done cells leaves it on Cancel."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('a', 'echo ok')} t 1\n", "box1")
    qf.write_queue("cells/x.sh t 1\n", "box2")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == DONE, what="cell a to finish")

    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None,
            what="the move dialog",
            pilot=pilot,
        )
        await pilot.press(*"a", "enter", *"box2", "enter")
        said = await planned(pilot, screen, "finished on box1 but has no verified results")
        assert "box2 runs it again" in said
        go = screen.query_one("#move-go", Button)
        assert not go.disabled  # a deliberate Shift+Tab still moves it
        await wait_for(lambda: app.focused is screen.query_one("#move-cancel", Button), pilot=pilot)


async def test_a_move_under_way_leaves_no_button_to_press_and_enter_starts_nothing(
    make_queue_fleet, tmp_path: Path, monkeypatch: Any
) -> None:
    """s38 spot hour #12: while a move ran, Cancel stayed focused and did nothing; Enter
    after Enter, and the last one, landing as the dialog closed, opened a host's screen
    from the grid. Every button is disabled while it runs (the box's queue lock is held
    here by a stalled flock, so the move waits where a slow box would)."""
    from support.machine import stalled_tool

    stall = stalled_tool("flock", tmp_path, monkeypatch)
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    gate = qf.cell_script("gate", GATE)
    qf.write_queue(f"{gate} t 1\ncells/b.sh t 1\n", "box1")
    qf.write_queue("cells/x.sh t 1\n", "box2")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")

    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None,
            what="the move dialog",
            pilot=pilot,
        )
        await pilot.press(*"b", "enter", *"box2", "enter")
        await planned(pilot, screen, "box1's box skips cell 1")
        stall.touch()
        await pilot.press("enter")  # Move
        await wait_for(lambda: screen.moving, what="the move to start", pilot=pilot)
        assert all(b.disabled for b in screen.query(Button)), [
            b.id for b in screen.query(Button) if not b.disabled
        ]
        assert "moving… (it cannot be cut short" in screen_text(app)
        await pilot.press("enter", "enter", "escape")  # nothing to press: nothing happens
        assert app.screen is screen and screen.moving
        stall.unlink()
        await wait_for(
            lambda: isinstance(app.screen, FleetScreen), what="the dialog to close", pilot=pilot
        )
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)  # no Enter left over opened a host


async def test_a_silent_box_s_move_opens_with_its_cut_short_cell_filled_in(tmp_path: Path) -> None:
    """s43 spot hour: `m` on a preempted box opened with the cells field empty, though the
    cell its last read saw running is the one to move. Filled in, the cursor after it,
    and the focus moves on to the host, what is left to type (h592 #4: `box2` typed at
    once went on the end of the cell's name); on a box that answers the field stays
    empty (a running cell there is refused) and keeps the focus."""
    from support.samples import FLEET_TOML, write_fleet
    from textual.widgets import Input

    from rgt_tui.domain.queue_state import DONE, RUNNING, CellView, QueueView

    fleet = write_fleet(tmp_path, FLEET_TOML)
    cells = (CellView(0, "ck_a", DONE, 0), CellView(1, "ck_b", RUNNING, None, 1000))
    view = QueueView(fleet.hosts[0].name, "running", cells, 1, "boot", 1300, None)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=SIZE) as pilot:
        for answering, filled in ((False, "ck_b"), (True, "")):
            app.push_screen(
                QueueMoveScreen(fleet, fleet.hosts[0], app.connections, view, answering=answering)
            )
            screen = await wait_for(
                lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None,
                pilot=pilot,
            )
            field = screen.query_one("#move-cells", Input)
            await wait_for(lambda f=field, v=filled: f.value == v, pilot=pilot)  # read in a thread
            to = screen.query_one("#move-to", Input)
            assert app.focused is (to if filled else field)
            await pilot.press("x")
            assert (field.value, to.value) == ((filled, "x") if filled else ("x", ""))
            field.focus()
            await pilot.press("y")
            assert field.value == (f"{filled}y" if filled else "xy")  # the cursor after it
            await pilot.press("escape")
            await wait_for(lambda: not isinstance(app.screen, QueueMoveScreen), pilot=pilot)


async def test_a_silent_box_s_cell_moved_already_is_not_filled_in_again(tmp_path: Path) -> None:
    """s43 spot hour #3: after the move, the box's last read still says ck_b runs, and
    `m` filled ck_b in again: the local queue file's #moved-to line says it left."""
    from support.samples import write_fleet
    from textual.widgets import Input

    from rgt_tui.domain.queue_state import INTERRUPTED, RUNNING, CellView, QueueView

    (tmp_path / "qa.txt").write_text("ck_a.yaml t\n#moved-to b: ck_b.yaml t\n")
    (tmp_path / "qb.txt").write_text("# moved from a on 2026-12-05\nck_b.yaml t\n")
    fleet = write_fleet(
        tmp_path,
        "".join(
            f'[[hosts]]\nname = "{n}"\nssh = "root@10.0.0.{i}"\nqueue = "q{n}.txt"\n'
            'run = "python train.py --config {cfg}"\n\n'
            for i, n in enumerate("ab", start=5)
        ),
    )
    cells = (CellView(0, "ck_a", INTERRUPTED, 0), CellView(1, "ck_b", RUNNING, None, 1000))
    view = QueueView("a", "running", cells, 1, "boot", 1300, None)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(
            QueueMoveScreen(fleet, fleet.host("a"), app.connections, view, answering=False)
        )
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None, pilot=pilot
        )
        field = screen.query_one("#move-cells", Input)
        await wait_for(lambda: field.value != "", pilot=pilot)
        assert field.value == "ck_a"  # the interrupted one still here; ck_b left


async def test_a_cell_named_with_a_space_is_moved_when_quoted(
    make_queue_fleet, tmp_path: Path
) -> None:
    """h585 #2: `my run` in the cells field read as cells `my` and `run`, and `'my run'`
    as `'my` and `run'`: a name the queue takes could be moved from the CLI only."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    qf.write_queue("'cells/my run.sh' t 1\ncells/b.sh t 1\n", "box1")
    qf.write_queue("cells/x.sh t 1\n", "box2")
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")
        screen = await wait_for(
            lambda: app.screen if isinstance(app.screen, QueueMoveScreen) else None,
            what="the move dialog",
            pilot=pilot,
        )
        # Apostrophes inside names are not quotes (review h586 #3: "bob's alice's" read
        # as one name).
        screen.query_one("#move-cells", Input).value = "bob's alice's"
        assert screen._typed()[0] == ["bob's", "alice's"]
        screen.query_one("#move-cells", Input).value = ""
        await pilot.press(*"'my run'", "enter", *"box2", "enter")
        await planned(pilot, screen, "my run")
        go = screen.query_one("#move-go", Button)
        assert not go.disabled and app.focused is go, screen_text(app)
        assert "no cell '" not in screen_text(app)  # a name not found
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
    assert "'cells/my run.sh' t 1" in qf.queue_file("box2").read_text()
    assert "my run" not in qf.queue_file("box1").read_text().replace("#moved", "")


async def test_quitting_while_a_move_runs_asks_first_and_names_it(
    make_queue_fleet, tmp_path: Path
) -> None:
    """h592 #3: Ctrl+C while the dialog said "moving…" quit at once, with nothing said,
    and left the lines moved and the destination's queue not launched. The quit question
    now names the move; Escape stays, and the move goes on to its end. (The move is held
    at its first step by the box's own queue lock, taken here.)"""
    import fcntl

    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await gate_running(qf, "cells/b.sh", ("box2",))
    app = make_app(tmp_path, fleet=qf.fleet)
    lock = (qf.root("box1") / ".rgt" / "queue.lock").open("a")
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_move(app, pilot)
            await pilot.press(*"b", "enter", *"box2", "enter")
            await planned(pilot, screen, "box1's box skips cell 1")
            fcntl.flock(lock, fcntl.LOCK_EX)  # the box's skip waits for it
            await pilot.press("enter")
            await wait_for(lambda: screen.moving, what="the move to start", pilot=pilot)
            await pilot.press("ctrl+c")
            asked = await wait_for(
                lambda: app.screen if isinstance(app.screen, QuitConfirmScreen) else None,
                what="the quit question",
                pilot=pilot,
            )
            said = screen_text(app)
            assert "box1: the move to box2 is cut off where it stands" in said, said
            # The move ends while the question is open (h595 #1: dismissed from under
            # it, the dialog popped the question, and the next Escape crashed the app).
            fcntl.flock(lock, fcntl.LOCK_UN)
            await wait_for(
                lambda: any("cells moved" in n for n in notes(app)),
                what="the move's end",
                pilot=pilot,
            )
            assert app.screen is asked  # the question stays until answered
            await pilot.press("escape")  # stay
            await wait_for(
                lambda: isinstance(app.screen, FleetScreen),
                what="the finished move's dialog to close",
                pilot=pilot,
            )
            assert app.is_running and app.return_code is None
    finally:
        lock.close()
        (qf.root("box1") / "go").touch()
    assert qf.queue_file("box2").read_text().endswith("\ncells/b.sh t 1\n")
