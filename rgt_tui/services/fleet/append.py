"""Appending one ``[[hosts]]`` block to a fleet file, leaving every byte before it alone.

The file's own text is kept as it is and the new block (rendered by tomlkit, so every
value is quoted and escaped as TOML wants) goes after it: comments, blank lines and
key order written by hand are never rewritten. The result is loaded with
``load_fleet`` before it replaces the file (temp file beside it, fsync, rename), so a
file that would not load is never written, and a file changed by someone else while
the block was being prepared is not overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Table

from rgt_tui.domain.config import (
    ENV_VAR,
    FLEET_FILE_NAME,
    ConfigError,
    Fleet,
    HostConfig,
    SshTarget,
)
from rgt_tui.domain.toml_lines import LineIndex
from rgt_tui.fsutil import replacing
from rgt_tui.services.fleet.file import load_fleet, resolve_fleet_path

# The header of a fleet file `rgt-tui add` creates (the shipped hosts.example.toml explains more).
NEW_FILE_HEADER = (
    "## rgt-tui fleet file: one [[hosts]] block per rented box.\n"
    "## `rgt-tui add` and the TUI's add screen append blocks here; every key is explained\n"
    "## in docs/fleet-file.md and in hosts.example.toml, both shipped with rgt-tui.\n"
)


class AddRefused(ValueError):
    """Nothing was written: ``message`` says why, ``fix`` what to do, ``field`` which
    input was wrong (``target``, ``name``, ``profile``, ``cost``, ``file``)."""

    def __init__(self, message: str, fix: str | None = None, *, field: str = "file") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.field = field

    def __str__(self) -> str:
        return self.message + (f" — {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class LaunchKeys:
    """The keys a first launch needs (issue 43), as the new block carries them: where
    the code is synced and cells run, where results go and are pulled from, the local
    code tree, the local queue file and the run template (None: the key is left out)."""

    workdir: str
    durable_dir: str
    pull: tuple[str, ...]
    code: str | None = None
    queue: str | None = None
    run: str | None = None


@dataclass(frozen=True)
class NewHost:
    """What the user asked to add: one box, before it is written."""

    name: str
    target: SshTarget | None  # None: this machine (``ssh = "local"``)
    profile: str
    cost_per_hour: float | None = None
    identity_file: str | None = None  # as typed (``~`` kept): the loader expands it
    # The fleet's own known_hosts (``fleet_known_hosts``), when every host already names
    # one: the new box's key is checked and trusted there, and its block names it too.
    known_hosts: Path | None = None
    host_key: str = "strict"  # or "accept-new"
    pasted: str | None = None  # the text the user pasted, quoted in the block's comment
    fingerprint: str | None = None  # the host key seen when it was checked, for the comment
    keys: LaunchKeys | None = None  # None: the block only hints at workdir and pull

    @property
    def ssh(self) -> str:
        """The block's ``ssh`` value."""
        return "local" if self.target is None else str(self.target)


@dataclass(frozen=True)
class FleetFile:
    """A fleet file as it is now (or the one to create): its text and its host names."""

    path: Path
    text: str  # "" when the file does not exist yet
    exists: bool
    names: Mapping[str, int | None] = field(default_factory=dict)  # name -> its line
    fleet: Fleet | None = None  # as loaded; None when the file does not exist yet

    def where(self, name: str) -> str:
        """``hosts.toml:12`` for a name already used."""
        line = self.names.get(name)
        return f"{self.path}:{line}" if line is not None else str(self.path)


def fleet_file_for_add(cli_path: str | None, environ: Mapping[str, str], cwd: Path) -> Path:
    """The fleet file to add to: the one ``rgt-tui`` opens (``--hosts``, ``$RGT_HOSTS``,
    ``./hosts.toml``); when none exists, the one to create: the file named, else
    ``./hosts.toml``."""
    try:
        found = resolve_fleet_path(cli_path, environ, cwd)
    except ConfigError:  # named but missing: that is the file to create
        named = cli_path or environ.get(ENV_VAR)
        if not named:
            raise  # ./hosts.toml is there but is no file (a link to nothing): said, not written through
        given = Path(named).expanduser()
        return given if given.is_absolute() else cwd / given
    return found if found is not None else cwd / FLEET_FILE_NAME


def read_fleet_file(path: Path) -> FleetFile:
    """The fleet file's text and host names; AddRefused when it exists and does not
    load (a block appended to a broken file could not be checked)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")  # bytes: "\r\n" stays as it is written
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise AddRefused(
                f"cannot create {path}: its folder does not exist",
                "create the folder, or name another file with --hosts",
            ) from None
        return FleetFile(path, "", False)
    except (OSError, UnicodeDecodeError) as exc:
        raise AddRefused(f"cannot read {path} ({exc})", "check the file") from None
    try:
        fleet = load_fleet(path)
    except ConfigError as exc:
        raise AddRefused(
            f"the fleet file does not load, so nothing can be added to it:\n{exc}",
            "fix these mistakes first",
        ) from None
    index = LineIndex(text)
    names: dict[str, int | None] = {}
    if not fleet.is_default:
        for i, host in enumerate(fleet.hosts):
            names[host.name] = index.line(f"hosts[{i}]", "name") or host.line
    _check_hosts_table(path, text)
    return FleetFile(path, text, True, names, fleet)


def _check_hosts_table(path: Path, text: str) -> None:
    """A ``[[hosts]]`` block can only be added after ``[[hosts]]`` blocks (or none)."""
    try:
        # A byte-order mark, which loading reads past, is no TOML to tomlkit (h555 #2);
        # the block is appended after the file's text, the mark left as it is.
        hosts = tomlkit.parse(text.removeprefix("\ufeff")).get("hosts")
    except TOMLKitError as exc:  # tomllib read it: tomlkit should too
        raise AddRefused(f"cannot read {path} as TOML ({exc})", "check the file") from None
    if hosts is not None and not isinstance(hosts, AoT):
        raise AddRefused(
            f"{path} writes its hosts as 'hosts = [...]', so a [[hosts]] block cannot be added",
            "rewrite each host as a [[hosts]] block, then add again",
        )


def render_block(new: NewHost, now: datetime | None = None) -> str:
    """The new host's ``[[hosts]]`` block, with comments saying where it came from and
    which keys are worth setting next."""
    now = now or datetime.now(timezone.utc)
    head = f"{new.name}: added by rgt-tui add on {now:%Y-%m-%d %H:%M} UTC"
    comments = [head + (f", from: {_one_line(new.pasted)}" if new.pasted else "")]
    if new.fingerprint:
        comments.append(f"host key when added: {_one_line(new.fingerprint)}")
    table = tomlkit.table()
    table.add("name", new.name)
    table.add("ssh", new.ssh)
    if new.identity_file is not None:
        table.add("identity_file", new.identity_file)
    if new.known_hosts is not None:
        table.add("known_hosts", str(new.known_hosts))
        table["known_hosts"].comment("as every other host in this file")
    if new.host_key != "strict":
        table.add("host_key", new.host_key)
        table["host_key"].comment("the first key the box shows is recorded; a changed one refused")
    table.add("profile", new.profile)
    if new.cost_per_hour is not None:
        table.add("cost_per_hour", new.cost_per_hour)
    if new.keys is not None:
        _add_launch_keys(table, new.keys)
    else:
        table.add(tomlkit.comment('workdir = "/workspace"        # where runs start (default "~")'))
        table.add(
            tomlkit.comment(
                'pull = ["/workspace/runs"]    # folders to pull (a whole home is never pulled)'
            )
        )
    aot = tomlkit.aot()
    aot.append(table)
    doc = tomlkit.document()
    doc.add("hosts", aot)
    return "".join(f"# {line}\n" for line in comments) + tomlkit.dumps(doc)


def _add_launch_keys(table: Table, keys: LaunchKeys) -> None:
    """The launch keys, each with a comment saying what it is for."""
    table.add("workdir", keys.workdir)
    table["workdir"].comment("on the box: the code is synced here, cells run here")
    if keys.code is not None:
        table.add("code", keys.code)
        table["code"].comment("this machine's code tree, sent by `rgt-tui sync` (y)")
    if keys.queue is not None:
        table.add("queue", keys.queue)
        table["queue"].comment("one cell per line: <config> <task> [epochs]")
    if keys.run is not None:
        table.add("run", keys.run)
        table["run"].comment("one cell: {cfg} {task} {epochs} {name} {out}, bare")
    table.add("durable_dir", keys.durable_dir)
    table["durable_dir"].comment("results: {out} is <durable_dir>/<cell>")
    table.add("pull", list(keys.pull))
    table["pull"].comment("folders `rgt-tui pull` (p) brings home")


def _one_line(text: str) -> str:
    """``text`` on one line, without control characters: a comment cannot hold more."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def appended_text(current: FleetFile, block: str) -> str:
    """The file's text with ``block`` after it: the old text unchanged, then a blank line
    and the block, in the file's own line endings."""
    text = current.text if current.exists else NEW_FILE_HEADER
    eol = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += eol
    if text and not text.endswith(eol * 2):
        text += eol
    return text + block.replace("\n", eol)


def add_to_fleet(new: NewHost, path: Path) -> HostConfig:
    """Append ``new`` to the fleet file at ``path`` (created when missing) and return it
    as the loaded file now has it. AddRefused, with nothing written, for a name already
    used (naming its line), a file that does not load before or after, or a file that
    changed while this ran. Blocking: call it from a thread in an event loop."""
    current = read_fleet_file(path)
    refused = name_taken(new.name, current)
    if refused is not None:
        raise refused
    text = appended_text(current, render_block(new))
    # a symlinked fleet file stays a symlink; a new one is 0600 (teardown commands, API keys)
    with replacing(current.path, text) as temp:
        try:
            fleet = load_fleet(temp)
        except ConfigError as exc:
            shown = str(exc).replace(str(temp), str(current.path))
            raise AddRefused(
                f"the new block would not load, so nothing was written:\n{shown}",
                "check the values given",
            ) from None
        if fleet.is_default or fleet.hosts[-1].name != new.name:  # pragma: no cover
            raise AddRefused(f"the new block for {new.name!r} did not load as the last host")
        if _current_text(current.path) != (current.text if current.exists else None):
            raise AddRefused(
                f"{current.path} changed while the host was being added; nothing was written",
                "add the host again",
            )
    return load_fleet(current.path).host(new.name)


def _current_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def name_taken(name: str, current: FleetFile) -> AddRefused | None:
    """Why ``current`` cannot take a host named ``name`` (another entry has it, or has it
    but for case), naming that entry's line; None when it can."""
    # On a disk that ignores case (macOS, Windows) box1 and BOX1 share one results folder
    # and one queue file (h604 #9).
    same = next((n for n in current.names if n.casefold() == name.casefold()), None)
    if same is None:
        return None
    fix = f"pick another name (free: {free_name(name, current.names)!r})"
    if same == name:
        return AddRefused(
            f"host name {name!r} is already used at {current.where(name)}", fix, field="name"
        )
    return AddRefused(
        f"host name {name!r} differs from {same!r} (at {current.where(same)}) only by case: "
        "on a disk that ignores case their results folders and queue files are one",
        fix,
        field="name",
    )


def free_name(name: str, taken: Mapping[str, object]) -> str:
    """``name``, or ``name-2``, ``name-3``… : the first one not in ``taken``, by case too
    (box1 and BOX1 are one folder on a disk that ignores case)."""
    folded = {t.casefold() for t in taken}
    if name.casefold() not in folded:
        return name
    n = 2
    while f"{name}-{n}".casefold() in folded:
        n += 1
    return f"{name}-{n}"
