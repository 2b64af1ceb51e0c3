"""Colour themes: ``themes/*.toml`` files → ``textual.theme.Theme``, and the saved choice.

A theme file holds the keys of ``textual.theme.Theme`` (``name`` defaults to the file's
stem) and an optional ``[variables]`` table for rgt-tui's own CSS variables
(``gauge-ok``, ``gauge-warn``, ``gauge-crit``, ``gauge-empty``) or any Textual one.
Bundled themes come first, then the user's from ``$XDG_CONFIG_HOME/rgt-tui/themes``, so
a user file with the same name replaces a bundled one. A broken file is returned as an
error string and skipped; loading never raises (posting's rule: report, never fatal).
A ``--theme NAME`` that names no theme is refused before the app starts
(``unknown_theme``), listing rgt-tui's own themes apart from Textual's built-in ones.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import BUILTIN_THEMES, Theme

from rgt_tui import paths
from rgt_tui.fsutil import atomic_write

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

DEFAULT_THEME = "dark"
SETTINGS_FILE = "settings.json"
THEME_VARIABLES = ("gauge-ok", "gauge-warn", "gauge-crit", "gauge-empty")

_COLOUR_KEYS = (
    "primary", "secondary", "warning", "error", "success", "accent",
    "foreground", "background", "surface", "panel", "boost",
)  # fmt: skip
_FLOAT_KEYS = ("luminosity_spread", "text_alpha")
_BOOL_KEYS = ("dark", "ansi")
_ALLOWED = {f.name for f in fields(Theme)}


def bundled_themes_dir() -> Path:
    """The ``themes/`` folder shipped with rgt-tui.

    The product layout keeps it at the project root, next to the package: found there in
    a source checkout or an editable install. A wheel carries it as data files, installed
    under ``<prefix>/share/rgt-tui/themes``; a build that puts it inside the package
    (``rgt_tui/themes``) is accepted too.
    """
    package = Path(__file__).resolve().parent
    candidates = (
        package.parent / "themes",
        Path(sys.prefix) / "share" / "rgt-tui" / "themes",
        package / "themes",
    )
    for folder in candidates:
        if folder.is_dir():
            return folder
    return candidates[0]


def user_themes_dir(config_dir: Path | None = None) -> Path:
    """Where the user's own theme files live: ``<config dir>/themes``."""
    return (config_dir or paths.config_dir()) / "themes"


def theme_from_mapping(data: dict[str, Any], default_name: str) -> Theme:
    """Build a Theme from one parsed file; ValueError says which key is wrong and why."""
    unknown = sorted(set(data) - _ALLOWED)
    if unknown:
        raise ValueError(
            f"unknown key {unknown[0]!r}; expected some of {', '.join(sorted(_ALLOWED))}"
        )
    values = dict(data)
    values.setdefault("name", default_name)
    if not isinstance(values["name"], str) or not values["name"].strip():
        raise ValueError("'name' must be a non-empty string")
    if "primary" not in values:
        raise ValueError("'primary' is required (a colour such as \"#4C9AFF\")")
    for key in _COLOUR_KEYS:
        if key in values:
            _check_colour(key, values[key])
    for key in _FLOAT_KEYS:
        if key in values and (
            isinstance(values[key], bool) or not isinstance(values[key], (int, float))
        ):
            raise ValueError(f"{key!r} must be a number, got {values[key]!r}")
    for key in _BOOL_KEYS:
        if key in values and not isinstance(values[key], bool):
            raise ValueError(f"{key!r} must be true or false, got {values[key]!r}")
    variables = values.get("variables", {})
    if not isinstance(variables, dict):
        raise ValueError('[variables] must be a table of name = "value"')
    for key, value in variables.items():
        if not isinstance(value, str):
            raise ValueError(f"variables.{key} must be a string, got {value!r}")
        if key in THEME_VARIABLES:
            _check_colour(f"variables.{key}", value)
    return Theme(**values)


def _check_colour(key: str, value: object) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be a colour string, got {value!r}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ValueError(f'{key!r}: {value!r} is not a colour (try "#RRGGBB")') from None


def load_theme_file(path: Path) -> Theme:
    """Read one theme file; ValueError with the reason on any problem."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read it ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML ({exc})") from None
    return theme_from_mapping(data, path.stem)


def load_themes(dirs: Iterable[Path]) -> tuple[list[Theme], list[str]]:
    """Every theme in ``dirs`` (later dirs override earlier names) and one error per bad file."""
    themes: dict[str, Theme] = {}
    errors: list[str] = []
    for folder in dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                theme = load_theme_file(path)
            except ValueError as exc:
                errors.append(f"{path}: {exc}")
                continue
            themes[theme.name] = theme
    return list(themes.values()), errors


def unknown_theme(name: str, config_dir: Path | None = None) -> tuple[str, str] | None:
    """None when ``--theme name`` names a theme (bundled, the user's, or Textual's);
    else what to say and the fix, listing rgt-tui's themes apart from Textual's."""
    bundled, _ = load_themes([bundled_themes_dir()])
    folder = user_themes_dir(config_dir)
    user, errors = load_themes([folder])
    mine = [t.name for t in user]
    ours = [t.name for t in bundled if t.name not in mine]
    if name in (*ours, *mine) or name in BUILTIN_THEMES:
        return None
    broken = [e for e in errors if Path(e.split(": ", 1)[0]).stem == name]
    groups = [("rgt-tui's own", ours), (f"yours, from {folder}", mine)]
    return unknown_theme_message(name, groups, builtin_theme_names(ours + mine), broken)


def builtin_theme_names(own: Iterable[str] = ()) -> list[str]:
    """Textual's built-in themes, sorted, less any that ``own`` replaces."""
    replaced = set(own)
    return sorted(n for n in BUILTIN_THEMES if n not in replaced)


def unknown_theme_message(
    name: str,
    groups: Sequence[tuple[str, Sequence[str]]],
    builtin: Sequence[str],
    broken: Sequence[str] = (),
) -> tuple[str, str]:
    """``--theme name`` names no theme: the message (each group of rgt-tui's own themes,
    then Textual's built-in ones, one line each) and the fix (the closest name)."""
    lines = [f"--theme {name}: no such theme"]
    lines += [f"  {why} — fix that file to use it" for why in broken]
    lines += [f"  {label}: {', '.join(names) or 'none'}" for label, names in groups]
    lines.append(f"  Textual's built-in: {', '.join(builtin)}")
    own = [n for _, names in groups for n in names]
    close = difflib.get_close_matches(name, [*own, *builtin], n=1)
    if broken:
        fix = "correct the theme file named above, or pick a theme listed"
    elif close:
        fix = f"did you mean --theme {close[0]}?"
    else:
        fix = f"for example --theme {(own or builtin)[0]}"
    return "\n".join(lines), fix


def load_settings(config_dir: Path | None = None) -> dict[str, Any]:
    """The saved settings; an unreadable or corrupt file counts as no settings."""
    path = (config_dir or paths.config_dir()) / SETTINGS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def saved_theme(config_dir: Path | None = None) -> str | None:
    """The theme name chosen last time, if any."""
    name = load_settings(config_dir).get("theme")
    return name if isinstance(name, str) else None


def save_theme(name: str, config_dir: Path | None = None) -> Path:
    """Remember ``name`` as the theme; written atomically so a crash never corrupts settings."""
    folder = config_dir or paths.config_dir()
    folder.mkdir(parents=True, exist_ok=True)
    settings = load_settings(folder)
    settings["theme"] = name
    path = folder / SETTINGS_FILE
    atomic_write(path, json.dumps(settings, indent=2) + "\n")
    return path
