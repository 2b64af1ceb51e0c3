"""`rgt-tui sync HOST` (a row of table.py): push the host's ``code`` tree to its workdir,
verified by hash (U42); ``--check`` only compares. A group's tree goes to every rank's
box in turn, each box reported on its own line (``services.queue.group.sync``).

Progress goes to stderr (a live bar on a terminal, a line every few seconds elsewhere),
the summary to stdout. A script or config of the tree (or the queue file) with CRLF line
endings is named on stderr with its fix, before anything is compared or sent (U26,
GEN4: bash on the box fails on them); it does not change the exit code. Exit codes
(exit_codes.py): 0 synced / in sync (a sync that leaves box-only files says the box
still differs, and ``--check`` then exits 1), 1 refused, failed or (``--check``) the box
differs or the tree has uncommitted changes, 2 bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from rgt_tui.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.pull_progress import LiveView
from rgt_tui.cli.runner import Call, interrupted_saying
from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.domain.units import fmt_bytes
from rgt_tui.services.connect import Transport

if TYPE_CHECKING:
    from pathlib import Path

    from rgt_tui.services.code_sync import CodeStatus, SyncResult


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


# Ctrl-C: what the box holds now. The files went to a staging folder of their own,
# removed on the way out; only a switch already under way (one command on the box, which
# goes on) changes the workdir.
sync_interrupted = interrupted_saying(
    lambda name: (
        "the files sent were staged apart and removed, so unless the switch into "
        f"the workdir had begun, {name}'s code is as it was — rgt-tui sync {name} --check says "
        "which"
    )
)


async def run_sync(call: Call, transport: Transport) -> int:
    """Sync (or with ``--check`` compare) the host's code; see the module docstring."""
    from rgt_tui.services.code_sync import SyncError, code_status, fleet_files, sync_code
    from rgt_tui.services.code_sync.crlf import crlf_preflight
    from rgt_tui.services.journal import torn_down_refusal

    host = call.host
    held = fleet_files(call.fleet)  # never sent: they name every box
    crlf = await crlf_preflight(host)
    code = host.ready.code
    if not crlf.ok and code is not None and code.expanduser().is_dir():  # else said below
        call.err.print(Text(f"{host.name}: warning: {crlf.detail} — {crlf.fix}"))
    if host.group is not None:
        return await _run_group_sync(call, transport, held)
    try:
        if call.args.check:
            status = await code_status(host, transport, withhold=held)
            if status is None:
                return call.fail(
                    f"no code directory is set for {host.name}",
                    fix='set code = "<local dir>" for the host (or in [fleet]) in hosts.toml',
                )
            return EXIT_OK if _print_status(host.name, status) else EXIT_PROBLEMS
        torn_down = await asyncio.to_thread(torn_down_refusal, call.fleet, host.name)
        if torn_down is not None:  # code sent there runs nowhere rgt-tui looks (s43 hour)
            return call.fail(torn_down)
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
    except TransportError as exc:
        if exc.fix or isinstance(exc, HostKeyError) or call.args.check:
            raise  # its own fix (a refused key, a stopped box), or nothing was sent
        # Cut off mid-sync: "unreachable: connection lost" and no word on the box's tree
        # nor on the files staged there (h573 #2).
        return call.fail(
            f"{host.name} unreachable: {exc.message}",
            fix=f"sync again once it answers (rgt-tui sync {host.name}): the files staged on "
            "the box (.rgt-sync.* in its workdir) are never used and the next sync removes "
            f"them; rgt-tui sync {host.name} --check says what the box's tree is now",
        )
    _print_result(call, host.name, host.name, host.name, result)
    return EXIT_OK


async def _run_group_sync(call: Call, transport: Transport, held: tuple[Path, ...]) -> int:
    """A group: every rank's box in turn, each reported on its own line (docs/groups.md);
    exit 1 when any box failed (named) or, with ``--check``, differs."""
    from rgt_tui.services.queue.group.ranks import who
    from rgt_tui.services.queue.group.sync import group_code_status, sync_group

    group = call.host
    assert group.group is not None
    boxes = group.group.hosts
    if call.args.check:
        got = await group_code_status(group, transport, withhold=held)
    else:
        with SyncProgressView(call.err, group.name) as progress:

            def on_progress(rank: int, done: int, total: int, path: str) -> None:
                progress.host = f"{group.name}: {who(group, rank)}"
                progress(done, total, path)

            got = await sync_group(
                group, transport, on_progress=on_progress,
                method="sftp" if call.args.sftp else "auto", withhold=held,
            )  # fmt: skip
    bad: list[str] = []  # the boxes that failed (or, with --check, differ)
    for rank in got:
        label = f"{group.name}: {rank.who}"
        if rank.error:
            bad.append(rank.who)
            call.fail(f"{label}: {rank.error}", fix=rank.fix or None)
        elif rank.result is not None:
            _print_result(call, label, boxes[rank.rank], group.name, rank.result)
        elif rank.status is None:
            bad.append(rank.who)
            call.fail(
                f"{label}: no code directory is set for {group.name}",
                fix='set code = "<local dir>" in the [[groups]] entry (or in [fleet]) in hosts.toml',
            )
        elif not _print_status(label, rank.status):
            bad.append(rank.who)
    if not bad:
        return EXIT_OK
    what = ("in sync", "not in sync") if call.args.check else ("synced", "failed")
    print(
        f"{group.name}: {len(got) - len(bad)} of {len(got)} boxes {what[0]}; "
        f"{what[1]}: {', '.join(bad)}"
    )
    return EXIT_PROBLEMS


def _print_status(label: str, status: CodeStatus) -> bool:
    """``--check``'s lines for one box; True when it holds the local tree."""
    box = status.box.short() if status.box is not None else "no workdir"
    print(f"{label}: local {status.local.short()}; box {box}")
    if status.skipped:  # "in sync" says nothing of what no sync sends
        from rgt_tui.services.code_sync import skipped_note

        print(f"{label}: {skipped_note(status.skipped)}")
    if status.unsent_left:  # not code, so not a difference: said, whatever the exit
        print(f"{label}: {status.unsent_note()}")
    problem = status.problem()
    if problem is None:
        print(f"{label}: in sync ({status.files} files)")
        return True
    print(f"{label}: {problem}" if label != status.host else problem)
    return False


def _configs_named(call: Call, box: str) -> dict[str, list]:
    """The code tree's files the host's queue file names as cells' configs (none when the
    host has no queue file or it cannot be read)."""
    from rgt_tui.services.queue.check import read_queue_file, tree_configs

    try:
        host = call.fleet.host(box)
    except KeyError:
        return {}
    if host.queue is None:
        return {}
    source = read_queue_file(Path(host.queue), host=host.name, default_epochs=host.epochs)
    return tree_configs(host, source.parsed.cells)


def _print_result(call: Call, label: str, box: str, name: str, result: SyncResult) -> None:
    """What one box's sync did (``label``: the host, or ``pair: rank 1 (box2)``; ``box``:
    the box's name; ``name``: the host or group ``rgt-tui sync`` was given)."""
    if result.box_differs:  # files left on the box: not "in sync" (--check fails)
        print(f"{label}: {result.headline()}; {result.still_differs_note(name)}")
    else:
        print(f"{label}: {result.headline()}; the workdir holds {result.identity.short()}")
    named = _configs_named(call, box) if result.removed else {}
    held = set(result.withheld)
    for path in result.removed:
        # A copy of the fleet file or a queue file is still in the tree: held back, so its
        # box copy goes (review h554 #1: "the tree no longer has it" was false of it).
        why = "it is held back (see below)" if path in held else "the tree no longer has it"
        print(f"{label}: removed {path} (an earlier sync put it there; {why})")
        if path in named:
            # The queue still names it: its cell's next run or retry fails (hour s20b #6).
            cells = ", ".join(f"{c.name} ({c.file}:{c.line})" for c in named[path][:3])
            print(
                f"{label}:   it is the config of cell {cells}: a run or retry of it on {box} "
                "would fail — put the file back in the tree and sync again, or drop the cell"
            )
    if result.overwritten or result.replaced_found:
        print(f"{label}: {result.overwritten_note()}")
    if result.left:
        shown = ", ".join(result.left[:3]) + (", …" if len(result.left) > 3 else "")
        print(
            f"{label}: left on the box, not in the tree: {shown} — remove by hand on "
            f"{box}, or add to code_exclude"
        )
    if result.excluded:
        shown = ", ".join(result.excluded[:3]) + (", …" if len(result.excluded) > 3 else "")
        print(
            f"{label}: kept on the box, as the rules now leave them out: {shown} — no "
            "longer sent, and never removed by a sync"
        )
    if result.withheld:
        from rgt_tui.services.code_sync import withheld_note

        print(f"{label}: {withheld_note(result.withheld)}")
    if result.secrets or result.secrets_left:
        from rgt_tui.services.code_sync import secrets_note

        print(f"{label}: {secrets_note(result.secrets, result.secrets_left)}")
    if result.note:
        call.err.print(Text(f"{label}: {result.note}"))
    if result.skipped:
        from rgt_tui.services.code_sync import skipped_note

        print(f"{label}: {skipped_note(result.skipped)}")


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
