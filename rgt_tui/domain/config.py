"""The fleet file (``hosts.toml``): read it, check every key, and return frozen data.

A fleet file has an optional ``[fleet]`` table and one ``[[hosts]]`` block per box; the
commented ``hosts.toml`` at the project root documents every key. A missing file, or one
with no host, means "this machine alone" (``Fleet.is_default``). Every mistake is
reported with the file, the line and the key, and what to write instead; a file's
mistakes are all found in one pass and raised together, as one ``ConfigError`` whose
``problems`` lists each (a TOML syntax error stops the reading, so it comes alone). A
key in the wrong table (``poll_seconds`` at the top, a fleet key after a ``[[hosts]]``
header) is told where it belongs.

A host's ``pull`` defaults to its ``durable_dir`` (itself defaulting to ``workdir``), but
never to a whole home: with no ``pull`` and a default that names one (``~``, ``~user``,
``$HOME``, ``${HOME}``, ``/root``, ``/home/<user>``) the host's pulls are refused:
``HostConfig.pull_refused`` holds the message (the file, the line, the host and the fix,
``pull = ["~/runs"]``). A home holds ``.ssh`` and other credentials, and everything else
the user never meant to copy. The file still loads: watching a box needs no pull folder,
so a minimal ``name`` + ``ssh`` block stays valid. "This machine alone" (no fleet file)
is refused the same way. An explicit ``pull = ["~"]`` is the user's choice (secrets in
it are still skipped by rule: ``rgt_tui.domain.manifest.SECRET_PATHS``).
"""

from __future__ import annotations

import difflib
import math
import posixpath
import re
import string
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import date, datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.profiles import KNOWN_PROFILES
from rgt_tui.domain.ssh_target import (
    LOCAL,
    SSH_FORMS,
    SshCommand,
    SshTarget,
    is_ssh_command,
    parse_ssh_command,
    parse_ssh_target,
)
from rgt_tui.domain.toml_lines import LineIndex

__all__ = [
    "ConfigError", "Fleet", "HostConfig", "SshTarget", "Thresholds", "load_fleet",
    "parse_ssh_target", "resolve_fleet_path", "SSH_FORMS", "LOCAL",
]  # fmt: skip

FLEET_FILE_NAME = "hosts.toml"
ENV_VAR = "RGT_HOSTS"
DEFAULT_PROFILE = "generic-ssh"
RUN_FIELDS = ("cfg", "task", "epochs", "name", "out")

TOP_KEYS = ("fleet", "hosts")
FLEET_KEYS = ("results_dir", "poll_seconds", "default_epochs", "thresholds", "verify_python")
THRESHOLD_KEYS = tuple(f.name for f in fields(Thresholds))
HOST_KEYS = (
    "name", "ssh", "identity_file", "known_hosts", "profile", "cost_per_hour", "started_at",
    "workdir", "durable_dir", "mounts", "queue", "run", "pull", "teardown", "epochs",
    "host_key",
)  # fmt: skip
# How an unknown host key is treated: "strict" refuses it until the user trusts it;
# "accept-new" (OpenSSH's meaning) records a first key and still refuses a changed one.
HOST_KEY_POLICIES = ("strict", "accept-new")

# Where each key belongs (its label in messages, its table), for a key written in the
# wrong table: it is told where to move, not only that it is unknown there.
_HOMES: dict[str, tuple[str, str]] = {
    **{k: ("[fleet]", "fleet") for k in FLEET_KEYS},
    **{k: ("[fleet.thresholds]", "fleet.thresholds") for k in THRESHOLD_KEYS},
    **{k: ("host", "hosts") for k in HOST_KEYS},
}
# How each top-level key is written as a table header.
_TOP_HEADERS = {"fleet": "[fleet]", "hosts": "[[hosts]]"}
T = TypeVar("T")

_NAME_RE = re.compile(r"[A-Za-z0-9._-]+")
# A remote folder that is a whole home, as far as its text alone tells.
_HOME_RE = re.compile(r"~[A-Za-z0-9._-]*|\$HOME|\$\{HOME\}|/root|/home/[^/]+")


class ConfigError(ValueError):
    """Fleet-file mistakes: where each is (file, line, key) and what to write instead.

    ``problems`` holds every mistake found, in line order, each a ConfigError of its own;
    ``file``, ``line``, ``key`` and ``message`` are the first one's. ``str()`` is the one
    ``file:line: key: message`` line, or with several a count and then one such line each.
    """

    def __init__(
        self, file: str | Path, message: str, *, line: int | None = None, key: str | None = None
    ) -> None:
        self.file = str(file)
        self.line = line
        self.key = key
        self.message = message
        self.problems: tuple[ConfigError, ...] = (self,)
        super().__init__(self.where_what())

    @classmethod
    def collect(cls, problems: Iterable[ConfigError]) -> ConfigError:
        """One error for many, ordered by line, each distinct mistake once."""
        unique = {p.where_what(): p for p in problems}.values()
        ordered = sorted(unique, key=lambda p: p.line or 0)
        if not ordered:
            raise ValueError("ConfigError.collect needs at least one problem")
        if len(ordered) == 1:
            return ordered[0]
        first = ordered[0]
        error = cls(first.file, first.message, line=first.line, key=first.key)
        error.problems = tuple(ordered)
        error.args = (str(error),)
        return error

    def where_what(self) -> str:
        """This one mistake as ``file:line: key: message``."""
        where = self.file + (f":{self.line}" if self.line is not None else "")
        return ": ".join(part for part in (where, self.key, self.message) if part)

    def __str__(self) -> str:
        if len(self.problems) == 1:
            return self.where_what()
        head = f"{len(self.problems)} mistakes in {self.file}:"
        return "\n".join([head, *(p.where_what() for p in self.problems)])


@dataclass(frozen=True)
class HostConfig:
    """One ``[[hosts]]`` block with every default filled in."""

    name: str
    ssh: SshTarget | None  # None means this machine, reached without SSH
    identity_file: Path | None
    known_hosts: Path | None  # None: the transport uses ~/.ssh/known_hosts
    profile: str
    cost_per_hour: float | None
    started_at: datetime | None  # always timezone-aware, UTC
    workdir: str
    durable_dir: str
    mounts: tuple[str, ...]
    queue: Path | None
    run: str | None
    pull: tuple[str, ...]
    teardown: str | None
    epochs: int
    line: int | None = None  # line of the block's [[hosts]] header, for messages
    host_key: str = "strict"  # one of HOST_KEY_POLICIES
    # Why this host must not be pulled as configured (``pull`` would default to a whole
    # home): "<file>:<line>: pull: ..." naming the host and the fix. A pull refuses with
    # it before anything runs on the box; None: pulls may go ahead.
    pull_refused: str | None = None

    @property
    def is_local(self) -> bool:
        """True for this machine (``ssh = "local"``)."""
        return self.ssh is None


@dataclass(frozen=True)
class Fleet:
    """The whole fleet file; ``is_default`` when it named no host and this machine stands in."""

    path: Path | None
    results_dir: Path
    poll_seconds: float
    default_epochs: int
    thresholds: Thresholds
    hosts: tuple[HostConfig, ...]
    is_default: bool = False
    # The interpreter verify loads checkpoints with (one that has torch, such as the
    # training environment's); None: this app's own interpreter.
    verify_python: str | None = None

    def host(self, name: str) -> HostConfig:
        """The host called ``name``; KeyError listing the known names otherwise."""
        for host in self.hosts:
            if host.name == name:
                return host
        known = ", ".join(h.name for h in self.hosts) or "none"
        raise KeyError(f"no host named {name!r} in {self.path or 'the fleet'}; known: {known}")


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
        if not path.is_file():
            raise ConfigError(
                path, f"fleet file not found — check the path given in {key}", key=key
            )
        return path
    local = cwd / FLEET_FILE_NAME
    return local if local.is_file() else None


def load_fleet(path: Path | None) -> Fleet:
    """Read and check a fleet file; None (or a file with no host) gives this machine alone."""
    if path is None:
        return _fleet(None, Path.cwd() / "results", 2.0, 20, Thresholds(), ())
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, "fleet file not found — check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            path, f"cannot read the fleet file ({exc}); it must be UTF-8 TOML"
        ) from None
    index = LineIndex(text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(path, text, exc) from None
    return _build(path, index, data)


def _fleet(
    path: Path | None,
    results_dir: Path,
    poll: float,
    epochs: int,
    thresholds: Thresholds,
    hosts: tuple[HostConfig, ...],
    verify_python: str | None = None,
) -> Fleet:
    """Assemble a Fleet, standing this machine in when no host was configured."""
    if hosts:
        return Fleet(path, results_dir, poll, epochs, thresholds, hosts, False, verify_python)
    local = HostConfig(
        name=LOCAL, ssh=None, identity_file=None, known_hosts=None, profile=DEFAULT_PROFILE,
        cost_per_hour=None, started_at=None, workdir="~", durable_dir="~", mounts=("/", "~"),
        queue=None, run=None, pull=("~",), teardown=None, epochs=epochs,
        pull_refused=(
            "no fleet file: this machine stands in, and its pulls would default to the whole "
            'home — write a hosts.toml naming the folders to pull, e.g. pull = ["~/runs"]'
        ),
    )  # fmt: skip
    return Fleet(path, results_dir, poll, epochs, thresholds, (local,), True, verify_python)


def _syntax_error(path: Path, text: str, exc: Exception) -> ConfigError:
    """Turn tomllib's message into a ConfigError, taking the line from "(at line N, column M)"."""
    message = str(exc)
    line: int | None = None
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", message)
    if match:
        line = int(match.group(1))
        message = f"{message[: match.start()]} (column {match.group(2)})"
    elif message.endswith("(at end of document)"):
        line = max(1, len(text.splitlines()))
    key = None
    lines = text.splitlines()
    if line is not None and line <= len(lines):
        key_match = LineIndex.KEY.match(lines[line - 1])
        key = next((g for g in key_match.groups() if g is not None), None) if key_match else None
    return ConfigError(
        path,
        f"TOML syntax error: {message} — check this line's quotes, brackets and commas "
        "(each setting is key = value; strings need closing quotes)",
        line=line,
        key=key,
    )


def _describe(value: Any) -> str:
    """A short phrase for a wrong value, in TOML's terms."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f'the string "{value}"'
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (datetime, date)):
        return "a date"
    return repr(value)


class _Table:
    """Typed, checked access to one table of the file; errors point at the key's line."""

    def __init__(
        self,
        path: Path,
        index: LineIndex,
        section: str,
        data: Mapping[str, Any],
        fallback: int | None,
        problems: list[ConfigError],
    ) -> None:
        self.path, self.index, self.section, self.data = path, index, section, data
        self.fallback = fallback  # line to blame when the table has no header of its own
        self.problems = problems  # the whole file's mistakes, shared by all its tables

    def sub(self, section: str, data: Mapping[str, Any], fallback: int | None) -> _Table:
        """Another table of the same file, reporting into the same problems."""
        return _Table(self.path, self.index, section, data, fallback, self.problems)

    def checked(self, check: Callable[[], T], fallback: T) -> T:
        """``check()``'s value; when it finds a mistake, record it and go on with
        ``fallback``, so one run reports every mistake of the file."""
        try:
            return check()
        except ConfigError as error:
            self.problems.append(error)
            return fallback

    def line(self, key: str | None = None) -> int | None:
        """Line of ``key`` (or of this table) in the file."""
        found = self.index.line(self.section, key)
        return found if found is not None else self.fallback

    def error(self, key: str | None, message: str) -> ConfigError:
        """A ConfigError at ``key``'s line."""
        return ConfigError(self.path, message, line=self.line(key), key=key)

    def reject_unknown(self, allowed: Iterable[str]) -> None:
        """Record one mistake per key not in ``allowed``: a key of another table is told
        where to move it, a typo gets the closest allowed key."""
        allowed = tuple(allowed)
        for key in self.data:
            if key not in allowed:
                self.problems.append(self.error(key, self._unknown(key, allowed)))

    def _unknown(self, key: str, allowed: tuple[str, ...]) -> str:
        """What to say about ``key``, unknown in this table."""
        home = _HOMES.get(key)
        if home is not None:
            label, table = home
            if isinstance(self.data[key], dict) and table == "fleet":
                return f"{key!r} is a table of [fleet] — write its header as [fleet.{key}]"
            move = "into a [[hosts]] entry" if table == "hosts" else f"under [{table}]"
            if not self.section:
                why = " (only [fleet] and [[hosts]] entries go at the top level)"
            elif self.section.startswith("hosts["):
                why = (
                    " (a key belongs to the nearest table header above it: here the "
                    f"[[hosts]] entry at line {self.line()})"
                )
            else:
                why = ""
            return f"{key!r} is a {label} setting — move it {move}{why}"
        if not self.section:
            return _unknown_top(key, self.data[key])
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"expected one of: {', '.join(allowed)}"
        return f"unknown key {key!r} — {hint}"

    def text(self, key: str, default: str, *, example: str = "...") -> str:
        """A non-empty string, or ``default`` when absent; ``example`` shows the fix."""
        return self.maybe(key, example=example) or default

    def maybe(self, key: str, *, example: str = "...") -> str | None:
        """A non-empty string, or None when absent."""
        value = self.data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            got = _describe(value)
            raise self.error(
                key, f'expected a non-empty string like {key} = "{example}", got {got}'
            )
        return value

    def required(self, key: str, example: str) -> str:
        """A non-empty string that must be present."""
        if key not in self.data:
            where = " to this [[hosts]] entry" if self.section.startswith("hosts[") else ""
            raise self.error(key, f'missing required key {key!r} — add {key} = "{example}"{where}')
        return self.text(key, "", example=example)

    def number(self, key: str, default: float | None, *, allow_zero: bool = False) -> float | None:
        """A number (int or float) above zero, or at least zero with ``allow_zero``."""
        if key not in self.data:
            return default
        value = self.data[key]
        bound = "≥ 0" if allow_zero else "> 0"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fix = f" — drop the quotes: {key} = {value}" if _is_number_text(value) else ""
            raise self.error(key, f"expected a number {bound}, got {_describe(value)}{fix}")
        if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
            raise self.error(key, f"expected a number {bound}, got {value}")
        return float(value)

    def integer(self, key: str, default: int) -> int:
        """A whole number above zero."""
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            fix = f" — drop the quotes: {key} = {value}" if _is_number_text(value) else ""
            raise self.error(key, f"expected a whole number > 0, got {_describe(value)}{fix}")
        return value

    def text_list(self, key: str, default: list[str]) -> tuple[str, ...]:
        """A non-empty list of non-empty strings, duplicates dropped, order kept."""
        value = self.data.get(key, default)
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v.strip() for v in value)
        ):
            raise self.error(
                key,
                f'expected a non-empty list of paths such as {key} = ["/workspace"], got {_describe(value)}',
            )
        return tuple(dict.fromkeys(value))

    def table(self, key: str) -> Mapping[str, Any]:
        """A sub-table (``[section.key]`` or an inline table), empty when absent."""
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            header = f"{self.section}.{key}" if self.section else key
            raise self.error(key, f"expected a table written [{header}], got {_describe(value)}")
        return value


def _is_number_text(value: Any) -> bool:
    """True for a string that would be a valid number without its quotes."""
    try:
        return isinstance(value, str) and float(value) == float(value)
    except ValueError:
        return False


def _unknown_top(key: str, value: Any) -> str:
    """What to say about an unknown top-level key: a misspelt table is the usual cause."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        written = f"table [[{key}]]"
    elif isinstance(value, dict):
        written = f"table [{key}]"
    else:
        written = f"key {key!r}"
    close = difflib.get_close_matches(key, TOP_KEYS, n=1)
    hint = (
        f"did you mean {_TOP_HEADERS[close[0]]}?"
        if close
        else "the top level holds only the [fleet] table and [[hosts]] entries"
    )
    return f"unknown {written} — {hint}"


def _build(path: Path, index: LineIndex, data: dict[str, Any]) -> Fleet:
    """Check the parsed TOML and build the Fleet; every mistake found, raised together."""
    base = path.absolute().parent
    problems: list[ConfigError] = []
    top = _Table(path, index, "", data, None, problems)
    top.reject_unknown(TOP_KEYS)
    fleet = top.sub("fleet", top.checked(lambda: top.table("fleet"), {}), index.line("", "fleet"))
    fleet.reject_unknown(FLEET_KEYS)
    results = fleet.checked(lambda: fleet.text("results_dir", "./results"), "./results")
    results_dir = base / Path(results).expanduser()
    poll = fleet.checked(lambda: fleet.number("poll_seconds", 2.0), 2.0)
    epochs = fleet.checked(lambda: fleet.integer("default_epochs", 20), 20)
    verify_python = _local_path(
        base,
        fleet.checked(
            lambda: fleet.maybe("verify_python", example="~/miniconda3/envs/train/bin/python"),
            None,
        ),
    )
    thresholds = _thresholds(fleet)
    hosts: list[HostConfig] = []
    seen: dict[str, int | None] = {}
    for number, raw in enumerate(top.checked(lambda: _raw_hosts(top), [])):
        table = top.sub(f"hosts[{number}]", raw, index.line("", "hosts"))
        host = _host(table, base, epochs)
        name = raw.get("name")
        if isinstance(name, str) and _NAME_RE.fullmatch(name):
            # Checked whatever else the entries got wrong: a duplicate is a mistake of its own.
            if name in seen:
                problems.append(
                    table.error(
                        "name",
                        f"host name {name!r} is already used at line {seen[name]} — "
                        "host names must be unique",
                    )
                )
                continue
            seen[name] = table.line("name")
        if host is not None:
            hosts.append(host)
    if problems:
        raise ConfigError.collect(problems)
    verify = str(verify_python) if verify_python is not None else None
    return _fleet(
        path,
        results_dir,
        poll if poll is not None else 2.0,
        epochs,
        thresholds,
        tuple(hosts),
        verify,
    )


def _thresholds(fleet: _Table) -> Thresholds:
    """``[fleet.thresholds]``: each alert threshold, a percentage at most 100 where it is one."""
    section = fleet.checked(lambda: fleet.table("thresholds"), {})
    limits = fleet.sub("fleet.thresholds", section, fleet.line("thresholds"))
    limits.reject_unknown(THRESHOLD_KEYS)
    values: dict[str, float] = {}
    for key in THRESHOLD_KEYS:
        default = getattr(Thresholds, key)
        value = limits.checked(partial(limits.number, key, default), default)
        if key in ("inode_pct", "disk_pct", "cgroup_mem_pct") and value is not None and value > 100:
            limits.problems.append(
                limits.error(key, f"expected a percentage in (0, 100], got {value:g}")
            )
            value = default
        values[key] = value
    return Thresholds(**values)


def _raw_hosts(top: _Table) -> list[dict[str, Any]]:
    """The ``[[hosts]]`` entries as parsed: a list of tables, else a mistake."""
    raw_hosts = top.data.get("hosts", [])
    if isinstance(raw_hosts, dict):
        raise top.error(
            "hosts",
            "'hosts' is written as a single table [hosts]; write one entry per host "
            "with double brackets: [[hosts]]",
        )
    if not isinstance(raw_hosts, list) or not all(isinstance(h, dict) for h in raw_hosts):
        raise top.error("hosts", "expected one [[hosts]] entry per host (an array of tables)")
    return raw_hosts


def _host(t: _Table, base: Path, default_epochs: int) -> HostConfig | None:
    """Check one ``[[hosts]]`` entry and fill in its defaults; None when it has mistakes
    (each recorded in ``t.problems``)."""
    before = len(t.problems)
    t.reject_unknown(HOST_KEYS)
    c = t.checked
    name = c(lambda: _host_name(t), "")
    pasted = c(lambda: _ssh(t, name), None)
    workdir = c(lambda: t.text("workdir", "~", example="/workspace"), "~")
    durable = c(lambda: t.text("durable_dir", workdir, example="/workspace"), workdir)
    run = c(lambda: _run(t), None)
    identity = c(lambda: t.maybe("identity_file", example="~/.ssh/id_ed25519"), None)
    if pasted is not None and pasted.identity_file is not None:
        if identity is None:
            identity = pasted.identity_file
        elif Path(identity).expanduser() != Path(pasted.identity_file).expanduser():
            t.problems.append(
                t.error(
                    "ssh",
                    f"the pasted command's -i {pasted.identity_file} is not identity_file = "
                    f'"{identity}" — keep one of them',
                )
            )
    host = HostConfig(
        name=name,
        ssh=pasted.target if pasted is not None else None,
        identity_file=_local_path(None, identity),
        known_hosts=_local_path(
            None, c(lambda: t.maybe("known_hosts", example="~/.ssh/known_hosts"), None)
        ),
        profile=c(lambda: _profile(t), DEFAULT_PROFILE),
        cost_per_hour=c(lambda: t.number("cost_per_hour", None, allow_zero=True), None),
        started_at=c(lambda: _started_at(t), None),
        workdir=workdir,
        durable_dir=durable,
        mounts=c(lambda: t.text_list("mounts", ["/", workdir, durable]), ()),
        queue=_local_path(base, c(lambda: t.maybe("queue", example="queues/a100.txt"), None)),
        run=run,
        pull=c(lambda: t.text_list("pull", [durable]), ()),
        teardown=c(lambda: t.maybe("teardown", example="vastai destroy instance 123"), None),
        epochs=c(lambda: t.integer("epochs", default_epochs), default_epochs),
        line=t.line(),
        host_key=c(lambda: _host_key(t), "strict"),
        pull_refused=_pull_refused(t, name, durable),
    )
    return host if len(t.problems) == before else None


def _host_name(t: _Table) -> str:
    """The required ``name``: it names local folders, so a plain word."""
    name = t.required("name", "a100-1")
    if not _NAME_RE.fullmatch(name):
        raise t.error(
            "name",
            f"host name {name!r} may only use letters, digits, '.', '_' and '-' (it names local folders)",
        )
    if name in (".", ".."):
        # The name is the host's results folder: ".." would put results beside results_dir.
        raise t.error("name", f"host name {name!r} names a folder of its own — pick a real name")
    return name


def _ssh(t: _Table, name: str) -> SshCommand | None:
    """The required ``ssh``: a target, or a pasted ``ssh …`` command read as one
    (rgt_tui.domain.ssh_target); None for this machine (``local``)."""
    whose = f" to the [[hosts]] entry for {name!r}" if name else " to this [[hosts]] entry"
    if "ssh" not in t.data:
        raise t.error("ssh", f"missing required key 'ssh' — add ssh = \"user@host:port\"{whose}")
    text = t.text("ssh", "", example="user@host:port")
    try:
        if is_ssh_command(text):
            return parse_ssh_command(text)
        target = parse_ssh_target(text)
    except ValueError as exc:  # only the parsers': the checks above raise ConfigError
        raise t.error("ssh", str(exc)) from None
    return SshCommand(target) if target is not None else None


def _run(t: _Table) -> str | None:
    """The optional ``run`` template, its fields and quoting checked."""
    run = t.maybe("run", example="python train.py --config {cfg} --out {out}")
    if run is not None:
        _check_template(t, run)
    return run


def _pull_refused(t: _Table, name: str, durable: str) -> str | None:
    """Why this host must not be pulled as written (no ``pull``, and a default that is a
    whole home: see the module's doc); None when its pull folders are fine."""
    if "pull" in t.data or not is_home(durable):
        return None
    source = next((k for k in ("durable_dir", "workdir") if k in t.data), None)
    why = f"from {source}" if source else "the default workdir"
    message = (
        f'host {name!r} names no pull folders, and pulls would default to "{durable}" '
        f"({why}): the whole home on the box, .ssh and all — name the folders to pull, "
        'e.g. pull = ["~/runs"] (or set durable_dir = "/workspace/results")'
    )
    return str(t.error("pull", message))


def is_home(path: str) -> bool:
    """True when the remote folder ``path`` is a whole home, as far as its text tells
    (``~``, ``~/``, ``~user``, ``$HOME``, ``${HOME}``, ``/root``, ``/home/<user>``)."""
    text = path.strip()
    if not text:
        return False
    return _HOME_RE.fullmatch(re.sub("^/+", "/", posixpath.normpath(text))) is not None


def _host_key(t: _Table) -> str:
    """The host-key policy; never looser than OpenSSH's accept-new."""
    policy = t.text("host_key", "strict", example="accept-new")
    if policy not in HOST_KEY_POLICIES:
        raise t.error(
            "host_key",
            f"unknown host_key policy {policy!r} — expected one of: {', '.join(HOST_KEY_POLICIES)} "
            "(there is no setting that turns host-key checking off)",
        )
    return policy


def _profile(t: _Table) -> str:
    """A known platform profile (its facts drive teardown and the danger clocks)."""
    name = t.text("profile", DEFAULT_PROFILE, example=DEFAULT_PROFILE)
    if name not in KNOWN_PROFILES:
        close = difflib.get_close_matches(name, KNOWN_PROFILES, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise t.error(
            "profile", f"unknown profile '{name}' — {hint}known: {', '.join(KNOWN_PROFILES)}"
        )
    return name


def _check_template(t: _Table, run: str) -> None:
    """Refuse ``{fields}`` other than RUN_FIELDS, and broken braces, in a ``run`` template."""
    allowed = ", ".join("{" + f + "}" for f in RUN_FIELDS)
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(run) if f is not None]
    except ValueError as exc:
        raise t.error(
            "run", f"bad braces in the template ({exc}); write {{{{ and }}}} for literal braces"
        ) from None
    for field in fields:
        if field not in RUN_FIELDS:
            raise t.error(
                "run", f"unknown field {{{field}}} in the template — expected only {allowed}"
            )
    quoted = _quoted_placeholder(run)
    if quoted is not None:
        raise t.error(
            "run",
            f"the placeholder {{{quoted}}} is inside quotes — write {{{quoted}}} bare: every "
            "value is already shell-quoted, and quotes around it would undo that",
        )


def _quoted_placeholder(run: str) -> str | None:
    """The first ``{field}`` that stands inside single or double quotes, else None.

    A shell-quoted value inside double quotes is no longer quoted (``"'$(x)'"`` runs $(x)),
    and inside single quotes the quoting is printed literally; either re-opens injection
    or breaks the command, so such templates are refused at load time.
    """
    quote: str | None = None
    i = 0
    while i < len(run):
        ch = run[i]
        if ch == "\\" and quote != "'":  # an escaped character: neither quote nor brace
            i += 2
            continue
        if ch in "'\"" and (quote is None or quote == ch):
            quote = None if quote == ch else ch
        elif ch == "{":
            if run.startswith("{{", i):
                i += 2
                continue
            end = run.find("}", i)
            if quote is not None and end != -1:
                return run[i + 1 : end]
        i += 1
    return None


def _started_at(t: _Table) -> datetime | None:
    """``started_at`` as an aware UTC datetime; naive values are taken as UTC."""
    value = t.data.get("started_at")
    if value is None:
        return None
    if isinstance(value, str):
        try:
            # Python 3.10's fromisoformat does not take a trailing "Z".
            text = value.strip()
            text = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
            value = datetime.fromisoformat(text)
        except ValueError:
            value = None
    if not isinstance(value, datetime):
        raise t.error(
            "started_at",
            "expected a date-time such as started_at = 2024-05-01T12:00:00Z (naive means UTC)",
        )
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _local_path(base: Path | None, text: str | None) -> Path | None:
    """A local path with ``~`` expanded; relative ones joined to ``base`` when given."""
    if text is None:
        return None
    path = Path(text).expanduser()
    return path if path.is_absolute() or base is None else base / path
