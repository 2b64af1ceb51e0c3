"""The GPU tab's VRAM holders and ``x``'s kill dialog (Pilot, the real App).

A loopback box whose recorded H100 keeps its memory in use while a real process holds
files named like /dev/nvidia* open (support.vram_box); the real monitor samples it, the
GPU tab reads the evidence, and the PID typed into the dialog is killed on the box. The
dialog alone is also checked on evidence that holds every refusal."""

from __future__ import annotations

import time
from typing import Any

import pytest
from support.pilot import SIZE, make_app, palette_titles, screen_text, text_of, wait_for
from support.vram_box import HeldDevices, vram_smi
from textual.app import App
from textual.widgets import Button, Input, Static

from rgt_tui.screens.dialog import KeyHint
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.gpus import GpusTab
from rgt_tui.screens.vram_kill import VramKillScreen
from rgt_tui.services.box.vram import parse_evidence

UUID = "GPU-00000000-0000-0000-0000-000000000000"
EVIDENCE = "\n".join(
    [
        "smi\tok\t",
        f"gpu\t0\t{UUID}\t19818\t0",
        f"app\t{UUID}\t11345\t15690",
        "walk\tok\t",
        "holder\t4242\t/dev/nvidia0",
        "holder\t4343\t/dev/nvidia0",
        "proc\t4242\t1\tS\t0\t600\t-\tpython\tpython stuck.py",
        "proc\t4343\t1\tR\t0\t60\ttrain-a\tpython\tpython train.py",
        "proc\t11345\t0\t-\t-\t-\t-\t-\t-",
    ]
)


# The demo's case: nvidia-smi lists PIDs of another namespace and no process of this
# container holds a /dev/nvidia* file, so no row can be killed here.
NONE_HERE = "\n".join(
    [
        "smi\tok\t",
        f"gpu\t0\t{UUID}\t19818\t0",
        f"app\t{UUID}\t11327\t2566",
        f"app\t{UUID}\t11345\t15690",
        "walk\tok\t",
        "proc\t11327\t0\t-\t-\t-\t-\t-\t-",
        "proc\t11345\t0\t-\t-\t-\t-\t-\t-",
    ]
)


class DialogApp(App[None]):
    def __init__(self, evidence: str = EVIDENCE) -> None:
        super().__init__()
        self.evidence = evidence
        self.result: list[int | None] = []

    def on_mount(self) -> None:
        evidence = parse_evidence("box1", self.evidence)
        self.push_screen(VramKillScreen(evidence), self.result.append)


def why(app: App[Any]) -> str:
    return str(app.screen.query_one("#vram-why", Static).render())


async def test_the_dialog_kills_only_a_typed_listed_holder() -> None:
    app = DialogApp()
    async with app.run_test(size=(120, 40)) as pilot:
        kill = app.screen.query_one("#vram-kill", Button)
        assert kill.disabled and app.screen.focused is app.screen.query_one("#vram-pid", Input)
        text = screen_text(app)
        assert "the container's PID namespace hides them" in text and "stuck.py" in text

        for typed, said in [
            ("999", "not in the VRAM evidence"),
            ("4343", "queue kill box1"),  # a running cell's: the queue's own kill
            ("11345", "not in this PID namespace"),  # nvidia-smi's, another namespace
        ]:
            app.screen.query_one("#vram-pid", Input).value = ""
            await pilot.press(*typed)
            await wait_for(lambda said=said: said in why(app), pilot=pilot, what=said)
            assert kill.disabled
            await pilot.press("enter")  # refused: Enter does nothing
            assert app.result == [] and isinstance(app.screen, VramKillScreen)

        app.screen.query_one("#vram-pid", Input).value = ""
        await pilot.press(*"4242")
        await wait_for(lambda: not kill.disabled, pilot=pilot, what="Kill enabled")
        await pilot.press("enter")
        await wait_for(lambda: app.result == [4242], pilot=pilot, what="dismissed with the pid")


async def test_with_no_holder_here_the_dialog_says_nothing_can_be_killed_and_why() -> None:
    app = DialogApp(NONE_HERE)
    async with app.run_test(size=(120, 40)) as pilot:
        text = text_of(app.screen.query_one("#vram-body", Static))
        assert "cannot be killed here" in text  # each row says so…
        # …and the heading agrees instead of calling them this container's own processes.
        assert "holders below are this container's own processes" not in text
        assert "so nothing can be killed from here" in text
        assert "restart the container or the box to free the VRAM" in text
        hint = app.screen.query_one("#vram-hint", KeyHint)
        assert text_of(hint).startswith("Enter: nothing until a listed holder's PID is typed")
        await pilot.press(*"11345")
        await wait_for(lambda: "not in this PID namespace" in why(app), pilot=pilot)
        await wait_for(
            lambda: text_of(hint).startswith(
                "Enter: nothing: pid 11345 is listed but cannot be killed here"
            ),
            pilot=pilot,
            what="why Enter does nothing",
        )
        await pilot.press("enter")
        assert app.result == [] and isinstance(app.screen, VramKillScreen)


@pytest.fixture
def held(tmp_path):
    holder = HeldDevices(tmp_path / "dev")
    yield holder
    holder.stop()


async def test_x_on_the_gpu_tab_kills_the_typed_holder_on_the_box(
    make_queue_fleet, tmp_path, held
) -> None:
    qf = await make_queue_fleet(1)
    box = qf.loopback.box("box1")
    box.extra_path.append(vram_smi(tmp_path / "smi", held.pid).parent)
    box.extra_env["RGT_NVIDIA_DEV_PREFIX"] = held.prefix
    app = make_app(tmp_path, fleet=qf.fleet, start_monitors=True, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        detail: Any = await wait_for(
            lambda: isinstance(app.screen, HostDetailScreen) and app.screen, pilot=pilot
        )
        # Not the GPU tab: x goes there and asks as on it (h542 #9: it did nothing).
        await pilot.press("x")
        await wait_for(lambda: isinstance(app.screen, VramKillScreen), 30, pilot=pilot)
        assert detail.active_tab == "gpus"
        await pilot.press("escape")
        await wait_for(lambda: app.screen is detail, pilot=pilot)
        await pilot.press("2")
        await wait_for(lambda: detail.active_tab == "gpus", pilot=pilot, what="the GPU tab")
        tab = detail.tabs["gpus"]
        assert isinstance(tab, GpusTab)
        # The real agent samples the stand-in GPU: idle, its memory held: the tab reads who.
        await wait_for(
            lambda: "VRAM held with no work" in screen_text(app) and tab.evidence is not None,
            60,
            pilot=pilot,
            what="the VRAM holders",
        )
        assert str(held.pid) in screen_text(app)
        await pilot.press("x")
        dialog = await wait_for(
            lambda: isinstance(app.screen, VramKillScreen) and app.screen, 30, pilot=pilot
        )
        await pilot.press(*str(held.pid))
        await wait_for(
            lambda: not dialog.query_one("#vram-kill", Button).disabled, pilot=pilot, what="Kill"
        )
        await pilot.press("enter")
        await wait_for(held.ended, 30, pilot=pilot, what="the holder killed")
        await wait_for(
            lambda: f"pid {held.pid} ended after SIGTERM" in tab.note,
            30,
            pilot=pilot,
            what="the outcome",
        )


async def test_the_palette_offers_reclaim_vram_per_host(tmp_path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE):
        titles = await palette_titles(app)
        assert {t for t in titles if t.startswith("Reclaim VRAM: ")} == {
            f"Reclaim VRAM: {h.name}" for h in app.fleet.hosts
        }


async def test_at_80x24_the_pid_box_buttons_and_key_line_stay_on_screen() -> None:
    """The evidence scrolls between the title and the PID box (a user's hour found the
    buttons and the key line cut off at 80x24 and at 120x40 on a busy box)."""
    app = DialogApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen

        def whole_on_screen(ident: str) -> bool:
            region = screen.query_one(ident).region
            return region.height > 0 and region.y >= 0 and region.bottom <= 24

        await wait_for(
            lambda: all(map(whole_on_screen, ("#vram-pid", "#vram-kill", "#vram-hint"))),
            pilot=pilot,
            what="the PID box, the buttons and the key line on screen",
        )
        hint = str(screen.query_one("#vram-hint", KeyHint).render())
        assert "↑↓ PgUp PgDn: scroll" in hint, hint  # the evidence holds more than it shows
        body = screen.query_one("#vram-evidence")
        await pilot.press("pagedown")  # scrolls the evidence, the PID box keeps the cursor
        await wait_for(lambda: body.scroll_y > 0, pilot=pilot, what="the evidence scrolled")
        assert screen.focused is screen.query_one("#vram-pid", Input)
        # A refused PID's longer key line: still whole, with its Esc (it was cut at "· Tab:").
        await pilot.press(*"4343")
        await wait_for(
            lambda: (
                "is listed but cannot be killed"
                in str(screen.query_one("#vram-hint", KeyHint).render())
            ),
            pilot=pilot,
        )
        await wait_for(
            lambda: whole_on_screen("#vram-hint") and whole_on_screen("#vram-kill"), pilot=pilot
        )
        assert "Esc: cancel, nothing killed" in " ".join(screen_text(app).split())
        screen.query_one("#vram-pid", Input).value = ""
        await pilot.press(*"4242", "enter")
        assert app.result == [4242]
