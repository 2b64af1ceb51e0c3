"""Logs tab: follow the host's queue log (default) or one cell's own log.

A ``LogFollower`` runs in a worker while the tab is on screen; it stops when the tab or
its screen is hidden and restarts when the source changes. A log is opened at its tail
(``TAIL``: its last lines, reading back at most 1 MiB), never from its first byte: a
two-day log is tens of megabytes, and a returning user came for its end. The view says
so above the first line, with the command that prints the whole log. The follower reads
no further ahead than the tab has drawn (one chunk in flight), so a log written faster
than the screen draws costs no memory. The last lines drawn of each log are kept for
the next tab on it (``logs_recall``): reopened while the box is down, the tab shows them
and says why it cannot read on ("reconnecting: <why>"), then follows on from there.
Crash lines are highlighted in a cell's own log only: the queue log concatenates cells,
so a crash there would be pinned on the wrong one. A log's SGR colours show as styles;
every other escape it carries is dropped (``log_text``).

A group (issue 41) has a second picker, its ranks: each rank writes its logs on its own
box under the same names, so the tab follows the chosen rank's box (rank 0 by default)
over that box's own connection.

Past 450 lines on purpose: the follower, its drawing and its pickers share the tab's
state (the key followed, the chunk held under a dialog, the recall); its words are
content/log_text.py's.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from functools import partial
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widgets import RichLog, Select, Static
from textual.worker import Worker

from rgt_tui.content.box_text import shown
from rgt_tui.content.log_text import follow_status, log_text, partial_text, unstarted_notes
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.logscan import LogChunk, LogPosition
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.screens.tabs.base import DetailTab, HostView, TabbedScreen
from rgt_tui.screens.tabs.logs_recall import RECALL_LINES, Kind, LogRecall, Recalled
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.logs import Tail
from rgt_tui.services.logs.paths import is_cell_name
from rgt_tui.services.telemetry import ConnectionState
from rgt_tui.widgets.host_pane import screen_in_view, screen_on_top

MAX_LINES = 5000
# What the tab keeps of one line (its follower cuts longer lines, saying how much was
# dropped). The follower's own default, 1 MiB, would let 5,000 lines hold 5 GiB; a line
# that long is not read on a screen anyway. So the tab holds at most 5,000 x 4 KiB =
# 20 MiB of text; `rgt-tui logs` prints lines up to 1 MiB.
MAX_LINE_BYTES = 4096
# Where a log opens: its last 2,500 lines, reading back at most 1 MiB (fewer lines when
# they are longer): a few round trips to a far box, however long the log. Half the view,
# so the line saying so stays in it a while. The same rule when the tab comes back to a
# log that grew by more than that meanwhile.
TAIL = Tail(lines=MAX_LINES // 2, max_bytes=1 << 20)
QUEUE_SOURCE = "queue"
SILENT_SAID_S = 60.0  # a log this long without a new line: the status says so
REFLOW_S = 0.25  # a new width, unchanged this long, draws the lines again


class LogsTab(DetailTab):
    """A bounded, live log view with a source picker and the follower's status."""

    TAB_ID = "logs"
    TITLE = "Logs"

    DEFAULT_CSS = """
    LogsTab #logs-bar { height: auto; }
    LogsTab #logs-source { width: 40; }
    LogsTab #logs-rank { width: 28; }
    LogsTab #logs-status { width: 1fr; padding: 1 1 0 1; }
    LogsTab #logs-view { height: 1fr; min-height: 10; }
    """

    class Chunk(Message):
        """The follower of ``source`` delivered ``chunk``, ``skipped`` bytes (its tail)
        after where it was asked to begin; ``drawn`` is set once the tab has drawn it."""

        def __init__(
            self, source: str, chunk: LogChunk, skipped: int = 0, drawn: asyncio.Event | None = None
        ) -> None:
            super().__init__()
            self.source = source
            self.chunk = chunk
            self.skipped = skipped
            self.drawn = drawn

    class Retrying(Message):
        """The follower of ``source`` cannot reach the box: attempt ``attempt`` failed
        with ``error``; the next is in ``delay`` seconds."""

        def __init__(self, source: str, attempt: int, delay: float, error: str) -> None:
            super().__init__()
            self.source = source
            self.attempt = attempt
            self.delay = delay
            self.error = error

    class Cells(Message):
        """The queue's cell names, read from the box, and why a cell's log may never come
        (``unstarted``: the cells that have not run while the queue does not run)."""

        def __init__(self, names: tuple[str, ...], unstarted: dict[str, str] | None = None) -> None:
            super().__init__()
            self.names = names
            self.unstarted = unstarted or {}

    class Stopped(Message):
        """The follower of ``source`` ended with ``error``; ``unreadable``: the file could
        not be read any more (not the connection), so choosing it again follows it anew."""

        def __init__(self, source: str, error: str, *, unreadable: bool = False) -> None:
            super().__init__()
            self.source = source
            self.error = error
            self.unreadable = unreadable

    def __init__(self) -> None:
        super().__init__()
        self.host: HostConfig | None = None
        self.connections: FleetConnections | None = None  # from the view: the host's link
        self.recall: LogRecall | None = None  # from the view: the app's memory of logs drawn
        self._partial = ""  # the last chunk's unfinished line
        self.source = QUEUE_SOURCE
        self.rank = 0  # a group's rank whose box is followed (0 on any other host)
        self.status = ""
        self.lines: list[str] = []  # what was written, bounded like the view (tests read it)
        self.crash_lines: list[str] = []
        # Lines of this log the view let go at its top (it keeps MAX_LINES): said in the
        # status with the command that prints them, or a busy log lost its start silently.
        self.out_of_view = 0
        self._follower: Worker[None] | None = None
        # The chunk that came while a dialog was on top, drawn when it closes: written
        # then, its lines would land over the dialog's box (screen_on_top). The follower
        # reads on only once it is drawn, so there is at most one.
        self._held: LogsTab.Chunk | None = None
        self._cells: tuple[str, ...] = ()
        self._unstarted: dict[str, str] = {}  # by cell: why its log is not there
        self._link: ConnectionState | None = None  # the host's connection, as last shown
        self._shown = ""  # the follower key whose lines the view holds
        self._seen = Recalled()  # what was drawn of it, for this tab and the next
        # When the last line (or part of one) came, this machine's clock, and the status
        # the follower last set: a silence is added to it (``_say_silence``).
        self._last_line_at: float | None = None
        self._status_said: Content | None = None
        self.clock = time.monotonic  # a test's own clock takes its place
        # What the view holds, as drawn (styles kept), to draw again at a new width; the
        # width it was drawn at. Bounded as the view is.
        self._drawn: deque[Text] = deque(maxlen=MAX_LINES)
        self._drawn_width: int | None = None
        self._reflow: Timer | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="logs-bar"):
            yield Select(
                [("queue log", QUEUE_SOURCE)], value=QUEUE_SOURCE, allow_blank=False,
                id="logs-source",
            )  # fmt: skip
            # A group's ranks (issue 41); hidden on any other host, from the start (set
            # here, not by a query in on_mount: a tab torn down as it mounts has no child).
            ranks = Select([("rank 0", 0)], value=0, allow_blank=False, id="logs-rank")
            ranks.display = False
            yield ranks
            yield Static(id="logs-status")
        # Long lines wrap (a traceback's path, a progress line): at 80 columns a cut line
        # hid the end of what the user came to read, with no way to scroll to it.
        # Anchored, not auto-scrolled: new lines keep the view at the end until the user
        # scrolls up, and it stays where they put it until they scroll back down (End).
        # min_width: RichLog renders at least 78 cells by default, wider than the view at
        # 80 columns, which then cut the end of every wrapped line (".pt" of a path).
        yield RichLog(
            id="logs-view", max_lines=MAX_LINES, wrap=True, markup=False, auto_scroll=False,
            min_width=1,
        )  # fmt: skip

    def on_mount(self) -> None:
        self.query_one(RichLog).anchor()
        self.set_interval(1.0, self._check_visible)

    def on_resize(self, event: events.Resize) -> None:
        """A new width draws the kept lines again: RichLog wraps a line once, as it is
        written, and a terminal made narrower cut the tails of the lines drawn before
        (a traceback's last words among them: s38 disk hour #6)."""
        if self._drawn_width is None:
            self._drawn_width = event.size.width
            return
        # Once the size settles: a terminal dragged wider sends a resize per column.
        if self._reflow is not None:
            self._reflow.stop()
        self._reflow = self.set_timer(REFLOW_S, self._draw_again)

    def _draw_again(self) -> None:
        self._reflow = None
        width, self._drawn_width = self._drawn_width, self.size.width
        if width == self.size.width or not self._drawn or not self.query(RichLog):
            return
        view = self.query_one(RichLog)
        at_end, where = view.is_vertical_scroll_end, view.scroll_y / max(1, view.max_scroll_y)
        view.clear()
        for text in self._drawn:
            view.write(text)
        if at_end:
            view.anchor()
        else:  # about where the reader was (rows moved with the new wrapping), not the top
            view.scroll_to(y=round(where * view.max_scroll_y), animate=False)

    # -- scrolling -----------------------------------------------------------------------
    # The detail screen's PageUp/PageDown/Home/End and j/k scroll the tab on screen; the
    # tab itself never overflows (its log view takes the height), so they scroll the log.

    def _scrolled(self) -> RichLog | None:
        return next(iter(self.query("#logs-view").results(RichLog)), None)

    def scroll_page_up(self, *args: Any, **kwargs: Any) -> None:
        if (log := self._scrolled()) is not None:
            log.scroll_page_up(*args, **kwargs)

    def scroll_page_down(self, *args: Any, **kwargs: Any) -> None:
        if (log := self._scrolled()) is not None:
            log.scroll_page_down(*args, **kwargs)

    def scroll_home(self, *args: Any, **kwargs: Any) -> None:
        if (log := self._scrolled()) is not None:
            log.scroll_home(*args, **kwargs)

    def scroll_end(self, *args: Any, **kwargs: Any) -> None:
        if (log := self._scrolled()) is not None:
            log.scroll_end(*args, **kwargs)

    def scroll_up(self, *args: Any, **kwargs: Any) -> None:
        if (log := self._scrolled()) is not None:
            log.scroll_up(*args, **kwargs)

    def scroll_down(self, *args: Any, **kwargs: Any) -> None:
        if (log := self._scrolled()) is not None:
            log.scroll_down(*args, **kwargs)

    @property
    def following(self) -> bool:
        """Whether a follower worker is running."""
        return self._follower is not None and not self._follower.is_finished

    def is_visible_tab(self) -> bool:
        """Whether this tab is the active one on a screen in view."""
        screen = self.screen
        # The detail screen, by its mixin: importing the screen would be a cycle.
        return (
            isinstance(screen, TabbedScreen)
            and screen_in_view(screen)
            and screen.active_tab == self.TAB_ID
        )

    def show(self, view: HostView) -> None:
        first = self.host is None
        self.host = view.host
        self.connections = view.connections
        self.recall = view.log_recall
        self._link = view.update.connection if view.update is not None else None
        if first:
            self._show_ranks(view.host)
            self._load_cells()
        if not self.following:
            self.start()

    def show_queue(self, view: QueueView) -> None:
        """The poller's newest view: cells appended (or sent by a retry) while the screen
        is open are offered by ``c`` (s37 dev-loop #6: only a reopen listed them). No box
        read: the poll made one; a view with the same cells changes nothing."""
        names = tuple(c.name for c in view.cells)
        if names != self._cells:
            self.post_message(self.Cells(names, unstarted_notes(view)))

    def _check_visible(self) -> None:
        if self.host is None:
            return
        self._say_silence()
        self.catch_up()  # a dialog closed without the screen's catch-up reaching here
        visible = self.is_visible_tab()
        if self.following and not visible:
            self.stop()
        elif visible and not self.following:
            self._load_cells()
            self.start()

    # -- the follower --------------------------------------------------------------------

    def start(self) -> None:
        """Follow the chosen source: where a pause left it, else at its tail (``TAIL``)."""
        host = self.host
        if host is None:
            return
        self._drop_held()  # the follower this one replaces
        self._last_line_at = None
        if self.source != QUEUE_SOURCE and not is_cell_name(self.source):
            # Asked for from elsewhere (a Queue tab row): no file can hold its log.
            why = f"cell {self.source!r} has no log file of its own: the queue log has its output"
            self._set_status(Content.styled(shown(why), "$warning"))
            return
        key = self._key()
        if self.recall is not None:
            self._seen = self.recall.entry(host.name, key)
        if self._shown != key:  # a log this view does not hold: what was drawn of it, if any
            self._shown = key
            self._partial = ""
            self.query_one(RichLog).clear()
            self._drawn.clear()
            self.lines.clear()
            self.crash_lines.clear()
            # What the last tab drew, its oldest lines beyond the recall said (a user's
            # hour reopened a busy log: its last 500 lines, nothing said of the rest).
            self.out_of_view = self._seen.dropped
            if self._seen.dropped:
                muted = self.app.theme_variables.get("foreground-muted", "")
                note = (
                    f"── {self._seen.dropped:,} earlier lines not shown (the tab recalls the "
                    f"last {RECALL_LINES:,} it drew); the whole log: {self._whole_command()} ──"
                )
                self._write(Text(note, muted), "note", remember=False)
            for text, kind in self._seen.drawn:
                self._write(text, kind, remember=False)
        link = self._link
        if (
            self._box(host) == host.name
            and link is not None
            and link.error
            and (link.status in ("reconnecting", "lost", "unreached"))
        ):  # known down: say why now, not after the follower's own first attempt
            self._set_status(self._reconnecting(link.error))
        else:
            self._set_status(Content.styled(f"opening {self._path()}…", "$foreground-muted"))
        self._follower = run_host_worker(
            self, self._follow(host, key, self._seen.position), "logs", host.name
        )

    def _key(self) -> str:
        """What a follower follows: the source, on a group's rank (its chunks carry it,
        so a replaced follower's late chunks are told apart)."""
        return self.source if self.rank == 0 else f"{self.rank}\n{self.source}"

    def _box(self, host: HostConfig) -> str:
        """The connection the follower reads: the host's own, or a group rank's box."""
        if host.group is None or self.rank == 0 or self.rank >= host.group.nnodes:
            return host.name
        return host.group.hosts[self.rank]

    def stop(self) -> None:
        """Stop following (the tab or its screen was hidden)."""
        if self._follower is not None:
            self._follower.cancel()
        self._follower = None
        self._drop_held()
        self._set_status(Content.styled("paused (not on screen)", "$foreground-muted"))

    def _path(self) -> str:
        from rgt_tui.services.logs import cell_log_path, queue_log_path

        return queue_log_path() if self.source == QUEUE_SOURCE else cell_log_path(self.source)

    async def _follow(self, host: HostConfig, source: str, resume: LogPosition | None) -> None:
        from rgt_tui.controllers.queue_actions import error_text
        from rgt_tui.services.logs import LogFollower
        from rgt_tui.services.logs.cursor import unreadable_why

        connections = self.connections
        if connections is None:
            return
        box = self._box(host)

        def retrying(attempt: int, delay: float, exc: TransportError) -> None:
            self.post_message(self.Retrying(source, attempt, delay, exc.message))

        try:
            # The host's one connection, shared with telemetry: borrowed, never closed here.
            transport = await connections.connect_with_backoff(box, retrying)
            follower = LogFollower(
                transport,
                self._path(),
                resume=resume,
                highlight=self.source != QUEUE_SOURCE,
                reconnect=partial(connections.connect_with_backoff, box, retrying),
                max_line=MAX_LINE_BYTES,
                tail=TAIL,
            )
        except Exception as exc:  # a host-key refusal: shown in the status
            self.post_message(self.Stopped(source, error_text(exc)))
            return
        told = False
        try:
            async for chunk in follower:
                skipped = 0 if told else follower.skipped
                told = told or bool(skipped)
                # One chunk in flight: the follower reads on once this one is drawn.
                drawn = asyncio.Event()
                if not self.post_message(self.Chunk(source, chunk, skipped, drawn)):
                    return  # the tab is closing: no one will draw it
                await drawn.wait()
        except Exception as exc:  # a dead box, or the file unreadable: shown in the status
            if isinstance(exc, OSError):  # the box's file error (TransportError is not)
                why = f"cannot read {self._path()}: {unreadable_why(exc, box)}"
                self.post_message(self.Stopped(source, why, unreadable=True))
            else:
                self.post_message(self.Stopped(source, error_text(exc)))
        finally:
            await follower.close()

    @on(Chunk)
    def _chunk(self, message: Chunk) -> None:
        if not screen_on_top(self.screen) and self.screen.is_attached:
            self._held = message
            return
        try:
            self._draw(message)
        finally:
            if message.drawn is not None:
                message.drawn.set()

    def _drop_held(self) -> None:
        """The held chunk is the ended follower's: the next one reads it again from the
        position last drawn."""
        held, self._held = self._held, None
        if held is not None and held.drawn is not None:
            held.drawn.set()

    def catch_up(self) -> None:
        """Draw the chunk held while a dialog was on top; the follower then reads on."""
        held = self._held
        if held is not None and screen_on_top(self.screen):
            self._held = None
            self._chunk(held)

    def _draw(self, message: Chunk) -> None:
        if message.source != self._key() or not self.following:
            return  # a late chunk of a follower that was replaced
        chunk = message.chunk
        self._seen.position = chunk.position
        if not self.query(RichLog):
            return  # the tab's widgets are gone (the app is leaving): nothing to draw on
        muted = self.app.theme_variables.get("foreground-muted", "")
        if message.skipped:
            self._write(Text(self._skipped_note(message.skipped), muted), "note")
        if chunk.gap:
            self._write(
                Text("── lines may be missing here (the file was replaced) ──", muted), "note"
            )
        if chunk.rotated:
            self._write(Text("── the file was rotated or truncated ──", muted), "note")
        # RichLog draws Rich text: the crash colour is the theme's $error, looked up now.
        error = self.app.theme_variables.get("error", "red")
        # A chunk holds up to 4 MiB of lines and the view keeps MAX_LINES: the lines it
        # would drop at once are not drawn at all.
        for line in chunk.lines[-MAX_LINES:]:
            # A training log's colours are the user's: shown as styles. Every other escape
            # is dropped (an ESC written to the screen could clear it or write the
            # clipboard: OSC 52); log_text says how.
            crash = line.crash is not None
            text = log_text(line.text, f"bold {error}" if crash else "")
            self._write(text, "crash" if crash else "line")
        self.out_of_view += max(0, len(chunk.lines) - MAX_LINES)  # never drawn
        self.out_of_view += max(0, len(self.lines) - MAX_LINES)
        del self.lines[:-MAX_LINES]
        del self.crash_lines[:-MAX_LINES]
        self.status = chunk.status
        self._partial = chunk.partial or ""  # the line being written, kept while reconnecting
        if chunk.lines or chunk.partial:
            self._last_line_at = self.clock()
        self._set_status(
            follow_status(
                chunk,
                where=f"{self._where()}{self._path()}",
                unstarted=self._unstarted.get(self.source, ""),
                let_go=self.out_of_view,
                kept=MAX_LINES,
                command=self._whole_command(),
            )
        )

    def _write(self, text: Text, kind: Kind, *, remember: bool = True) -> None:
        """Draw one line (or a note) and keep it for the next tab on this log."""
        self.query_one(RichLog).write(text)
        self._drawn.append(text)
        if kind != "note":
            self.lines.append(text.plain)
        if kind == "crash":
            self.crash_lines.append(text.plain)
        if remember:
            self._seen.remember(text, kind)

    @on(Retrying)
    def _retrying(self, message: Retrying) -> None:
        if message.source == self._key() and self.following:
            self.status = "reconnecting"
            self._set_status(
                self._reconnecting(
                    message.error, f" · attempt {message.attempt}, next try in {message.delay:.0f}s"
                )
            )

    def _reconnecting(self, error: str, attempt: str = "") -> Content:
        """The status while the box does not answer: why, and what the tab follows."""
        return Content.assemble(
            ("reconnecting", "bold $warning"),
            (f": {shown(error)}{attempt}", "$foreground-muted"),
            (f"  {self._where()}{self._path()}", "$foreground-muted"),
            # The last read's unfinished line (a progress bar) is still the log's newest.
            (f"  … {partial_text(self._partial)}" if self._partial else "", "$foreground-muted"),
        )

    @on(Stopped)
    def _stopped(self, message: Stopped) -> None:
        if message.source == self._key():
            self.status = "stopped"
            # With the way on (h552 #2: "stopped: [Errno 5] …" named none).
            # With the way on for a file that became unreadable (h552 #2: "stopped:
            # [Errno 5] …" named none); a connection's own words say theirs.
            again = (
                " — once it is a readable file again, choose another log and back to follow it anew"
                if message.unreadable
                else ""
            )
            self._set_status(Content.styled(shown(f"stopped: {message.error}{again}"), "$error"))

    def _skipped_note(self, skipped: int) -> str:
        """The line above a log opened at its tail: what was left out, and how to read it."""
        return (
            f"── {fmt_bytes(skipped)} of earlier lines not loaded (the tab opens a log at its "
            f"last {TAIL.lines:,} lines); the whole log: {self._whole_command()} ──"
        )

    def _whole_command(self) -> str:
        """The command that prints this log whole."""
        host = self.host
        command = "rgt-tui logs"
        if host is not None:
            command += f" {shown(host.name)}"
            if self.source != QUEUE_SOURCE:
                command += f" {shown(self.source)}"
            if self.rank:
                command += f" --rank {self.rank}"
        return command

    def _set_status(self, content: Content) -> None:
        self._status_said = content
        self._show_status(content)

    def _show_status(self, content: Content) -> None:
        for status in self.query("#logs-status").results(Static):  # none once removed
            status.update(content)

    def _say_silence(self) -> None:
        """Past a minute without a new line, the status says how long: a
        silent cell's log read as dead while the pane had its U43 alert (s38 disk hour
        #7). The follower's own words stay first; redrawn each second while it lasts."""
        if not self.following or self._last_line_at is None or self._status_said is None:
            return
        quiet = self.clock() - self._last_line_at
        if quiet < SILENT_SAID_S:
            return
        note = (
            f" · no new line for {fmt_duration(quiet)} (a cell may work on without "
            "printing: the pane's U43 alert says when its outputs still move)"
        )
        self._show_status(self._status_said + Content.styled(note, "$foreground-muted"))

    def _where(self) -> str:
        """``rank 1 (box2): `` on a group; nothing on any other host."""
        host = self.host
        if host is None or host.group is None:
            return ""
        return (
            f"rank {self.rank} ({shown(self._box(host) if self.rank else host.group.hosts[0])}): "
        )

    # -- the source picker ---------------------------------------------------------------

    def _show_ranks(self, host: HostConfig) -> None:
        """A group's ranks in the rank picker, shown; any other host hides it."""
        for select in self.query("#logs-rank").results(Select):
            group = host.group
            select.display = group is not None
            if group is None:
                continue
            with select.prevent(Select.Changed):
                # A box's name from the fleet file, as Content: never read as markup.
                select.set_options(
                    [(Content(f"rank {k} ({b})"), k) for k, b in enumerate(group.hosts)]
                )
                select.value = self.rank if self.rank < group.nnodes else 0

    def choose_rank(self, rank: int) -> None:
        """Follow the same source on a group's rank ``rank`` instead."""
        if rank == self.rank and self.following:
            return
        self.rank = rank
        if self.host is not None and self.is_visible_tab():
            self.start()
        elif self.following:
            self.stop()

    @on(Select.Changed, "#logs-rank")
    def _rank_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, int):
            self.choose_rank(event.value)

    def _load_cells(self) -> None:
        host = self.host
        if host is None or not host.queue:
            return
        run_host_worker(self, self._read_cells(host), "logs-cells", host.name)

    async def _read_cells(self, host: HostConfig) -> None:
        from rgt_tui.services.queue.view import read_queue_view

        if self.connections is None:
            return
        try:
            view = await self.connections.use(host.name, lambda t: read_queue_view(host, t))
        except Exception:  # the follower's status already says the box is unreachable
            return
        self.post_message(self.Cells(tuple(c.name for c in view.cells), unstarted_notes(view)))

    @on(Cells)
    def _cells_read(self, message: Cells) -> None:
        self._unstarted = message.unstarted
        if message.names == self._cells:
            return
        if not self.query("#logs-source"):
            return  # removed meanwhile: the next mount reads the cells again
        self._cells = message.names
        select = self.query_one("#logs-source", Select)
        # A box's records may name a cell 'a/b' or twice: only a name that can be a log
        # file is offered, once (picking 'a/b' ended the app: a review's hostile box).
        names = [n for n in dict.fromkeys(message.names) if is_cell_name(n)]
        with select.prevent(Select.Changed):
            # A Select reads a str prompt as markup: a cell's name goes in as Content.
            select.set_options(
                [("queue log", QUEUE_SOURCE), *((Content(f"cell {shown(n)}"), n) for n in names)]
            )
            # Against what is offered: a name asked for from elsewhere that is no log file
            # is not an option, and Select refuses a value it does not hold (review s38).
            select.value = self.source if self.source in (QUEUE_SOURCE, *names) else QUEUE_SOURCE

    def choose(self, source: str) -> None:
        """Follow ``source`` (``"queue"`` or a cell name) instead."""
        if source == self.source and self.following:
            return
        self.source = source
        if self.host is not None and self.is_visible_tab():
            self.start()
        elif self.following:
            self.stop()

    @on(Select.Changed, "#logs-source")
    def _source_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.choose(event.value)
