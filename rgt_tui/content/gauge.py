"""Gauges drawn as text: ``label ██████░░░░  45% 1.2T/2.0T``.

The colour follows the fill (``$gauge-ok`` / ``$gauge-warn`` / ``$gauge-crit``), so a
bar turns to the critical colour at the same threshold the health rules alert at.
``bar_content`` draws the bar alone, for lines that compose several figures; the
``UsageBar`` widget (``widgets/usage_bar.py``) and the content builders both draw with
these, so the content layer never reaches up into a widget.
"""

from __future__ import annotations

from textual.content import Content

_EIGHTHS = " ▏▎▍▌▋▊▉"
WARN_AT = 0.75
CRIT_AT = 0.90


def gauge_style(fraction: float | None, warn_at: float = WARN_AT, crit_at: float = CRIT_AT) -> str:
    """The theme variable a value of ``fraction`` is drawn in."""
    if fraction is None:
        return "$foreground-muted"
    if fraction >= crit_at:
        return "$gauge-crit"
    if fraction >= warn_at:
        return "$gauge-warn"
    return "$gauge-ok"


def bar_content(
    fraction: float | None, width: int, *, warn_at: float = WARN_AT, crit_at: float = CRIT_AT
) -> Content:
    """A ``width``-cell bar filled to ``fraction`` (eighth-cell precision); empty when unknown."""
    width = max(1, width)
    if fraction is None:
        return Content.styled("░" * width, "$gauge-empty")
    style = gauge_style(fraction, warn_at, crit_at)
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    pieces: list[tuple[str, str]] = [("█" * full, style)]
    if part and full < width:
        pieces.append((_EIGHTHS[part], style))
        full += 1
    pieces.append(("░" * (width - full), "$gauge-empty"))
    return Content.assemble(*[p for p in pieces if p[0]])


def pct_text(fraction: float | None) -> str:
    """``' 45%'``: four cells, so columns of bars line up."""
    return "  --" if fraction is None else f"{fraction * 100:>3.0f}%"


def usage_line(
    label: str,
    fraction: float | None,
    detail: str,
    width: int,
    *,
    label_width: int = 7,
    warn_at: float = WARN_AT,
    crit_at: float = CRIT_AT,
) -> Content:
    """``label ██████░░░░  45% 1.2T/2.0T`` filling ``width`` cells."""
    label = label[:label_width].ljust(label_width)
    pct = pct_text(fraction)
    detail = f" {detail}" if detail else ""
    bar_width = max(3, width - len(label) - len(pct) - len(detail) - 1)
    return Content.assemble(
        (label, "$foreground-muted"),
        bar_content(fraction, bar_width, warn_at=warn_at, crit_at=crit_at),
        " ",
        (pct, gauge_style(fraction, warn_at, crit_at)),
        detail,
    )
