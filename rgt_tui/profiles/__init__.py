"""The shipped platform profiles (one TOML file each) and their loader."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

from rgt_tui.domain.profiles import Profile, parse_profile

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROFILE_DIR = Path(__file__).parent
DEFAULT_PROFILE = "generic-ssh"


def profile_names() -> tuple[str, ...]:
    """Names of the shipped profiles, for validating a host's ``profile`` key."""
    return tuple(sorted(p.stem for p in PROFILE_DIR.glob("*.toml")))


@cache
def load_profiles() -> dict[str, Profile]:
    """Every shipped profile by name; a malformed file raises ProfileError naming it."""
    profiles = {}
    for path in sorted(PROFILE_DIR.glob("*.toml")):
        profile = parse_profile(tomllib.loads(path.read_text(encoding="utf-8")), str(path))
        profiles[profile.name] = profile
    return profiles


def profile(name: str) -> Profile:
    """One profile by name (the config loader has already validated it)."""
    return load_profiles()[name]
