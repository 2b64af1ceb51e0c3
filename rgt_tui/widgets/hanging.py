"""Hanging: a Static whose long lines wrap under their own first column.

The tabs print label/value rows (``danger clocks        nothing reclaims the box…``,
``✓ manifest   a manifest taken…``): a label, two or more spaces, the value. Textual wraps
a long value back to the left edge, where its second line reads as a label of its own or
a new entry. Here each line's continuation lines start under its value, the text after
the first run of two or more spaces, as a two-column table would put them; a line with
no such gap hangs under its own leading indent (a notice's body, ``    text``, wrapped to
the left edge where it read as the next notice's head: hour s30), and one with neither
(or too far right to leave room) wraps as before. The text a test or a copy reads
(``visual``) is what was given, unwrapped.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from textual.content import Content
from textual.geometry import Size
from textual.widgets import Static

# The value's column: the text after the first run of two or more spaces.
VALUE_COLUMN = re.compile(r"\S {2,}(?=\S)")
# The least room a continuation keeps: a value column further right than the width
# less this hangs nothing (a row of one word per line reads worse than a plain wrap).
MIN_ROOM = 20


def hang_at(plain: str, width: int) -> int:
    """The cell column a line's continuation lines start at (0: a plain wrap)."""
    gap = VALUE_COLUMN.search(plain)
    # No value column: under the line's own indent, if it has one.
    column = len(plain) - len(plain.lstrip(" ")) if gap is None else cell_len(plain[: gap.end()])
    return column if width - column >= MIN_ROOM else 0


def hang(line: Content, width: int) -> list[Content]:
    """``line`` wrapped to ``width`` cells, its continuation lines under its value."""
    if width <= 0:
        return [line]
    lines = line.wrap(width)
    indent = hang_at(line.plain, width)
    if len(lines) <= 1 or indent == 0:
        return lines
    first = lines[0]
    rest = line.divide([len(first.plain)])[1]
    blank = len(rest.plain) - len(rest.plain.lstrip(" "))
    if blank:  # the space the wrap broke at
        rest = rest.divide([blank])[1]
    pad = Content(" " * indent)
    return [first, *(pad + part for part in rest.wrap(width - indent))]


class Hanging(Static):
    """A Static of label/value lines whose wrapped values hang under their column."""

    def _hung(self, width: int) -> Content:
        visual = self.visual
        content = visual if isinstance(visual, Content) else Content(str(visual))
        lines = [part for line in content.split("\n") for part in hang(line, width)]
        return Content("\n").join(lines)

    def render(self) -> Content:
        return self._hung(self.content_region.width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if not width:
            return 0
        return len(self._hung(width).split("\n"))
