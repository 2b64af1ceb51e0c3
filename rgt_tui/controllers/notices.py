"""One toast per message: a notice already on screen is not posted again.

A repeated ``notify`` (the same news from every sample, or a key pressed twice) would
stack fresh copies, each with its own full timeout, so a toast meant for 8 s could cover
what the user must read for a minute. A repeat while the first is still showing does
nothing: the first keeps its own timeout and goes when it runs out.

``NoticeLine`` keeps notices for a one-line notice area (the fleet header) instead: what
is shown at start-up (the danger clocks) must never cover the panes.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from rgt_tui.controllers.controller_host import ControllerHost
from rgt_tui.domain.text import printable, printable_lines

DEFAULT_TIMEOUT = 5.0  # Textual's own default, for a notice that names none

# Per app: each notice's (text, title, severity) and when its toast runs out. Textual
# posts a notification as a message, so its own list lags a burst of repeats.
_showing: weakref.WeakKeyDictionary[Any, dict[tuple[str, str, str], float]] = (
    weakref.WeakKeyDictionary()
)


def notify_once(
    app: ControllerHost,
    message: str,
    *,
    title: str = "",
    severity: Any = "information",
    timeout: float | None = None,
) -> bool:
    """Post ``message`` unless the same notice (text, title, severity) is still showing;
    True when it was posted. The message is plain text, never markup, with every control
    character shown as an escape: it often quotes a box (an error, a watch event's body)."""
    message = printable_lines(message)
    title = printable(title, None)
    now = time.monotonic()
    showing = _showing.setdefault(app, {})
    for key in [k for k, until in showing.items() if until <= now]:
        del showing[key]
    key = (message, title, str(severity))
    if key in showing:
        return False
    seconds = timeout if timeout is not None else getattr(app, "NOTIFICATION_TIMEOUT", None)
    showing[key] = now + (seconds if seconds is not None else DEFAULT_TIMEOUT)
    app.notify(message, title=title, severity=severity, timeout=timeout, markup=False)
    return True


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
