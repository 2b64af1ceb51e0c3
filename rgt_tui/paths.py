"""Where rgt-tui keeps its own files, per the XDG base-directory convention.

Nothing here creates a directory: callers create what they write, when they write it, so
importing the package never touches the disk.
"""

from __future__ import annotations

import hashlib
import os
import re
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


def journal_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where every fleet's journal folder lives: ``<state dir>/journal``.

    The ``<host>.json`` files directly in it are from rgt-tui before journals were kept
    per fleet: they are left where they are and never read (see ``journal_dir``).
    """
    return state_dir(environ) / "journal"


# The fleet with no fleet file (this machine alone) has a folder of its own.
LOCAL_FLEET_KEY = "local"
_KEY_STEM = re.compile(r"[^A-Za-z0-9_-]+")


def fleet_key(fleet_path: Path | str | None) -> str:
    """The name of a fleet's journal folder: ``<file stem>-<hash of its resolved path>``.

    Two fleet files are two fleets, whatever hosts they list, so the key is the file's
    real location (symlinks resolved: a command line and the TUI reaching one file by
    two paths share its records); the stem is there only for a person reading the
    folder. ``None`` (no fleet file: this machine alone) is ``local``. Moving or
    renaming the fleet file starts a fresh journal (the gate starts closed).
    """
    if fleet_path is None:
        return LOCAL_FLEET_KEY
    resolved = Path(fleet_path).expanduser().resolve()
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:12]
    stem = _KEY_STEM.sub("_", resolved.stem).strip("_")[:40] or "fleet"
    return f"{stem}-{digest}"


def journal_dir(fleet_path: Path | str | None, environ: Mapping[str, str] | None = None) -> Path:
    """The teardown journal of the fleet whose file is ``fleet_path`` (one file per host):
    ``<state dir>/journal/<fleet_key>/``, the one place every reader and writer of a
    fleet's records (TUI, command line, status) opens.

    Records belong to a fleet and a box, never to a bare host name: a ``gpu1`` in two
    fleet files (or in a demo beside the user's fleet) has two journals. Records kept
    at the old flat location (``journal/<host>.json``) are not read: nothing in them
    says which fleet they were of, and attaching one fleet's teardown to another's box
    could open or close the wrong gate; with none read, the gate starts closed.
    """
    return journal_root(environ) / fleet_key(fleet_path)
