"""Arguments and look-ups every sub-command shares (kept apart so each cli_* module can
import them without importing cli.py, which imports them all)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rgt_tui.domain.config import Fleet, HostConfig, load_fleet, resolve_fleet_path


def add_hosts_arg(parser: argparse.ArgumentParser) -> None:
    """``--hosts PATH``: the fleet file, overriding $RGT_HOSTS and ./hosts.toml."""
    parser.add_argument(
        "--hosts",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="fleet file (default: $RGT_HOSTS, else ./hosts.toml, else this machine)",
    )


def load_fleet_arg(args: argparse.Namespace) -> Fleet:
    """The fleet ``--hosts``, $RGT_HOSTS or ./hosts.toml names, else this machine alone."""
    return load_fleet(resolve_fleet_path(getattr(args, "hosts", None), os.environ, Path.cwd()))


def host_or_report(fleet: Fleet, name: str) -> HostConfig | None:
    """The host called ``name``, or None after saying on stderr that there is none."""
    try:
        return fleet.host(name)
    except KeyError as exc:
        print(f"rgt-tui: {exc.args[0]}", file=sys.stderr)
        return None
