"""Teardown: gather the gate's facts, show the checklist, and run teardown only when told.

Facts come from three places, each recorded in the host's journal as gate events (only
events that change the gate are appended, so re-checking is cheap and the journal stays
short): the pull's manifest record and the verification record beside the results;
a re-scan of the box taken *now* (sizes and mtimes, no hashing; it also says which box
answers: its ``~/.rgt/box-id`` and host key) and its queue records; and the user
(acknowledgements, the typed host name). The gate itself is the pure state machine in
``domain.teardown_gate``; nothing here decides on its own.

- ``check_gate`` re-scans the box now. A re-scan that fails (or no connection) is
  recorded as such, so an earlier one never stands in for it.
- ``confirm_and_tear_down`` records the typed name with a fresh token, re-scans the box
  right then and runs the teardown command only when that re-scan, taken for that
  confirmation, unlocks the gate. An unreachable box at that moment keeps it locked.
- Every fact belongs to a box: records (manifest, verification) are used only when they
  are of the box answering now, and a new box under the host's name starts with a closed
  gate while the old box's facts become history (``Journal.observe_box``).
- Without a configured teardown command nothing is recorded at confirmation: the user
  gets the instructions, and ``record_manual_teardown`` records the teardown once they
  type the name again to say the box is destroyed — of the box that was confirmed, and
  only while the journal still holds it (``BoxMismatch`` otherwise). A failed command is
  recorded as a failed attempt, never as a teardown.
- Acknowledgements are of the box the user saw (``acknowledge(box=...)``); the command
  line identifies the box answering first (``observe_now``).
- The local copy is re-hashed at the same moments as the re-scan (``local_copy``):
  every file the manifest lists must be under ``<results_dir>/<host>/`` with its
  SHA-256, or the gate stays locked naming the file and saying to pull again.
- A teardown command runs in its own process group, killed whole when it runs past
  its time (``teardown_command``); a timeout is recorded as a failed attempt.
- The re-scan carries its own refusals and links: one the manifest did not have is a
  change (``teardown_gate``). Text from the box is made printable (``text.printable``)
  before it becomes a problem or a re-scan failure.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.text import printable
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.journal import (
    BoxHistory,
    HostJournal,
    Journal,
    JournalError,
    TeardownRecord,
)
from rgt_tui.services.local_copy import check_local_copy
from rgt_tui.services.manifest import take_manifest
from rgt_tui.services.records import host_results_dir, load_manifest, read_json, verification_path
from rgt_tui.services.teardown_command import run_teardown_command
from rgt_tui.transport.base import Transport, TransportError

TEARDOWN_TIMEOUT_S = 600.0
MANUAL_OUTPUT = "destroyed by hand: the user typed the host's name again after the instructions"


class UnknownCellError(ValueError):
    """An acknowledgement named a cell the host's queue does not have."""

    def __init__(self, name: str, known_cells: Sequence[str]) -> None:
        self.name = name
        self.known_cells = tuple(known_cells)
        known = ", ".join(self.known_cells) or "none (the host has no queue cells)"
        super().__init__(f"no cell named '{name}' in the host's queue; its cells: {known}")


class GateLocked(PermissionError):
    """The teardown was refused: the gate is locked at the confirmation. ``report`` is
    the checklist as it stood then (None when the journal could not be written)."""

    def __init__(self, message: str, report: GateReport | None = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class GateReport:
    """The checklist for one host: every condition with its evidence, and the profile.

    ``box``: the box the facts are about (None when none was ever identified);
    ``is_new_box``: this check found another box under the host's name, so what was
    recorded before became ``history`` (earlier boxes, shown as such, never counted).
    """

    host: HostConfig
    profile: Profile
    state: g.GateState | None  # None when the journal is damaged: the gate stays locked
    conditions: tuple[g.Condition, ...]
    problems: tuple[str, ...]  # why facts could not be gathered (box down, journal damaged)
    torn_down_at: float | None = None
    box: BoxIdentity | None = None
    is_new_box: bool = False
    history: tuple[BoxHistory, ...] = ()

    @property
    def ready_but_confirmation(self) -> bool:
        """Every condition except the typed name holds (what `teardown --check` asks)."""
        return all(c.ok for c in self.conditions if c.key != "confirmed") and (
            self.state is not None
        )

    @property
    def unlocked(self) -> bool:
        """Every condition holds, the typed name and its re-scan included."""
        return self.state is not None and all(c.ok for c in self.conditions)


def _local(manifest: Manifest, root: int | None, path: str) -> str:
    """Where a listed path lands locally (a refusal may name no root: its path alone)."""
    return manifest.local_relpath(root, path) if isinstance(root, int) else path


def _refused_and_links(
    manifest: Manifest,
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """What the scan refused (local path, reason) and the links it kept (local path,
    target), as the gate compares them; the box's text made printable."""
    refused = tuple(
        sorted(
            (printable(_local(manifest, r.root, r.path), None), printable(r.reason))
            for r in manifest.refused
        )
    )
    links = tuple(
        sorted(
            (printable(_local(manifest, ln.root, ln.path), None), printable(ln.target, None))
            for ln in manifest.links
        )
    )
    return refused, links


def manifest_event(manifest: Manifest) -> g.ManifestTaken:
    """The gate's view of a pull manifest: local paths with size, mtime and hash, and
    what it refused and the links it kept."""
    files = tuple(
        sorted(
            (manifest.local_relpath(e.root, e.path), g.FileFacts(e.size, e.mtime, e.sha256 or ""))
            for e in manifest.entries
        )
    )
    refused, links = _refused_and_links(manifest)
    return g.ManifestTaken(
        files,
        taken_at=manifest.taken_at,
        last_write=manifest.last_write or 0.0,
        refused=refused,
        links=links,
    )


def verification_events(record: Any, manifest: Manifest) -> list[g.GateEvent]:
    """The facts in the verification record of this manifest: files pulled and hashed,
    artifacts loaded, the roster, and every problem verify named (``VerificationRead``).

    A record of another manifest (or box), or none, proves nothing: it gives a
    ``VerificationRead`` that is not ok, saying to run verify.
    """
    run_verify = f"run `rgt-tui verify {manifest.host}`"
    if not isinstance(record, dict):
        return [g.VerificationRead(False, (f"no verification of this pull: {run_verify}",))]
    verified = record.get("manifest")
    if not isinstance(verified, dict) or verified.get("digest") != manifest.digest:
        why = "the verification record is of an earlier pull"
        return [g.VerificationRead(False, (f"{why}: {run_verify}",))]
    if "box_id" in record and record["box_id"] != manifest.box_id:
        why = "the verification record is of another box"
        return [g.VerificationRead(False, (f"{why}: {run_verify}",))]
    try:
        return _record_facts(record)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        return [g.VerificationRead(False, (f"the verification record is malformed ({exc!r})",))]


def _record_facts(record: dict[str, Any]) -> list[g.GateEvent]:
    events: list[g.GateEvent] = []
    for check in record.get("checks", []):
        if check.get("sha256"):
            events.append(g.FilePulled(check["path"], check["sha256"]))
        events.append(
            g.ArtifactChecked(
                check["path"],
                bool(check.get("loadable")),
                bool(check.get("ok")),
                check.get("detail") or "",
            )
        )
    roster = record.get("roster")
    roster_lines: dict[str, str] = {}
    if roster is not None:
        events.append(
            g.RosterChecked(tuple(roster.get("expected", [])), tuple(roster.get("present", [])))
        )
        # A missing cell is the roster condition's, where the user may acknowledge it by
        # name; verify's line for it must not keep the gate locked after that.
        roster_lines = {
            f"cell {m['name']} missing: {m['why']}": str(m["name"])
            for m in roster.get("missing", [])
        }
    else:
        events.append(g.RosterChecked((), ()))  # no queue: nothing to reconcile
    problems = record.get("problems")
    if not isinstance(problems, list):
        return [*events, g.VerificationRead(False, ("the verification record lists no problems",))]
    others = tuple(str(p) for p in problems if p not in roster_lines)
    left = tuple(roster_lines[p] for p in problems if p in roster_lines)
    # ok in the record is false while a cell is missing; the roster condition rules that.
    ok = not others and (record.get("ok") is True or len(problems) > 0)
    if not others and not ok:
        others = ("verify did not report success",)
    events.append(g.VerificationRead(ok, others, left))
    return events


def rescan_event(
    rescan: Manifest, at: float, *, attempt: str = "", box_id: str | None = None
) -> g.Rescanned:
    """A fresh listing in the gate's terms (local paths, sizes, mtimes, and what it
    refused and the links it found), for the confirmation ``attempt`` ("" for a
    checklist check) of the box ``box_id``."""
    refused, links = _refused_and_links(rescan)
    return g.Rescanned(
        tuple(
            sorted((rescan.local_relpath(e.root, e.path), e.size, e.mtime) for e in rescan.entries)
        ),
        at,
        attempt,
        box_id,
        refused,
        links,
    )


def _append_changed(jh: HostJournal, events: list[g.GateEvent], now: float) -> bool:
    """Append only the events that change the gate; True when any did."""
    state = jh.gate()
    last_manifest = next(
        (e for _, e in reversed(jh.events) if isinstance(e, g.ManifestTaken)), None
    )
    changed = False
    for event in events:
        if (
            isinstance(event, g.ManifestTaken)
            and event == last_manifest
            and state.manifest is not None
        ):
            continue  # the same manifest again: re-applying would drop the typed name
        new = g.apply(state, event)
        if new != state:
            jh.events.append((now, event))
            state, changed = new, True
    if jh.first_seen is None:
        jh.first_seen = now
    jh.last_seen = now
    return changed


@dataclass(frozen=True)
class _BoxNow:
    """What the re-scan taken just now found (or why there is none)."""

    rescan: Manifest | None
    identity: BoxIdentity | None
    running: tuple[str, ...] | None
    error: str | None
    records_only: bool = False  # no re-scan was asked for: only the local records count


async def _scan_now(host: HostConfig, transport: Transport | None) -> _BoxNow:
    """Re-scan the box now: its listing (no hashes), which box it is, its running cells."""
    if transport is None:
        return _BoxNow(None, None, None, "the box was not re-scanned (no connection)")
    if host.pull_refused:
        # No pull folders named: the re-scan would walk the whole home (this machine's,
        # when it stands in), for minutes, and the tab would never fill in. The pull
        # refuses it; so does the gate, saying how to name the folders.
        return _BoxNow(None, None, None, host.pull_refused)
    try:
        await transport.connect()
        rescan = await take_manifest(host, transport, hash_files=False)
        running = await _running_cells(host, transport)
    except (TransportError, ManifestError, OSError) as exc:
        return _BoxNow(None, None, None, printable(exc, 1000))
    identity = rescan.identity
    if identity is None:
        why = printable(rescan.box_id_error or "no id reported")  # the box's own text
        return _BoxNow(None, None, running, f"the box did not say which box it is: {why}")
    return _BoxNow(rescan, identity, running, None)


def _local_records(folder: Path) -> tuple[Manifest | None, Any, str | None]:
    """The kept manifest and verification record, and why the manifest is unusable."""
    try:
        manifest = load_manifest(folder)
    except ManifestError as exc:
        return None, None, str(exc)
    try:
        record = read_json(verification_path(folder))
    except (ValueError, OSError) as exc:
        record = f"unreadable: {exc}"  # not a dict: verification_events says so
    return manifest, record, None


def _belongs(manifest: Manifest, box: BoxIdentity | None) -> bool:
    return box is not None and box.same_box(manifest.identity)


def _facts(
    host: HostConfig,
    folder: Path,
    jh: HostJournal,
    now: _BoxNow,
    local: tuple[Manifest | None, Any, str | None],
    at: float,
    attempt: str,
    local_check: g.LocalCopyChecked | None = None,
) -> tuple[list[g.GateEvent], list[str]]:
    """The gate events of this check, for the journal's current box, and the problems."""
    manifest, record, unusable = local
    events: list[g.GateEvent] = []
    problems: list[str] = []
    box = jh.box
    pull_again = f"run `rgt-tui pull {host.name}` then `rgt-tui verify {host.name}`"
    if unusable:
        problems.append(unusable)
        events.append(g.RecordsInvalid(f"the pulled copy's manifest is unreadable: {unusable}"))
    elif manifest is None:
        problems.append(f"nothing pulled yet: {pull_again}")
        events.append(g.RecordsInvalid("nothing pulled yet"))
    elif not _belongs(manifest, box):
        of = manifest.identity.describe() if manifest.identity else "a box never identified"
        this = box.describe() if box else "not identified yet"
        why = f"the pulled copy in {folder} is of another box ({of}), not of this one ({this})"
        problems.append(f"{why}: {pull_again}")
        events.append(g.RecordsInvalid(why))
    else:
        events.append(manifest_event(manifest))
        events += verification_events(record, manifest)
        if local_check is not None:
            # Before the re-scan: the re-scan taken for a confirmation is the event after
            # which the gate must hold (``confirmed_at``), this check included.
            events.append(local_check)
            if not local_check.ok:
                problems.append(
                    f"the local copy in {folder} is not what was pulled: pull again "
                    f"(`rgt-tui pull {host.name}`, or p), then verify"
                )
    if now.records_only:
        return events, problems  # the records alone, before a confirmation (no re-scan)
    if now.rescan is not None and box is not None and box.same_box(now.identity):
        events.append(rescan_event(now.rescan, at, attempt=attempt, box_id=box.box_id))
    else:
        why = now.error or "the re-scan was of another box"
        problems.append(f"cannot re-scan the box: {why}")
        events.append(g.RescanFailed(why))
    if now.running is not None:
        events.append(g.CellsRunning(now.running))
    return events, problems


def _box_condition(c: g.Condition, jh: HostJournal) -> g.Condition:
    """The gate's "box" item, with the identity and the earlier boxes spelled out."""
    if jh.box is None:
        text = "box not identified: no re-scan has reached the box answering under this name"
    else:
        text = jh.box.describe()
    if jh.history:
        text += f"; {len(jh.history)} earlier box(es) under this name: history, not counted"
    return replace(c, evidence=text)


async def _gather(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport | None,
    journal: Journal,
    *,
    clock: Callable[[], float],
    attempt: str = "",
    records_only: bool = False,
) -> GateReport:
    """Re-scan now, record the box and every fact in one locked journal update, evaluate.

    ``records_only``: no re-scan and no local re-hash, only the pull's and verify's
    records (the step before a confirmation: see ``confirm_and_tear_down``)."""
    profile = load_profile(host.profile)
    if records_only:
        now = _BoxNow(None, None, None, None, records_only=True)
    else:
        now = await _scan_now(host, transport)
    folder = host_results_dir(fleet.results_dir, host)
    local = await asyncio.to_thread(_local_records, folder)
    local_check = None
    if local[0] is not None and not records_only:
        # Every byte of the local copy, re-hashed now, off the event loop (local_copy).
        local_check = await asyncio.to_thread(
            check_local_copy, folder, manifest_event(local[0]).files, clock()
        )
    at = clock()
    problems: list[str] = []
    moved: list[BoxHistory] = []

    unattributed: list[g.GateEvent] = []

    def change(jh: HostJournal) -> bool:
        problems.clear()
        moved.clear()
        unattributed.clear()
        changed = False
        if now.identity is not None:
            earlier = len(jh.history)
            changed = jh.observe(now.identity, at)
            moved.extend(jh.history[earlier:])
        events, found = _facts(host, folder, jh, now, local, at, attempt, local_check)
        problems.extend(found)
        if jh.box is None:
            # No box has ever answered: facts about none cannot be kept (they would
            # only turn into history); they are shown, not recorded.
            unattributed.extend(events)
            return changed
        return _append_changed(jh, events, at) or changed

    try:
        jh = await asyncio.to_thread(journal.update, host.name, change)
    except JournalError as exc:
        return GateReport(
            host, profile, None, (g.Condition("journal", False, str(exc)),), (str(exc),)
        )
    if moved:
        problems.insert(
            0,
            f"a new box answers as {host.name} ({jh.box.describe() if jh.box else '?'}): "
            f"what was recorded before is history ({moved[-1].why}); its gate starts closed",
        )
    state = jh.gate()
    for event in unattributed:
        state = g.apply(state, event)
    conditions = tuple(_box_condition(c, jh) if c.key == "box" else c for c in g.conditions(state))
    return GateReport(
        host,
        profile,
        state,
        conditions,
        tuple(printable(p, 1000) for p in problems),
        jh.torn_down_at,
        jh.box,
        bool(moved),
        tuple(jh.history),
    )


async def check_gate(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport | None,
    journal: Journal,
    *,
    clock: Callable[[], float] = time.time,
) -> GateReport:
    """Gather every fact, re-scanning the box now, and evaluate the gate.

    Without a transport, or when the box cannot be reached, the re-scan is recorded as
    failed: the checklist shows the gate locked, whatever an earlier re-scan said.
    """
    return await _gather(fleet, host, transport, journal, clock=clock)


async def _running_cells(host: HostConfig, transport: Transport) -> tuple[str, ...]:
    from rgt_tui.services.queue_view import read_queue_view

    try:
        view = await read_queue_view(host, transport)
    except (ValueError, OSError) as exc:
        raise TransportError(host.name, f"cannot read the queue records: {exc}") from exc
    return tuple(c.name for c in view.cells if c.status == "running")


def queue_cells(host: HostConfig) -> tuple[str, ...]:
    """The cell names of the host's queue file (none without a queue). Reads the file:
    call it off the event loop."""
    if host.queue is None:
        return ()
    from rgt_tui.services.queue_check import read_queue_file

    source = read_queue_file(host.queue, host=host.name, default_epochs=host.epochs)
    return tuple(c.name for c in source.parsed.cells)


def check_cells(names: Sequence[str], cells: Sequence[str]) -> None:
    """UnknownCellError for the first of ``names`` that is not one of ``cells``."""
    known = tuple(cells)
    for name in names:
        if name not in known:
            raise UnknownCellError(name, known)


def acknowledge(
    journal: Journal,
    host: str,
    *,
    missing: Sequence[str] = (),
    running: Sequence[str] = (),
    cells: Sequence[str],
    box: BoxIdentity | None,
    now: float | None = None,
) -> HostJournal:
    """Record the user's by-name acknowledgements of missing or running cells, for the
    box they were looking at (``box``: the checklist's, or ``observe_now``'s).

    Every name must be one of ``cells`` (``queue_cells(host)``): otherwise nothing is
    recorded and UnknownCellError says which name, with the cells there are. When the
    journal holds another box under ``host`` now (or none), nothing is recorded and
    BoxMismatch says so: an acknowledgement of one box never counts for another.
    """
    check_cells((*missing, *running), cells)
    events = [g.MissingCellAcknowledged(n) for n in missing] + [
        g.RunningAcknowledged(n) for n in running
    ]
    t = now if now is not None else time.time()

    def append(jh: HostJournal) -> bool:
        _same_box_or_refuse(jh, box, "nothing was acknowledged")
        jh.events.extend((t, e) for e in events)
        return bool(events)

    return journal.update(host, append)


async def observe_now(
    host: HostConfig,
    transport: Transport,
    journal: Journal,
    *,
    clock: Callable[[], float] = time.time,
) -> BoxIdentity:
    """Which box answers as ``host`` now, recorded in the journal (a new box moves the
    old one's facts to history); TransportError or ManifestError when it cannot say
    (the message made printable)."""
    from rgt_tui.services.box_identity import identify_box

    try:
        identity = await identify_box(host, transport)
    except ManifestError as exc:
        raise ManifestError(printable(exc, 1000)) from exc
    jh = await asyncio.to_thread(journal.observe_box, host.name, identity, clock())
    assert jh.box is not None
    return jh.box


@dataclass(frozen=True)
class TeardownOutcome:
    """What happened when the user confirmed.

    ``ran``: a teardown command ran; ``ok``: it exited 0; ``recorded``: the box is now
    recorded as torn down. Without a command nothing ran and nothing is recorded yet:
    ``instructions`` say what to destroy by hand, then ``record_manual_teardown``.
    ``report``: the gate as it stood at the confirmation. ``timed_out``: the command
    ran past its time and was killed with every process it started (``output`` ends
    with what that may have left behind, ``teardown_command.timed_out_note``).
    """

    ran: bool
    ok: bool
    exit_status: int | None
    output: str
    instructions: str
    recorded: bool = False
    report: GateReport | None = None
    timed_out: bool = False


def instructions(host: HostConfig, profile: Profile) -> str:
    """What the user must do by hand when no teardown command is configured."""
    keeps = "; ".join(profile.keeps_billing)
    irreversible = "IRREVERSIBLE: " if profile.irreversible else ""
    return (
        f"{irreversible}{profile.title}: {profile.teardown_verb} — destroys {profile.destroys}. "
        f"Keeps billing afterwards: {keeps}. Survives the meter-stop: {profile.meter_stop_survives}."
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
) -> TeardownOutcome:
    """Record the typed name, re-scan the box now, and only if the gate then unlocks run
    the teardown command and record its outcome (see the module docstring).

    Raises GateLocked (a PermissionError, with the checklist of that moment as
    ``report``) when the gate stays locked: a wrong name, the box unreachable or changed
    at this moment, another box under the name, or any other condition.
    Without a configured command nothing runs and nothing is recorded: the outcome
    carries the instructions, and ``record_manual_teardown`` records the teardown later.
    """
    attempt = secrets.token_hex(8)
    if typed == host.name:
        # The records of a pull or verify since the last check go in first: read after
        # the typed name, a new manifest would drop the confirmation it follows.
        await _gather(fleet, host, transport, journal, clock=clock, records_only=True)
    try:
        typed_for = await asyncio.to_thread(
            journal.record, host.name, clock(), g.ConfirmationTyped(typed, attempt)
        )
    except JournalError as exc:
        raise GateLocked(f"teardown refused for {host.name}: {exc}") from exc
    if typed != host.name:
        raise GateLocked(f"teardown refused for {host.name}: '{typed}' is not '{host.name}'")
    report = await _gather(fleet, host, transport, journal, clock=clock, attempt=attempt)
    if not report.unlocked:
        raise GateLocked(_refusal(host.name, typed_for.box, report), report)
    assert report.box is not None  # the box condition holds
    text = instructions(host, report.profile)
    if not host.teardown:
        return TeardownOutcome(False, False, None, "", text, recorded=False, report=report)
    run = await run_teardown_command(
        host.teardown, cwd or (fleet.path.parent if fleet.path else None), timeout_s
    )
    ok = run.status == 0 and not run.timed_out
    record = TeardownRecord(
        clock(), host.teardown, run.status, run.output[-4000:], ok, box_id=report.box.box_id
    )
    jh = await asyncio.to_thread(journal.add_teardown, host.name, record)
    return TeardownOutcome(
        True,
        ok,
        run.status,
        run.output,
        text,
        recorded=jh.torn_down_at is not None,
        report=report,
        timed_out=run.timed_out,
    )


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


class BoxMismatch(ValueError):
    """What the user confirmed (or saw) was about another box than the one the journal
    holds now under the host's name: nothing was recorded."""


def _same_box_or_refuse(jh: HostJournal, box: BoxIdentity | None, what: str) -> BoxIdentity:
    """The journal's current box when it is ``box``; BoxMismatch otherwise."""
    if box is None or jh.box is None:
        raise BoxMismatch(
            f"no box has been identified under {jh.host} yet: {what}. Check the gate first "
            f"(rgt-tui teardown {jh.host} --check) so that it says which box answers"
        )
    if not jh.box.same_box(box):
        raise BoxMismatch(
            f"another box is recorded under {jh.host} now ({jh.box.describe()}), not the one "
            f"you saw ({box.describe()}): {what}. Check the gate again"
        )
    return jh.box


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


def record_manual_teardown(
    journal: Journal,
    host: HostConfig,
    typed: str,
    box: BoxIdentity | None,
    *,
    clock: Callable[[], float] = time.time,
) -> HostJournal:
    """Record that the user destroyed ``box`` by hand: only when ``typed`` is the host's
    name (typed again, after the instructions), ``box`` is the box the journal holds now
    (the one the confirmation was about: ``TeardownOutcome.report.box``) and a typed
    confirmation opened that box's gate (``confirmed_at``). Otherwise ValueError
    (BoxMismatch for the box), and nothing is recorded. Both are checked under the
    journal's lock, with the write.
    """
    if typed != host.name:
        raise ValueError(f"'{typed}' is not '{host.name}': nothing was recorded")
    at = clock()

    def append(jh: HostJournal) -> bool:
        current = _same_box_or_refuse(jh, box, "nothing was recorded")
        if confirmed_at(jh) is None:
            raise BoxMismatch(
                f"the teardown gate of {current.describe()} was never opened by a typed "
                f"confirmation: nothing was recorded. Run `rgt-tui teardown {host.name}` "
                "first: it checks the box and, once you type its name, says what to destroy"
            )
        jh.teardowns.append(
            TeardownRecord(at, None, None, MANUAL_OUTPUT, True, current.box_id, True)
        )
        return True

    return journal.update(host.name, append)
