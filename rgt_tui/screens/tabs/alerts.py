"""Alerts tab: each active alert expanded with its gotcha's cause and fix."""

from __future__ import annotations

from dataclasses import replace

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from rgt_tui.content.alert_list import alert_line
from rgt_tui.domain.gotchas import gotcha
from rgt_tui.domain.health import Alert
from rgt_tui.domain.torn_down import STILL_ANSWERS
from rgt_tui.screens.tabs.base import DetailTab, HostView

# Alerts whose fix is not their gotcha's: a box that answers after its teardown is GEN1's
# leak, and the catalogue's "pull, verify and tear it down" was done (s37 money hour #1).
OWN_FIX = {
    STILL_ANSWERS: "destroy it in the provider's console (or check that the teardown "
    "command destroys, not stops); then it no longer answers",
}


def alert_block(alert: Alert) -> Content:
    """The alert line, then the catalogue entry: title, cause, fix."""
    lines = [alert_line(alert)]
    entry = gotcha(alert.gotcha)
    if entry is not None and alert.id in OWN_FIX:
        entry = replace(entry, fix=OWN_FIX[alert.id])
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
