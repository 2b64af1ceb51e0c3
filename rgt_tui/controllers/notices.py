"""Every toast of the app, and the list of what was told (the ``n`` key).

``Toasts`` is what the App's ``notify`` does before a toast is shown, whoever posts it (a
controller, a screen, Textual itself): the text is made printable, the toast is listed,
and a toast already on screen is not posted again. A repeated ``notify`` (the same news
from every sample, or a key pressed twice) would stack fresh copies, each with its own
full timeout, so a toast meant for 8 s could cover what the user must read for a minute.
A repeat while the first is still showing does nothing: the first keeps its own timeout
and goes when it runs out.

``NoticeLine`` keeps notices for a one-line notice area (the fleet header) instead: what
is shown at start-up (the danger clocks) must never cover the panes.

``NoticeList`` is every notice of the session, newest first and bounded (the ``n`` key
shows it: ``screens.notices``): every toast, and what was told without a toast because
the user did not just ask for it (``record``: a periodic pull's news; ``note_connection``:
a box that stopped answering, and its return). A notice the same as its host's latest is
not listed again: never twice in a row. The list lives as long as the app: a restart
begins a new one (the screen says so); only ``watch``'s unattended actions of the last
day are listed again at start (``watch_actions``).
"""

from __future__ import annotations

import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rgt_tui.domain.health import queue_finished
from rgt_tui.domain.text import printable, printable_lines
from rgt_tui.domain.units import fmt_duration

if TYPE_CHECKING:
    from rgt_tui.services.telemetry import HostUpdate

NOTICES_KEPT = 200  # a session's notices: enough to scroll back through, never unbounded


@dataclass(frozen=True)
class Notice:
    """One notice as told: when, about which host ('' when none), its title and text."""

    at: float  # wall clock (time.time), shown as the hour it came
    host: str
    title: str
    text: str
    severity: str = "information"


class NoticeList:
    """The session's notices, newest first, at most ``kept``; a notice equal (title and
    text) to its host's latest is not added again (``add`` says whether it was)."""

    def __init__(self, kept: int = NOTICES_KEPT, clock: Any = time.time) -> None:
        self.clock = clock
        self._items: deque[Notice] = deque(maxlen=kept)
        self._latest: dict[str, tuple[str, str]] = {}  # host: (title, text) told last
        self.added = 0  # how many were ever added: a screen open on it sees news

    def add(
        self, host: str, title: str, text: str, severity: str = "information",
        at: float | None = None,
    ) -> bool:  # fmt: skip
        """List a notice (plain text: shown escaped, never markup); False when it is the
        same as the host's latest one. ``at``: when it happened, if not now (what `watch`
        did overnight, read when the TUI opens: each was listed at the opening's time, an
        overnight hour, s39 watch #4), kept in its place among the newer ones."""
        text, title = printable_lines(text), printable(title, None)
        if self._latest.get(host) == (title, text):
            return False
        when = self.clock() if at is None else at
        items = self._items
        if len(items) == items.maxlen:
            if items and when < items[-1].at:
                return False  # older than every notice kept
            items.pop()
        place = next((i for i, n in enumerate(items) if n.at <= when), len(items))
        self._latest[host] = (title, text)
        items.insert(place, Notice(when, host, title, text, severity))
        self.added += 1
        return True

    def items(self) -> list[Notice]:
        """The notices kept, newest first."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)


_lists: weakref.WeakKeyDictionary[Any, NoticeList] = weakref.WeakKeyDictionary()


def notices_of(app: Any) -> NoticeList:
    """The notice list of ``app`` (one per app, made on first use)."""
    found = _lists.get(app)
    if found is None:
        found = _lists[app] = NoticeList()
    return found


class Toasts:
    """What may be shown as a toast: ``admit`` says, and lists each one it lets through."""

    def __init__(self, notices: NoticeList, clock: Callable[[], float] = time.monotonic) -> None:
        self.notices = notices
        self.clock = clock
        # Each toast's (text, title, severity) and when it runs out. Textual posts a
        # notification as a message, so its own list lags a burst of repeats.
        self._showing: dict[tuple[str, str, str], float] = {}

    def admit(
        self, message: object, title: object, severity: str, seconds: float
    ) -> tuple[str, str] | None:
        """The (message, title) to show for ``seconds``, made printable (a toast often
        quotes a box: an error, a watch event's body), and listed; None while the same
        toast is still showing."""
        message, title = printable_lines(message), printable(title, None)
        now = self.clock()
        for key in [k for k, until in self._showing.items() if until <= now]:
            del self._showing[key]
        key = (message, title, severity)
        if key in self._showing:
            return None
        self._showing[key] = now + seconds
        self.notices.add(title, title, message, severity)
        return message, title


# A host name longer than this is cut in a toast (its start and end kept): a 197-character
# name, in a toast's title and again in its body, made each toast ten rows high and a few
# of them covered the screen (h611 #3). The notices list (n) keeps every name whole.
TOAST_NAME_CELLS = 40


def short_names(text: str, names: Iterable[str], cells: int = TOAST_NAME_CELLS) -> str:
    """``text`` with each of ``names`` longer than ``cells`` cut to its start, "…" and its
    end (``cells`` characters in all); longer names first, so one that holds another goes
    whole."""
    half = (cells - 1) // 2
    for name in sorted((n for n in names if len(n) > cells), key=len, reverse=True):
        text = text.replace(name, f"{name[:half]}…{name[-(cells - 1 - half) :]}")
    return text


_toasts: weakref.WeakKeyDictionary[Any, Toasts] = weakref.WeakKeyDictionary()


def toasts_of(app: Any) -> Toasts:
    """The toasts of ``app``, listed in ``notices_of(app)`` (one per app, made on first use)."""
    found = _toasts.get(app)
    if found is None:
        found = _toasts[app] = Toasts(notices_of(app))
    return found


def record(
    app: Any, host: str, title: str, text: str, severity: str = "information",
    at: float | None = None,
) -> bool:  # fmt: skip
    """Tell ``app``'s user something they did not just ask for: listed (the ``n`` key),
    never a toast; False when it repeats the host's latest notice. ``at``: when it
    happened, if not now."""
    return notices_of(app).add(host, title, text, severity, at)


NOT_ANSWERING = ("reconnecting", "lost", "unreached")  # a box that does not answer


class ConnectionNotices:
    """Lists a box that stops answering (once per outage, however many retries) and its
    return with the gap: the pane says both live, the list keeps them for a user who
    looked elsewhere. A box stopped on purpose (a teardown, watch's autostop) is no
    outage: it is forgotten without a word."""

    def __init__(self, notices: NoticeList) -> None:
        self.notices = notices
        self._down: dict[str, float] = {}  # host -> since when it has not answered

    def host_updated(self, update: HostUpdate, *, interruptible: bool = False) -> None:
        """Take a host's update; list its drop or its return. ``interruptible``: the
        host is a spot box, whose silence is most often a preemption (docs/spot.md)."""
        host, conn = update.host, update.connection
        if conn.status in NOT_ANSWERING:
            if host in self._down:
                return
            self._down[host] = conn.since
            why = conn.error or "the connection was lost"
            if conn.fix:
                why += f"\nfix: {conn.fix}"
            title = f"{host}: not answering"
            if interruptible:
                # The pane says "preempted?"; the list said only GEN8's "may still be
                # alive", the words docs/spot.md replaces for a spot box (hour s17a #12).
                title += " (preempted?)"
                why += (
                    "\nAn interruptible box that does not answer may be preempted: d says "
                    "what happened to its run, m moves an interrupted cell to another box; "
                    "the connection is retried on its own (the cell is not)."
                )
            elif conn.status != "unreached" and queue_finished(update.snapshot):
                # As the pane says it (hour s24c #5): no run was going at its last sample.
                why += (
                    "\nIts queue had finished at its last sample: no queue cell was running; "
                    "the connection is retried on its own."
                )
            elif conn.status != "unreached":
                why += (
                    "\nA run there may still be alive (GEN8); the connection is retried on its own."
                )
            self.notices.add(host, title, why, "warning")
            return
        since = self._down.pop(host, None)
        if since is None or conn.status != "connected":
            return
        gap = conn.gap_s if conn.gap_s is not None else max(0.0, conn.since - since)
        self.notices.add(
            host, f"{host}: answering again", f"after {fmt_duration(gap)} without an answer"
        )


_connections: weakref.WeakKeyDictionary[Any, ConnectionNotices] = weakref.WeakKeyDictionary()


def note_connection(app: Any, update: HostUpdate, *, interruptible: bool = False) -> None:
    """List ``update``'s host in ``app``'s notices when it stops answering or comes back."""
    found = _connections.get(app)
    if found is None:
        found = _connections[app] = ConnectionNotices(notices_of(app))
    found.host_updated(update, interruptible=interruptible)


class NoticeLine:
    """Notices for one line of a header, each for ``seconds``: nothing covers the panes.

    A toast over the grid hid half a fleet's panes for its whole timeout at start-up (the
    profiles' danger clocks, one per profile); one line above the grid hides nothing.
    A notice under a title already showing replaces it and starts its time again.
    """

    def __init__(self, seconds: float = 30.0, clock: Any = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self._until: dict[str, tuple[str, float]] = {}  # title: (text, shown until)

    def add(self, title: str, text: str) -> None:
        """Show ``title: text`` for ``seconds`` from now."""
        self._until.pop(title, None)  # newest last
        self._until[title] = (text, self.clock() + self.seconds)

    def shown(self) -> list[tuple[str, str]]:
        """(title, text) of every notice still showing, oldest first."""
        now = self.clock()
        for title in [t for t, (_, until) in self._until.items() if until <= now]:
            del self._until[title]
        return [(title, text) for title, (text, _) in self._until.items()]

    def text(self) -> str:
        """The notices showing, as one line ('' when none)."""
        return " · ".join(f"{title}: {text}" for title, text in self.shown())
