"""Where rgt-tui keeps its own files, per the XDG base-directory convention.

Nothing here creates a directory: callers create what they write, when they write it, so
importing the package never touches the disk.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

APP_NAME = "rgt-tui"


def _home(environ: Mapping[str, str]) -> Path:
    """The user's home, from ``HOME`` in ``environ`` when it has one (tests set it)."""
    home = environ.get("HOME")
    return Path(home) if home else Path.home()


def _xdg_dir(environ: Mapping[str, str] | None, var: str, fallback: tuple[str, ...]) -> Path:
    """``$var/rgt-tui``, or ``~/<fallback>/rgt-tui`` when ``var`` is unset, empty or relative."""
    env = os.environ if environ is None else environ
    value = env.get(var, "")
    # The XDG spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value) / APP_NAME
    return _home(env).joinpath(*fallback) / APP_NAME


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Directory for journals and other state: ``$XDG_STATE_HOME/rgt-tui`` or ``~/.local/state/rgt-tui``."""
    return _xdg_dir(environ, "XDG_STATE_HOME", (".local", "state"))


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Directory for user settings: ``$XDG_CONFIG_HOME/rgt-tui`` or ``~/.config/rgt-tui``."""
    return _xdg_dir(environ, "XDG_CONFIG_HOME", (".config",))


def journal_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The teardown journal's directory (one file per host) under the state dir."""
    return state_dir(environ) / "journal"
