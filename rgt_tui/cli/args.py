"""The arguments every sub-command shares: the fleet file and the host looked up in it."""

from __future__ import annotations

import argparse
import difflib
import math
import os
from pathlib import Path

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.services.fleet.file import load_fleet, resolve_fleet_path


def add_hosts_arg(parser: argparse.ArgumentParser) -> None:
    """``--hosts PATH``: the fleet file, overriding $RGT_HOSTS and ./hosts.toml."""
    parser.add_argument(
        "--hosts",
        metavar="PATH",
        # SUPPRESS: given at any level (`rgt-tui --hosts F queue show H` or after the
        # sub-command), a lower level's absence must not reset it to None.
        default=argparse.SUPPRESS,
        help="fleet file (default: $RGT_HOSTS, else ./hosts.toml, else this machine)",
    )


def load_fleet_arg(args: argparse.Namespace) -> Fleet:
    """The fleet ``--hosts``, $RGT_HOSTS or ./hosts.toml names, else this machine alone."""
    return load_fleet(resolve_fleet_path(getattr(args, "hosts", None), os.environ, Path.cwd()))


class UnknownHost(LookupError):
    """No host of that name in the fleet: ``message`` names the fleet file and the known
    hosts, ``fix`` the closest name or how to name another fleet."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix


def find_host(fleet: Fleet, name: str) -> HostConfig:
    """The host called ``name``; UnknownHost, with a did-you-mean, otherwise."""
    for host in fleet.hosts:
        if host.name == name:
            return host
    names = [h.name for h in fleet.hosts]
    if fleet.path is not None:
        where = str(fleet.path)
        other = f"add a [[hosts]] entry named {name!r} to {fleet.path}, or pass --hosts PATH"
    else:
        # Without a fleet file this machine stands in: say so, or "known: local" puzzles.
        where = "the fleet: no fleet file was found, so it is this machine alone"
        other = "name your fleet file with --hosts PATH or $RGT_HOSTS, or put it in ./hosts.toml"
    close = closest_names(name, names)
    raise UnknownHost(
        f"no host named {name!r} in {where}; known: {', '.join(names) or 'none'}",
        f"did you mean {_either(close)}?" if close else other,
    )


# Characters a name is mistyped or misread with (l for 1, O for 0): folded to one.
_LOOK_ALIKE = str.maketrans("lI|oO", "11100")


def closest_names(name: str, names: list[str]) -> list[str]:
    """The names ``name`` is most likely a typo of, in the fleet's order: those it equals
    but for case and look-alike characters (``boxl`` → ``box1``), else every name tied for
    the closest spelling (difflib's ratio, 0.6 at least), so a tie is never broken at random."""

    def fold(text: str) -> str:
        return text.translate(_LOOK_ALIKE).casefold()

    same = [n for n in names if fold(n) == fold(name)]
    if same:
        return same
    scores = {n: difflib.SequenceMatcher(None, n, name).ratio() for n in names}
    best = max((s for s in scores.values() if s >= 0.6), default=None)
    return [n for n in names if scores[n] == best] if best is not None else []


def _either(names: list[str]) -> str:
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


# The shortest wait any of them takes: 1e-9 passed "more than 0" and read a box's log
# in a busy loop at half a core for as long as it ran (hour s33 CLI #3).
MIN_SECONDS = 0.05


def positive_seconds(text: str) -> float:
    """Seconds, finite and at least ``MIN_SECONDS`` (``status --timeout``, ``logs --poll``,
    ``watch --timeout``): 0 timed every host out at once ("overloaded?") or polled a log
    in a busy loop; NaN and inf never end."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, got {text}")
    if value < MIN_SECONDS:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_SECONDS} seconds, got {text}")
    return value
