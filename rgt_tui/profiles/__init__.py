"""The shipped platform profiles and their one loader.

One TOML file per platform sits beside this module (package data); a file's stem is the
profile's name, and ``KNOWN_PROFILES`` is the files present, listed once at import (what
a host's ``profile`` key is checked against). ``load_profiles`` reads and checks them all
once; a malformed file raises ProfileError naming the file and the key. The model is
``rgt_tui.domain.profiles.Profile``; the default, ``DEFAULT_PROFILE``, is defined there.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

from rgt_tui.domain.config_watch import parse_duration
from rgt_tui.domain.profiles import DEFAULT_PROFILE, Profile

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROFILE_DIR = Path(__file__).parent
KNOWN_PROFILES = tuple(sorted(p.stem for p in PROFILE_DIR.glob("*.toml")))

REQUIRED = (
    "name", "title", "teardown_verb", "irreversible", "destroys", "stop_survives",
    "meter_stop_survives", "keeps_billing", "danger_clocks", "spot_grace",
)  # fmt: skip
# Optional keys: the auto-release clock, and where a durable dir survives the teardown verb.
OPTIONAL = ("release_after_off_days", "durable_under", "durable_not_under", "durable_own_mount")
# What a durable dir on the root filesystem loses, and the fix (with durable_own_mount).
OPTIONAL += ("durable_mount_lost", "durable_mount_fix")
# Whether the platform's stop can be undone (``Profile.reversible_stop``; absent: false,
# so ``watch`` never runs a stop on a platform nobody has said has one).
OPTIONAL += ("reversible_stop", "stop_example")
# The default cadence of periodic pulls (``Profile.pull_every``), a duration: "30m".
OPTIONAL += ("pull_every",)
# What `rgt-tui add` offers a new host (``Profile.suggested_workdir``, ``…_durable_dir``).
OPTIONAL += ("suggested_workdir", "suggested_durable_dir")
# USD per GB leaving a box (``Profile.egress_usd_per_gb``, U14); absent: not published.
OPTIONAL += ("egress_usd_per_gb",)
# Interruptible boxes (issue 40): whether the platform rents them, and the grace (seconds)
# behind ``spot_grace``'s words (``Profile.interruptible_possible``, ``…spot_grace_s``).
OPTIONAL += ("interruptible_possible", "spot_grace_s")
# Mean hours between preemptions (``Profile.preempt_mtbf_hours``; Young/Daly's MTBF).
OPTIONAL += ("preempt_mtbf_hours",)
# Behind the GFW (``Profile.china_mirrors``) and its mirrors' defaults (generic-ssh §3).
OPTIONAL += ("china_mirrors", "pip_index_url", "hf_endpoint")


class ProfileError(ValueError):
    """A profile data file is malformed; the message names the file and the key."""


def parse_profile(data: dict[str, Any], source: str) -> Profile:
    """A Profile from one decoded TOML file; ProfileError naming ``source`` otherwise."""
    missing = [k for k in REQUIRED if k not in data]
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if missing or unknown:
        raise ProfileError(f"{source}: missing keys {missing} / unknown keys {unknown}")
    for key in ("keeps_billing", "danger_clocks", "durable_under", "durable_not_under"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise ProfileError(f"{source}: {key} must be a list of strings")
    for key in (
        "irreversible",
        "durable_own_mount",
        "reversible_stop",
        "interruptible_possible",
        "china_mirrors",
    ):
        if key in data and not isinstance(data[key], bool):
            raise ProfileError(f"{source}: {key} must be true or false")
    if data.get("durable_own_mount"):
        for key in ("durable_mount_lost", "durable_mount_fix"):
            if not isinstance(data.get(key), str) or not data[key].strip():
                raise ProfileError(f"{source}: durable_own_mount needs {key}, as text")
    days = data.get("release_after_off_days")
    if days is not None and (
        isinstance(days, bool) or not isinstance(days, (int, float)) or days <= 0
    ):
        raise ProfileError(f"{source}: release_after_off_days must be a number of days > 0")
    every = data.get("pull_every")  # "30m", or seconds
    if isinstance(every, str):
        every_s = parse_duration(every)
    elif isinstance(every, (int, float)) and not isinstance(every, bool) and every > 0:
        every_s = float(every)
    else:
        every_s = None
    if every is not None and every_s is None:
        raise ProfileError(f'{source}: pull_every must be a duration such as "30m", not {every!r}')
    egress = data.get("egress_usd_per_gb")
    if egress is not None and (
        isinstance(egress, bool) or not isinstance(egress, (int, float)) or not 0 <= egress < 1e6
    ):
        raise ProfileError(f"{source}: egress_usd_per_gb must be a price per GB ≥ 0")
    grace = data.get("spot_grace_s")
    if grace is not None and (
        isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 <= grace < 86400
    ):
        raise ProfileError(f"{source}: spot_grace_s must be a number of seconds ≥ 0")
    mtbf = data.get("preempt_mtbf_hours")
    if mtbf is not None and (
        isinstance(mtbf, bool) or not isinstance(mtbf, (int, float)) or not 0 < mtbf < 1e5
    ):
        raise ProfileError(f"{source}: preempt_mtbf_hours must be a number of hours > 0")
    fields = {k: data[k] for k in REQUIRED}
    fields["keeps_billing"] = tuple(data["keeps_billing"])
    fields["danger_clocks"] = tuple(data["danger_clocks"])
    return Profile(
        **fields,
        release_after_off_days=days,
        durable_under=tuple(data.get("durable_under", ())),
        durable_not_under=tuple(data.get("durable_not_under", ())),
        durable_own_mount=data.get("durable_own_mount", False),
        durable_mount_lost=data.get("durable_mount_lost", ""),
        durable_mount_fix=data.get("durable_mount_fix", ""),
        reversible_stop=data.get("reversible_stop", False),
        stop_example=_text(data, "stop_example", source),
        pull_every=every_s,
        egress_usd_per_gb=None if egress is None else float(egress),
        interruptible_possible=data.get("interruptible_possible", False),
        spot_grace_s=None if grace is None else float(grace),
        preempt_mtbf_hours=None if mtbf is None else float(mtbf),
        china_mirrors=data.get("china_mirrors", False),
        **_mirrors(data, source),
        **_suggested(data, source),
    )


def _text(data: dict[str, Any], key: str, source: str) -> str:
    """An optional text key ("" when absent)."""
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ProfileError(f"{source}: {key} must be text")
    return value


def _suggested(data: dict[str, Any], source: str) -> dict[str, str]:
    """The folders `rgt-tui add` offers, where the file names them (else the model's)."""
    found = {}
    for key in ("suggested_workdir", "suggested_durable_dir"):
        if key in data:
            value = data[key]
            if not isinstance(value, str) or not value.strip():
                raise ProfileError(f"{source}: {key} must be a folder on the box, as text")
            found[key] = value
    return found


def _mirrors(data: dict[str, Any], source: str) -> dict[str, str]:
    """The mirror defaults the file names (``pip_index_url``, ``hf_endpoint``)."""
    found = {}
    for key in ("pip_index_url", "hf_endpoint"):
        if key in data:
            value = data[key]
            if not isinstance(value, str) or not value.startswith(("https://", "http://")):
                raise ProfileError(f"{source}: {key} must be an http(s) address")
            found[key] = value.rstrip("/")
    return found


def read_profiles(folder: Path) -> dict[str, Profile]:
    """Every ``*.toml`` profile in ``folder`` by name; ProfileError naming the file when
    one is malformed or its ``name`` is not its file's stem (the name hosts use)."""
    profiles = {}
    for path in sorted(folder.glob("*.toml")):
        profile = parse_profile(tomllib.loads(path.read_text(encoding="utf-8")), str(path))
        if profile.name != path.stem:
            raise ProfileError(
                f"{path}: name = {profile.name!r} — it must be the file's name, {path.stem!r}"
            )
        profiles[profile.name] = profile
    return profiles


@cache
def load_profiles() -> dict[str, Profile]:
    """Every shipped profile by name (read once)."""
    return read_profiles(PROFILE_DIR)


def profile(name: str) -> Profile:
    """One profile by name (the fleet file's reader has already checked the name)."""
    return load_profiles()[name]


__all__ = [
    "DEFAULT_PROFILE", "KNOWN_PROFILES", "PROFILE_DIR", "ProfileError", "load_profiles",
    "parse_profile", "profile", "read_profiles",
]  # fmt: skip
