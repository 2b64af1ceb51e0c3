"""LineRows: a widget's rows kept per line of its text, so a change renders one line.

Textual renders a widget's whole text whenever any part of it is refreshed. A host pane
refreshes a few of its ~18 lines a sample, and re-rendering all of them was most of the
fleet screen's cost at 100 hosts (scripts/bench_tui.py). The rows kept here are the ones
Textual's whole rendering gives: each line wraps on its own in both, and each cell says
its (column, line) in the text as Textual's do (mouse selection reads them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content
from textual.strip import Strip
from textual.visual import Visual
from textual.widget import Widget


def at_line(row: Strip, y: int) -> Strip:
    """``row``, rendered as a text of one line, placed at line ``y`` of the whole text."""
    segments = []
    for text, style, control in row:
        offset = style.meta.get("offset") if style is not None else None
        if offset is not None:
            style = style + RichStyle.from_meta({"offset": (offset[0], y)})
        segments.append(Segment(text, style, control))
    return Strip(segments, row.cell_length)


class LineRows:
    """The rows of a widget's lines, rendered again only for a line that changed."""

    def __init__(self, same: Callable[[Content, Content], bool]) -> None:
        self._same = same  # whether two lines look the same (text and styles)
        self._kept: list[tuple[Content, list[Strip]]] = []
        self._key: tuple[object, ...] | None = None
        self._rows: list[Strip] | None = None

    def changed(self) -> None:
        """The lines changed: put the rows together again at the next look."""
        self._rows = None

    def row(self, widget: Widget, lines: Sequence[Content], y: int) -> Strip:
        """Row ``y`` of ``lines`` as ``widget`` draws them (blank past the last)."""
        width, style = widget.size.width, widget.visual_style
        key = (width, style, widget.app.theme)  # any of them changes every row
        if key != self._key:
            self._key, self._kept, self._rows = key, [], None
        rows = self._rows
        if rows is None:
            rows = self._rows = self._put_together(widget, lines, width)
        if y < len(rows):
            return rows[y]
        return Strip.blank(width, style.rich_style)

    def _put_together(self, widget: Widget, lines: Sequence[Content], width: int) -> list[Strip]:
        kept, style = self._kept, widget.visual_style
        fresh: list[tuple[Content, list[Strip]]] = []
        for i, line in enumerate(lines):
            if i < len(kept) and self._same(kept[i][0], line):  # same line, same place
                fresh.append(kept[i])
            else:
                rows = Visual.to_strips(widget, line, width, None, style)
                fresh.append((line, [at_line(row, i) for row in rows] if i else rows))
        self._kept = fresh
        return [row for _, rows in fresh for row in rows]
