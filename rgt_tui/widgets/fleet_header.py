"""FleetHeader: the fleet at a glance — hosts up, hosts down, alerts, spend — and hints."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

DEFAULT_FLEET_HINT = (
    "No fleet file: showing this machine. Copy hosts.toml and add [[hosts]] blocks, "
    "or run rgt-tui demo."
)


@dataclass(frozen=True)
class FleetSummary:
    """The counts the header shows; the fleet screen computes them."""

    hosts: int = 0
    shown: int = 0  # after the name filter
    connected: int = 0
    down: int = 0  # reconnecting or lost
    critical: int = 0
    warnings: int = 0
    cost_per_hour: float = 0.0  # of the hosts not torn down
    cost_so_far: float = 0.0  # every host's spend, each stopped at its teardown
    filter: str = ""


class FleetHeader(Widget):
    """One summary line, and a hint line when the fleet is the built-in default."""

    DEFAULT_CSS = """
    FleetHeader { height: auto; }
    """

    summary: reactive[FleetSummary] = reactive(FleetSummary)
    hint: reactive[str] = reactive("", layout=True)

    def render(self) -> Content:
        s = self.summary
        parts: list[str | tuple[str, str]] = [("rgt-tui", "bold $accent"), "  "]
        hosts = f"{s.hosts} host{'s' if s.hosts != 1 else ''}"
        if s.filter:
            hosts = f"{s.shown} of {hosts} match /{s.filter}"
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
        line = Content.assemble(*parts)
        if self.hint:
            return Content("\n").join([line, Content.styled(self.hint, "$foreground-muted italic")])
        return line
