"""Arguments every sub-command shares (kept apart so each cli_* module can import them)."""

from __future__ import annotations

import argparse


def add_hosts_arg(parser: argparse.ArgumentParser) -> None:
    """``--hosts PATH``: the fleet file, overriding $RGT_HOSTS and ./hosts.toml."""
    parser.add_argument(
        "--hosts",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="fleet file (default: $RGT_HOSTS, else ./hosts.toml, else this machine)",
    )
