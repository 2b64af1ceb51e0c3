"""The gate check: re-scan the box now, gather every fact, record it, evaluate.

``check_gate`` re-scans the box now (a failed re-scan is recorded as such, so an earlier
one never stands in for it), reads its queue's cell states (the backend's view: which
cells run, and which the records or the scheduler know to be unfinished, with the queue
file's ``#moved-to`` records), re-hashes the local copy (``local_copy``), reads the pull's
and verify's records (``events``), and appends only the events that change the gate to
the host's journal, in one locked update. ``gather`` is the same check for a typed
confirmation (``confirm``). ``observe_now`` records which box answers without a check.

Past 450 lines on purpose: the re-scan, the facts and their record are one locked check
(the pure evaluation is domain.teardown_gate's).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.queue_state import DONE, RUNNING, QueueView
from rgt_tui.domain.roster import in_outputs, output_prefixes
from rgt_tui.domain.shared_account import sharing_account
from rgt_tui.domain.text import printable
from rgt_tui.domain.unfinished import queue_cells_seen
from rgt_tui.domain.units import local_time, plural
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.journal import BoxHistory, HostJournal, Journal, JournalError
from rgt_tui.services.manifest import take_manifest
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.moved_skips import MovesSeen, moves_on_record
from rgt_tui.services.queue.scheduler import JobGated
from rgt_tui.services.records import host_results_dir, load_manifest, read_json, verification_path
from rgt_tui.services.runtime.preemption import told_with_fix
from rgt_tui.services.teardown.acknowledge import queue_cells
from rgt_tui.services.teardown.events import manifest_event, rescan_event, verification_events
from rgt_tui.services.teardown.group import group_condition
from rgt_tui.services.teardown.local_copy import check_local_copy
from rgt_tui.services.teardown.reclaimed import reclaimed_here
from rgt_tui.transport.base import Transport


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
    # The cell names of the host's queue file, as this check read it (None: no queue
    # file, or it could not be read): what an acknowledgement by name may name.
    queue_cells: tuple[str, ...] | None = None
    # What the box holds that the gate does not cover and a teardown destroys, said
    # before it (never a condition: it is not results): the copies syncs kept aside.
    notes: tuple[str, ...] = ()

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
    jobs: g.SlurmJobsSeen | None = None  # a job-gated host (Slurm): its queue's jobs, read now
    view: QueueView | None = None  # the queue's cells as its backend reads them now
    cells: g.QueueCellsSeen | None = None  # the unfinished and moved cells, from ``view``
    groups: tuple[g.GroupRunSeen, ...] = ()  # the groups this box is a rank of, read now
    # False: no box answered this check (no connection, or connecting failed): which box
    # is there and what runs on it are unknown now, whatever was recorded before.
    answered: bool = True
    # No view (the box did not answer): the local queue file's #moved-to cells, read now,
    # split by whether the move is on record (``moves_on_record``).
    moved: MovesSeen | None = None
    # Something answered, but with a host key rgt-tui refused (its kind): not the silence
    # "not answering" says (a user's hour read that after a key change).
    refused_key: str = ""
    error_exc: TransportError | None = None  # why connecting failed, as raised
    # Not answered: ``_unanswered`` (the fix the rest of the product says, and the cell a
    # runtime last saw running there), read once for the error and the roster.
    said: tuple[str | None, str | None] | None = None


async def _scan_now(fleet: Fleet, host: HostConfig, transport: Transport | None) -> _BoxNow:
    """Re-scan the box now, read the groups it is a rank of, and where the host's backend
    gates on its jobs (Slurm) read the queue's jobs from the scheduler too."""
    now = await _rescan(host, transport)
    if not now.answered:
        said = await asyncio.to_thread(_unanswered, fleet, host)
        now = replace(now, said=said)
        if now.error_exc is not None:
            # Stopped by watch, preempted: what the rest of the product says of it.
            now = replace(now, error=printable(told_with_fix(now.error_exc, said[0]), 1000))
    if transport is not None and now.error is None:
        now = replace(now, groups=await _groups_seen(fleet, host, transport))
    backend = backend_for(host)
    if not isinstance(backend, JobGated):
        return now
    if transport is None or now.error is not None:
        why = f"not read: {now.error or 'no connection'}"
        return replace(now, jobs=g.SlurmJobsSeen((), error=why))
    return replace(now, jobs=await backend.jobs_seen(transport))


async def _rescan(host: HostConfig, transport: Transport | None) -> _BoxNow:
    """Re-scan the box now: its listing (no hashes), which box it is, its running cells."""
    if transport is None:
        why = "the box was not re-scanned (no connection)"
        return _BoxNow(None, None, None, why, answered=False)
    try:
        await transport.connect()
    except (TransportError, OSError) as exc:
        refused = exc.kind if isinstance(exc, HostKeyError) else ""
        return _BoxNow(
            None, None, None, printable(exc, 1000), answered=False, refused_key=refused,
            error_exc=exc if isinstance(exc, TransportError) else None,
        )  # fmt: skip
    if host.pull_refused:
        # No pull folders named: the re-scan would walk the whole home (this machine's,
        # when it stands in), for minutes, and the tab would never fill in. The pull
        # refuses it; so does the gate, saying how to name the folders. What runs there
        # is still read: a box never reached read "✓ idle: the queue is idle" (a user's
        # hour), and a reached one may run cells.
        try:
            view = await _queue_view(host, transport)
        except TransportError as exc:
            return _BoxNow(None, None, None, printable(exc, 1000), answered=False)
        running = tuple(c.name for c in view.cells if c.status == RUNNING)
        return _BoxNow(None, None, running, host.pull_refused, view=view)
    try:
        rescan = await take_manifest(host, transport, hash_files=False)
        view = await _queue_view(host, transport)
    except (TransportError, ManifestError, OSError) as exc:
        return _BoxNow(None, None, None, printable(exc, 1000))
    running = tuple(c.name for c in view.cells if c.status == RUNNING)
    identity = rescan.identity
    if identity is None:
        why = printable(rescan.box_id_error or "no id reported")  # the box's own text
        return _BoxNow(None, None, running, f"the box did not say which box it is: {why}")
    return _BoxNow(rescan, identity, running, None, view=view)


async def _groups_seen(
    fleet: Fleet, host: HostConfig, transport: Transport
) -> tuple[g.GroupRunSeen, ...]:
    """Each group of the fleet this box is a rank of, with the group's cells its records
    on this box show running (issue 41: a box of a running group is not torn down alone).
    This box's own rank is read, over its own connection: a cell runs on the group only
    while it runs on every rank, and this rank running is what tearing it down would cut."""
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.box_backend import BoxRunner
    from rgt_tui.services.queue.group.ranks import rank_hosts

    seen = []
    for group in fleet.hosts:
        if group.group is None or host.name not in group.group.hosts:
            continue
        rank = group.group.hosts.index(host.name)
        try:
            view = await BoxRunner(rank_hosts(group)[rank]).read_view(transport)
        except (TransportError, QueueError, OSError, ValueError) as exc:
            seen.append(g.GroupRunSeen(group.name, rank, error=printable(exc, 300)))
            continue
        running = tuple(c.name for c in view.cells if c.status == RUNNING)
        seen.append(g.GroupRunSeen(group.name, rank, running))
    return tuple(seen)


def _cells_seen(fleet: Fleet, host: HostConfig, now: _BoxNow, manifest: Manifest | None) -> _BoxNow:
    """``now`` with the queue's unfinished and moved cells as the gate's fact, each
    unfinished cell's output folders in the pulled copy (``manifest``) named. Without a
    view of the queue (the box did not answer) the moved cells alone, from the local
    queue file: a cell moved while its box was lost is the other host's work now.

    A move counts only when it is on record (``moves_on_record``: the destination's queue
    file holds the cell). A ``#moved-to`` line without that is no move: the cell is
    unfinished work of this host (``_not_moved``), whatever the view reads from the line."""
    if now.records_only:
        return now
    moves = moves_on_record(fleet, host)
    if now.view is None:
        return replace(now, moved=moves)

    def outputs(name: str) -> tuple[str, ...]:
        return output_prefixes(manifest, host.durable_dir, name) if manifest else ()

    seen = queue_cells_seen(now.view, moves.held, outputs)
    # The view lays the line's #moved-to over the box's records (a skip), and a box's
    # own skip may come from a launch that took the line at its word: neither is a move.
    ended = {c.name for c in now.view.cells if c.status in (RUNNING, DONE)}
    unheld = {k: v for k, v in moves.unheld.items() if k not in ended}
    known = {u[0] for u in seen.unfinished}
    extra = tuple(_not_moved(host, unheld, known))
    return replace(
        now,
        cells=replace(
            seen,
            unfinished=(*seen.unfinished, *extra),
            outputs=(*seen.outputs, *((u[0], p) for u in extra for p in outputs(u[0]))),
        ),
    )


def _not_moved(
    host: HostConfig, unheld: dict[str, tuple[str, str]], known: set[str]
) -> list[tuple[str, str, str]]:
    """The gate's unfinished entry of each ``#moved-to`` cell whose move is not on record
    (``known``: cells already unfinished by the records, left as they are)."""
    return [
        (
            name,
            g.MOVE_NOT_ON_RECORD,
            printable(
                f"is marked '#moved-to {dest}' in {host.name}'s queue file, but no move is "
                f"on record: {why}",
                600,
            ),
        )
        for name, (dest, why) in sorted(unheld.items())
        if name not in known
    ]


def _moved_now(host: HostConfig, state: g.GateState, moves: MovesSeen) -> g.QueueCellsSeen:
    """The gate's fact when the box did not answer: its unfinished cells as the last
    check read them, less those moved now (on record), and the moved ones
    (``queue_cells_seen``'s rule, on what is known); a ``#moved-to`` line with no move on
    record keeps its cell unfinished."""
    moved = moves.held
    unfinished = tuple(u for u in state.unfinished if u[0] not in moved)
    extra = _not_moved(host, moves.unheld, {u[0] for u in unfinished})
    return g.QueueCellsSeen(
        unfinished=(*unfinished, *extra),
        moved=tuple(sorted(moved.items())),
        outputs=tuple(o for o in state.cell_outputs if o[0] not in moved),
    )


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


def _acked_missing(journal: Journal, host: str) -> frozenset[str]:
    """The cells accepted as missing on the journal's box (none when it is unreadable:
    the locked update below says so)."""
    try:
        return journal.load(host).gate().acked_missing
    except JournalError:
        return frozenset()


def _local_check(
    folder: Path, manifest: Manifest, durable_dir: str, acked: frozenset[str], at: float
) -> g.LocalCopyChecked:
    """The manifest's files and those whose only copy is here (a reclaim deleted them on
    the box after they verified), re-hashed now. A reclaimed file of a cell accepted as
    missing is not: the acknowledgement is the typed word that its loss is accepted."""
    local = check_local_copy(folder, manifest_event(manifest).files, at)
    here = reclaimed_here(folder, manifest, at)

    def accepted(path: str) -> bool:
        return any(
            in_outputs(path, cell, output_prefixes(manifest, durable_dir, cell)) for cell in acked
        )

    check = here.check
    missing = tuple(p for p in check.missing if not accepted(p))
    changed = tuple(c for c in check.changed if not accepted(c.split(": ", 1)[0]))
    counted = len(here.files) - sum(1 for f in here.files if accepted(f.local))
    if here.problem:
        counted, changed = 0, check.changed
    return replace(
        local,
        matched=local.matched + sum(1 for f in here.intact if not accepted(f.local)),
        missing=local.missing + missing,
        changed=local.changed + changed,
        reclaimed=counted,
    )


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
    # Said by the TUI and the command line alike: each line below names its own key or
    # command (the TUI showed "run rgt-tui pull box1" where p does it).
    pull_again = "pull it, then verify (the manifest line says how)"
    if unusable:
        problems.append(unusable)
        events.append(g.RecordsInvalid(f"the pulled copy's manifest is unreadable: {unusable}"))
    elif manifest is None:
        # A rank of a group: the group's pull (its folder, or pair.rank1) is the group's,
        # not this box's gate's; "nothing pulled" alone read false after it (s18b #12).
        groups = ", ".join(seen.group for seen in now.groups)
        of_group = (
            f" as {host.name} — a pull of group {groups} counts for the group, not for this "
            "box's own gate"
            if groups
            else ""
        )
        problems.append(f"nothing pulled yet{of_group}: {pull_again}")
        events.append(g.RecordsInvalid(f"nothing pulled yet{of_group}"))
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
                # A file a reclaim deleted on the box cannot be pulled again (s20c #9).
                gone = (
                    "; a file a reclaim deleted on the box cannot be pulled: put it back, "
                    "or accept its cell as missing"
                    if local_check.reclaimed
                    else ""
                )
                problems.append(
                    f"the local copy in {folder} is not what was pulled: a file changed "
                    "here is moved away first (a pull never writes over it; the local line "
                    f"names the files), then pull again (`rgt-tui pull {host.name}`, or p), "
                    f"then verify{gone}"
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
    if now.cells is not None:
        events.append(now.cells)
    elif now.moved is not None:
        events.append(_moved_now(host, jh.gate(), now.moved))
    if now.jobs is not None:
        events.append(now.jobs)
    return events, problems


def _box_condition(c: g.Condition, jh: HostJournal, now: _BoxNow) -> g.Condition:
    """The gate's "box" item, with the identity and the earlier boxes spelled out; not
    ticked while no box answers (the one recorded is the last seen, not the one there)."""
    if jh.box is None:
        text = "box not identified: no re-scan has reached the box answering under this name"
    elif not now.answered:
        heard = _last_answer(jh)
        when = f" (last re-scanned {local_time(heard)})" if heard is not None else ""
        what = "not answering now"
        if now.refused_key:
            article = "an" if now.refused_key == "unknown" else "a"
            what = f"answering with {article} {now.refused_key} host key, which rgt-tui refuses"
        text = f"{what}; last seen: {jh.box.describe()}{when}"
        c = replace(c, ok=False, cause=g.NOT_ANSWERING)
    else:
        text = jh.box.describe()
    if jh.history:
        text += f"; {len(jh.history)} earlier box(es) under this name: history, not counted"
    return replace(c, evidence=text)


def _last_answer(jh: HostJournal) -> float | None:
    """When the box last answered a re-scan, as the journal holds it (None: never)."""
    return max((e.at for _, e in jh.events if isinstance(e, g.Rescanned)), default=None)


def _idle_condition(c: g.Condition, state: g.GateState, now: _BoxNow) -> g.Condition:
    """The gate's "idle" item: what runs on a box that does not answer is unknown (a
    cell recorded running then is named, marked if it has moved since), so it is locked.
    A rank box's running cells that are its group's job stay locked, pointing at the
    group line: this box's kill and --ack-running refuse a group's cell."""
    if now.answered:
        ranks = {cell for seen in now.groups for cell in seen.running}
        if c.settle and set(c.settle) <= ranks:
            groups = ", ".join(printable(seen.group, 200) for seen in now.groups if seen.running)
            return replace(c, evidence=f"{c.evidence} (group {groups}'s job)", cause=g.GROUP_CELL)
        return c
    moved = {name for name, _ in state.moved_cells}
    text = "unknown: the box does not answer"
    if state.running:
        names = ", ".join(n + (" (moved since)" if n in moved else "") for n in state.running)
        text += f" (running at its last answer: {names})"
    return g.Condition("idle", False, printable(text, None), cause=g.NOT_ANSWERING)


def _unanswered(fleet: Fleet, host: HostConfig) -> tuple[str | None, str | None]:
    """What the rest of the product says of ``host`` not answering (``unreachable_fix``:
    move the cell a runtime last saw running there) and that cell (None: none known).
    Reads the runtime's records: call it off the event loop."""
    from rgt_tui.paths import journal_dir
    from rgt_tui.services.runtime.preemption import (
        named_preemption,
        preempt_dir,
        read_seen,
        unreachable_fix,
    )

    fix = unreachable_fix(fleet, host)
    if fix is None or fleet.path is None:
        return fix, None
    named = named_preemption(fleet, host.name)
    seen = read_seen(preempt_dir(journal_dir(fleet.path)), host.name)
    return fix, named.cell if named is not None else seen.cell if seen is not None else None


def _roster_unanswered(c: g.Condition, said: tuple[str | None, str | None] | None) -> g.Condition:
    """The roster while the box does not answer (``said``: ``_unanswered``; None while it
    answers): which cells ran there is unknown, so a cell last seen running there is not
    offered to --ack-missing: the fix the rest of the product gives, moving it, is said
    instead."""
    if c.ok or said is None:
        return c
    fix, cell = said
    settle = tuple(x for x in c.settle if x != cell)
    text = c.evidence + (f"; {fix}" if fix else "")
    return replace(c, evidence=printable(text, None), settle=settle, cause=g.NOT_ANSWERING)


async def gather(
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
    if host.group is not None:
        # A group is no box: nothing is checked or recorded under its name (``group``).
        line = group_condition(host)
        return GateReport(host, profile, None, (line,), ())
    if records_only:
        now = _BoxNow(None, None, None, None, records_only=True)
    else:
        now = await _scan_now(fleet, host, transport)
    folder = host_results_dir(fleet.results_dir, host)
    local = await asyncio.to_thread(_local_records, folder)
    now = await asyncio.to_thread(_cells_seen, fleet, host, now, local[0])
    local_check = None
    if local[0] is not None and not records_only:
        # Every byte of the local copy, re-hashed now, off the event loop (local_copy).
        acked = await asyncio.to_thread(_acked_missing, journal, host.name)
        local_check = await asyncio.to_thread(
            _local_check, folder, local[0], host.durable_dir, acked, clock()
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
    said = now.said
    cells_now = await asyncio.to_thread(_queue_cells, host)
    overrides = {
        "box": lambda c: _box_condition(c, jh, now),
        "idle": lambda c: _idle_condition(c, state, now),
        "roster": lambda c: _roster_now(_roster_unanswered(c, said), state, cells_now),
    }
    conditions = tuple(overrides.get(c.key, lambda c: c)(c) for c in g.conditions(state))
    if any(c.cause == g.GROUP_CELL for c in conditions):
        # What keeps the files changing is the group's cell: its fix is the group's too.
        conditions = tuple(
            replace(c, cause=g.GROUP_CELL) if c.cause == g.CELL_RUNS else c for c in conditions
        )
    if isinstance(backend_for(host), JobGated) and state.slurm_jobs is None:
        # A job-gated host whose jobs were never read (a records-only check): not "none".
        jobs = g.Condition("jobs", False, "the cluster's queue was not read yet: check again")
        conditions = (*conditions[:-1], jobs, conditions[-1])
    if now.groups:
        # Read now, never journaled: only the group's cell ending settles it.
        groups = tuple(g.group_condition(seen) for seen in now.groups)
        conditions = (*conditions[:-1], *groups, conditions[-1])
    shared = sharing_account(fleet, host)
    how = "log{s} in to the same account ({ssh})"
    if not shared and jh.box is not None:
        # The same box under another spelling (localhost for 127.0.0.1, an alias): the
        # journals say which entries reached it (hour s23c #5).
        shared = await asyncio.to_thread(_same_box, fleet, host, journal, jh.box.box_id)
        how = "reached the same box ({box})"
    if shared:
        condition = _account_condition(host, shared, how, jh.box.describe() if jh.box else "")
        conditions = (*conditions[:-1], condition, conditions[-1])
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
        cells_now,
        _notes(host, now.view),
    )


def _same_box(fleet: Fleet, host: HostConfig, journal: Journal, box_id: str) -> tuple[str, ...]:
    """The other entries whose journal's last box is ``box_id`` and not torn down
    (blocking: one journal read each)."""
    found = []
    for other in fleet.hosts:
        if other.name == host.name or other.group is not None:
            continue
        try:
            jh = journal.load(other.name)
        except JournalError:
            continue
        if jh.box is not None and jh.box.box_id == box_id and jh.torn_down_at is None:
            found.append(other.name)
    return tuple(found)


def _account_condition(
    host: HostConfig, shared: tuple[str, ...], how: str, box: str
) -> g.Condition:
    """Another entry of the fleet file logs in to this box's account (or reached this
    very box): tearing this one down destroys that entry's box too, whose queue and
    results this gate never counts (hour s23b #2: a second entry for a box with four
    cells not run opened and ran). Locked while both entries stand; no acknowledgement
    settles it."""
    names = ", ".join(printable(n, 200) for n in shared)
    said = how.format(
        s="s" if len(shared) == 1 else "",
        ssh=printable(str(host.ssh or "this machine"), 200),
        box=printable(box, 200),
    )
    return g.Condition(
        "account",
        False,
        f"{names} {said}: a teardown of {host.name} destroys {names}'s box too, whose "
        "queue and results this gate does not count",
    )


def _notes(host: HostConfig, view: QueueView | None) -> tuple[str, ...]:
    """What the box holds beside the results that a teardown destroys unasked: the
    box's own copies a sync replaced (edits made there), in ~/.rgt/sync-kept."""
    if view is None or not view.sync_kept:
        return ()
    n = view.sync_kept
    count = "10000 files or more" if n >= 10000 else plural(n, "file")
    return (
        f"~/.rgt/sync-kept on the box holds {count}: the box's own copies of files a sync "
        "replaced (edits made there), not results and never pulled; copy what you need "
        f"home before the box goes (rgt-tui shell {host.name} opens a shell there)",
    )


def _roster_now(
    c: g.Condition, state: g.GateState, cells_now: tuple[str, ...] | None
) -> g.Condition:
    """The roster the last verify reconciled, held to the queue file as it is now: a cell
    added since (never sent, never verified) keeps the gate locked until a verify counts
    it or it is accepted as missing (a user's hour found the gate open, and autostop
    stopping the box, with an appended cell that had never run)."""
    if cells_now is None or state.expected_cells is None:
        return c
    new = [n for n in cells_now if n not in state.expected_cells and n not in state.acked_missing]
    if not new:
        return c
    named = ", ".join(new[:3]) + (f" and {len(new) - 3} more" if len(new) > 3 else "")
    return g.Condition(
        "roster",
        False,
        f"{c.evidence}; the queue file now also has {named}, which the last verify did not "
        "reconcile: verify again",
        tuple(new),
    )


def _queue_cells(host: HostConfig) -> tuple[str, ...] | None:
    """The queue file's cell names; None without one or when it cannot be read (the
    acknowledgement then reads it itself and names what is wrong)."""
    if host.queue is None:
        return None
    try:
        return queue_cells(host)
    except Exception:  # a queue file's mistake is the queue's check to name, not this one
        return None


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
    return await gather(fleet, host, transport, journal, clock=clock)


async def _queue_view(host: HostConfig, transport: Transport) -> QueueView:
    """The queue's cells as the host's backend reads them (``read_queue_view``, the view
    the CLI and the TUI show); TransportError when its records cannot be read."""
    from rgt_tui.services.queue.view import read_queue_view

    try:
        return await read_queue_view(host, transport)
    except (ValueError, OSError) as exc:
        raise TransportError(host.name, f"cannot read the queue records: {exc}") from exc


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
    from rgt_tui.services.box.identity import identify_box

    try:
        identity = await identify_box(host, transport)
    except ManifestError as exc:
        raise ManifestError(printable(exc, 1000)) from exc
    jh = await asyncio.to_thread(journal.observe_box, host.name, identity, clock())
    assert jh.box is not None
    return jh.box
