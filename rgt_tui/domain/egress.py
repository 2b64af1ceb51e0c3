"""What moving a pull's bytes off a box costs (U14): the price per GB and the plan's line.

A host's ``egress_usd_per_gb`` wins over its profile's (vast.ai prices bandwidth per
host, on the offer's listing); a profile's value is None where the platform publishes no
one price ("set it per host"). Egress is billed per decimal GB (10^9 bytes), so the
line counts in GB, not the binary units of the progress bars. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rgt_tui.domain.units import fmt_bytes

if TYPE_CHECKING:
    from rgt_tui.domain.config import HostConfig
    from rgt_tui.domain.profiles import Profile

GB = 1e9


@dataclass(frozen=True)
class EgressPrice:
    """The price per GB of bytes leaving the box, and where it comes from."""

    usd_per_gb: float | None  # None: not known (neither the host nor its profile sets one)
    source: str  # "host box1" or "vastai profile"


def egress_price(host: HostConfig, profile: Profile) -> EgressPrice:
    """The host's own price when it sets one, else its profile's."""
    if host.egress_usd_per_gb is not None:
        return EgressPrice(host.egress_usd_per_gb, f"host {host.name}")
    return EgressPrice(profile.egress_usd_per_gb, f"{profile.name} profile")


def egress_usd(nbytes: int, price: EgressPrice) -> float | None:
    """What ``nbytes`` cost to move at ``price``; None when the price is not known."""
    if price.usd_per_gb is None:
        return None
    return max(0, nbytes) / GB * price.usd_per_gb


def fmt_gb(nbytes: int) -> str:
    """Decimal units, as egress is billed: 12.4 GB, 380 MB, 12 kB."""
    for unit, size in (("GB", GB), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= size:
            value = nbytes / size
            return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{max(0, nbytes)} B"


def fmt_usd(usd: float) -> str:
    """$1.12; under a cent: < $0.01 (never a misleading $0.00)."""
    return "< $0.01" if 0 < usd < 0.005 else f"${usd:,.2f}"


def cost_text(nbytes: int, price: EgressPrice) -> str:
    """`` · egress ≈ $1.12 for 12.4 GB at $0.09/GB (aws profile)``; "" when the price
    is 0 or nothing moves; a note naming the key when it is not known."""
    if nbytes <= 0:  # nothing moves: no price to name ("$0.00 for 0 B")
        return ""
    usd = egress_usd(nbytes, price)
    if usd is None:
        return f" · egress price not set ({price.source}: set egress_usd_per_gb on the host)"
    if price.usd_per_gb == 0:
        return ""
    return (
        f" · egress ≈ {fmt_usd(usd)} for {fmt_gb(nbytes)} at ${price.usd_per_gb:g}/GB "
        f"({price.source})"
    )


def plan_line(nbytes: int, price: EgressPrice) -> str:
    """The pull plan's line: ``pull: 11.5G to move · egress ≈ $1.12 for 12.4 GB at
    $0.09/GB (aws profile)``; only the bytes when moving them is free. The bytes are in
    the progress line's units (binary, ``172M``: a "180 MB to move" above "0B/172M" read
    as 8 MB lost); the decimal figure only beside a price, as egress is billed."""
    return f"pull: {fmt_bytes(nbytes)} to move{cost_text(nbytes, price)}"


def moved_line(nbytes: int, price: EgressPrice) -> str:
    """A finished pull's line: ``transferred: 11.5G · egress ≈ $1.12 …`` (its plan's ``to
    move`` read as still to come under the pull's outcome; "moved" is a cell's state)."""
    return f"transferred: {fmt_bytes(nbytes)}{cost_text(nbytes, price)}"
