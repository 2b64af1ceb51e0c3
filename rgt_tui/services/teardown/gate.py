"""The gate check: re-scan the box now, gather every fact, record it, evaluate.

``check_gate`` re-scans the box now (``gate_scan``; a failed re-scan is recorded as such,
so an earlier one never stands in for it), reads its queue's cell states (the backend's
view: which cells run, and which the records or the scheduler know to be unfinished, with
the queue file's ``#moved-to`` records), re-hashes the local copy (``local_copy``), reads
the pull's and verify's records (``events``), and appends only the events that change
the gate to the host's journal, in one locked update. The pure evaluation is
domain.teardown_gate's; the lines that need what this check found beside the recorded
state (the box, idle, roster and account lines) are ``gate_conditions``'. ``gather`` is
the same check for a typed confirmation (``confirm``). ``observe_now`` records which box
answers without a check.

Just past 450 lines on purpose: ``_facts`` turns every record into the gate's events and
the checklist's problem lines in one place, so a problem line can never drift from the
event that locks the gate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.gate_fixes import garbled_fix
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.roster import in_outputs, output_prefixes
from rgt_tui.domain.saved_claims import TAIL_BYTES
from rgt_tui.domain.shared_account import sharing_account
from rgt_tui.domain.teardown_gate import garbled_words, scan_garbled
from rgt_tui.domain.text import printable
from rgt_tui.domain.unfinished import run_key
from rgt_tui.domain.units import fmt_bytes, plural
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.journal import BoxHistory, HostJournal, Journal, JournalError
from rgt_tui.services.local_copy import check_local_copy
from rgt_tui.services.pull.box_logs import MAX_BYTES as LOGS_MAX_BYTES
from rgt_tui.services.pull.box_logs import LogsLeft, logs_left_on_box
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.scheduler import JobGated
from rgt_tui.services.reclaimed import reclaimed_here
from rgt_tui.services.records import (
    host_results_dir,
    pull_running,
)
from rgt_tui.services.teardown.acknowledge import queue_cells
from rgt_tui.services.teardown.events import manifest_event, rescan_event, verification_events
from rgt_tui.services.teardown.gate_conditions import (
    account_condition,
    box_condition,
    idle_condition,
    other_boxes,
    roster_now,
    roster_unanswered,
    same_box,
    same_key,
)
from rgt_tui.services.teardown.gate_scan import (
    BoxNow,
    cells_seen,
    gpu_holders,
    groups_seen,
    hand_run_note,
    moved_now,
    scan_now,
    started_by_hand,
)
from rgt_tui.services.teardown.group import group_condition
from rgt_tui.services.teardown.held_here import Records, local_records
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
    # Processes no cell left behind hold the box's GPUs (``hand_run_note``, also among
    # ``problems``; ``started_by_hand``): a note for a teardown the user types, a wait
    # for watch's autostop, which nobody watches (h532 #1: it stopped a box under a
    # user's evaluation run). A cell's orphan is a note alone: the stop ends it.
    hand_run: str = ""

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


def _append_changed(
    jh: HostJournal, events: list[g.GateEvent], now: float, *, answered: bool
) -> bool:
    """Append only the events that change the gate; True when any did. ``answered``: the
    box answered this check, so it was seen now (a records-only check, or one whose box
    did not answer, says nothing of when it was last seen: review s44 #8)."""
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
    if answered:
        if jh.first_seen is None:
            jh.first_seen = now
        jh.last_seen = now
    return changed


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
    now: BoxNow,
    local: Records,
    at: float,
    attempt: str,
    local_check: g.LocalCopyChecked | None = None,
    pulling: bool = False,
) -> tuple[list[g.GateEvent], list[str]]:
    """The gate events of this check, for the journal's current box, and the problems
    (``pulling``: a pull into ``folder`` runs now, which the caller says)."""
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
        if box is None:
            # Not known to be another box: this one is not identified (it has not answered
            # to this journal). "Of another box" sent a user to pull again a box that was
            # down, for a copy of that same box (s36 faults #6).
            why = (
                f"the pulled copy in {folder} is of {of}, and {host.name}'s box is not "
                "identified yet (it has not answered here), so they cannot be told to be one"
            )
            problems.append(f"{why}: check again once {host.name} answers")
        else:
            why = (
                f"the pulled copy in {folder} is of another box ({of}), not of this one "
                f"({box.describe()})"
            )
            problems.append(f"{why}: {pull_again}")
        events.append(g.RecordsInvalid(why))
    else:
        events.append(manifest_event(manifest))
        events += verification_events(record, manifest)
        if local_check is not None:
            # Before the re-scan: the re-scan taken for a confirmation is the event after
            # which the gate must hold (``confirmed_at``), this check included.
            events.append(local_check)
            # A pull running now explains a copy part-way: "pull again" would be refused
            # ("another pull of box2 is running": h491 #5).
            if not local_check.ok and not pulling:
                # A file a reclaim deleted on the box cannot be pulled again (s20c #9).
                gone = (
                    "; a file a reclaim deleted on the box cannot be pulled: put it back, "
                    "or accept its cell as missing"
                    if local_check.reclaimed
                    else ""
                )
                if local_check.changed:
                    problems.append(
                        f"the local copy in {folder} is not what the manifest lists (the "
                        "local line names the files): a file changed here is moved away first "
                        "(a pull never writes over it; one an earlier pull left, which the box "
                        f"rewrote since, it replaces), then pull again (`rgt-tui pull "
                        f"{host.name}`, or p), then verify{gone}"
                    )
                else:  # only missing: a pull cut short, or files removed here (s36 faults #6)
                    problems.append(
                        f"the local copy in {folder} lacks files the manifest lists (a pull "
                        "cut short, or files removed here; the local line names them): pull "
                        f"again (`rgt-tui pull {host.name}`, or p), then verify{gone}"
                    )
    if now.records_only:
        return events, problems  # the records alone, before a confirmation (no re-scan)
    if now.rescan is not None and box is not None and box.same_box(now.identity):
        events.append(rescan_event(now.rescan, at, attempt=attempt, box_id=box.box_id))
    else:
        why = now.error or "the re-scan was of another box"
        # With the next step (s36 faults #5): the gate compares the box with its manifest
        # just before a teardown, so it waits for an answer. A box that answers with text
        # before its scan's output is told the fix on the box, as the rescan line is.
        if scan_garbled(why):
            fix = garbled_fix(host.name, tui=False, then="check again")
            problems.append(f"cannot re-scan the box: {garbled_words(why)} — {fix}")
        else:
            problems.append(f"cannot re-scan the box: {why} — check again once {host.name} answers")
        events.append(g.RescanFailed(why))
    if now.running is not None:
        # Each running cell with its run: an acknowledgement holds for that run only.
        cells = now.view.cells if now.view is not None else ()
        runs = tuple((c.name, run_key(c)) for c in cells if c.name in now.running)
        events.append(g.CellsRunning(now.running, runs))
    if now.cells is not None:
        events.append(now.cells)
    elif now.moved is not None:
        events.append(moved_now(host, jh.gate(), now.moved))
    if now.jobs is not None:
        events.append(now.jobs)
    return events, problems


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
        now = BoxNow(None, None, None, None, records_only=True)
    else:
        now = await scan_now(fleet, host, transport)
    folder = host_results_dir(fleet.results_dir, host)
    pulling = await asyncio.to_thread(pull_running, folder)
    local = await asyncio.to_thread(local_records, folder)
    now = await asyncio.to_thread(cells_seen, fleet, host, now, local[0])
    asks_box = transport is not None and now.error is None and not records_only
    # Who holds the box's GPUs is asked while the local copy is re-hashed here.
    holders = asyncio.create_task(gpu_holders(host, transport, now)) if asks_box else None
    if holders is not None:  # its error is read even when the re-hash fails first
        holders.add_done_callback(lambda t: t.cancelled() or t.exception())
    try:
        local_check = None
        if local[0] is not None and not records_only:
            # Every byte of the local copy, re-hashed now, off the event loop (local_copy).
            acked = await asyncio.to_thread(_acked_missing, journal, host.name)
            local_check = await asyncio.to_thread(
                _local_check, folder, local[0], host.durable_dir, acked, clock()
            )
        hand_run, by_hand = "", False
        if holders is not None:
            # After the re-hash: the box's own copy, re-hashed above, is not hashed again
            # for the groups' folders it holds.
            own = (local, local_check) if local_check is not None else None
            now = replace(now, groups=await groups_seen(fleet, host, transport, own))
            evidence = await holders
            hand_run = hand_run_note(host, now, evidence)
            by_hand = started_by_hand(now, evidence)
    finally:
        if holders is not None:
            holders.cancel()  # the re-hash failed: nothing waits for the answer
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
        events, found = _facts(host, folder, jh, now, local, at, attempt, local_check, pulling)
        if pulling:
            found.insert(
                0,
                f"a pull of {host.name} into {folder} is running on this machine (the TUI, "
                "watch's periodic pull or another rgt-tui pull): what it brings is checked "
                "once it ends — verify then, and check again",
            )
        problems.extend(found)
        if hand_run:
            problems.append(hand_run)
        if jh.box is None:
            # No box has ever answered: facts about none cannot be kept (they would
            # only turn into history); they are shown, not recorded.
            unattributed.extend(events)
            return changed
        answered = now.identity is not None
        return _append_changed(jh, events, at, answered=answered) or changed

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
        "box": lambda c: box_condition(c, jh, now),
        "idle": lambda c: idle_condition(c, state, now),
        "roster": lambda c: roster_now(roster_unanswered(c, said), state, cells_now),
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
    if not host.queue and fleet.rank_of(host.name) is not None:
        # A rank's cells are its group's: the group runs a missing one, not the box.
        conditions = tuple(
            replace(c, cause=g.GROUP_ROSTER) if c.key == "roster" and c.settle else c
            for c in conditions
        )
    if now.groups:
        # Read now, never journaled: only the group's cell ending settles it.
        groups = tuple(g.group_condition(seen) for seen in now.groups)
        conditions = (*conditions[:-1], *groups, conditions[-1])
    shared = sharing_account(fleet, host)
    how = "log{s} in to the same account ({ssh})"
    # The other entries' journals, read once for both questions below.
    others = (
        await asyncio.to_thread(other_boxes, fleet, host, journal)
        if not shared and jh.box is not None
        else []
    )
    if not shared and jh.box is not None:
        # The same box under another spelling (localhost for 127.0.0.1, an alias): the
        # journals say which entries reached it (hour s23c #5).
        shared = same_box(others, jh.box.box_id)
        how = "reached the same box ({box})"
    if shared:
        condition = account_condition(host, shared, how, jh.box.describe() if jh.box else "")
        conditions = (*conditions[:-1], condition, conditions[-1])
    elif jh.box is not None and not records_only:
        # Another entry's box answers with this box's host key: most likely another
        # account on this machine, which a teardown destroys too. A note, not a lock:
        # boxes made from one image can share a key and be apart (h511 #2).
        twins = same_key(fleet, host, others, jh.box)
        if twins:
            names = ", ".join(printable(n, 200) for n in twins)
            problems.append(
                f"{names} answered with this box's host key ({jh.box.host_key}) under "
                f"another box id: most likely another login account on the same machine, "
                f"whose queue and results this gate does not count — a teardown of "
                f"{host.name} destroys it too (unless both boxes were made from one image "
                "that carries its host keys): pull and verify it first"
            )
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
        _notes(host, now.view, await asyncio.to_thread(logs_left_on_box, folder)),
        printable(hand_run, 1000) if by_hand else "",
    )


def _notes(host: HostConfig, view: QueueView | None, logs: LogsLeft) -> tuple[str, ...]:
    """What the box holds beside the results that a teardown destroys unasked: the
    box's own copies a sync replaced (edits made there), in ~/.rgt/sync-kept; the cell
    logs over the pull's cap, of which only the end is here (h515 #9: the pull said
    so once, the checklist never)."""
    notes = []
    if view is not None and view.sync_kept:
        n = view.sync_kept
        count = "10000 files or more" if n >= 10000 else plural(n, "file")
        notes.append(
            f"~/.rgt/sync-kept on the box holds {count}: the box's own copies of files a "
            "sync replaced (edits made there), not results and never pulled; copy what you "
            f"need home before the box goes (rgt-tui shell {host.name} opens a shell there)"
        )
    if logs.tailed:
        each = "it" if len(logs.tailed) == 1 else "each"
        notes.append(
            f"{plural(len(logs.tailed), 'cell log')} stayed on the box at the last pull, over "
            f"the {fmt_bytes(LOGS_MAX_BYTES)} of logs a pull brings: {_names(logs.tailed)} — "
            f"only the last {fmt_bytes(TAIL_BYTES)} of {each} is here (what verify reads); "
            "copy the whole log from ~/.rgt/queue before the box goes if you need it"
        )
    if logs.unread:
        them = "it" if len(logs.unread) == 1 else "them"
        notes.append(
            f"{plural(len(logs.unread), 'cell log')} stayed on the box unread at the last "
            f"pull (the box's listing refused {them}, or the end could not be read): "
            f"{_names(logs.unread)} — {'its' if them == 'it' else 'their'} end is not here; "
            f"copy {them} from ~/.rgt/queue before the box goes if you need {them}"
        )
    return tuple(notes)


def _names(paths: tuple[str, ...]) -> str:
    """The first three of ``paths``, escaped, and how many more."""
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return ", ".join(printable(n, 120) for n in paths[:3]) + more


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
