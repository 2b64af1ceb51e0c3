"""A fleet file's text checked whole: the top level, ``[fleet]``, its thresholds and
every ``[[hosts]]`` entry (``config_hosts``), into a frozen ``Fleet``.

A file's mistakes are all found in one pass and raised together, as one ``ConfigError``
whose ``problems`` lists each (a TOML syntax error stops the reading, so it comes alone).
Pure: the text and the names of the shipped profiles are given
(``rgt_tui.services.fleet.file.load_fleet`` reads the file).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

from rgt_tui.domain.config import (
    FLEET_KEYS,
    THRESHOLD_KEYS,
    TOP_KEYS,
    ConfigError,
    Fleet,
    HostConfig,
    PartialFleet,
    Thresholds,
    make_fleet,
)
from rgt_tui.domain.config_groups import group_host, raw_groups
from rgt_tui.domain.config_hosts import NAME_RE, host_config, local_path
from rgt_tui.domain.config_ready import readiness
from rgt_tui.domain.config_toml import Table, syntax_error
from rgt_tui.domain.config_watch import fleet_watch
from rgt_tui.domain.toml_lines import LineIndex


def parse_fleet(path: Path, text: str, profiles: Sequence[str]) -> Fleet:
    """Check the fleet file ``path`` whose content is ``text``; ``profiles``: the names a
    host's ``profile`` may take. ConfigError with every mistake of the file."""
    # A Windows editor's byte-order mark is no setting: read past (h553 #6: "TOML syntax
    # error … line 1, column 1" named neither it nor a fix).
    text = text.removeprefix("\ufeff")
    index = LineIndex(text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise syntax_error(path, text, exc) from None
    return _build(path, index, data, profiles)


def _build(path: Path, index: LineIndex, data: dict[str, Any], profiles: Sequence[str]) -> Fleet:
    """Check the parsed TOML and build the Fleet; every mistake found, raised together."""
    base = path.absolute().parent
    problems: list[ConfigError] = []
    top = Table(path, index, "", data, None, problems)
    top.reject_unknown(TOP_KEYS)
    fleet = top.sub("fleet", top.checked(lambda: top.table("fleet"), {}), index.line("", "fleet"))
    fleet.reject_unknown(FLEET_KEYS)
    results = fleet.checked(lambda: fleet.text("results_dir", "./results"), "./results")
    results_dir = base / Path(results).expanduser()
    poll = fleet.checked(lambda: _poll_seconds(fleet), 2.0)
    epochs = fleet.checked(lambda: fleet.integer("default_epochs", 20), 20)
    verify_python = local_path(
        base,
        fleet.checked(
            lambda: fleet.maybe("verify_python", example="~/miniconda3/envs/train/bin/python"),
            None,
        ),
    )
    safe_globals = fleet.checked(lambda: _safe_globals(fleet), ())
    thresholds = _thresholds(fleet)
    ready = readiness(fleet, base)
    watch = fleet_watch(fleet)
    hosts: list[HostConfig] = []
    tables: list[Table] = []  # each host's entry, for the checks across hosts
    raw_hosts = top.checked(lambda: _raw_hosts(top), [])
    whole_file = len(problems)  # mistakes outside any one entry, so far
    # An entry left out: its name (or its place) → its lines (two for a name used twice).
    broken: dict[str, list[int | None]] = {}

    def leave_out(name: str, line: int | None) -> None:
        lines = broken.setdefault(name, [])
        if line not in lines:
            lines.append(line)

    entry_at: dict[str, int | None] = {}  # a host's or group's name → its entry's first line
    with_group: dict[str, str] = {}  # a sound box left out as a rank of a broken group
    for number, raw in enumerate(raw_hosts):
        table = top.sub(f"hosts[{number}]", raw, index.line("", "hosts"))
        before = len(problems)
        host = host_config(table, base, epochs, profiles, ready, watch)
        name = raw.get("name")
        if isinstance(name, str) and NAME_RE.fullmatch(name):
            # Checked whatever else the entries got wrong: a duplicate is a mistake of its own.
            if name in entry_at:
                problems.append(
                    table.error(
                        "name",
                        # By the entry's first line, as "going on without" names both
                        # entries (hour s34 CLI #12: three kinds of line numbers).
                        f"host name {name!r} is already used by the entry at line "
                        f"{entry_at[name]} — host names must be unique",
                    )
                )
                # Both entries, each said with its line: which one is meant is unknown.
                leave_out(name, entry_at[name])
                leave_out(name, table.line())
                continue
            entry_at[name] = table.line()
        if len(problems) > before:
            leave_out(_entry_name(raw, "hosts", table), table.line())
        if host is not None:
            hosts.append(host)
            tables.append(table)
    fleet_spare, host_spares = _spare_problems(hosts, tables, fleet, watch.spare)
    whole_file += len(fleet_spare)
    problems.extend(fleet_spare)
    for name, line, error in host_spares:  # a host's own `spare`: that entry's mistake
        problems.append(error)
        leave_out(name, line)
    # Groups come after every box (issue 41): each names boxes of this file, and is one
    # host more (its name shares the hosts' namespace: a clash is refused there).
    boxes = tuple(hosts)
    n = len(problems)
    raw_group_list = top.checked(lambda: raw_groups(top), [])
    whole_file += len(problems) - n
    for number, raw in enumerate(raw_group_list):
        table = top.sub(f"groups[{number}]", raw, index.line("", "groups"))
        before = len(problems)
        group = group_host(table, base, boxes, ready)
        if group is not None and group.name in entry_at:
            problems.append(
                table.error(
                    "name",
                    f"group name {group.name!r} is already used by the entry at line "
                    f"{entry_at[group.name]}",
                )
            )
        elif group is not None:
            entry_at[group.name] = table.line()
            hosts.append(group)
        ranks = raw.get("hosts")
        ranks = [r for r in ranks if isinstance(r, str)] if isinstance(ranks, list) else []
        if len(problems) > before:
            leave_out(_entry_name(raw, "groups", table), table.line())
            # Its ranks too: their own queue commands would not see the group's job that
            # runs there (review s25 #6).
            group_name = _entry_name(raw, "groups", table)
            for rank in ranks:
                if rank in entry_at and rank not in broken:  # a host of this file, not a typo
                    # By its own entry's line, said as the group's rank: "box2 (line
                    # 20)" read as box2's own mistake at the group's line (s35 Slurm #8).
                    leave_out(rank, entry_at[rank])
                    with_group[rank] = group_name
        elif any(r in broken for r in ranks):  # reached through an entry left out (#4)
            leave_out(_entry_name(raw, "groups", table), table.line())
    verify = str(verify_python) if verify_python is not None else None

    def fleet_of(kept: list[HostConfig]) -> Fleet:
        return make_fleet(
            path,
            results_dir,
            poll if poll is not None else 2.0,
            epochs,
            thresholds,
            tuple(kept),
            verify,
            ready,
            watch,
            safe_globals or (),
        )

    if problems:
        error = ConfigError.collect(problems)
        sound = [h for h in hosts if h.name not in broken]
        if whole_file == 0 and sound:
            left_out = tuple(
                sorted(
                    ((name, line) for name, lines in broken.items() for line in lines),
                    key=lambda entry: entry[1] or 0,
                )
            )
            error.partial = PartialFleet(fleet_of(sound), left_out, tuple(with_group.items()))
        raise error
    return fleet_of(hosts)


def _entry_name(raw: Mapping[str, Any], kind: str, table: Table) -> str:
    """How a broken entry is named to the user: its name when it has a usable one."""
    name = raw.get("name")
    if isinstance(name, str) and NAME_RE.fullmatch(name):
        return name
    return f"the [[{kind}]] entry at line {table.line()}"


def _spare_problems(
    hosts: list[HostConfig], tables: list[Table], fleet: Table, fleet_spare: tuple[str, ...]
) -> tuple[list[ConfigError], list[tuple[str, int | None, ConfigError]]]:
    """Each ``spare`` names a host of this file, never the host itself (issue 40: nothing
    is ever started on a box the fleet file does not name). The ``[fleet]`` one's
    mistakes, and each host's own, as (host, its entry's line, the mistake)."""
    names = {h.name for h in hosts}
    found = []
    unknown = [s for s in fleet_spare if s not in names]
    if unknown and hosts:
        found.append(fleet.error("spare", f"{', '.join(unknown)}: not a host of this file"))
    own = []
    for host, table in zip(hosts, tables, strict=True):
        if "spare" not in table.data:
            continue
        bad = [s for s in host.watch.spare if s not in names or s == host.name]
        if bad:
            error = table.error(
                "spare",
                f"{', '.join(bad)}: a spare must be another host of this file, whose entry "
                f"has no mistake (known: {', '.join(sorted(names - {host.name})) or 'none'})",
            )
            own.append((host.name, table.line(), error))
    return found, own


# Modules whose globals run code when a pickle names them: never allowed, whatever the
# fleet file says (a checkpoint from a box is hostile input; principle 3).
CODE_MODULES = frozenset({
    "builtins", "os", "posix", "nt", "sys", "subprocess", "importlib", "shutil", "pickle",
    "runpy", "code", "codeop", "ctypes", "socket", "pty", "operator",
    "functools", "types", "marshal", "io", "pathlib", "tempfile", "webbrowser", "multiprocessing",
})  # fmt: skip
GLOBAL_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


POLL_RANGE_S = (0.2, 600.0)  # seconds between samples a fleet file may ask for


def _poll_seconds(fleet: Table) -> float:
    """``poll_seconds``, within ``POLL_RANGE_S``: 0.05 had every box's agent sample 20
    times a second, and 100000 left panes "connected" on figures a day old, a stall seen
    only after a multiple of it (s37 fleet hour #5)."""
    value = fleet.number("poll_seconds", 2.0)
    assert value is not None
    low, high = POLL_RANGE_S
    if not low <= value <= high:
        raise fleet.error(
            "poll_seconds",
            f"expected {low:g} to {high:g} seconds between samples, got {value:g} — the "
            "default is 2; a big fleet may want 5",
        )
    return value


def _safe_globals(fleet: Table) -> tuple[str, ...]:
    """``verify_safe_globals``: the ``module.Name`` globals a checkpoint may name and still
    load (torch's add_safe_globals); never one of a module that runs code."""
    if "verify_safe_globals" not in fleet.data:
        return ()
    names = fleet.text_list(
        "verify_safe_globals", [], example='["argparse.Namespace"]', what="module.Name globals"
    )
    for name in names:
        if not GLOBAL_RE.fullmatch(name):
            raise fleet.error(
                "verify_safe_globals",
                f"{name!r} is not a global written module.Name, such as argparse.Namespace",
            )
        if name.split(".", 1)[0] in CODE_MODULES:
            raise fleet.error(
                "verify_safe_globals",
                f"{name!r} is of a module whose globals run code ({name.split('.', 1)[0]}): a "
                "checkpoint naming it is refused whatever this key says — allow only data "
                "classes, such as argparse.Namespace",
            )
    return names


def _thresholds(fleet: Table) -> Thresholds:
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
        if key == "temp_c" and value is not None and not TEMP_C[0] <= value <= TEMP_C[1]:
            # 1000 (a Fahrenheit slip, or a typo) never alerted; 5 always did (h553).
            limits.problems.append(
                limits.error(
                    key,
                    f"expected a GPU temperature in °C from {TEMP_C[0]} to {TEMP_C[1]}, got "
                    f"{value:g} (the default is {default:g}; a value in °F?)",
                )
            )
            value = default
        values[key] = value
    return Thresholds(**values)


TEMP_C = (40, 110)  # an alert below or above these is a slip: GPUs idle near 30, throttle near 90


def _raw_hosts(top: Table) -> list[dict[str, Any]]:
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
