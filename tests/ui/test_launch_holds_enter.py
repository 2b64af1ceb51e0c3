"""A dialog never answers Enter with what the user did not choose (issue 43 follow-up):
once Launch is pressed, the launch runs in a worker; Enter meanwhile closes nothing
(Textual hands the disabled Launch's focus to Cancel), nor does Escape, whose "nothing
launched" would be false by then, and the line says "launching…".
The launch is held on the box by a stand-in ``tmux`` (first on the box's PATH) that
runs the real one only once the test opens its gate."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.pilot import make_app, screen_text, wait_for
from support.queues import SCRIPT_RUN, wait_view
from textual.widgets import Button

from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen


def _gated_tmux(folder: Path, gate: Path) -> Path:
    real = shutil.which("tmux")
    assert real, "tmux is needed on this machine"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "tmux"
    script.write_text(
        f"#!/bin/sh\nwhile [ ! -e '{gate}' ]; do sleep 0.05; done\nexec '{real}' \"$@\"\n"
    )
    script.chmod(0o755)
    return folder


async def test_enter_while_launching_closes_nothing_and_says_launching(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.set_preflight_ack(("torch", "driver", "gpu", "gpu-busy", "arch"))  # no GPU on this machine
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    gate = tmp_path / "tmux-go"
    gate.touch()
    qf.loopback.box("box1").extra_path.append(_gated_tmux(tmp_path / "bin", gate))
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("L")
        modal = await wait_for(
            lambda: (
                isinstance(m := app.screen, LaunchConfirmScreen)
                and m.plan is not None
                and not m.replanning
                and m
            ),
            what="the launch plan",
            pilot=pilot,
        )
        go = modal.query_one("#launch-go", Button)
        assert modal.plan.ok and app.focused is go, modal.plan.problems

        gate.unlink()  # the launch's tmux waits on the box until the test says so
        await pilot.press("enter")  # Launch
        await wait_for(lambda: go.disabled, what="Launch pressed", pilot=pilot)
        await pilot.press("enter")  # again, while the launch runs
        await pilot.pause()
        assert app.screen is modal, "Enter closed the dialog while the launch ran"
        text = screen_text(app)
        assert "launching…" in text and "Enter: cancel" not in text and "▶ Cancel ◀" not in text
        assert "nothing launched" not in text  # Esc can no longer undo it
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is modal

        gate.touch()
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
    await wait_view(qf, lambda v: v.count("done") == 1, what="the launch")


async def test_enter_before_the_plan_is_painted_launches_nothing(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """h571 #6: under load the plan came into its widgets a second before it was painted,
    and an Enter pressed then launched a plan the user never saw. Enter's action on
    Launch runs right after the plan's message is read, in the same turn of the loop, so
    before any paint (a key sent through the app would race the paint, and the test with
    it): it does nothing. After the paint, Enter launches."""
    from textual.message import Message

    from rgt_tui.screens.dialog import DialogButton

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.set_preflight_ack(("torch", "driver", "gpu", "gpu-busy", "arch"))  # no GPU on this machine
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    app = make_app(tmp_path, fleet=qf.fleet)
    pressed: list[bool] = []

    def early_enter() -> None:  # runs once _planned returns, before the screen paints
        go = app.screen.query_one("#launch-go", DialogButton)
        pressed.append(app.focused is go)
        go.action_press()  # what Enter on it does

    def hook(message: Message) -> None:
        if isinstance(message, LaunchConfirmScreen.Planned) and not pressed:
            app.screen.call_next(early_enter)

    async with app.run_test(size=(80, 24), message_hook=hook) as pilot:
        await pilot.press("L")
        modal = await wait_for(
            lambda: isinstance(m := app.screen, LaunchConfirmScreen) and pressed and m,
            what="the launch plan",
            pilot=pilot,
        )
        await pilot.pause()
        await pilot.pause()
        go = modal.query_one("#launch-go", Button)
        assert pressed == [True], "Launch did not have the focus as the plan came"
        assert app.screen is modal and not modal.launching, "an unseen plan was launched"
        assert modal.plan is not None and modal.plan.ok and not go.disabled
        assert "Enter: launch" in screen_text(app)  # painted: Enter answers it now
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), what="the launch", pilot=pilot)
    await wait_view(qf, lambda v: v.count("done") == 1, what="the launch")


async def test_a_launch_that_ends_under_the_quit_question_closes_once_answered(
    make_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """h595 #2: Ctrl+C while launching asks first (it names the launch); the launch then
    ended under the question, which vanished, and the dialog stayed at "launching…" for
    good, Escape refused, the next quit question naming a launch long done."""
    from support.pilot import notes

    from rgt_tui.screens.quit_confirm import QuitConfirmScreen

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.set_preflight_ack(("torch", "driver", "gpu", "gpu-busy", "arch"))  # no GPU on this machine
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    gate = tmp_path / "tmux-go"
    gate.touch()
    qf.loopback.box("box1").extra_path.append(_gated_tmux(tmp_path / "bin", gate))
    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("L")
        modal = await wait_for(
            lambda: (
                isinstance(m := app.screen, LaunchConfirmScreen)
                and m.plan is not None
                and not m.replanning
                and m
            ),
            what="the launch plan",
            pilot=pilot,
        )
        gate.unlink()
        await pilot.press("enter")  # Launch
        await wait_for(lambda: modal.launching, what="Launch pressed", pilot=pilot)
        await pilot.press("ctrl+c")
        asked = await wait_for(
            lambda: app.screen if isinstance(app.screen, QuitConfirmScreen) else None,
            what="the quit question",
            pilot=pilot,
        )
        assert "box1: the launch is cut off where it stands" in screen_text(app)
        gate.touch()  # the launch ends while the question is open
        await wait_for(
            lambda: any("queue launched" in n for n in notes(app)),
            what="the launch's end",
            pilot=pilot,
        )
        assert app.screen is asked and modal.cut_by_quit() is None
        await pilot.press("escape")  # stay
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        assert app.is_running and app.return_code is None
    await wait_view(qf, lambda v: v.count("done") == 1, what="the launch")
