"""UsageBar: one labelled gauge line, ``label ██████░░░░  45% 1.2T/2.0T``.

The colour follows the fill (``$gauge-ok`` / ``$gauge-warn`` / ``$gauge-crit``), so a
bar turns to the critical colour at the same threshold the health rules alert at. The
drawing is ``content/gauge.py``'s, shared with the content builders.
"""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from rgt_tui.content.gauge import CRIT_AT, WARN_AT, usage_line


class UsageBar(Widget):
    """A labelled gauge with its percentage and a figure such as ``1.2T/2.0T``."""

    DEFAULT_CSS = """
    UsageBar { height: 1; }
    """

    label: reactive[str] = reactive("")
    fraction: reactive[float | None] = reactive(None)
    detail: reactive[str] = reactive("")

    def __init__(
        self,
        label: str = "",
        *,
        label_width: int = 7,
        warn_at: float = WARN_AT,
        crit_at: float = CRIT_AT,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.label_width = label_width
        self.warn_at = warn_at
        self.crit_at = crit_at
        self.set_reactive(UsageBar.label, label)

    def show(self, fraction: float | None, detail: str) -> None:
        """Set the fill and the figure together (one repaint)."""
        self.set_reactive(UsageBar.fraction, fraction)
        self.set_reactive(UsageBar.detail, detail)
        self.refresh()

    def render(self) -> Content:
        return usage_line(
            self.label,
            self.fraction,
            self.detail,
            self.content_size.width or 40,
            label_width=self.label_width,
            warn_at=self.warn_at,
            crit_at=self.crit_at,
        )
