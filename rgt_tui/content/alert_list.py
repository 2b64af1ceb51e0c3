"""A host's active alerts as lines, most severe first, each with its gotcha id."""

from __future__ import annotations

from textual.content import Content

from rgt_tui.content.box_text import shown
from rgt_tui.domain.health import Alert

SEVERITY_STYLE = {
    "critical": "bold $error",
    "warning": "$warning",
    "info": "$foreground-muted",
}
SEVERITY_MARK = {"critical": "✖", "warning": "▲", "info": "●"}


def alert_line(alert: Alert) -> Content:
    """``✖ U7 inodes 95% used on /data …``: the mark and gotcha id carry the severity."""
    style = SEVERITY_STYLE.get(alert.severity, "$foreground")
    return Content.assemble(
        (SEVERITY_MARK.get(alert.severity, "●"), style),
        " ",
        (f"{alert.gotcha:<4}", style),
        " ",
        shown(alert.message),
    )


def alert_lines(alerts: tuple[Alert, ...], max_lines: int, width: int) -> list[Content]:
    """At most ``max_lines`` lines, each cut to ``width``; the overflow counted on the last."""
    if not alerts:
        return [Content.styled("✓ no alerts", "$foreground-muted")]
    shown = alerts if len(alerts) <= max_lines else alerts[: max_lines - 1]
    lines = [alert_line(a).truncate(width, ellipsis=True) for a in shown]
    if len(shown) < len(alerts):
        lines.append(
            Content.styled(f"  … {len(alerts) - len(shown)} more (Enter)", "$foreground-muted")
        )
    return lines
