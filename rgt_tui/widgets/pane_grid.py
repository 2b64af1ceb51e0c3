"""PaneGrid: the scrolling grid of host panes, as many columns as the width allows.

Columns are ``max(1, width // PANE_MIN_WIDTH)`` (no more than the panes on display),
recomputed on every resize and filter change, so 80 cells give one column and a wide
terminal several. When every row of panes fits the height, the rows share it (panes
grow, and a pane gives its spare rows to taller history charts); when they do not,
each row is as tall as its panes need and the grid scrolls. Arrow keys belong to the fleet screen (it
moves the selection grid-aware), so this container drops the scroll bindings it would
otherwise inherit and steal them with.
"""

from __future__ import annotations

from textual import events
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget

PANE_MIN_WIDTH = 44


def columns_for(width: int, panes: int | None = None, pane_width: int = PANE_MIN_WIDTH) -> int:
    """How many pane columns fit in ``width`` cells (never more than there are panes)."""
    columns = max(1, width // pane_width)
    return columns if panes is None else max(1, min(columns, panes))


def rows_fill(panes: int, columns: int, pane_height: int, height: int) -> bool:
    """Whether ``panes`` panes of ``pane_height`` rows, ``columns`` a row, fit ``height``.

    Then the rows share the height (a few boxes fill the screen); otherwise the grid
    scrolls, every pane as tall as it needs (50 boxes stay compact).
    """
    if panes <= 0 or pane_height <= 0 or height <= 0:
        return False
    rows = -(-panes // max(1, columns))
    return rows * pane_height <= height


def neighbour(index: int, count: int, columns: int, direction: str) -> int:
    """The pane index that ``direction`` (left/right/up/down) moves to from ``index``.

    Left and right stay within the row; up and down keep the column and move a row,
    landing on the last pane when the row below is shorter. Off the edge it stays put.
    """
    if count <= 0:
        return 0
    index = max(0, min(index, count - 1))
    columns = max(1, columns)
    row, col = divmod(index, columns)
    if direction == "left":
        return index - 1 if col > 0 else index
    if direction == "right":
        return index + 1 if col < columns - 1 and index + 1 < count else index
    if direction == "up":
        return index - columns if row > 0 else index
    if direction == "down":
        last_row = (count - 1) // columns
        if row >= last_row:
            return index
        return min(index + columns, count - 1)
    raise ValueError(f"unknown direction {direction!r}")


def natural_height(widget: Widget) -> int:
    """The rows a pane needs, borders included (0: not known yet)."""
    return int(getattr(widget, "natural_height", 0))


class PaneGrid(VerticalScroll, can_focus=False, inherit_bindings=False):
    """A vertical scroll with a grid layout whose column count follows its width."""

    DEFAULT_CSS = """
    PaneGrid {
        layout: grid;
        grid-size: 1;
        grid-columns: 1fr;
        grid-rows: auto;
        grid-gutter: 0 1;
        height: 1fr;
    }
    """

    class Scrolled(Message):
        """The visible part of the grid changed; panes out of view may need a redraw."""

    columns = 1
    filling = False  # the rows share the height (see rows_fill)

    def refit(self) -> None:
        """Recompute the column count, and whether rows fill the height, from the size
        and the panes on display."""
        shown = [child for child in self.children if child.display]
        columns = columns_for(self.size.width, len(shown))
        if columns != self.columns:
            self.columns = columns
            self.styles.grid_size_columns = columns
        tallest = max((natural_height(child) for child in shown), default=0)
        filling = rows_fill(len(shown), columns, tallest, self.size.height)
        if filling != self.filling:
            self.filling = filling
            self.styles.grid_rows = "1fr" if filling else "auto"
        for child in self.children:
            fill = getattr(child, "fill", None)
            if callable(fill):
                fill(filling)

    def on_resize(self, event: events.Resize) -> None:
        self.refit()
        self.post_message(self.Scrolled())

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if round(old) != round(new):
            self.post_message(self.Scrolled())
