"""`rgt-tui sync HOST` (a row of table.py): push the host's ``code`` tree to its workdir,
verified by hash (U42); ``--check`` only compares.

Progress goes to stderr (a live bar on a terminal, a line every few seconds elsewhere),
the summary to stdout. A script or config of the tree (or the queue file) with CRLF line
endings is named on stderr with its fix, before anything is compared or sent (U26,
GEN4: bash on the box fails on them); it does not change the exit code. Exit codes (exit_codes.py): 0 synced / in sync, 1 refused, failed
or (``--check``) the box differs or the tree has uncommitted changes, 2 bad input.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from rich.console import Console
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from rgt_tui.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.pull_progress import LiveView
from rgt_tui.cli.runner import Call
from rgt_tui.domain.units import fmt_bytes
from rgt_tui.services.connect import Transport


def add_sync_arguments(parser: argparse.ArgumentParser) -> None:
    """``--check`` and ``--sftp``."""
    parser.add_argument(
        "--check",
        action="store_true",
        help="only compare the box's copy with the local tree (exit 1 when it differs)",
    )
    parser.add_argument(
        "--sftp", action="store_true", help="send over SFTP even where rsync could be used"
    )


async def run_sync(call: Call, transport: Transport) -> int:
    """Sync (or with ``--check`` compare) the host's code; see the module docstring."""
    from rgt_tui.services.code_sync import (
        SyncError,
        code_status,
        fleet_files,
        sync_code,
        withheld_note,
    )
    from rgt_tui.services.code_sync.crlf import crlf_preflight

    host = call.host
    held = fleet_files(call.fleet)  # never sent: they name every box
    crlf = await crlf_preflight(host)
    if not crlf.ok:
        call.err.print(Text(f"{host.name}: warning: {crlf.detail} — {crlf.fix}"))
    try:
        if call.args.check:
            status = await code_status(host, transport, withhold=held)
            if status is None:
                return call.fail(
                    f"no code directory is set for {host.name}",
                    fix='set code = "<local dir>" for the host (or in [fleet]) in hosts.toml',
                )
            box = status.box.short() if status.box is not None else "no workdir"
            print(f"{host.name}: local {status.local.short()}; box {box}")
            problem = status.problem()
            if problem is None:
                print(f"{host.name}: in sync ({status.files} files)")
                return EXIT_OK
            print(problem)
            return EXIT_PROBLEMS
        with SyncProgressView(call.err, host.name) as progress:
            result = await sync_code(
                host,
                transport,
                on_progress=progress,
                method="sftp" if call.args.sftp else "auto",
                withhold=held,
            )
    except SyncError as exc:
        return call.fail(f"{exc.host}: {exc.message}", fix=exc.fix or None)
    if result.files_sent:
        sent = f"sent {result.files_sent} of {result.files_total} files, {fmt_bytes(result.bytes_sent)}, by {result.method}"
    else:
        sent = f"already in sync ({result.files_total} files), nothing sent"
    print(f"{host.name}: {sent}; the workdir holds {result.identity.short()}")
    for path in result.removed:
        print(
            f"{host.name}: removed {path} (an earlier sync put it there; the tree no longer has it)"
        )
    if result.left:
        shown = ", ".join(result.left[:3]) + (", …" if len(result.left) > 3 else "")
        print(
            f"{host.name}: left on the box, not in the tree: {shown} — remove by hand on "
            f"{host.name}, or add to code_exclude; rgt-tui sync {host.name} --check fails until then"
        )
    if result.withheld:
        print(f"{host.name}: {withheld_note(result.withheld)}")
    if result.note:
        call.err.print(Text(f"{host.name}: {result.note}"))
    if result.skipped:
        shown = ", ".join(result.skipped[:3]) + (", …" if len(result.skipped) > 3 else "")
        call.err.print(Text(f"{host.name}: left out {len(result.skipped)}: {shown}"))
    return EXIT_OK


class SyncProgressView(LiveView):
    """The sync's ``on_progress(done, total, path)``: a bar redrawn in place on a
    terminal, a line every ``LINE_EVERY_S`` elsewhere (as ``pull`` draws its own)."""

    REDRAW_S = 0.1
    LINE_EVERY_S = 5.0

    def __init__(
        self, console: Console, host: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(console, clock=clock)
        self.host = host

    def __call__(self, done: int, total: int, path: str) -> None:
        now = self.clock()
        last = done >= total
        if self._live is not None:
            if last or now - self._last >= self.REDRAW_S:
                self._last = now
                self._live.update(self._render(done, total, path), refresh=True)
        elif last or now - self._last >= self.LINE_EVERY_S:
            self._last = now
            self.console.print(
                Text(f"{self.host}: sending {fmt_bytes(done)}/{fmt_bytes(total)} {path}")
            )

    def _render(self, done: int, total: int, path: str) -> Table:
        line = Table.grid(padding=(0, 1))
        line.add_column(no_wrap=True)
        line.add_column(width=20, no_wrap=True)
        line.add_column()
        name = path if len(path) <= 40 else "…" + path[-39:]
        line.add_row(
            Text(f"{self.host} sync"),
            ProgressBar(total=1.0, completed=done / total if total else 1.0, width=20),
            Text(f"{fmt_bytes(done)}/{fmt_bytes(total)} {name}", no_wrap=True, overflow="ellipsis"),
        )
        return line
