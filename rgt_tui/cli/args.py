"""The arguments every sub-command shares: the fleet file and the host looked up in it."""

from __future__ import annotations

import argparse
import difflib
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
    close = difflib.get_close_matches(name, names, n=1)
    raise UnknownHost(
        f"no host named {name!r} in {where}; known: {', '.join(names) or 'none'}",
        f"did you mean {close[0]!r}?" if close else other,
    )
