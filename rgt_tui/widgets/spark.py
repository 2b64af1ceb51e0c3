"""Spark: a sparkline of fractions on a fixed 0–100 % scale, one or more rows tall.

Textual's ``Sparkline`` scales to the data's own min and max, which turns a flat 41–42 %
memory line into a cliff; a gauge history must keep its absolute scale so that a full
column means full. Columns are coloured like the gauges (ok / warn / crit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from rgt_tui.content.gauge import CRIT_AT, WARN_AT, gauge_style
from rgt_tui.domain.history import GAP, HostHistory

_LEVELS = " ▁▂▃▄▅▆▇█"
GAP_STYLE = "$foreground-muted"  # a column with no reading


def bucket(values: Sequence[float], width: int) -> list[float]:
    """The newest values, squeezed into ``width`` columns by their maximum (peaks survive;
    a column of gaps only is a gap)."""
    if width <= 0 or not values:
        return []
    values = list(values)  # a deque (the history) cannot be sliced
    if len(values) <= width:
        return values
    step = len(values) / width
    return [
        _peak(values[int(i * step) : max(int(i * step) + 1, int((i + 1) * step))])
        for i in range(width)
    ]


def _peak(chunk: list[float]) -> float:
    known = [v for v in chunk if not math.isnan(v)]
    return max(known) if known else GAP


def spark_rows(
    values: Sequence[float], width: int, height: int = 1, style: str | None = None
) -> list[Content]:
    """``height`` rows of block characters, top row first, right-aligned to ``width``.

    ``style`` None colours each column like a gauge (high is bad: memory, disk); a style
    such as ``"$primary"`` draws all in one colour (high is good: GPU util).
    """
    columns = bucket(values, width)
    pad = width - len(columns)
    rows: list[list[list[str]]] = [[[" " * pad, ""]] for _ in range(height)]
    for value in columns:
        if math.isnan(value):
            # Unknown then (``history.GAP``): a dot on the baseline, so a gap never reads
            # as an idle (blank) column.
            for r, row in enumerate(rows):
                text, st = ("·", GAP_STYLE) if r == height - 1 else (" ", "")
                if row[-1][1] == st:
                    row[-1][0] += text
                else:
                    row.append([text, st])
            continue
        v = max(0.0, min(1.0, value))
        eighths = round(v * height * 8)
        if value > 0 and eighths == 0:
            eighths = 1  # a busy-but-small value must not read as idle
        column_style = style or gauge_style(v, WARN_AT, CRIT_AT)
        for row in range(height):
            level = max(0, min(8, eighths - (height - 1 - row) * 8))
            run = rows[row][-1]
            # Columns of one style share a span: Textual resolves and draws each span
            # apart, and a sparkline redrawn every sample is most of a pane's spans.
            if run[1] == column_style:
                run[0] += _LEVELS[level]
            else:
                rows[row].append([_LEVELS[level], column_style])
    return [Content.assemble(*[(text, st) for text, st in row if text]) for row in rows]


def spark_line(history: HostHistory, width: int) -> Content:
    """``gpu ▂▄▆█ mem ▁▁▂▂``: GPU util (when there are GPUs) and memory, recent samples."""
    if not history.gpu_util:
        return Content.assemble(
            ("mem ", "$foreground-muted"), *spark_rows(history.memory, max(1, width - 4))
        )
    half = max(1, (width - 9) // 2)
    return Content.assemble(
        ("gpu ", "$foreground-muted"),
        *spark_rows(history.gpu_util, half, style="$primary"),
        (" mem ", "$foreground-muted"),
        *spark_rows(history.memory, width - 9 - half),
    )


def spark_block(history: HostHistory, width: int, rows: int) -> list[Content]:
    """``rows`` rows of history: GPU util above memory, each a chart across the width.

    A pane with rows to spare (a few boxes on a big terminal) shows its history taller
    and, being wider, longer (up to the history's length) instead of blank rows.
    """
    if rows <= 1:
        return [spark_line(history, width)]
    charts: list[tuple[str, list[Content]]] = []
    chart_width = max(1, width - 4)
    if history.gpu_util:
        gpu_rows = rows // 2
        charts.append(("gpu ", spark_rows(history.gpu_util, chart_width, gpu_rows, "$primary")))
        rows -= gpu_rows
    charts.append(("mem ", spark_rows(history.memory, chart_width, rows)))
    lines = []
    for label, chart in charts:
        for i, row in enumerate(chart):
            # The label on the chart's top row, the scale's 100 % level: a tall chart of a
            # low value (memory at 5 %) is rows of blanks, and its name above them says
            # whose they are. (A "100%" there, with the name on the bottom row, sat right
            # under the GPU chart's name: an idle GPU read "gpu 100%", a user's hour s42.)
            shown = label if i == 0 else " " * len(label)
            lines.append(Content.assemble((shown, "$foreground-muted"), row))
    return lines


class Spark(Widget):
    """A fixed-scale sparkline of fractions 0–1; as tall as its CSS height."""

    DEFAULT_CSS = """
    Spark { height: 1; }
    """

    data: reactive[tuple[float, ...]] = reactive(())

    def __init__(
        self, placeholder: str = "no data yet", *, style: str | None = None, **kwargs: object
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.placeholder = placeholder
        self.style = style

    def render(self) -> Content:
        width = self.content_size.width
        height = max(1, self.content_size.height)
        if not self.data:
            return Content.styled(self.placeholder, "$foreground-muted")
        return Content("\n").join(spark_rows(self.data, width, height, self.style))
