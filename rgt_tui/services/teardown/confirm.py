"""Running the teardown: the typed name, the re-scan taken for it, and the command.

``confirm_and_tear_down`` records the typed name with a fresh token, re-scans the box
right then (``gate.gather``) and runs the teardown command (``command``) only when that
re-scan, taken for that confirmation, unlocks the gate. Without a configured command it
returns the instructions, and ``by_hand.record_destroyed`` records the teardown once the
user types the name again.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.text import printable
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.credentials import BOX_FILE, remove_credentials
from rgt_tui.services.journal import Journal, JournalError, TeardownRecord
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.scheduler import JobGated
from rgt_tui.services.teardown.by_hand import new_cells
from rgt_tui.services.teardown.command import run_teardown_command
from rgt_tui.services.teardown.gate import GateReport, gather
from rgt_tui.services.teardown.group import group_refusal
from rgt_tui.transport.base import Transport

TEARDOWN_TIMEOUT_S = 600.0


class GateLocked(PermissionError):
    """The teardown was refused: the gate is locked at the confirmation. ``report`` is
    the checklist as it stood then (None when the journal could not be written)."""

    def __init__(self, message: str, report: GateReport | None = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class TeardownOutcome:
    """What happened when the user confirmed.

    ``ran``: a teardown command ran; ``ok``: it exited 0; ``recorded``: the box is now
    recorded as torn down. Without a command nothing ran and nothing is recorded yet:
    ``instructions`` say what to destroy by hand, then ``record_manual_teardown``.
    ``report``: the gate as it stood at the confirmation. ``timed_out``: the command
    ran past its time and was killed with every process it started (``output`` ends
    with what that may have left behind, ``command.timed_out_note``).
    """

    ran: bool
    ok: bool
    exit_status: int | None
    output: str
    instructions: str
    recorded: bool = False
    report: GateReport | None = None
    timed_out: bool = False
    # What became of the box's ~/.rgt/credentials.env (U34), removed before the command
    # runs: "" when there was none; a failure is said here and never stops the teardown.
    credentials: str = ""
    # A Slurm host (a cluster: nothing to destroy): the gate opened, and nothing is
    # recorded as torn down — the login node stays in the fleet, watched.
    cluster: bool = False


def is_cluster(host: HostConfig) -> bool:
    """A scheduler's host (Slurm): a teardown destroys nothing there, and records none."""
    return isinstance(backend_for(host), JobGated)


def instructions(host: HostConfig, profile: Profile) -> str:
    """What the user must do by hand when no teardown command is configured."""
    if is_cluster(host):  # the gate held until every job ended: nothing bills
        return (
            f"{profile.title}: nothing to tear down on a cluster: every job of the queue "
            "ended, and the results are pulled and verified. Nothing is recorded as torn "
            "down: the login node stays in the fleet, watched (remove the host from the "
            "fleet file once you are done with it)"
        )
    keeps = "; ".join(profile.keeps_billing)
    irreversible = "IRREVERSIBLE: " if profile.irreversible else ""
    # Which box, as the provider's console shows it: its SSH address, not rgt-tui's own
    # box id, which appears nowhere there (hour s25b #5).
    which = (
        f"The box is the one you reach at {printable(str(host.ssh), 200)} (the fleet file's "
        f"ssh for {host.name}): find that address in the provider's console. "
        if host.ssh is not None
        else ""
    )
    return (
        f"{irreversible}{profile.title}: {profile.teardown_verb} — destroys {profile.destroys}. "
        f"{which}Keeps billing afterwards: {keeps}. Survives the meter-stop: "
        f"{profile.meter_stop_survives}."
    )


async def confirm_and_tear_down(
    fleet: Fleet,
    host: HostConfig,
    journal: Journal,
    typed: str,
    transport: Transport,
    *,
    clock: Callable[[], float] = time.time,
    cwd: Path | None = None,
    timeout_s: float = TEARDOWN_TIMEOUT_S,
    started: Callable[[int], None] | None = None,
) -> TeardownOutcome:
    """Record the typed name, re-scan the box now, and only if the gate then unlocks run
    the teardown command and record its outcome (see the module docstring). ``started``
    hears the command's pid as it starts.

    Raises GateLocked (a PermissionError, with the checklist of that moment as
    ``report``) when the gate stays locked: a wrong name, the box unreachable or changed
    at this moment, another box under the name, or any other condition.
    Without a configured command nothing runs and nothing is recorded: the outcome
    carries the instructions, and ``record_manual_teardown`` records the teardown later.
    """
    refused = group_refusal(host)
    if refused is not None:  # a group: nothing typed is recorded under its name
        raise GateLocked(f"teardown refused for {host.name}: {refused}")
    attempt = secrets.token_hex(8)
    group_cells: tuple[tuple[str, str], ...] = ()
    if typed == host.name:
        # The records of a pull or verify since the last check go in first: read after
        # the typed name, a new manifest would drop the confirmation it follows.
        await gather(fleet, host, transport, journal, clock=clock, records_only=True)
        group_cells = await asyncio.to_thread(_group_cells, fleet.groups_of(host.name))
    try:
        typed_for = await asyncio.to_thread(
            journal.record,
            host.name,
            clock(),
            g.ConfirmationTyped(typed, attempt, group_cells),
        )
    except JournalError as exc:
        raise GateLocked(f"teardown refused for {host.name}: {exc}") from exc
    if typed != host.name:
        raise GateLocked(f"teardown refused for {host.name}: '{typed}' is not '{host.name}'")
    report = await gather(fleet, host, transport, journal, clock=clock, attempt=attempt)
    if not report.unlocked:
        raise GateLocked(_refusal(host.name, typed_for.box, report), report)
    assert report.box is not None  # the box condition holds
    text = instructions(host, report.profile)
    creds = await _remove_credentials(host, transport)
    if not host.teardown:
        return TeardownOutcome(
            False,
            False,
            None,
            "",
            text,
            recorded=False,
            report=report,
            credentials=creds,
            cluster=is_cluster(host),
        )
    run = await run_teardown_command(
        host.teardown, cwd or (fleet.path.parent if fleet.path else None), timeout_s, started
    )
    ok = run.status == 0 and not run.timed_out
    record = TeardownRecord(
        clock(), host.teardown, run.status, run.output[-4000:], ok, box_id=report.box.box_id
    )
    # Shielded: the box is gone now; a cancel (the app quitting) must not drop the
    # record of it while the write waits for a worker thread.
    jh = await asyncio.shield(asyncio.to_thread(journal.add_teardown, host.name, record))
    return TeardownOutcome(
        True,
        ok,
        run.status,
        run.output,
        text,
        recorded=jh.torn_down_at is not None,
        report=report,
        timed_out=run.timed_out,
        credentials=creds,
    )


async def _remove_credentials(host: HostConfig, transport: Transport) -> str:
    """Delete the credentials a launch left on the box (U34) before it is destroyed; what
    happened, in one line ("" when there were none). A failure is reported, not raised:
    it must never keep a box that is about to be destroyed billing."""
    try:
        removed = await remove_credentials(host.name, transport)
    except (QueueError, TransportError, OSError) as exc:
        why = exc.message if isinstance(exc, (QueueError, TransportError)) else str(exc)
        return (
            f"credentials: could not remove {BOX_FILE} from {host.name} ({why}); the "
            "teardown went ahead — if the box survives it (a stop, not a destroy), remove "
            f"it by hand: rm -f {BOX_FILE}"
        )
    return f"credentials: removed {BOX_FILE} from {host.name}" if removed else ""


def _refusal(name: str, typed_for: BoxIdentity | None, report: GateReport) -> str:
    """Why the typed confirmation was refused, its real cause first.

    A name typed correctly is refused as "confirmed" only because something replaced the
    confirmation: another box answering under the name (the typed name was for the box
    seen before), or another check of the gate taken meanwhile. Say that, not "type the
    name", which blames the typing.
    """
    locked = [c for c in report.conditions if not c.ok]
    named = [f"{c.key} ({c.evidence})" for c in locked if c.key != "confirmed"]
    # The first few, with their evidence; the checklist beside it has them all.
    more = f" (and {len(named) - 3} more: see the checklist)" if len(named) > 3 else ""
    others = "; ".join(named[:3]) + more
    box = report.box
    if report.is_new_box or (
        typed_for is not None and box is not None and not box.same_box(typed_for)
    ):
        was = typed_for.describe() if typed_for is not None else "the box seen before"
        now = box.describe() if box is not None else "?"
        cause = (
            f"a new box answers under this name ({now}), not the one the name was typed "
            f"for ({was}): its gate starts closed. Check it (`rgt-tui teardown {name} "
            "--check`, or t), then pull, verify and confirm again"
        )
        return f"teardown refused for {name}: {cause}" + (
            f"; also locked: {others}" if others else ""
        )
    if others:
        return f"teardown refused for {name}: {others}"
    return (
        f"teardown refused for {name}: the confirmation was superseded by another check of "
        "the gate taken meanwhile (another window or command): type the name again"
    )


def _group_cells(groups: Sequence[HostConfig]) -> tuple[tuple[str, str], ...]:
    """(group, cell) for each cell of each group's queue file now (``queue_cells``: a
    ``#moved-to`` line is no cell); a file that cannot be read gives none. Reads files."""
    return tuple((group.name, name) for group in groups for name in new_cells(group, set()))
