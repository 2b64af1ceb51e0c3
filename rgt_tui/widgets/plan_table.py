"""PlanTable: the cells of a launch plan, one row each, in columns that share its width.

A DataTable sizes a column to its cells only when it can measure them, and it cannot
measure a ``Content`` cell, the one safe way to put box text in it (a str cell is read as
markup): every column stayed as wide as its header ("box3", "reco", "3 (the") while the
dialog beside it was empty. Here the widths come from the text itself: each column as
wide as its longest cell when a row fits the table; when it does not, the task, epochs
and status columns give way (the widest first) so that the names stay whole, and when
even that cannot make room for the longest name, every column but the index gives way
alike. A cut cell ends with an ellipsis; no column is cut below its header's width. The
table lays itself out again whenever its width changes (a resized terminal, a scrollbar).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual import events
from textual.content import Content
from textual.widgets import DataTable

from rgt_tui.content.box_text import shown

HEADERS = ("#", "name", "task", "epochs", "status")
NAME = (1,)
OTHERS = (2, 3, 4)  # task, epochs, status: they give way so names stay whole; the index never


def fit_widths(
    natural: Sequence[int],
    room: int,
    least: Sequence[int],
    first: Sequence[int] = OTHERS,
    last: Sequence[int] = NAME,
) -> list[int]:
    """Column widths that fit ``room`` cells: ``natural`` when they fit; else the columns
    of ``first`` narrow (the widest first, down to ``least``) so those of ``last`` stay
    whole, or, when they cannot be whole even so, all of them narrow together (the widest
    first: a long name is cut rather than every task). Over ``room`` only when every one
    is down to its least; a column in neither is never narrowed."""
    # No column wider than the room: the narrowing below takes one cell at a time, and a
    # hostile box's 10,000-character name must not make that 10,000 steps.
    widths = [min(w, max(room, low)) for w, low in zip(natural, least, strict=True)]
    excess = sum(widths) - room
    if excess <= 0:
        return widths
    spare = sum(widths[i] - least[i] for i in first)
    narrowing = list(first) if spare >= excess else [*first, *last]
    while excess > 0:
        narrowable = [i for i in narrowing if widths[i] > least[i]]
        if not narrowable:
            break
        widest = max(narrowable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return widths


class PlanTable(DataTable[Content], can_focus=False):
    """The plan's cells (index, name, task, epochs, status), as wide as the table allows.

    Read, never acted on: no cursor and no Tab stop (a focused table showed no focus
    in text, and Enter there did nothing); the dialog's body scrolls it."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="none", zebra_stripes=True)
        self.rows_text: tuple[tuple[str, ...], ...] = ()
        self._widths: list[int] = []

    def show_rows(self, rows: Iterable[Iterable[object]]) -> None:
        """Show ``rows`` (box text: made printable here, never read as markup)."""
        self.rows_text = tuple(tuple(shown(value) for value in row) for row in rows)
        self._lay_out(again=True)

    def on_resize(self, event: events.Resize) -> None:
        self._lay_out()

    def watch_show_vertical_scrollbar(self) -> None:
        # The scrollbar takes columns from the rows: laid out once it is drawn.
        self.call_after_refresh(self._lay_out)

    def _lay_out(self, *, again: bool = False) -> None:
        """The columns for the width the table has now; the rows again when they change
        (``again``: the rows are new)."""
        width = self.scrollable_content_region.width
        natural = [
            max([Content(h).cell_length, *(Content(r[i]).cell_length for r in self.rows_text)])
            for i, h in enumerate(HEADERS)
        ]
        least = [Content(h).cell_length for h in HEADERS]  # a header is never cut
        room = width - 2 * self.cell_padding * len(HEADERS) if width else sum(natural)
        widths = fit_widths(natural, room, least)
        if widths == self._widths and not again:
            return
        self._widths = widths
        self.clear(columns=True)
        for header, w in zip(HEADERS, widths, strict=True):
            self.add_column(header, width=w)
        for values in self.rows_text:
            self.add_row(
                *(
                    Content(v).truncate(w, ellipsis=True)
                    for v, w in zip(values, widths, strict=True)
                )
            )
