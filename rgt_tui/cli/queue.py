"""The queue sub-commands: `queue check|show|append` and `diagnose` (rows of table.py;
`launch` is launch.py).

Each is the scriptable twin of a queue screen: the same services, printed as text or
JSON. Exit codes (exit_codes.py): 0 ok, 1 the command ran and found problems
(refused, unreachable, a vanished run), 2 bad input (unknown host, arguments, no
terminal to ask).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rgt_tui.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.runner import Call
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.queue_state import DONE, CellView, QueueView, cell_span, code_brief
from rgt_tui.domain.text import pad, printable
from rgt_tui.domain.units import plural
from rgt_tui.domain.vanished import Diagnosis, with_preemption
from rgt_tui.services.connect import Transport

if TYPE_CHECKING:  # the services load lazily, so `rgt-tui status` does not pay for them
    from rgt_tui.domain.preemption import Preemption
    from rgt_tui.domain.queue_file import QueueCell
    from rgt_tui.domain.queue_prefix import NotSent
    from rgt_tui.services.queue.check import QueueSource


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """FILEs and ``--json``."""
    parser.add_argument("files", nargs="*", metavar="FILE", help="more queue files to check")
    parser.add_argument("--json", action="store_true", help="print the parsed cells as JSON")


def run_check(call: Call) -> int:
    """Check every queue file of the fleet, and the FILEs named."""
    from rgt_tui.services.queue.check import check_fleet_queues, fleet_missing_configs

    args = call.args
    checked = check_fleet_queues(call.fleet, [Path(f) for f in args.files])
    # A config the host's code tree lacks (or sync does not send) fails its cell on the box.
    absent = fleet_missing_configs(call.fleet, checked)
    if args.json:
        host_of = {s.parsed.file: s.host for s in checked.sources}
        cells = [
            {"file": c.file, "line": c.line, "name": c.name, "cfg": c.cfg, "task": c.task,
             "epochs": c.epochs, "host": host_of.get(c.file)}
            for c in checked.cells
        ]  # fmt: skip
        print(json.dumps(cells, indent=2))
    else:
        # Read ones: a file with a line that is not UTF-8 still counts for its other lines.
        files = sum(1 for s in checked.sources if s.text is not None or s.parsed.cells)
        print(f"{plural(len(checked.cells), 'cell')} in {plural(files, 'queue file')}")
    for message in [*checked.messages(), *map(str, absent)]:
        print(message, file=sys.stderr)
    # CRLF line endings parse, but the launch's preflight fails them (U26): said here too,
    # not only by `queue show`'s diff (s36 faults #7). A warning: exit unchanged.
    for source in checked.sources:
        if source.crlf_line is not None:
            print(
                f"{source.parsed.file}:{source.crlf_line}: warning: Windows (CRLF) line endings — the "
                "launch's crlf check fails them (U26); convert: dos2unix "
                f"{source.parsed.file}",
                file=sys.stderr,
            )
    if not checked.sources and not args.json:
        print("no queue files: no host has a queue key and no FILE was given", file=sys.stderr)
    return EXIT_OK if checked.ok and not absent else EXIT_PROBLEMS


def view_to_json(
    view: QueueView,
    not_sent: NotSent | None = None,
    changed: str | None = None,
    local: QueueSource | None = None,
) -> dict[str, Any]:
    """The `queue show --json` object. With nothing on the box yet, ``local``'s cells
    are every one not sent (as the text says), each at the index it takes there."""
    unsent = list(not_sent.cells) if not_sent is not None else []
    if not view.cells and local is not None:
        unsent = list(enumerate(local.parsed.cells))
    return {
        "host": view.host,
        "state": view.state,
        "summary": view.summary(),
        "total": view.total,
        "resume_index": view.resume_index,
        "elapsed_s": view.elapsed_s,
        # The runner died without a done record: elapsed_s runs to its last sign of life.
        "elapsed_is_lower_bound": view.elapsed_is_lower_bound,
        "runner_alive": view.runner_alive,
        "cells": [asdict(c) for c in view.cells],
        # A Slurm host: the user's jobs by state, the partitions, where ended states come
        # from (None on any other host).
        "cluster": asdict(view.cluster) if view.cluster is not None else None,
        # The local queue file's cells the box does not hold yet, in file order: the index
        # each takes there and its line ([] when none, or not compared).
        # The local file's lines already sent, where they differ from the box's copy (which
        # the box runs): `queue show`'s note, in words ("" when they agree, or not compared).
        "sent_changed": changed or "",
        "not_sent": [
            {"index": i, "name": c.name, "file": c.file, "line": c.line} for i, c in unsent
        ],
    }


def format_view(
    view: QueueView,
    local: QueueSource | None = None,
    not_sent: NotSent | None = None,
    launched_as: str | None = None,
) -> str:
    """Plain text: the summary line, then one line per cell; with nothing on the box yet,
    the cells of the host's local queue file (``local``), not sent; after the box's
    cells, the file's cells not sent to it yet (``not_sent``), in file order.
    ``launched_as``: the host whose launch resumes these records, where not the view's
    own (a rank box's records of its group's job: the group)."""
    lines = [f"{view.host}: {view.summary()}"]
    if not view.cells and local is not None:
        cells = local.parsed.cells
        from rgt_tui.services.queue.check import display_path

        where = printable(display_path(local.path), None)
        lines[0] += f" · {plural(len(cells), 'cell')} in {where}, none sent to the box yet"
        # Each row as the docs and a later line's row say it: `not sent` (hour s31 CLI #10),
        # or `at fault` for a name used twice or a config the code tree lacks.
        lines += [
            _file_row(i, c, not_sent.label(c) if not_sent is not None else NOT_SENT)
            for i, c in enumerate(cells)
        ]
        if local.parsed.problems:  # a file launch refuses: said, not hidden (hour s33 CLI #4)
            first = printable(local.parsed.problems[0], None)
            more = len(local.parsed.problems) - 1
            also = f" (and {plural(more, 'more problem')})" if more else ""
            lines.append(
                f"the queue file cannot be launched as it is: {first}{also} — rgt-tui queue "
                f"check {where} says every one"
            )
        elif not_sent is not None and not_sent.problems:
            lines.append(
                f"the queue file cannot be launched as it is: {not_sent.faults_said(where, added=False)}"
            )
    for c in view.cells:
        note = f"  — {c.note}" if c.note else ""
        code = f"  {code_brief(c.code)}" if c.attempts else ""  # the code it ran (U42)
        again = f"  {c.retry_text()}" if c.retries else ""  # the Queue tab's words
        lines.append(
            f"  {c.index:>3}  {pad(c.name, 28)} {c.label:<18} {c.ran(view.now):>7}{code}{again}{note}"
        )
    if not_sent is not None and view.cells:  # with none on the box, the rows above say it
        lines += not_sent_lines(view, not_sent)
    if view.stop_text():  # queue stop / kill --then stop: asked, or where it stopped
        lines.append(view.stop_text())
    if view.cluster is not None:  # a Slurm host: the user's jobs, partitions, accounting
        lines.append(view.cluster.line())
    if view.resume_index is not None:
        lines.append(resume_line(launched_as or view.host, view.resume_index, view.cells))
    return "\n".join(lines)


def resume_line(host: str, index: int, cells: Sequence[CellView]) -> str:
    """``resume: rgt-tui launch HOST --start N``, saying which done cells after N that
    launch runs again (every cell from its start runs: on Slurm the cells of an array end
    out of order), and the resume that runs the cell alone from its checkpoint."""
    line = f"resume: rgt-tui launch {host} --start {index}"
    done = [c.index for c in cells if c.index > index and c.status == DONE]
    if not done:
        return line
    name = next((c.name for c in cells if c.index == index), str(index))
    return (
        f"{line} (runs done {cell_span(done, 'again', 'again')} too), "
        f"or rgt-tui queue retry {host} {shlex.quote(name)} --resume (that cell alone, "
        "from its checkpoint if it wrote one)"
    )


def _file_row(index: int, cell: QueueCell, label: str, tail: str = "") -> str:
    """A row for a cell of the local file (not on the box), in the box's cells' columns;
    its name made printable (the file may come from anyone's git push)."""
    return f"  {index:>3}  {pad(printable(cell.name, None), 28)} {label:<18}{tail}".rstrip()


NOT_SENT = "not sent"  # a not-sent cell's label, in the column of the box's states


def not_sent_lines(view: QueueView, not_sent: NotSent) -> list[str]:
    """``not sent: 2 cells of queues/box1.txt (lines 7–8), not on box1 yet: rgt-tui queue
    append box1 sends them …``, then a row each, in the file's order, with the index each
    takes on the box and its line. The file's own text is made printable (it may come
    from anyone's git push)."""
    host, cells = view.host, not_sent.cells
    where = printable(not_sent.file, None)
    span = not_sent.span
    them = "it" if len(cells) == 1 else "them"
    if view.runner_alive and not view.stop_requested and not_sent.stale:
        # What append would answer (h462 #5: this line promised it, the append refused).
        how = (
            f"{not_sent.stale_said(host)}: append {them} once the queue ends, after rgt-tui "
            f"sync {host} (rgt-tui queue append {host} refuses {them} now)"
        )
    elif view.runner_alive and not view.stop_requested:
        how = (
            f"rgt-tui queue append {host} sends {them}, and the running queue runs {them} "
            "after its cells"
        )
    elif view.runner_alive:  # a stop was asked: an append would only send them
        sync = f"rgt-tui sync {host}, " if not_sent.stale else ""  # refused until it ends
        how = (
            f"the queue stops after its current cell, then {sync}rgt-tui launch {host} sends "
            f"and runs {them}"
        )
    else:  # an append only sends them: a launch runs them (from where it starts)
        how = (
            f"rgt-tui launch {host} sends and runs {them} (the queue is not running; "
            f"rgt-tui queue append {host} only sends {them})"
        )
    if not_sent.stale and not view.runner_alive:
        # A launch refuses a config the box does not hold as here (h493 #2).
        how = f"{not_sent.stale_said(host, running=False)}: rgt-tui sync {host} first, then {how}"
    if not_sent.problems:  # append and launch refuse a file with a line at fault
        how = f"once the lines at fault below are put right, {how}"
    head = f"not sent: {plural(len(cells), 'cell')} of {where}{span}, not on {host} yet: {how}"
    faults = not_sent.faults_said(where)
    if not cells:  # only lines `queue check` finds at fault were added
        return [f"not sent: {faults}"]
    lines = [head]
    lines += [_file_row(i, c, not_sent.label(c), f" {'':>7}  line {c.line}") for i, c in cells]
    return lines + ([f"  and {faults}"] if not_sent.problems else [])


async def run_show(call: Call, transport: Transport) -> int:
    """Every cell's state on the host, from the box's records, then the local queue
    file's cells not sent to the box yet."""
    from rgt_tui.domain.errors import TransportError
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.append import AgainstBox, against_box, with_stale_configs
    from rgt_tui.services.queue.box_code import pending_code_note
    from rgt_tui.services.queue.check import read_queue_file
    from rgt_tui.services.queue.view import read_queue_view
    from rgt_tui.services.runtime.preemption import with_unreachable_fix

    try:
        view = await read_queue_view(call.host, transport)
    except TransportError as exc:  # a spot box gone: say what to do about its cell
        raise with_unreachable_fix(call.fleet, call.host, exc) from exc
    local = None
    if not view.cells and call.host.queue is not None:
        local = read_queue_file(
            Path(call.host.queue), host=call.host.name, default_epochs=call.host.epochs
        )
    # One read of the box's copy of the queue file: the sent lines edited here, else the
    # lines added since the last launch or append.
    compared = AgainstBox()
    if view.cells or local is not None:
        # Nothing sent yet: the whole file against the fleet (names used twice, configs
        # the code tree lacks), as the Queue tab marks them (h493 #6: it read "at fault"
        # where queue show said nothing).
        try:
            compared = await against_box(call.host, transport, view, call.fleet)
            if view.cells:
                compared = await with_stale_configs(
                    call.fleet, call.host, transport, view, compared
                )
        except (QueueError, TransportError) as exc:  # the view was read: show it anyway
            compared = AgainstBox(f"cannot compare the local queue file with the box's copy: {exc}")
    if call.args.json:
        code_note = await pending_code_note(call.fleet, call.host, transport, view)
        shown = view_to_json(view, compared.not_sent, compared.changed, local)
        print(json.dumps(shown | {"code_differs": code_note}, indent=2))
        return EXIT_OK
    if line := preempted_line(call):
        print(line)
    for line in rank_lines(call.fleet, call.host.name):
        print(line)
    # A rank's records of its group's job resume by the group's launch: the box's own
    # is refused (a re-check of s39's fixes: "resume: rgt-tui launch box3 --start 0").
    rank = call.fleet.rank_of(call.host.name) if view.group_job else None
    print(format_view(view, local, compared.not_sent, rank[0] if rank else None))
    if compared.changed:
        print(f"note: {compared.changed}")
    # After the view, which it must not hold up (the comparison hashes both trees).
    sys.stdout.flush()
    code_note = await pending_code_note(call.fleet, call.host, transport, view)
    if code_note:
        print(f"note: {code_note} (rgt-tui queue stop {call.host.name}; rgt-tui sync "
              f"{call.host.name}; rgt-tui launch {call.host.name})")  # fmt: skip
    return EXIT_OK


def rank_lines(fleet: Fleet, name: str) -> list[str]:
    """``box1 is rank 0 of group pair: …`` for each group the host is a box of: a rank's
    records hold the group's cells, which read as the box's own queue (ux-h #16)."""
    return [
        f"{name} is rank {group.group.hosts.index(name)} of group {group.name}: cells of "
        f"{group.name} show here as this box's own; `rgt-tui queue show {group.name}` "
        "reads the whole job"
        for group in fleet.hosts
        if group.group is not None and name in group.group.hosts
    ]


def preempted_line(call: Call) -> str | None:
    """``preempted at ~14:03: cell X interrupted; last verified step k, …`` when the TUI or ``watch``
    named a preemption of the host that still holds (issue 40); None otherwise."""
    from rgt_tui.domain.preemption import preemption_line

    named = named_preemption(call)
    return preemption_line(named) if named is not None else None


def named_preemption(call: Call) -> Preemption | None:
    """The preemption the TUI or ``watch`` named for the host that still holds; None."""
    from rgt_tui.services.runtime.preemption import named_preemption as named

    return named(call.fleet, call.host.name)


async def run_append(call: Call, transport: Transport) -> int:
    """Send the lines appended to the host's local queue file."""
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.backends import backend_for

    host = call.host
    try:
        result = await backend_for(host).append_cells(call.fleet, transport)
    except QueueError as exc:
        return call.fail(str(exc))
    if not result.added:
        print(f"{host.name}: no new cells ({result.detail})")
        return EXIT_OK
    print(f"{host.name}: appended {len(result.added)} cell{'s' if len(result.added) != 1 else ''}:")
    for c in result.added:
        print(f"  {c.index:>3}  {c.name}  {c.task}  {c.epochs_note}  ({c.where})")
    print(result.detail)
    from rgt_tui.services.code_sync.crlf import queue_has_crlf

    if host.queue is not None and queue_has_crlf(host.queue):
        # Appended as parsed (the \r is dropped), but the next launch's crlf check fails
        # the file: said now, as `queue check` says it (hour s45b #2: taken silently).
        print(
            f"{host.name}: warning: {host.queue} has Windows (CRLF) line endings — the next "
            f"launch's crlf check fails them (U26); convert: dos2unix {host.queue}",
            file=sys.stderr,
        )
    if not result.running:
        # Where the detail says a launch begins: the first added cell's index skipped an
        # earlier pending or failed cell (hour s22c #6).
        start = result.start if result.start is not None else result.added[0].index
        print(f"start them: rgt-tui launch {host.name} --start {start}")
    return EXIT_OK


def diagnosis_to_json(view: QueueView, d: Diagnosis) -> dict[str, Any]:
    """The `diagnose --json` object."""
    return {**asdict(d), "evidence": [asdict(e) for e in d.evidence], "queue": view_to_json(view)}


def format_diagnosis(d: Diagnosis, cells: Sequence[CellView] = ()) -> str:
    """The diagnosis as text: the verdict, each cause's evidence, the next step."""
    lines = [f"{d.host}: {d.summary}"]
    for e in d.evidence:
        lines.append(f"  {e.cause:<12} {e.verdict:<8} {e.detail}")
    if d.next_step:
        lines.append(f"next: {d.next_step}")
    if d.resume_index is not None:
        lines.append(resume_line(d.host, d.resume_index, cells))
    return "\n".join(lines)


async def run_diagnose(call: Call, transport: Transport) -> int:
    """Name the cause of the host's latest vanished run; exit 1 when there is one (a cell
    that failed by itself is named, but no run vanished: 0)."""
    from rgt_tui.domain.errors import TransportError
    from rgt_tui.services.queue.view import diagnose_queue
    from rgt_tui.services.runtime.preemption import with_unreachable_fix

    try:
        view, diagnosis = await diagnose_queue(call.host, transport)
    except TransportError as exc:  # a spot box gone: say what to do about its cell
        raise with_unreachable_fix(call.fleet, call.host, exc) from exc
    # A vanished run of a box named preempted is the preemption's, not a manual kill.
    diagnosis = with_preemption(diagnosis, named_preemption(call), call.host.watch.spare)
    if not call.args.json and (line := preempted_line(call)):
        print(line)
    print(
        json.dumps(diagnosis_to_json(view, diagnosis), indent=2)
        if call.args.json
        else format_diagnosis(diagnosis, view.cells)
    )
    return EXIT_PROBLEMS if diagnosis.found else EXIT_OK
