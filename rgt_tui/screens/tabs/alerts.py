"""Alerts tab: each active alert expanded with its gotcha's cause and fix."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from rgt_tui.content.alert_list import alert_line
from rgt_tui.domain.gotchas import gotcha
from rgt_tui.domain.health import Alert
from rgt_tui.screens.tabs.base import DetailTab, HostView


def alert_block(alert: Alert) -> Content:
    """The alert line, then the catalogue entry: title, cause, fix."""
    lines = [alert_line(alert)]
    entry = gotcha(alert.gotcha)
    muted = "$foreground-muted"
    if entry is None:
        lines.append(Content.styled(f"     {alert.gotcha}: not in the catalogue", muted))
    else:
        lines += [
            Content.assemble(("     ", ""), (f"{entry.id} — {entry.title}", "bold")),
            Content.assemble(("     cause: ", muted), entry.cause),
            Content.assemble(("     fix:   ", "bold $accent"), entry.fix),
        ]
    return Content("\n").join(lines)


class AlertsTab(DetailTab):
    """Every active alert, most severe first, with what causes it and what to do."""

    TAB_ID = "alerts"
    TITLE = "Alerts"

    def compose(self) -> ComposeResult:
        yield Static(classes="alerts-body")

    def show(self, view: HostView) -> None:
        alerts = view.update.alerts if view.update else ()
        body = self.query_one(".alerts-body", Static)
        sampled = view.update is not None and view.update.snapshot is not None
        if not alerts:  # never sampled: its alerts are unknown, not none
            body.update(
                Content.styled("✓ no active alerts", "$success")
                if sampled
                else Content.styled("no sample yet: alerts unknown", "$foreground-muted")
            )
            return
        body.update(Content("\n\n").join(alert_block(a) for a in alerts))
