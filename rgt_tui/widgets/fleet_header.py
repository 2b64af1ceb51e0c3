"""FleetHeader: the fleet at a glance — hosts up, hosts down, alerts, spend — and hints.

``FleetTally`` keeps the figures per host, so that one host's sample (a hundred a second
with a hundred hosts) updates the header without going over every host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from rgt_tui.domain import cost
from rgt_tui.domain.cost import Span
from rgt_tui.services.telemetry import HostUpdate

DEFAULT_FLEET_HINT = (
    "No fleet file: showing this machine. Press + (or run rgt-tui add) to add a box, "
    "or run rgt-tui demo."
)


def default_fleet_hint(path: Path | None) -> str:
    """The banner over the stand-in fleet: no file at all, or a file naming no host."""
    if path is None:
        return DEFAULT_FLEET_HINT
    return (
        f"{path.name} has no [[hosts]] entry: showing this machine. Press + (or run "
        "rgt-tui add) to add a box."
    )


@dataclass(frozen=True)
class FleetSummary:
    """The counts the header shows; the fleet screen computes them."""

    hosts: int = 0  # boxes: a [[groups]] entry is its boxes' job, counted apart
    shown: int = 0  # boxes after the name filter
    groups: int = 0
    connected: int = 0
    down: int = 0  # reconnecting, lost or never reached
    critical: int = 0
    warnings: int = 0
    cost_per_hour: float = 0.0  # of the hosts not torn down
    unpriced: int = 0  # boxes that bill now with no cost_per_hour: not in the $/h
    # Every host's spend, each stopped at its teardown; to the cent, as shown, so that
    # the header repaints when the figure changes, not at every sample.
    cost_so_far: float = 0.0
    filter: str = ""


# What one host adds to the header: (connected, down, critical alerts, warnings).
HostCounts = tuple[int, int, int, int]
NO_COUNTS: HostCounts = (0, 0, 0, 0)
# A priced host's meter: (cost per hour, billing start, teardown or None, the spans it
# billed nothing: stopped by watch's autostop, then started again).
Meter = tuple[float, float, float | None, tuple[Span, ...]]


def host_counts(update: HostUpdate) -> HostCounts:
    """What ``update`` adds to the header's counts."""
    status = update.connection.status
    return (
        int(status == "connected"),
        int(status in ("reconnecting", "lost", "unreached")),
        sum(1 for a in update.alerts if a.severity == "critical"),
        sum(1 for a in update.alerts if a.severity == "warning"),
    )


class FleetTally:
    """The header's counts and spend, kept per host: a host's update changes its share.

    Counts move by difference: the host's old counts out, its new ones in. Spend cannot
    (every running meter moves with the clock), so it is summed afresh over the meters
    kept here — by the screen once a second and when a meter changes, not per sample: a
    sum over every host for each host's sample grew with the square of the fleet.
    """

    def __init__(self) -> None:
        self._counts: dict[str, HostCounts] = {}
        self._totals: HostCounts = NO_COUNTS
        self._meters: dict[str, Meter] = {}

    @property
    def totals(self) -> HostCounts:
        """(connected, down, critical, warnings) over the hosts counted."""
        return self._totals

    def count(self, host: str, update: HostUpdate | None) -> None:
        """Count ``host`` as ``update`` says (None: leave it out of the counts)."""
        old = self._counts.pop(host, NO_COUNTS)
        new = NO_COUNTS if update is None else host_counts(update)
        if update is not None:
            self._counts[host] = new
        c, d, k, w = self._totals
        self._totals = (
            c - old[0] + new[0],
            d - old[1] + new[1],
            k - old[2] + new[2],
            w - old[3] + new[3],
        )

    def meter(self, host: str, meter: Meter | None) -> bool:
        """Set ``host``'s meter (None: no price, or no known start); whether it changed."""
        if meter == self._meters.get(host):
            return False
        if meter is None:
            self._meters.pop(host, None)
        else:
            self._meters[host] = meter
        return True

    def spent(self, now: float) -> float:
        """The fleet's spend until ``now``: every meter, each stopped at its teardown."""
        return sum(
            cost.cost_so_far(rate, start, now, end, unbilled=unbilled) or 0.0
            for rate, start, end, unbilled in self._meters.values()
        )


class FleetHeader(Widget):
    """One summary line; a notice line while a notice shows (never a toast over the
    panes); a hint line when the fleet is the built-in default."""

    DEFAULT_CSS = """
    FleetHeader { height: auto; }
    """

    summary: reactive[FleetSummary] = reactive(FleetSummary)
    hint: reactive[str] = reactive("", layout=True)
    notice: reactive[str] = reactive("", layout=True)
    problem: reactive[str] = reactive("", layout=True)  # the fleet file's mistake

    def render(self) -> Content:
        s = self.summary
        parts: list[str | tuple[str, str]] = [("rgt-tui", "bold $accent"), "  "]
        hosts = f"{s.hosts} host{'s' if s.hosts != 1 else ''}"
        if s.filter:
            hosts = f"{s.shown} of {hosts} match /{s.filter}"
        elif s.groups:  # "3 hosts ● 2 up" read as a box missing (s35 Slurm hour #10)
            hosts += f" + {s.groups} group{'s' if s.groups != 1 else ''}"
        parts += [hosts, ("  ●", "$success"), f" {s.connected} up"]
        if s.down:
            parts += [("  ✖", "$error"), (f" {s.down} down", "$error")]
        if s.critical:
            parts += [("  ✖", "$error"), (f" {s.critical} critical", "bold $error")]
        if s.warnings:
            parts += [
                ("  ▲", "$warning"),
                (f" {s.warnings} warning{'s' * (s.warnings != 1)}", "$warning"),
            ]
        if s.cost_so_far:
            parts += [("  $", "$foreground-muted"), f"{s.cost_so_far:.2f} so far"]
        if s.cost_per_hour:
            parts += [("  $", "$foreground-muted"), f"{s.cost_per_hour:.2f}/h"]
        if s.unpriced:
            plus = " + " if s.cost_per_hour else "  "
            parts.append((f"{plus}{s.unpriced} unpriced", "$warning"))
        lines = [Content.assemble(*parts)]
        # One line each, cut to the width: they must not grow over the panes either (the
        # whole text is in the notices list, n).
        width = max(10, self.content_size.width or 80)
        if self.problem:
            problem = Content.assemble(("✖ ", "bold $error"), (self.problem, "$error"))
            lines.append(problem.truncate(width, ellipsis=True))
        if self.notice:
            notice = Content.assemble(("⏱ ", "bold $warning"), (self.notice, "$warning"))
            lines.append(notice.truncate(width, ellipsis=True))
        if self.hint:
            lines.append(Content.styled(self.hint, "$foreground-muted italic"))
        return Content("\n").join(lines)
