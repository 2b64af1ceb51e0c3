"""The Logs tab's words: a log line as the tab draws it, the end of a line still being
written, and the status line above the view (what the follower does, where, what the
view let go, why a cell's log may never come)."""

from __future__ import annotations

import re

from rich.text import Text
from textual.content import Content

from rgt_tui.content.box_text import shown
from rgt_tui.domain.logscan import LogChunk
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.queue_waiting import will_not_start
from rgt_tui.domain.terminal_text import terminal_safe

# What terminal_safe leaves that is still no printable text: a newline, the Unicode line
# separators (Rich splits a line at them: a forged line) and lone surrogates.
_LEFT_RE = re.compile("[\n\u2028\u2029\ud800-\udfff]")


def log_text(line: str, style: str = "") -> Text:
    """One log line as the tab shows it: its SGR colours as styles, every other escape
    dropped (``terminal_safe`` keeps nothing but ``ESC [ … m``, so no OSC 8 link, title or
    cursor move reaches ``Text.from_ansi``), and what else is no printable text shown as
    an escape (``\\u2028``). ``style`` is the base under the log's own colours."""
    kept = _LEFT_RE.sub(lambda m: shown(m.group()), terminal_safe(line, keep_sgr=True))
    return Text.from_ansi(kept, style=style)


def partial_text(partial: str) -> str:
    """The end of a line still being written, for the status line: escapes dropped (a
    colour too: the status has its own), the rest printable, its last 60 characters."""
    return shown(terminal_safe(partial))[-60:]


def follow_status(
    chunk: LogChunk, *, where: str, unstarted: str, let_go: int, kept: int, command: str
) -> Content:
    """``following  box1: ~/.rgt/queue/queue.log  · 300 earlier lines let go …``: the
    follower's state with the last chunk (``where`` the log's path, with the rank on a
    group), why a log that is not there may never come (``unstarted``), and the lines
    the view let go at its top (``let_go``; it keeps ``kept``) with the ``command`` that
    prints them."""
    muted = "$foreground-muted"
    style = {"following": "$success", "waiting": "$warning"}.get(chunk.status, "bold $warning")
    parts: list[str | tuple[str, str]] = [(chunk.status, style)]
    if chunk.status == "waiting" and unstarted:  # it will not appear by itself
        parts = [("no log yet", "$warning"), (f" — {unstarted}", "$warning")]
    elif chunk.status == "waiting":
        parts.append((" for the file to appear", muted))
    if chunk.error:
        parts.append((f": {shown(chunk.error)}", muted))
    if chunk.rotated:
        parts.append((" · rotated", "$warning"))
    if chunk.gap:
        parts.append((" · gap", "$warning"))
    parts.append((f"  {where}", muted))
    if let_go:
        parts.append(
            (f"  · {let_go:,} earlier lines let go (the tab keeps {kept:,}): {command}", muted)
        )
    if chunk.partial:
        parts.append((f"  … {partial_text(chunk.partial)}", muted))
    return Content.assemble(*parts)


def unstarted_notes(view: QueueView) -> dict[str, str]:
    """Why each cell that has not run will not write its log unless launched again (a
    user's hour read "waiting for the file to appear" for a cell a later start had passed
    over, in a queue that had finished)."""
    return {name: f"cell {shown(name)} {why}" for name, why in will_not_start(view).items()}
