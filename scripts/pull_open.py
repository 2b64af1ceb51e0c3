#!/usr/bin/env python3
"""One pull on a connection that is already open, as the TUI's ``p`` and ``watch``'s
periodic pull make it (issue 44).

The host's telemetry monitor connects first and streams its agent on the connection (as in
the TUI, where it has been open since the app started); once a sample has come, the pull
runs on that same connection with the options the TUI's ``p`` gives it
(``SHARED_PULL_CONCURRENCY``, the fleet's pull rate). Prints the pull's summary, as
``rgt-tui pull`` does, then ``pull on the open connection: X s`` — the pull alone, what a
user who pressed ``p`` waits. ``scripts/bench_pull.py`` runs it beside ``rgt-tui pull``
and ``rsync -a``; it is not part of the product.

Usage: .venv/bin/python scripts/pull_open.py HOST --hosts FLEET.toml [--bulk auto|ssh|sftp]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import warnings
from pathlib import Path

# As rgt_tui/entry.py does: asyncssh's import warns of cryptography's DSA deprecation,
# two lines of nothing the bench measures before its figures.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh\.")

from rgt_tui.cli.pull import format_pull_result  # noqa: E402
from rgt_tui.services.connections import SHARED_PULL_CONCURRENCY, FleetConnections  # noqa: E402
from rgt_tui.services.fleet.file import load_fleet  # noqa: E402
from rgt_tui.services.pull import PullOptions, pull_host  # noqa: E402
from rgt_tui.services.pull.budget import shared_budget  # noqa: E402
from rgt_tui.services.runtime.monitors import build_monitors  # noqa: E402
from rgt_tui.services.telemetry import HostUpdate  # noqa: E402

FIRST_SAMPLE_TIMEOUT_S = 60.0


async def pull_on_open_connection(host_name: str, fleet_path: Path, bulk: str) -> int:
    """Connect with the host's monitor, wait for its first sample, then time one pull."""
    fleet = load_fleet(fleet_path)
    host = next((h for h in fleet.hosts if h.name == host_name), None)
    if host is None:
        print(f"pull_open: no host {host_name!r} in {fleet_path}", file=sys.stderr)
        return 2
    connections = FleetConnections([host])
    monitor = build_monitors(fleet, connections, hosts=[host])[host.name]
    sampled = asyncio.Event()

    def updated(update: HostUpdate) -> None:
        if update.snapshot is not None:
            sampled.set()

    started = time.monotonic()
    watching = asyncio.ensure_future(monitor.run(updated))
    try:
        await asyncio.wait_for(sampled.wait(), FIRST_SAMPLE_TIMEOUT_S)
        sampled_s = time.monotonic() - started
        options = PullOptions(
            concurrency=SHARED_PULL_CONCURRENCY,  # what the TUI's p and watch give a pull
            budget=shared_budget(fleet.watch.pull_rate_mbit),
            bulk=bulk,
        )
        began = time.monotonic()
        result = await pull_host(
            host, fleet.results_dir, connections.transport(host.name), options=options
        )
        pulled_s = time.monotonic() - began
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
        await connections.close_all()
    print(format_pull_result(result))
    print(
        f"connected with the agent's first sample in {sampled_s:.2f} s; "
        f"pull on the open connection: {pulled_s:.2f} s"
    )
    return 0 if result.ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host")
    parser.add_argument("--hosts", type=Path, required=True, help="the fleet file")
    parser.add_argument("--bulk", default="auto", choices=("auto", "ssh", "sftp"))
    args = parser.parse_args()
    return asyncio.run(pull_on_open_connection(args.host, args.hosts, args.bulk))


if __name__ == "__main__":
    sys.exit(main())
