"""`rgt-tui teardown HOST`: the checklist, `--check` for scripts, and the typed confirmation.

The box is re-scanned when the checklist is shown (``--check`` included) and again after
the host's name is typed, right before the teardown command runs: an unreachable or
changed box at that moment refuses, however long the prompt waited. Without a teardown
command the instructions are shown and nothing is recorded until the name is typed a
second time to say the box is destroyed (``--destroyed HOSTNAME`` afterwards, for scripts).
Either records the teardown of one box only: the box whose gate the typed confirmation
opened, and only while the journal still holds that box under the name (a new box seen
meanwhile, or a box never confirmed, refuses: nothing is recorded).

Past 450 lines on purpose: one command whose modes (the checklist, the confirmation, a
destroyed record, a Slurm cancel, the acknowledgements) share its journal, its gate and
its refusals; the checklist's text is ``services.teardown``'s.

Acknowledgements (``--ack-missing``, ``--ack-running``, ``--ack-unfinished``) are of the
box answering now: it is identified first and the acknowledgement recorded for it, or
refused. An ``--ack-unfinished`` name must be a cell the check just made found unfinished
(failed, killed, interrupted, ended by the scheduler, pending): the gate is checked, the
names recorded, and the checklist shown again from the records.

Text from the box (errors, paths, reasons) is printed through ``text.printable``.

Exit codes (exit_codes.py):

- 0: torn down (recorded as such), or with ``--check`` every condition but the typed name
  holds, or with ``--destroyed`` the manual teardown was recorded;
- 1: the gate is locked, the confirmation was refused, the teardown command failed, or
  (no teardown command) the box was not confirmed destroyed, so nothing was recorded;
- 2: bad input: the fleet file, an unknown host, a group (each of its boxes is torn
  down on its own: the message names each one's command), an ``--ack-missing`` /
  ``--ack-running`` name that is not a cell of the host's queue, or an
  ``--ack-unfinished`` name that is not an unfinished cell of the host (the message
  lists the cells; nothing is acknowledged).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from rgt_tui.cli.event_loop import run_async
from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.prompt import ask
from rgt_tui.cli.runner import Call
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.gate_fixes import FOUND, fixes, needs
from rgt_tui.domain.manifest import ManifestError
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import plural
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.connect import Transport
from rgt_tui.services.journal import Journal, JournalError, journal_for
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.scheduler import JobGated
from rgt_tui.services.teardown import (
    GateReport,
    NotRunningError,
    NotUnfinishedError,
    StillToRun,
    TeardownOutcome,
    UnknownCellError,
    acknowledge,
    box_still_answers,
    check_cells,
    check_gate,
    confirm_and_tear_down,
    confirmed_at,
    gather,
    group_refusal,
    instructions,
    is_cluster,
    observe_now,
    queue_cells,
    record_destroyed,
)

# A teardown that exits 0, or "destroyed" typed, is no proof the box stopped (hour s19a
# #3): the way to check, once the provider has had its few minutes.
LOOK_AGAIN = (
    "In about 5 minutes, `rgt-tui status {host}` should say it no longer answers; "
    "one that still answers may still be billing (GEN1). `watch` and the TUI look too."
)


# The checklist lines an acknowledgement settles: missing cells, running, unfinished.
ACKED_LINES = frozenset({"roster", "idle", "unfinished"})


def with_live_lines(after: GateReport, live: GateReport) -> GateReport:
    """The checklist after acknowledgements (``after``, from the records) with every
    other line as the live check just before found it, those only it has included: the
    records alone read a re-scan
    that found the box changed as "no matching re-scan … once the box answers", of a box
    that had just answered (h472 #1). An acknowledgement settles only its own lines."""
    found = {c.key: c for c in live.conditions}
    lines = [
        c if c.key in ACKED_LINES or c.key not in found else found[c.key] for c in after.conditions
    ]
    # Lines the records never hold (a group's running cell on this rank, read live only)
    # go in too, before the typed name: dropped, the check could read "ready" (h473 #2).
    kept = {c.key for c in lines}
    extra = [c for c in live.conditions if c.key not in kept and c.key not in ACKED_LINES]
    at = next((i for i, c in enumerate(lines) if c.key == "confirmed"), len(lines))
    return replace(after, conditions=(*lines[:at], *extra, *lines[at:]))


def add_teardown_arguments(p: argparse.ArgumentParser) -> None:
    """``--check`` | ``--confirm`` | ``--destroyed``, and the acknowledgements."""
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        # Not read-only when --ack-* come with it: a user's hour read "re-scan" and was
        # surprised the acknowledgements stayed (they are recorded, as docs/teardown.md says).
        help="re-scan; exit 0 only when all but the typed name hold (any --ack-* given "
        "is recorded for this box first, and counts)",
    )
    mode.add_argument(
        "--confirm", metavar="HOSTNAME", help="the host's name, typed, to confirm non-interactively"
    )
    mode.add_argument(
        "--destroyed",
        metavar="HOSTNAME",
        help="no teardown command: you destroyed by hand the box whose teardown you confirmed; "
        "the host's name, typed again, records that box as torn down",
    )
    mode.add_argument(
        "--cancel-jobs",
        metavar="HOSTNAME",
        help="a Slurm host: scancel every job of its queue still pending or running "
        "(the host's name, typed, to confirm); the gate then needs them ended",
    )
    p.add_argument(
        "--ack-missing",
        metavar="CELL",
        action="append",
        default=[],
        help="accept a cell with no results, recorded for this box (a cell of the host's queue)",
    )
    p.add_argument(
        "--ack-running",
        metavar="CELL",
        action="append",
        default=[],
        help="accept a cell still running, recorded for this box (a cell of the host's queue)",
    )
    p.add_argument(
        "--ack-unfinished",
        metavar="CELL",
        action="append",
        default=[],
        help="accept tearing down with a cell's work unfinished (failed, killed, "
        "interrupted, ended by the scheduler, pending: a cell the checklist names so)",
    )


def journal(call: Call) -> Journal:
    """The teardown journal of the call's fleet (``paths.journal_dir``)."""
    return journal_for(call.fleet)


def _when(t: float | None) -> str:
    return "?" if t is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def format_checklist(report: GateReport, *, confirm_given: bool = False) -> str:
    """The checklist as text: each item with what it needs and what was found (a locked
    one with the command that settles it), then the profile. ``confirm_given``: the name
    came with ``--confirm``; it is checked after the fresh re-scan that follows."""
    lines = [f"Teardown checklist for {report.host.name} ({report.profile.title})"]
    settles = fixes(report.conditions, report.host.name, tui=False)
    for c, settle in zip(report.conditions, settles, strict=True):
        found = printable(c.evidence, None)
        if c.key == "confirmed" and not c.ok and confirm_given:
            # No re-scan follows a gate locked elsewhere: "below" promised one, and
            # nothing came (s37 money hour #10).
            found = (
                "given with --confirm: checked after a fresh re-scan, below"
                if report.ready_but_confirmation
                else "given with --confirm: checked once the lines above hold"
            )
        lines.append(f"  [{'x' if c.ok else ' '}] {c.key:<10} {needs(c.key)}{FOUND}{found}")
        if settle:
            lines.append(f"                 → {settle}")
    for problem in report.problems:
        lines.append(f"  ! {printable(problem, None)}")
    lines += [f"  note: {note}" for note in report.notes]  # made printable where built
    p = report.profile
    rows = [
        ("teardown verb", p.teardown_verb + ("  (IRREVERSIBLE)" if p.irreversible else "")),
        ("destroys", p.destroys),
        ("keeps billing", "; ".join(p.keeps_billing)),
        ("survives meter-stop", p.meter_stop_survives),
        ("danger clocks", "; ".join(p.clock_lines)),
        ("teardown command", report.host.teardown or "(none: you will be shown what to do)"),
    ]
    lines += [f"  {label + ':':<21} {value}" for label, value in rows]  # one column
    if still_answers(report):
        # GEN1: `status` said STILL ANSWERS while this check, which had just reached the
        # box, said only "already recorded" and "ready" (a user's second hour, s41).
        lines.append(
            f"  recorded as torn down ({_when(report.torn_down_at)}), but the box STILL "
            "ANSWERS: it may still be billing — tear it down again, or destroy it in the "
            "provider's console (GEN1)"
        )
    elif report.torn_down_at is not None:
        lines.append(f"  already recorded as torn down ({_when(report.torn_down_at)})")
    for old in report.history:
        box = old.box.describe() if old.box else "a box never identified"
        torn = (
            f"torn down {_when(old.torn_down_at)}" if old.torn_down_at else "never torn down here"
        )
        lines.append(
            f"  history: {box}, seen until {_when(old.retired_at)}, {torn} — "
            f"{printable(old.why)} (not counted for the box answering now)"
        )
    return "\n".join(lines)


def still_answers(report: GateReport) -> bool:
    """The box recorded as torn down answered this check as itself: its ``box`` item
    holds only while the recorded box answers."""
    return report.torn_down_at is not None and any(
        c.key == "box" and c.ok for c in report.conditions
    )


def _ask(prompt: str) -> str | None:
    """A line typed at the terminal; None without one."""
    if not sys.stdin.isatty():
        return None
    return ask(prompt)


def teardown_interrupted(call: Call) -> int:
    """Ctrl-C before the teardown command ran (while it runs, ``run_teardown`` says its
    own): nothing was torn down; acknowledgements passed with ``--ack-*`` were recorded
    before the question, and say so (a user's hour read "recorded nothing" and later
    found the gate open but for the name)."""
    args = call.args
    acks = [*args.ack_missing, *args.ack_running, *args.ack_unfinished]
    kept = (
        f"; the {plural(len(acks), 'acknowledgement')} passed with --ack-* "
        f"({', '.join(printable(a, 200) for a in acks)}) stay recorded"
        if acks
        else " and recorded nothing"
    )
    call.fail(f"{call.host.name}: interrupted; rgt-tui ran no teardown command{kept}")
    return EXIT_INTERRUPTED


def run_teardown(call: Call) -> int:
    """Run `rgt-tui teardown`.

    Two connections, none held while a person types: one gathers the checklist, a fresh
    one re-scans the box after the name was typed, however long the prompt waited.
    """
    args, host = call.args, call.host
    refused = group_refusal(host)
    if refused is not None:  # before any connection: nothing is checked under a group
        return call.fail(f"{refused}; nothing was checked", code=EXIT_BAD_INPUT)
    j = journal(call)
    if args.destroyed is not None:
        return _record_destroyed(call, j, args.destroyed)
    if args.cancel_jobs is not None:
        return _cancel_jobs(call, args.cancel_jobs)
    acks = bool(args.ack_missing or args.ack_running or args.ack_unfinished)
    if args.confirm is not None and args.confirm != host.name:
        # Before anything is checked or acknowledged: a mistyped name recorded the
        # --ack-* passed with it and said "nothing was torn down" (hour s24c #10), and
        # with the gate locked it was never said at all.
        return call.fail(
            f"refused: '{printable(args.confirm, 200)}' is not '{host.name}': nothing was "
            "checked, acknowledged or torn down",
        )
    if acks:
        try:
            check_cells((*args.ack_missing, *args.ack_running), queue_cells(host))
        except UnknownCellError as exc:
            queue = f" ({host.queue})" if host.queue else " (it has no queue file)"
            known = ", ".join(exc.known_cells) or "none"
            return call.fail(
                f"no cell named '{exc.name}' in {host.name}'s queue{queue}; "
                f"nothing was acknowledged. Its cells: {known}",
                code=EXIT_BAD_INPUT,
            )

    async def checklist(transport: Transport) -> GateReport | int:
        if not acks:
            return await check_gate(call.fleet, host, transport, j)
        try:
            # The acknowledgements are of the box answering now, and which of its cells
            # run, wait or are unfinished is this check's to say, not an older one's (a
            # refusal read a stopped queue as running: review s25 #7): check, then record
            # the names against what it found, then the checklist from those records.
            live = await check_gate(call.fleet, host, transport, j)
            box = await observe_now(host, transport, j)  # refused when it does not answer
            await asyncio.to_thread(
                acknowledge,
                j,
                host.name,
                missing=tuple(args.ack_missing),
                running=tuple(args.ack_running),
                unfinished=tuple(args.ack_unfinished),
                cells=queue_cells(host),
                box=box,
            )
        except (NotUnfinishedError, NotRunningError, StillToRun) as exc:
            return call.fail(printable(exc, 1000), code=EXIT_BAD_INPUT)
        except (TransportError, ManifestError, ValueError, JournalError) as exc:
            # The box could not say which box it is, or another box was recorded
            # meanwhile.
            return call.fail(f"{printable(exc, 1000)}; nothing was acknowledged")
        after = await gather(call.fleet, host, transport, j, clock=time.time, records_only=True)
        return with_live_lines(after, live)

    report = call.on_host(checklist)
    if isinstance(report, int):
        return report
    if acks:
        # Recorded, with --check too (hour s19a #7: a "what if" run kept them unsaid).
        said = [
            f"{', '.join(names)} {what}"
            for names, what in (
                (args.ack_missing, "accepted as missing"),
                (args.ack_running, "accepted as running"),
                (args.ack_unfinished, "accepted as unfinished"),
            )
            if names
        ]
        print(f"recorded for this box in the journal: {'; '.join(said)}")
    print(format_checklist(report, confirm_given=args.confirm is not None))
    if args.check:
        if report.ready_but_confirmation:
            again = " (again: the box still answers)" if still_answers(report) else ""
            print(f"ready{again}: every condition holds but the typed confirmation")
            return EXIT_OK
        locked = [c for c in report.conditions if not c.ok and c.key != "confirmed"]
        # An unfinished cell is a line of its own: named with its key. What settles each
        # is under its line above: the recap names them, once.
        names = [f"{c.key} {c.settle[0]}" if c.key == "unfinished" else c.key for c in locked]
        print("locked: " + ", ".join(names) + " (what settles each is under its line above)")
        return EXIT_PROBLEMS
    if not report.ready_but_confirmation:
        print("locked: nothing will be torn down until every item above holds", file=sys.stderr)
        return EXIT_PROBLEMS
    typed = args.confirm
    if typed is None:
        typed = _ask(f"Type the host's name ({host.name}) to tear it down: ")
        if typed is None:
            # A terminal whose input ended (Ctrl-D) is not "no terminal" (a user's hour).
            why = "no name typed" if sys.stdin.isatty() else "no terminal to type the confirmation"
            print(
                f"refused: {why}; nothing was torn down — type the name at the question, or "
                "pass --confirm HOSTNAME explicitly",
                file=sys.stderr,
            )
            return EXIT_PROBLEMS
    if typed != host.name:
        print(f"refused: '{typed}' is not '{host.name}'; nothing was torn down", file=sys.stderr)
        return EXIT_PROBLEMS

    pids: list[int] = []

    def started(pid: int) -> None:
        pids.append(pid)
        print(f"running the teardown command (pid {pid}): {host.teardown}", flush=True)

    async def confirm(transport: Transport) -> TeardownOutcome:
        # A connection of its own: the box is re-scanned now, after the name was typed.
        return await confirm_and_tear_down(
            call.fleet, host, j, typed, transport, cwd=Path(os.getcwd()), started=started
        )

    try:
        outcome = call.on_host(confirm)
    except PermissionError as exc:
        report = getattr(exc, "report", None)  # GateLocked: the checklist at the name
        if report is not None:
            # The checklist on screen was the one before the name, every line ticked: the
            # one that refused it, with what settles each line, is printed (h613 #1: "see
            # the checklist" named one nowhere on screen, and no command).
            print("The checklist when the name was checked:")
            print(format_checklist(report))
        fix = " — what settles each line is under it above" if report is not None else ""
        print(f"refused: {exc}; nothing was torn down{fix}", file=sys.stderr)
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        if not pids:
            raise  # nothing ran: the runner's 130
        # The command runs in a group of its own and goes on: a destroy cut halfway is
        # worse than one finished. Its outcome is what this process can no longer see.
        print(
            f"interrupted: the teardown command (pid {pids[0]}) goes on and may still destroy "
            f"{host.name}; {host.name} is NOT recorded as torn down. When it has ended, check "
            f"the provider's console; if the box is gone, record it: "
            f"rgt-tui teardown {host.name} --destroyed {host.name}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if outcome.credentials:  # the box's credentials file, removed first (U34)
        print(outcome.credentials)
    if not outcome.ran:
        return _manual_teardown(call, j, outcome)
    print(outcome.output, end="" if outcome.output.endswith("\n") else "\n")
    if outcome.timed_out:  # the output's last line says what may have happened
        print(
            f"teardown command TIMED OUT and was stopped with every process it started; "
            f"{host.name} is NOT recorded as torn down: check the provider's console",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    if not outcome.ok:
        print(
            f"teardown command FAILED (exit {outcome.exit_status}); {host.name} is NOT recorded as torn down",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    print(f"teardown command exited 0; {host.name} is recorded as torn down.")
    print(LOOK_AGAIN.format(host=host.name))
    return EXIT_OK


def _cancel_jobs(call: Call, typed: str) -> int:
    """``--cancel-jobs HOSTNAME``: scancel the Slurm host's live jobs, the name typed."""
    from rgt_tui.services.box_ctl import QueueError

    host = call.host
    backend = backend_for(host)
    if not isinstance(backend, JobGated):
        return call.fail(
            f"{host.name} is not a Slurm host: it has no jobs to cancel", code=EXIT_BAD_INPUT
        )
    try:
        result = call.on_host(lambda transport: backend.cancel_jobs(transport, typed))
    except PermissionError as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return EXIT_PROBLEMS
    except QueueError as exc:
        return call.fail(str(exc))
    if not result.cancelled and not result.failed:
        print(f"{host.name}: no job of its queue is pending or running: nothing to cancel")
    for job in result.cancelled:
        print(f"{host.name}: scancel {job}")
    for why in result.failed:
        print(f"{host.name}: scancel failed: {printable(why)}", file=sys.stderr)
    print(f"then: rgt-tui teardown {host.name} --check (the gate reads squeue again)")
    return EXIT_PROBLEMS if result.failed else EXIT_OK


def _manual_teardown(call: Call, j: Journal, outcome: TeardownOutcome) -> int:
    """No teardown command: the instructions, then the name typed again once it is done.
    What is recorded is the teardown of the box the confirmation was about."""
    host = call.host
    box = outcome.report.box if outcome.report is not None else None
    if outcome.cluster:  # the gate opened: jobs ended; nothing destroyed, nothing recorded
        print(outcome.instructions)
        return EXIT_OK
    which = f" ({box.describe()})" if box is not None else ""
    print(f"No teardown command is configured. Do this by hand now, for {host.name}{which}:")
    print(f"  {outcome.instructions}")
    print(f"Nothing is recorded yet: {host.name} keeps billing until you have destroyed it.")
    again = _ask(
        f"Once you have destroyed it, type its name ({host.name}) again to record it as torn "
        "down (anything else: nothing is recorded): "
    )
    if again is None:
        print(
            f"{host.name} is NOT recorded as torn down. Once you have destroyed it, run: "
            f"rgt-tui teardown {host.name} --destroyed {host.name}",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    return _record_destroyed(call, j, again, box=box)


def _record_destroyed(call: Call, j: Journal, typed: str, *, box: BoxIdentity | None = None) -> int:
    """Record the manual teardown of ``box`` when ``typed`` is the host's name.

    Without ``box`` (``--destroyed``): the box the journal holds under the name, provided
    a typed confirmation opened its gate (``confirmed_at``); it is named before anything
    is recorded. Any other box, or none, is refused.
    """
    host = call.host
    if is_cluster(host):
        print(
            f"refused: {host.name} is a cluster's login node: nothing of it is destroyed, so "
            "nothing is recorded as torn down (`rgt-tui teardown "
            f"{host.name} --confirm {host.name}` checks that its jobs ended and its results "
            "are safe)",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    if box is None:
        try:
            jh = j.load(host.name)
        except JournalError as exc:
            return call.fail(str(exc))
        box = jh.box
        if box is not None:
            opened = confirmed_at(jh)
            when = f"confirmed {_when(opened)}" if opened is not None else "never confirmed"
            print(f"The box recorded under {host.name}: {box.describe()}, {when}.")
        print(f"What destroying {host.name} by hand means:")
        print(f"  {instructions(host, load_profile(host.profile))}")

    async def answers(current: BoxIdentity) -> str | None:
        # The TUI knows from its telemetry; here one connection asks (hour s45a #2: a
        # box recorded torn down seconds after it answered).
        print(f"Checking that {host.name} no longer answers…", flush=True)
        return await box_still_answers(host, current)

    try:
        run_async(record_destroyed(call.fleet, host, j, typed, box, answers=answers))
    except ValueError as exc:
        # How to record it once it is gone: `teardown HOST` again only re-checks a box
        # that no longer answers, and locks (h546 #1: --destroyed was named nowhere).
        print(
            f"refused: {exc}; {host.name} is NOT recorded as torn down — once it no longer "
            f"answers: rgt-tui teardown {host.name} --destroyed {host.name}",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    except JournalError as exc:
        return call.fail(str(exc))
    print(
        f"{host.name} (box {box.short() if box else '?'}) is recorded as torn down "
        "(destroyed by hand): its cost is no longer counted."
    )
    print(LOOK_AGAIN.format(host=host.name))
    return EXIT_OK
