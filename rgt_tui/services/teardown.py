"""Teardown: gather the gate's facts, show the checklist, and run teardown only when told.

Facts come from three places, each recorded in the host's journal as gate events (only
events that change the gate are appended, so re-checking is cheap and the journal stays
short): the pull's manifest record and the verification record beside the results;
a fresh re-scan of the box (sizes and mtimes, no hashing) and its queue records; and the
user (acknowledgements, the typed host name). The gate itself is the pure state machine
in ``domain.teardown_gate``; nothing here decides on its own. Teardown never runs without
the typed confirmation, and a failed teardown command is not recorded as a teardown.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.domain.profiles import Profile
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.journal import HostJournal, Journal, JournalError, TeardownRecord
from rgt_tui.services.manifest import take_manifest
from rgt_tui.services.records import host_results_dir, load_manifest, read_json, verification_path
from rgt_tui.transport.base import Transport, TransportError

TEARDOWN_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class GateReport:
    """The checklist for one host: every condition with its evidence, and the profile."""

    host: HostConfig
    profile: Profile
    state: g.GateState | None  # None when the journal is damaged: the gate stays locked
    conditions: tuple[g.Condition, ...]
    problems: tuple[str, ...]  # why facts could not be gathered (box down, journal damaged)
    torn_down_at: float | None = None

    @property
    def ready_but_confirmation(self) -> bool:
        """Every condition except the typed name holds (what `teardown --check` asks)."""
        return self.state is not None and not g.missing_conditions(
            self.state, ignore_confirmation=True
        )

    @property
    def unlocked(self) -> bool:
        return self.state is not None and g.is_unlocked(self.state)


def manifest_event(manifest: Manifest) -> g.ManifestTaken:
    """The gate's view of a pull manifest: local paths with size, mtime and hash."""
    files = tuple(
        sorted(
            (manifest.local_relpath(e.root, e.path), g.FileFacts(e.size, e.mtime, e.sha256 or ""))
            for e in manifest.entries
        )
    )
    return g.ManifestTaken(files, taken_at=manifest.taken_at, last_write=manifest.last_write or 0.0)


def verification_events(record: dict | None, manifest: Manifest) -> list[g.GateEvent]:
    """Pulled-and-hashed and loaded facts from the verification record of this manifest."""
    if not record or (record.get("manifest") or {}).get("digest") != manifest.digest:
        return []  # a record of another manifest proves nothing about this one
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
    if roster is not None:
        events.append(
            g.RosterChecked(tuple(roster.get("expected", [])), tuple(roster.get("present", [])))
        )
    else:
        events.append(g.RosterChecked((), ()))  # no queue: nothing to reconcile
    return events


def rescan_event(rescan: Manifest, at: float) -> g.Rescanned:
    """A fresh listing in the gate's terms (local paths, sizes, mtimes)."""
    return g.Rescanned(
        tuple(
            sorted((rescan.local_relpath(e.root, e.path), e.size, e.mtime) for e in rescan.entries)
        ),
        at,
    )


def _record(
    journal: Journal, jh: HostJournal, events: list[g.GateEvent], now: float
) -> HostJournal:
    """Append only the events that change the gate, then save."""
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
    if changed:
        journal.save(jh)
    return jh


async def check_gate(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport | None,
    journal: Journal,
    *,
    clock: Callable[[], float] = time.time,
) -> GateReport:
    """Gather every fact (re-scanning the box when reachable) and evaluate the gate."""
    profile = load_profile(host.profile)
    problems: list[str] = []
    try:
        jh = await asyncio.to_thread(journal.load, host.name)
    except JournalError as exc:
        return GateReport(
            host, profile, None, (g.Condition("journal", False, str(exc)),), (str(exc),)
        )
    folder = host_results_dir(fleet.results_dir, host)
    events: list[g.GateEvent] = []
    try:
        manifest = await asyncio.to_thread(load_manifest, folder)
    except ManifestError as exc:
        manifest = None
        problems.append(str(exc))
    if manifest is None:
        problems.append(
            f"nothing pulled yet: run `rgt-tui pull {host.name}` then `rgt-tui verify {host.name}`"
        )
    else:
        events.append(manifest_event(manifest))
        record = await asyncio.to_thread(read_json, verification_path(folder))
        events += verification_events(record, manifest)
    if transport is not None:
        try:
            await transport.connect()
            if manifest is not None:
                rescan = await take_manifest(host, transport, hash_files=False)
                events.append(rescan_event(rescan, clock()))
            events.append(g.CellsRunning(await _running_cells(host, transport)))
        except (TransportError, ManifestError, OSError) as exc:
            problems.append(f"cannot re-scan the box: {exc}")
    else:
        problems.append("the box was not re-scanned")
    jh = await asyncio.to_thread(_record, journal, jh, events, clock())
    state = jh.gate()
    return GateReport(host, profile, state, g.conditions(state), tuple(problems), jh.torn_down_at)


async def _running_cells(host: HostConfig, transport: Transport) -> tuple[str, ...]:
    from rgt_tui.services.queue_view import read_queue_view

    try:
        view = await read_queue_view(host, transport)
    except (ValueError, OSError) as exc:
        raise TransportError(host.name, f"cannot read the queue records: {exc}") from exc
    return tuple(c.name for c in view.cells if c.status == "running")


def acknowledge(
    journal: Journal,
    host: str,
    *,
    missing: tuple[str, ...] = (),
    running: tuple[str, ...] = (),
    now: float | None = None,
) -> HostJournal:
    """Record the user's by-name acknowledgements of missing or running cells."""
    events = [g.MissingCellAcknowledged(n) for n in missing] + [
        g.RunningAcknowledged(n) for n in running
    ]
    return journal.record(host, now if now is not None else time.time(), *events)


@dataclass(frozen=True)
class TeardownOutcome:
    """What happened when the user confirmed: the command's output, or the instructions."""

    ran: bool
    ok: bool
    exit_status: int | None
    output: str
    instructions: str


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
    report: GateReport,
    *,
    clock: Callable[[], float] = time.time,
    cwd: Path | None = None,
) -> TeardownOutcome:
    """Record the typed name; if the gate then unlocks, run the teardown command (or give
    the instructions) and record the teardown. Raises PermissionError when it stays locked."""
    if report.state is None:
        raise PermissionError("the journal is damaged: the gate stays locked")
    jh = await asyncio.to_thread(journal.record, host.name, clock(), g.ConfirmationTyped(typed))
    state = jh.gate()
    if not g.is_unlocked(state):
        missing = ", ".join(f"{c.key} ({c.evidence})" for c in g.missing_conditions(state))
        raise PermissionError(f"teardown refused for {host.name}: {missing}")
    text = instructions(host, report.profile)
    if not host.teardown:
        outcome = TeardownOutcome(False, True, None, "", text)
    else:
        proc = await asyncio.create_subprocess_shell(
            host.teardown,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd or (fleet.path.parent if fleet.path else None),
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), TEARDOWN_TIMEOUT_S)
        except asyncio.TimeoutError:
            proc.kill()
            out = f"teardown command timed out after {TEARDOWN_TIMEOUT_S:g} s".encode()
        status = proc.returncode
        outcome = TeardownOutcome(True, status == 0, status, out.decode(errors="replace"), text)
    jh = await asyncio.to_thread(journal.load, host.name)
    jh.teardowns.append(
        TeardownRecord(
            clock(), host.teardown, outcome.exit_status, outcome.output[-4000:], outcome.ok
        )
    )
    await asyncio.to_thread(journal.save, jh)
    return outcome
