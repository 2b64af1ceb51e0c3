"""No box string drives the terminal or is read as markup, on any TUI surface (issue 39).

Every surface that shows box text (the fleet pane, the Queue tab and its dialogs, the Logs
tab and its source picker, the Pulls and Teardown tabs, the diagnosis, the launch plan,
toasts) is fed one hostile string: OSC 52 (writes the clipboard), CSI 2J (clears the
screen), an OSC 8 hyperlink, a BEL, a lone ESC, a C1 CSI in UTF-8, and markup-looking
text. The domain objects are built here directly, past the parsers (which clean too), so
this tests the UI's own fence. The screen, as Textual composes it, must hold the markup
characters as text, no control character, and no link or click action from the box.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.pilot import SIZE, make_app, publish_jobs, screen_text, wait_for
from support.samples import FLEET_TOML, FROZEN, healthy_update, write_fleet

from rgt_tui.app import RgtApp
from rgt_tui.domain.health import Alert
from rgt_tui.domain.logscan import LogChunk, LogLine, LogPosition
from rgt_tui.domain.queue_records import DeployedCell, parse_cell_state, parse_runner_state
from rgt_tui.domain.queue_state import QueueView, derive_view
from rgt_tui.domain.vanished import Diagnosis, Evidence
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.diagnosis import DiagnosisScreen
from rgt_tui.screens.dialog import ConfirmScreen
from rgt_tui.screens.queue_control import control_question
from rgt_tui.screens.tabs.logs import QUEUE_SOURCE, LogsTab
from rgt_tui.screens.tabs.queue import QueueTab
from rgt_tui.services.telemetry import ConnectionState

pytestmark = pytest.mark.usefixtures("utc")

HOST = "a100-train"
BOOT = "11111111-aaaa-bbbb-cccc-000000000001"
# Markup first (a cut line still shows it), then every kind of escape.
MARKUP = "[link=https://evil]x[/link][bold red]boom[@click=app.quit]q[/]"
ESCAPES = (
    "\x1b]52;c;cm0gLXJmIH4=\x1b\\"  # OSC 52: the clipboard becomes 'rm -rf ~'
    "\x1b[2J"  # CSI 2J: clear the screen
    "\x1b]8;;https://evil\x1b\\L\x1b]8;;\x1b\\"  # OSC 8: a hyperlink
    "\x07"  # BEL
    "\x1b"  # a lone ESC
    "\u009b2J"  # C1 CSI, in UTF-8
)
HOSTILE = MARKUP + ESCAPES
SEEN = "[link=https://evil]x"  # how the start of it must read on screen
CONTROL = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))} - {"\n"}


def hostile_view(now: int = 1100) -> QueueView:
    """A queue whose one cell, failed, is named HOSTILE and printed HOSTILE last."""
    deployed = (DeployedCell(0, HOSTILE, "x"),)
    launches = parse_runner_state(f"launch 1000 {BOOT} tmux 0 /s.sh 42\ndone 1002 0 1\n")
    attempts = {HOSTILE: parse_cell_state(f"start 1000 {BOOT} 9\nend 1001 1\n")}
    return derive_view(
        HOST, deployed, launches, attempts, boot_id=BOOT, now=now, runner_alive=False,
        reasons={HOSTILE: HOSTILE},
    )  # fmt: skip


def check_screen(app: RgtApp) -> str:
    """The screen's text, after checking every segment Textual composed: no control
    character, no hyperlink, no click action the box wrote."""
    for strip in app.screen._compositor.render_strips():  # as pilot.screen_text reads it
        for text, style, _ in strip:
            bad = set(text) & CONTROL
            assert not bad, f"control characters {bad!r} reach the terminal in {text!r}"
            if style is None:
                continue
            assert not style.link, f"a link from the box: {style.link!r} on {text!r}"
            click = style.meta.get("@click") if style.meta else None
            assert not click or "quit" not in str(click), f"a click action {click!r} on {text!r}"
    return screen_text(app)


# -- the surfaces: each feeds the hostile string in and says what shows it ---------------


async def pane(app: RgtApp, pilot: Any) -> None:
    """The fleet pane: an alert, the connection error and its fix, the queue's failure."""
    conn = ConnectionState("lost", FROZEN - 600, error=HOSTILE, fix=HOSTILE)
    alert = Alert("hostile", "warning", HOSTILE, "U7")
    app.post_message(HostUpdated(replace(healthy_update(), connection=conn, alerts=(alert,))))
    await wait_for(lambda: HOST in app.latest, pilot=pilot)
    from rgt_tui.screens.queue_keys import QueueViewed

    app.post_message(QueueViewed(HOST, hostile_view()))


async def queue_tab(app: RgtApp, pilot: Any) -> None:
    """The Queue tab's cell lines."""
    app.open_host(HOST, tab="queue")
    await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
    tab = app.screen.query_one(QueueTab)
    await wait_for(lambda: tab.query(".queue-body"), pilot=pilot)
    tab.show_queue(hostile_view())


async def kill_dialog(app: RgtApp, pilot: Any) -> None:
    """The kill dialog (its title and body name the cell)."""
    view = hostile_view()
    cell = view.cells[0]
    app.push_screen(
        ConfirmScreen(
            control_question(f"Kill cell {cell.name} now?", []), [("next", "Kill", "kill", "error")]
        )
    )


async def logs_tab(app: RgtApp, pilot: Any) -> None:
    """The Logs tab: a log line, the follower's status, the cell picker's options."""
    app.open_host(HOST, tab="logs")
    await wait_for(lambda: app.screen.query(LogsTab), pilot=pilot)
    tab = app.screen.query_one(LogsTab)
    await wait_for(lambda: tab.following, pilot=pilot)
    chunk = LogChunk((LogLine(HOSTILE),), LogPosition(), partial=HOSTILE, error=HOSTILE)
    tab.post_message(LogsTab.Chunk(QUEUE_SOURCE, chunk))
    # Without its '/': such a name is no log file, and is not offered (test below).
    tab.post_message(LogsTab.Cells((HOSTILE.replace("/", "_"),)))
    await wait_for(lambda: HOSTILE.replace("/", "_") in tab._cells, pilot=pilot)
    tab.query_one("#logs-source").focus()
    await pilot.press("enter")  # the picker opens: every option is on screen


async def pulls_tab(app: RgtApp, pilot: Any) -> None:
    """The Pulls tab: a pull that failed with the box's words."""
    app.open_host(HOST, tab="pulls")
    await pilot.pause()
    publish_jobs(app, HOST, pull_error=(HOSTILE, HOSTILE))


async def teardown_tab(app: RgtApp, pilot: Any) -> None:
    """The Teardown tab: a gate that could not be checked, and a refusal."""
    app.open_host(HOST, tab="teardown")
    await pilot.pause()
    publish_jobs(app, HOST, gate_error=HOSTILE, refusal=HOSTILE)


async def diagnosis(app: RgtApp, pilot: Any) -> None:
    """The diagnosis: its summary, subject, evidence and next step."""
    host = app.fleet.host(HOST)
    screen = DiagnosisScreen(host, app.connections)
    app.push_screen(screen)
    await pilot.pause()
    diag = Diagnosis(
        HOST, HOSTILE, "oom", HOSTILE, (Evidence("oom", "yes", HOSTILE),), next_step=HOSTILE
    )
    screen.post_message(DiagnosisScreen.Diagnosed((hostile_view(), diag)))


async def toast(app: RgtApp, pilot: Any) -> None:
    """A toast quoting the box (an error, a watch event's body): the one notice path."""
    app.notify(f"{HOSTILE}\nsecond line {HOSTILE}", title=HOST, timeout=60)


SURFACES: dict[str, Callable[[RgtApp, Any], Awaitable[None]]] = {
    "pane": pane,
    "queue tab": queue_tab,
    "kill dialog": kill_dialog,
    "logs tab": logs_tab,
    "pulls tab": pulls_tab,
    "teardown tab": teardown_tab,
    "diagnosis": diagnosis,
    "toast": toast,
}


@pytest.mark.parametrize("surface", SURFACES)
async def test_box_text_shows_as_text(tmp_path: Path, surface: str) -> None:
    # a100-train with a queue: its Queue tab shows the queue (not "has no queue").
    fleet_text = FLEET_TOML.replace(
        "cost_per_hour = 1.89\n", 'cost_per_hour = 1.89\nqueue = "q.txt"\nrun = "echo"\n', 1
    )
    app = make_app(tmp_path, fleet=write_fleet(tmp_path, fleet_text))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        app.clear_notifications()  # the danger clocks' toasts: not about this
        await SURFACES[surface](app, pilot)
        # The Logs tab's open picker covers its log; its option is the name without '/'
        # (a name with one is no log file, and is not offered).
        seen = SEEN.replace("/", "_") if surface == "logs tab" else SEEN
        await wait_for(lambda: seen in screen_text(app), pilot=pilot)
        await pilot.pause()
        text = check_screen(app)
    assert seen in text
    # The escapes read as what they are, never act. (Only the visible ESC is looked for: a
    # long hostile name wraps, or scrolls sideways in the log view, wherever the render
    # happened to be when the screen was read — "\\x1b]" and "52" can sit on two lines.)
    assert "\\x1b" in text, text


# -- the Logs tab keeps a log's colours, and only them --------------------------------

# A training log's red word, then the escapes that must not act: OSC 52, an OSC 8 link
# around "LINKED", CSI 2J, a bell, a C1 CSI, a Unicode line separator (a forged line).
COLOURED = (
    "\x1b[31mREDWORD\x1b[0m plain "
    "\x1b]52;c;cm0gLXJmIH4=\x1b\\\x1b]8;;https://evil\x1b\\LINKED\x1b]8;;\x1b\\"
    "\x1b[2J\x07\u009b2Jend\u2028forged"
)


def segments_of(app: RgtApp, word: str) -> list[Any]:
    """The styles of the screen's segments that hold ``word``."""
    return [
        style
        for strip in app.screen._compositor.render_strips()
        for text, style, _ in strip
        if word in text
    ]


async def test_the_logs_tab_shows_a_logs_colours_as_styles_and_drops_every_other_escape(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        app.open_host(HOST, tab="logs")
        await wait_for(lambda: app.screen.query(LogsTab), pilot=pilot)
        tab = app.screen.query_one(LogsTab)
        await wait_for(lambda: tab.following, pilot=pilot)
        partial = "\x1b[32mPARTIAL\x1b]52;c;eA==\x07\x1b[2Jgoes on"
        chunk = LogChunk((LogLine(COLOURED),), LogPosition(), partial=partial)
        tab.post_message(LogsTab.Chunk(QUEUE_SOURCE, chunk))
        await wait_for(lambda: "REDWORD" in screen_text(app), pilot=pilot)
        await wait_for(lambda: "PARTIALgoes on" in screen_text(app), pilot=pilot)
        text = check_screen(app)  # no control character, no link, no click on any segment
        [red] = segments_of(app, "REDWORD")
        [plain] = segments_of(app, " plain ")
        linked = segments_of(app, "LINKED")
    # The colour is a style: red, and not the plain text's colour.
    assert red.color is not None and red.color != plain.color
    r, g, b = red.color.get_truecolor()
    assert r > 2 * max(g, b), red.color
    assert linked and not any(s.link for s in linked)
    assert tab.lines == ["REDWORD plain LINKEDend\\u2028forged"]
    # The escapes are gone, not shown: not a visible ESC, not the clipboard's payload.
    for gone in ("\\x1b", "52;c;", "cm0gLXJmIH4=", "[31m", "[2J", "https://evil"):
        assert gone not in text, gone
    assert "PARTIALgoes on" in text


async def test_a_box_cell_named_with_a_slash_is_not_offered_and_cannot_end_the_app(
    tmp_path: Path,
) -> None:
    """A review (s38): a box's cells.tsv named a cell 'a/b' (and 'dup' twice); picking it
    in the Logs tab's picker raised ValueError and ended the app. Only names that can be a
    log file are offered, once; one asked for from elsewhere is said, not followed."""
    from textual.widgets import Select

    app = make_app(tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        app.open_host(HOST, tab="logs")
        await wait_for(lambda: app.screen.query(LogsTab), pilot=pilot)
        tab = app.screen.query_one(LogsTab)
        await wait_for(lambda: tab.following, pilot=pilot)
        tab.post_message(LogsTab.Cells(("a/b", "..", "dup", "dup", "ok")))
        await wait_for(lambda: "ok" in tab._cells, pilot=pilot)
        select = tab.query_one("#logs-source", Select)
        offered = [value for _, value in select._options]
        assert offered == [QUEUE_SOURCE, "dup", "ok"], offered
        tab.choose("a/b")  # as a Queue tab row would ask for it
        await wait_for(lambda: "has no log file of its own" in screen_text(app), pilot=pilot)
        assert app.is_running and app.screen.query(LogsTab)
        # The next poll's list, while 'a/b' is the source: the picker falls back to the
        # queue log, never to a value it does not hold (the review of s38: Select raised).
        tab.post_message(LogsTab.Cells(("a/b", "dup", "ok", "new")))
        await wait_for(lambda: "new" in tab._cells, pilot=pilot)
        await pilot.pause()
        assert app.is_running and select.value == QUEUE_SOURCE
