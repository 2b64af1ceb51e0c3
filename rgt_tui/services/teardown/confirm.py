"""Running the teardown: the typed name, the re-scan taken for it, and the command.

``confirm_and_tear_down`` records the typed name with a fresh token, re-scans the box
right then (``gate.gather``) and runs the teardown command (``command``) only when that
re-scan, taken for that confirmation, unlocks the gate. Without a configured command it
returns the instructions, and ``record_manual_teardown`` records the teardown once the
user types the name again. ``confirmed_at`` says when a confirmation last opened the gate.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.agent.secret_paths import skipped_by_rule
from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.manifest import ManifestError
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.text import printable
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.credentials import BOX_FILE, remove_credentials
from rgt_tui.services.journal import HostJournal, Journal, JournalError, TeardownRecord
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.launch_acks import load_launch_acks_in
from rgt_tui.services.queue.scheduler import JobGated
from rgt_tui.services.records import host_results_dir, load_manifest, pull_running
from rgt_tui.services.teardown.acknowledge import BoxMismatch, queue_cells, same_box_or_refuse
from rgt_tui.services.teardown.command import run_teardown_command
from rgt_tui.services.teardown.events import manifest_event
from rgt_tui.services.teardown.gate import GateReport, gather
from rgt_tui.services.teardown.group import group_refusal
from rgt_tui.transport.base import Transport

TEARDOWN_TIMEOUT_S = 600.0
MANUAL_OUTPUT = "destroyed by hand: the user typed the host's name again after the instructions"


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


def confirmed_at(jh: HostJournal) -> float | None:
    """When a typed confirmation of the journal's current box last opened its gate: the
    time of the re-scan taken for it, after which every condition held (None: never).
    Checks and failed re-scans recorded since do not undo it: the box may be gone."""
    state = g.GateState(jh.host, box_id=jh.box.box_id if jh.box else None)
    opened: float | None = None
    for t, event in jh.events:
        state = g.apply(state, event)
        if isinstance(event, g.Rescanned) and event.attempt and g.is_unlocked(state):
            opened = t
    return opened if jh.box is not None else None


class ConfirmationVoid(BoxMismatch):
    """The box was worked on after the typed confirmation (``changed_since``): confirm
    again, on the box as it is now."""


def _group_cells(groups: Sequence[HostConfig]) -> tuple[tuple[str, str], ...]:
    """(group, cell) for each cell of each group's queue file now (``queue_cells``: a
    ``#moved-to`` line is no cell); a file that cannot be read gives none. Reads files."""
    return tuple((group.name, name) for group in groups for name in _new_cells(group, set()))


def _new_cells(host: HostConfig, was: set[str]) -> list[str]:
    """The cells of ``host``'s queue file (a box's or a group's) not in ``was``."""
    try:
        return [name for name in queue_cells(host) if name not in was]
    except (OSError, ValueError):
        return []


def _named(cells: Sequence[str]) -> str:
    return ", ".join(printable(n, 100) for n in cells[:3]) + (" …" if len(cells) > 3 else "")


def changed_since(
    jh: HostJournal,
    host: HostConfig,
    directory: Path,
    opened: float,
    groups: Sequence[HostConfig] = (),
) -> str:
    """What happened after the typed confirmation at ``opened`` that voids it for a
    teardown recorded by hand ("" when nothing): a launch from this machine, a cell in
    the queue file that the gate did not know then (appended), or the last check of the
    box since, answered, that found its gate locked (hour s24a #1: cells launched and
    appended there, then ``--destroyed`` recorded it and its new checkpoints were never
    pulled). ``directory``: the journal's, where the launch record is; ``groups``: the
    ``[[groups]]`` entries the box is a rank of (``Fleet.groups_of``), whose launches run
    on it too (review s24 #4), and whose queue files' cells count as the box's own do,
    against those the typed name recorded (``ConfirmationTyped.group_cells``; review s25
    #9: cells appended there did not void it). Reads files."""
    said = []
    for name in (host.name, *(group.name for group in groups)):
        launched = load_launch_acks_in(directory, name)
        if launched is not None and launched.at > opened:
            whose = "" if name == host.name else f" of its group {printable(name, 100)}"
            said.append(f"a launch{whose} at {_hhmm(launched.at)}")
    state = g.GateState(jh.host, box_id=jh.box.box_id if jh.box else None)
    known = state
    typed = g.ConfirmationTyped("")  # the typed name the confirmation at ``opened`` took
    last_check: g.GateState | None = None
    checked_at: float | None = None
    rescanned: float | None = None  # a later check whose events are still being applied
    pulled_since: g.ManifestTaken | None = None
    records_after: set[type] = set()  # the kinds of record events since the last check
    for t, event in jh.events:
        if rescanned is not None and t != rescanned:
            last_check, checked_at, rescanned = state, rescanned, None
            records_after = set()
        if checked_at is not None and t > checked_at and isinstance(event, _RECORDS):
            records_after.add(type(event))
        state = g.apply(state, event)
        if t <= opened:
            known = state
            if isinstance(event, g.ConfirmationTyped):
                typed = event
        elif isinstance(event, g.Rescanned):
            rescanned = t  # one check's events share its time: judged once all are in
        elif isinstance(event, g.ManifestTaken):
            pulled_since = event  # the last pull's listing since the confirmation
    if rescanned is not None:
        last_check, checked_at = state, rescanned
    if last_check is not None and checked_at is not None:
        # A pull's or verify's records since that check are judged with it: locked only
        # for a pull not verified yet, the check was settled by the verify after it, and
        # a box gone since could never be checked again (s44 spot hour #1: an open TUI's
        # re-check after a pull in another window voided the confirmation for good). The
        # re-scan and the local re-hash are then the check's own: a later one that failed
        # (the box is gone) is no change, and a pull since is judged by what its records
        # and any re-hash since found (``_not_here_since``).
        judged, aside = last_check, {"confirmed"}
        if records_after:
            judged, aside = state, {"confirmed", "rescan", "local"}
        missing = [c for c in g.missing_conditions(judged) if c.key not in aside]
        if missing:
            keys = ", ".join(c.key for c in missing)
            said.append(f"a check at {_hhmm(checked_at)} found its gate locked ({keys})")
    said += _not_here_since(known, state, opened, pulled_since)
    # Content, not the file's time: a #moved-to line or a save changes it too.
    was = (
        set(known.expected_cells or ())
        | set(known.acked_missing)
        | {name for name, _ in known.moved_cells}
        | {name for name, _, _ in known.unfinished}
    )
    new = _new_cells(host, was)
    if new:
        said.append(f"its queue file holds cells the confirmation did not know ({_named(new)})")
    # A confirmation recorded before the group's cells were kept knows none of them:
    # compared, every cell would read as new and void it, and a box already destroyed
    # could never be recorded so (its name cannot be typed again on a box that is gone).
    kept = typed.group_cells
    for group in groups if kept is not None else ():
        # The group's file, not the box's: its cells run on every rank (review s25 #9).
        new = _new_cells(group, {cell for name, cell in kept if name == group.name})
        if new:
            file = printable(group.queue.name if group.queue else "", 100)
            said.append(
                f"the queue file {file} of its group {printable(group.name, 100)} holds cells "
                f"the confirmation did not know ({_named(new)})"
            )
    return "; ".join(said)


# The facts a pull's or verify's records give (``gather``'s, read with no connection).
_RECORDS = (
    g.ManifestTaken,
    g.VerificationRead,
    g.FilePulled,
    g.ArtifactChecked,
    g.RosterChecked,
    g.LocalCopyChecked,
)


def voided_by(
    jh: HostJournal, host: HostConfig, directory: Path, groups: Sequence[HostConfig]
) -> Callable[[float], str]:
    """``changed_since`` for ``jh``'s confirmation at the ``opened`` it is given: what the
    drivers (periodic pulls, autostop) ask before a confirmation holds them. It reads the
    launch records and queue files: call it in a thread."""
    return lambda opened: changed_since(jh, host, directory, opened, groups)


def _no_longer_holds(opened: float, since: str) -> str:
    return f"your confirmation of {_hhmm(opened)} no longer holds: since then, {since}"


def void_since_confirmation(
    journal: Journal, host: HostConfig, groups: Sequence[HostConfig]
) -> str:
    """Why the typed confirmation that last opened ``host``'s gate no longer holds for a
    teardown by hand (``changed_since``); "" when it holds, or none opened it. Blocking
    (it reads the journal and the launch records)."""
    jh = journal.load(host.name)
    opened = confirmed_at(jh)
    if opened is None:
        return ""
    since = changed_since(jh, host, journal.directory, opened, groups)
    return _no_longer_holds(opened, since) if since else ""


def _not_here_since(
    known: g.GateState, now: g.GateState, opened: float, pulled: g.ManifestTaken | None
) -> list[str]:
    """Files the records since the confirmation at ``opened`` show on the box but not safe
    here (spot hour s43 #1: a pull after the confirmation listed a 1.5 GB checkpoint, cut
    short, and ``--destroyed`` recorded the box torn down). ``known``: the gate at the
    confirmation; ``now``: after every record since; ``pulled``: the last pull's manifest
    taken since (None: none). Said:

    - that manifest lists a file new or changed since the confirmed one which verify has
      not found pulled here, or an entry it refused or a link it kept that the confirmed
      one had not (a name this machine cannot take, a link out of the root: the file is
      on the box only; review s44 #2), a path left on the box by rule aside;
    - a verify since found a file of the manifest missing, changed or failing here (#6);
    - a re-check of the local copy since found one missing or changed.

    None needs the box to answer: a re-scan that failed (the box is gone) voids nothing,
    a file the box wrote and this machine lacks does."""
    said = []
    files = now.manifest or {}
    if pulled is not None and now.manifest is not None:
        was = known.manifest or {}
        written = sorted(p for p, f in files.items() if was.get(p) != f and p not in now.pulled)
        if written:
            said.append(
                f"a pull listed files the box wrote after it, not verified here ({_named(written)}: "
                f"`rgt-tui verify {printable(now.host, 100)}`, which needs no box, counts those "
                "whole here)"
            )
        refused = sorted(
            f"{path} ({why})"
            for path, why in pulled.refused
            if path not in known.manifest_refused and not skipped_by_rule(why)
        )
        links = sorted(
            f"{path} -> {target}" for path, target in set(pulled.links) - set(known.manifest_links)
        )
        if refused or links:
            said.append(
                "a pull found entries on the box it could not copy here, new since "
                f"({_named([*refused, *links])})"
            )
    failing = sorted(set(now.failed) - set(known.failed))
    if failing:
        said.append(f"a verify since found files missing or failing here ({_named(failing)})")
    local = now.local
    if local is not None and local.at > opened:
        spoilt = sorted(g.locally_spoilt(local, files))
        if spoilt:
            said.append(
                f"a check of the local copy at {_hhmm(local.at)} found files missing or "
                f"changed here ({_named(spoilt)})"
            )
    return said


def _hhmm(epoch: float) -> str:
    return time.strftime("%H:%M", time.localtime(epoch))


def record_manual_teardown(
    journal: Journal,
    host: HostConfig,
    typed: str,
    box: BoxIdentity | None,
    *,
    groups: Sequence[HostConfig] = (),
    clock: Callable[[], float] = time.time,
) -> HostJournal:
    """Record that the user destroyed ``box`` by hand: only when ``typed`` is the host's
    name (typed again, after the instructions), ``box`` is the box the journal holds now
    (the one the confirmation was about: ``TeardownOutcome.report.box``) and a typed
    confirmation opened that box's gate (``confirmed_at``). Otherwise ValueError
    (BoxMismatch for the box), and nothing is recorded. Both are checked under the
    journal's lock, with the write. ``groups``: the ``[[groups]]`` entries the box is a rank
    of (``Fleet.groups_of``): a launch of one since the confirmation, or a cell its queue
    file holds that the confirmation did not know, voids it too.
    """
    if typed != host.name:
        raise ValueError(f"'{typed}' is not '{host.name}': nothing was recorded")
    refused = group_refusal(host)
    if refused is not None:
        raise ValueError(f"{refused}; nothing was recorded")
    at = clock()

    def append(jh: HostJournal) -> bool:
        current = same_box_or_refuse(jh, box, "nothing was recorded")
        opened = confirmed_at(jh)
        if opened is None:
            raise BoxMismatch(
                f"the teardown gate of {current.describe()} was never opened by a typed "
                f"confirmation: nothing was recorded. Run `rgt-tui teardown {host.name}` "
                "first: it checks the box and, once you type its name, says what to destroy"
            )
        since = changed_since(jh, host, journal.directory, opened, groups)
        if since:
            raise ConfirmationVoid(
                f"{_no_longer_holds(opened, since)}; nothing was recorded. Run `rgt-tui teardown {host.name}` again: it checks "
                "the box as it is now. If you already destroyed it, what it wrote that is not "
                "here is lost: remove its [[hosts]] entry to stop counting it"
            )
        jh.teardowns.append(
            TeardownRecord(at, None, None, MANUAL_OUTPUT, True, current.box_id, True)
        )
        return True

    return journal.update(host.name, append)


async def record_destroyed(
    fleet: Fleet,
    host: HostConfig,
    journal: Journal,
    typed: str,
    box: BoxIdentity | None,
    *,
    clock: Callable[[], float] = time.time,
) -> HostJournal:
    """``record_manual_teardown``, once the records of a pull or verify taken since the
    confirmation are in the journal (``gather``, records only: no connection, the box
    may be gone): a pull run meanwhile, in another window or by the command line, is
    what says the box wrote files this machine lacks (``changed_since``)."""
    if typed == host.name:
        folder = host_results_dir(fleet.results_dir, host)
        if await asyncio.to_thread(pull_running, folder):
            # Its manifest is written once the box has hashed every file: until then a
            # checkpoint the box wrote since is in no record (review s44 #5).
            raise ValueError(
                f"a pull of {host.name} is running: its listing of the box is not recorded "
                "yet, so what the box wrote since the confirmation cannot be told; nothing "
                "was recorded — once it ends (and verify passes), record it again"
            )
        try:
            await gather(fleet, host, None, journal, clock=clock, records_only=True)
        except OSError as exc:  # the pulled copy's records unreadable (review s44 #9)
            raise ValueError(
                f"the records of the pulled copy in {folder} cannot be read ({exc.strerror or exc}); "
                "nothing was recorded — make them readable, then record it again"
            ) from exc
        gone = await asyncio.to_thread(_local_gone, folder)
        if gone:
            # The confirmation re-hashed the copy; a file deleted or moved here since
            # (s44 spot hour #9) is then on the box only, while the box still exists.
            raise ValueError(
                f"the local copy in {folder} lacks files the last pull listed, or holds them "
                f"at another size ({_named(gone)}), since the confirmation re-hashed it; "
                "nothing was recorded — put them back, or, if the box still exists, pull "
                "and verify it again; if it is already destroyed they are lost: remove its "
                "[[hosts]] entry to stop counting it"
            )
    groups = fleet.groups_of(host.name)
    return await asyncio.to_thread(
        record_manual_teardown, journal, host, typed, box, groups=groups, clock=clock
    )


def _local_gone(folder: Path) -> list[str]:
    """The last pull's files that are not in ``folder`` now as regular files of their
    listed size (a stat each, never through a link: no re-hash, which the confirmation
    did). None when there is no readable manifest (the gate's own records say so).
    Blocking."""
    try:
        manifest = load_manifest(folder)
    except (OSError, ManifestError):
        return []
    if manifest is None:
        return []
    gone = []
    for local, facts in manifest_event(manifest).files:
        try:
            st = os.lstat(folder / local)
        except OSError:
            gone.append(local)
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size != facts.size:
            gone.append(local)
    return gone
