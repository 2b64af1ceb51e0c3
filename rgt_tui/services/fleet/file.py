"""Find and read the fleet file (``hosts.toml``): the file read the domain does not do.

``resolve_fleet_path`` picks the file (``--hosts``, ``$RGT_HOSTS``, ``./hosts.toml``);
``load_fleet`` reads it and hands its text, with the names of the shipped profiles, to
the pure checker (``rgt_tui.domain.config_parse``). Blocking (small files): callers on
the event loop use ``asyncio.to_thread``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from rgt_tui.domain.config import ENV_VAR, FLEET_FILE_NAME, ConfigError, Fleet, make_fleet
from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.domain.health import Thresholds
from rgt_tui.profiles import KNOWN_PROFILES

__all__ = ["load_fleet", "no_fleet_file_note", "resolve_fleet_path"]


def resolve_fleet_path(cli_path: str | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    """Pick the fleet file: ``--hosts``, else ``$RGT_HOSTS``, else ``./hosts.toml``, else None.

    An explicitly named file that does not exist is an error rather than a silent fall back
    to this machine: the user asked for a fleet and would otherwise see the wrong one.
    """
    for given, key in ((cli_path, "--hosts"), (environ.get(ENV_VAR), f"${ENV_VAR}")):
        if not given:
            continue
        path = Path(given).expanduser()
        path = path if path.is_absolute() else cwd / path
        if path.is_dir():
            raise ConfigError(path, _folder_message(path, key), key=key)
        if not path.is_file():
            odd = _not_a_file(path)
            raise ConfigError(
                path, odd or f"fleet file not found — check the path given in {key}", key=key
            )
        return path
    local = cwd / FLEET_FILE_NAME
    if local.is_file():
        return local
    if local.is_dir():  # a folder (or a link to one) named so: said as --hosts says it
        raise ConfigError(local, _folder_message(local, None))
    odd = _not_a_file(local)
    if odd is not None:  # there, but unreadable as a file: not "no hosts.toml" (h581 #8)
        raise ConfigError(local, odd)
    return None


def _not_a_file(path: Path) -> str | None:
    """Why ``path``, which is not a readable regular file, is there all the same (a link
    to nothing, a link loop, a FIFO, a socket …), with the fix; None when nothing is."""
    if path.is_symlink():
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return (
            f"a symlink to {target}, which is not there (or loops) — point it at the fleet "
            "file, or replace it with the file"
        )
    try:
        path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror}) — check its permissions"
    return "not a regular file (a FIFO, a socket or a device) — use a plain file"


def no_fleet_file_note(cwd: Path) -> str:
    """What a command says when no fleet file was found and this machine stands in: a
    plain `status` or `queue check` in the wrong folder (or a project's subfolder) read
    as a clean fleet of one (hour s17b #9). A hosts.toml in a folder above is named."""
    note = (
        f"no fleet file: no {FLEET_FILE_NAME} in {cwd}, and no --hosts or $RGT_HOSTS; "
        "this machine stands in, as 'local'"
    )
    for up in list(cwd.parents)[:6]:
        found = up / FLEET_FILE_NAME
        if found.is_file():
            rel = os.path.relpath(found, cwd)
            return f"{note} — {found} is one: run from {up}, or pass --hosts {rel}"
    return note


def load_fleet(path: Path | None) -> Fleet:
    """Read and check a fleet file; None (or a file with no host) gives this machine alone."""
    if path is None:
        return make_fleet(None, Path.cwd() / "results", 2.0, 20, Thresholds(), ())
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as file:
            st = os.fstat(file.fileno())  # what was read, whatever is saved after
            text = file.read()
    except FileNotFoundError:
        raise ConfigError(path, "fleet file not found — check the path") from None
    except IsADirectoryError:
        raise ConfigError(path, _folder_message(path, None)) from None
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except OSError as exc:
        raise ConfigError(
            path, f"cannot read the fleet file ({exc}); it must be UTF-8 TOML"
        ) from None
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    try:
        return replace(parse_fleet(path, text, KNOWN_PROFILES), read_stamp=stamp)
    except ConfigError as error:
        if error.partial is not None:  # what goes on despite the mistakes: read then too
            partial_fleet = replace(error.partial.fleet, read_stamp=stamp)
            error.partial = replace(error.partial, fleet=partial_fleet)
        raise


def _folder_message(path: Path, given_in: str | None) -> str:
    """A folder where the fleet file was expected: say so, and name its hosts.toml if any."""
    inside = path / FLEET_FILE_NAME
    where = f" in {given_in}" if given_in else ""
    fix = f"the one in it is {inside}" if inside.is_file() else f"usually {FLEET_FILE_NAME}"
    return f"is a folder, not a fleet file — give the fleet file's path{where} ({fix})"


def _not_utf8(path: Path) -> ConfigError:
    """The line and column of the first byte that is not UTF-8 (the decoder gives only
    its offset in the bytes it was given: the whole file's, read again here)."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
    else:  # changed since: say what was seen
        return ConfigError(path, "the fleet file was not UTF-8 when read; read it again")
    line = data.count(b"\n", 0, start) + 1
    line_start = data.rfind(b"\n", 0, start) + 1
    column = len(data[line_start:start].decode("utf-8", "replace")) + 1  # characters, not bytes
    return ConfigError(
        path,
        f"byte 0x{data[start]:02x} at column {column} is not UTF-8 — the fleet file must be "
        "UTF-8 text: retype that character, or save the file as UTF-8",
        line=line,
    )
