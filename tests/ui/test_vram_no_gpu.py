"""VRAM reclaim on a box with no GPU, and the PID dialog's key line (ux-d D13).

A loopback box has no nvidia-smi and no /dev/nvidia* (no GPU exists where the tests
run): `x` on the GPU tab says there is nothing to kill instead of opening a PID dialog
(tests/e2e/test_vram_no_gpu_cli.py: the CLI twin). The dialog's key line always says
what Enter does."""

from __future__ import annotations

import time
from typing import Any

from support.pilot import SIZE, make_app, shown_notifications, text_of, wait_for
from textual.app import App
from textual.widgets import Input

from rgt_tui.screens.dialog import KeyHint
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.gpus import GpusTab
from rgt_tui.screens.vram_kill import VramKillScreen
from rgt_tui.services.box.vram import parse_evidence

NO_GPU = "box1 has no NVIDIA GPU: nvidia-smi is not on the box's PATH"


async def test_x_on_a_box_without_a_gpu_says_there_is_nothing_to_kill(
    make_loopback_fleet, tmp_path
) -> None:
    fleet = await make_loopback_fleet(1)
    from rgt_tui.services.fleet.file import load_fleet

    app = make_app(
        tmp_path, fleet=load_fleet(fleet.hosts_file), start_monitors=True, clock=time.time
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        detail: Any = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        await pilot.press("2")
        await wait_for(lambda: detail.active_tab == "gpus", pilot=pilot, what="the GPU tab")
        assert isinstance(detail.tabs["gpus"], GpusTab)
        await pilot.press("x")

        def said() -> bool:
            return any(
                f"{NO_GPU}: there is nothing to kill" in str(n.message)
                for n in shown_notifications(app)
            )

        await wait_for(said, 30, pilot=pilot, what="nothing to kill")
        assert app.screen is detail and not isinstance(app.screen, VramKillScreen)


async def test_x_and_g_from_the_overview_are_not_silent(make_loopback_fleet, tmp_path) -> None:
    """h542 #9: the help lists x (GPU tab) and g (a group's ranks); on the Overview of a
    host of its own both did nothing and said nothing. x goes to the GPU tab and does
    what it does there; g says why there is nothing to pick."""
    fleet = await make_loopback_fleet(1)
    from rgt_tui.services.fleet.file import load_fleet

    app = make_app(
        tmp_path, fleet=load_fleet(fleet.hosts_file), start_monitors=True, clock=time.time
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        detail: Any = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        assert detail.active_tab == "overview"
        await pilot.press("g")
        await wait_for(
            lambda: any(
                "g picks a rank of a group ([[groups]]): box1 is a host of its own"
                in str(n.message)
                for n in shown_notifications(app)
            ),
            pilot=pilot,
        )
        await pilot.press("x")
        await wait_for(lambda: detail.active_tab == "gpus", pilot=pilot, what="the GPU tab")
        await wait_for(
            lambda: any(NO_GPU in str(n.message) for n in shown_notifications(app)),
            30,
            pilot=pilot,
            what="nothing to kill",
        )


EVIDENCE = "\n".join(
    [
        "smi\tok\t",
        "gpu\t0\tGPU-0\t19818\t0",
        "walk\tok\t",
        "holder\t4242\t/dev/nvidia0",
        "proc\t4242\t1\tS\t0\t600\t-\tpython\tpython stuck.py",
    ]
)


class DialogApp(App[None]):
    def on_mount(self) -> None:
        self.push_screen(VramKillScreen(parse_evidence("box1", EVIDENCE)))


async def test_the_pid_dialogs_key_line_says_what_enter_does() -> None:
    app = DialogApp()
    async with app.run_test(size=(120, 40)) as pilot:
        hint = app.screen.query_one("#vram-hint", KeyHint)
        assert app.screen.focused is app.screen.query_one("#vram-pid", Input)
        assert text_of(hint).startswith("Enter: nothing until a listed holder's PID is typed")
        await pilot.press(*"4242")
        await wait_for(lambda: text_of(hint).startswith("Enter: kill it"), pilot=pilot)
        await pilot.press("tab", "tab")  # Kill, then Cancel
        await wait_for(lambda: text_of(hint).startswith("Enter: cancel"), pilot=pilot)
        assert "Esc: cancel, nothing killed" in text_of(hint)
