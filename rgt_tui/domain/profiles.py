"""Platform profiles: what a teardown verb destroys and what keeps billing, as data.

One TOML file per platform lives in ``rgt_tui/profiles/`` (facts from
reference/platforms.md). This module only parses and validates; reading the files is
``rgt_tui.profiles.load_profiles``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The shipped profile files (rgt_tui/profiles/*.toml); a test keeps this list in step.
KNOWN_PROFILES = (
    "autodl", "china", "generic-ssh", "kubernetes", "lambda", "paperspace", "runpod",
    "slurm", "vastai",
)  # fmt: skip

REQUIRED = (
    "name", "title", "teardown_verb", "irreversible", "destroys", "stop_survives",
    "meter_stop_survives", "keeps_billing", "danger_clocks", "spot_grace",
)  # fmt: skip


@dataclass(frozen=True)
class Profile:
    """The facts of one platform that teardown and the danger clocks show."""

    name: str
    title: str
    teardown_verb: str
    irreversible: bool
    destroys: str
    stop_survives: str
    meter_stop_survives: str
    keeps_billing: tuple[str, ...]
    danger_clocks: tuple[str, ...]
    spot_grace: str
    release_after_off_days: float | None = None  # auto-release of a powered-off box

    @property
    def clock_lines(self) -> tuple[str, ...]:
        """The danger clocks, then the spot grace: what the platform does to a box and a
        run without asking, and how long a run gets to save itself when interrupted."""
        return (*self.danger_clocks, f"spot grace: {self.spot_grace}")


def danger_clock_note(profile: Profile) -> str:
    """The profile's clocks and spot grace as bullet lines, for a notification."""
    return "\n".join(f"• {line}" for line in profile.clock_lines)


class ProfileError(ValueError):
    """A profile data file is malformed; the message names the file and the key."""


def parse_profile(data: dict[str, Any], source: str) -> Profile:
    """A Profile from one decoded TOML file; ProfileError naming ``source`` otherwise."""
    missing = [k for k in REQUIRED if k not in data]
    unknown = sorted(set(data) - set(REQUIRED) - {"release_after_off_days"})
    if missing or unknown:
        raise ProfileError(f"{source}: missing keys {missing} / unknown keys {unknown}")
    for key in ("keeps_billing", "danger_clocks"):
        if not isinstance(data[key], list) or not all(isinstance(x, str) for x in data[key]):
            raise ProfileError(f"{source}: {key} must be a list of strings")
    if not isinstance(data["irreversible"], bool):
        raise ProfileError(f"{source}: irreversible must be true or false")
    days = data.get("release_after_off_days")
    if days is not None and (
        isinstance(days, bool) or not isinstance(days, (int, float)) or days <= 0
    ):
        raise ProfileError(f"{source}: release_after_off_days must be a number of days > 0")
    fields = {k: data[k] for k in REQUIRED}
    fields["keeps_billing"] = tuple(data["keeps_billing"])
    fields["danger_clocks"] = tuple(data["danger_clocks"])
    return Profile(**fields, release_after_off_days=days)
