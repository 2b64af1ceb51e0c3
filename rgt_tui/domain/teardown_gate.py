"""The teardown gate (the Iron Law): a pure state machine over recorded facts.

Over 450 lines on purpose: every condition below (Slurm's jobs included) is one clause of
one verdict, and reading them side by side is how the Iron Law is reviewed.

A host unlocks only when every condition holds at once:

0. the facts belong to an identified box (``box_identity``): the journal keeps each box's
   facts apart, and a box re-created under the same name starts with none;
1. a manifest was taken after the last write on the box (one of no file only when verify
   left it to the roster, every cell missing and none present: item 5 then asks each cell
   by name), and a re-scan taken *after the
   name was typed*, for that very confirmation, still matches it (same files, sizes,
   mtimes; no refused entry and no link the manifest did not have, a path left on the
   box by rule (a secret, rgt-tui's own state) aside, as verify has it);
2. every file in it was pulled with a matching SHA-256, and is still on the local disk,
   unchanged: re-hashed when the gate is checked and again when the name is typed
   (``LocalCopyChecked``; a record that it was pulled is not enough);
3. every loadable artifact loaded (others count by hash);
4. verify reported no problem at all for this manifest (refused or unreadable files,
   leftovers, unfinished parts, unhashed entries, a failed re-scan... each one named);
5. the roster is reconciled, or each missing cell acknowledged by name;
6. no queue cell is running, or each running cell acknowledged; on a Slurm host also
   every job of the host's queue ended (``SlurmJobsSeen``: none pending or running in
   squeue, read at this check; no acknowledgement settles it, only the jobs ending or
   being cancelled);
7. no cell's work is unfinished by the queue's records or its scheduler (failed, killed,
   interrupted, ended by Slurm, pending), or each such cell is moved to another host (its
   ``#moved-to`` line, and the destination's queue file holding the cell: a ``#moved-to``
   line typed by hand moves nothing, ``MOVE_NOT_ON_RECORD``) or acknowledged by name
   (``QueueCellsSeen``, ``unfinished``): an unfinished cell does not count for the roster
   however many of its files verified;
8. the user typed the host's name.

The typed name and the re-scan are one moment, not two facts that keep: typing the name
(``ConfirmationTyped``, with a fresh ``attempt`` token) discards any earlier re-scan, and
only a matching ``Rescanned`` carrying that same token keeps the confirmation. Typing the
name also discards the last local re-check: only one taken after it counts. A re-scan
for anything else (a checklist check) drops the confirmation, and one that fails
(``RescanFailed``) leaves no match behind. So a re-scan taken before the name was typed,
or hours ago while the box was reachable, can never open the gate.

Any later change on the box (a new or changed file, a file the re-scan refused or a
link it found that the manifest had not, a cell started after it was taken) invalidates the manifest and with it every fact built on it, so the gate locks again. Facts arrive as
events; ``apply`` is the only way state changes, so a journal of events replays to the
same gate.

Text in the evidence that came from the box (paths, reasons, errors) is shown through
``text.printable``: no control character of the box's reaches the terminal.

The events (the facts) are in ``gate_events``; this module is the state they build and
the checklist read from it. It stays one module past ~400 lines because ``apply`` and
``conditions`` read the same ``GateState`` fields: a new condition and the facts it rests
on change together, and reading them side by side is how the Iron Law is checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from rgt_tui.agent.secret_paths import skipped_by_rule

# The events live in gate_events; they are re-exported here because callers (the
# journal, services/teardown, tests) treat them as the gate's own vocabulary
# (``g.ManifestTaken``, ``g.apply``): one name to import for the whole gate.
from rgt_tui.domain.gate_events import (
    ArtifactChecked,
    BoxChanged,
    CellsRunning,
    ConfirmationTyped,
    FileFacts,
    FilePulled,
    GateEvent,
    LocalCopyChecked,
    ManifestTaken,
    MissingCellAcknowledged,
    QueueCellsSeen,
    RecordsInvalid,
    RescanFailed,
    Rescanned,
    RosterChecked,
    RunningAcknowledged,
    SlurmJobsSeen,
    UnfinishedAcknowledged,
    VerificationRead,
)
from rgt_tui.domain.queue_state import PENDING
from rgt_tui.domain.roster import in_outputs
from rgt_tui.domain.text import printable
from rgt_tui.domain.unfinished import newest_checkpoint
from rgt_tui.domain.units import local_time, plural

SHOWN_PATHS = 3  # paths named per kind of change in "box changed since the manifest"
# How the gate says a re-scan found the box written since the pull (the Pulls tab reads it).
CHANGED_SINCE = "box changed since the manifest — "


# --- state ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GateState:
    """Everything the gate knows about one host, since its latest valid manifest."""

    host: str
    box_id: str | None = None  # the box these facts belong to (None: not identified)
    manifest: dict[str, FileFacts] | None = None
    manifest_refused: frozenset[str] = frozenset()  # local paths the manifest refused
    manifest_links: frozenset[tuple[str, str]] = frozenset()  # (local path, target)
    taken_at: float | None = None
    last_write: float | None = None
    finished_at: float | None = None
    rescan_matches: bool = False
    rescan_at: float | None = None
    rescan_error: str | None = None  # why the latest re-scan could not be taken
    pulled: frozenset[str] = frozenset()
    local: LocalCopyChecked | None = None  # the last re-check of the local copy
    loaded: frozenset[str] = frozenset()
    failed: dict[str, str] = field(default_factory=dict)
    loadable: frozenset[str] = frozenset()
    checked: frozenset[str] = frozenset()
    verify_ok: bool = False
    verify_problems: tuple[str, ...] | None = None  # None: no verification of this manifest
    verify_left_to_roster: tuple[str, ...] = ()
    # The manifest is empty and every cell missing: the roster rules (each acknowledged).
    verify_empty_left_to_roster: bool = False
    expected_cells: tuple[str, ...] | None = None
    present_cells: frozenset[str] = frozenset()
    acked_missing: frozenset[str] = frozenset()
    running: tuple[str, ...] = ()
    running_runs: tuple[tuple[str, str], ...] = ()  # CellsRunning.runs
    acked_running: frozenset[tuple[str, str]] = frozenset()  # (name, run) acknowledged
    # A Slurm host: the live tasks' evidence (None: not a Slurm host, no such condition);
    # slurm_error: why squeue could not be read at the latest check.
    slurm_jobs: tuple[str, ...] | None = None
    slurm_error: str = ""
    # The queue's unfinished cells (name, state, what is known), the cells moved to
    # another host (name, host), the local folders of the unfinished cells' outputs
    # (name, folder), and the unfinished cells acknowledged by name (QueueCellsSeen).
    unfinished: tuple[tuple[str, str, str], ...] = ()
    moved_cells: tuple[tuple[str, str], ...] = ()
    cell_outputs: tuple[tuple[str, str], ...] = ()
    acked_unfinished: frozenset[tuple[str, str]] = frozenset()  # (name, run) acknowledged
    unfinished_runs: tuple[tuple[str, str], ...] = ()  # QueueCellsSeen.runs
    confirmed: bool = False
    attempt: str = ""  # the token of the latest typed confirmation
    invalidated_by: str | None = None


def _invalidate(state: GateState, why: str) -> GateState:
    """Drop every fact that rests on the manifest; acknowledgements of cells stay by name."""
    return GateState(
        host=state.host,
        box_id=state.box_id,
        acked_missing=state.acked_missing,
        acked_running=state.acked_running,
        running=state.running,
        running_runs=state.running_runs,
        slurm_jobs=state.slurm_jobs,
        slurm_error=state.slurm_error,
        unfinished=state.unfinished,
        moved_cells=state.moved_cells,
        cell_outputs=state.cell_outputs,
        acked_unfinished=state.acked_unfinished,
        unfinished_runs=state.unfinished_runs,
        invalidated_by=why,
    )


def apply(state: GateState, event: GateEvent) -> GateState:
    """The gate after one more fact. Pure; the journal replays events through it."""
    if isinstance(event, ManifestTaken):
        fresh = _invalidate(state, "")
        since = _started_since(state, state.running, state.running_runs, event.taken_at)
        if since:
            # A cell the last check saw running began after this listing: what it writes
            # is in no manifest of it. Said as the check that saw it start said it, so the
            # same pull read again (every check re-reads it) cannot open the lines on it
            # one check and shut them the next.
            return replace(fresh, invalidated_by=_started_words(since))
        return replace(
            fresh,
            manifest=dict(event.files),
            manifest_refused=frozenset(path for path, _ in event.refused),
            manifest_links=frozenset(event.links),
            taken_at=event.taken_at,
            last_write=event.last_write,
            finished_at=event.finished_at or None,
            invalidated_by=None,
        )
    if isinstance(event, BoxChanged):
        return _invalidate(state, event.what)
    if isinstance(event, RecordsInvalid):
        return _invalidate(state, event.why)
    if isinstance(event, ConfirmationTyped):
        # A new moment of truth: whatever re-scan or local re-check came before it no
        # longer counts.
        return replace(
            state,
            confirmed=event.text == state.host,
            attempt=event.attempt,
            rescan_matches=False,
            rescan_at=None,
            rescan_error=None,
            local=None,
        )
    if isinstance(event, RescanFailed):
        return replace(
            state, rescan_matches=False, rescan_at=None, rescan_error=event.why or "failed"
        )
    if isinstance(event, MissingCellAcknowledged):
        return replace(state, acked_missing=state.acked_missing | {event.name}, confirmed=False)
    if isinstance(event, RunningAcknowledged):
        acked = state.acked_running | {(event.name, event.run)}
        return replace(state, acked_running=acked, confirmed=False)
    if isinstance(event, UnfinishedAcknowledged):
        acked = state.acked_unfinished | {(event.name, event.run)}
        return replace(state, acked_unfinished=acked, confirmed=False)
    if isinstance(event, QueueCellsSeen):
        return replace(
            state,
            unfinished=tuple(event.unfinished),
            moved_cells=tuple(event.moved),
            cell_outputs=tuple(event.outputs),
            unfinished_runs=tuple(event.runs),
        )
    if isinstance(event, CellsRunning):
        started = _started_since(state, event.names, event.runs, state.taken_at)
        if started:
            # A cell that started since the manifest may write new files: lock again.
            return replace(
                _invalidate(state, _started_words(started)),
                running=event.names,
                running_runs=event.runs,
            )
        return replace(state, running=event.names, running_runs=event.runs)
    if isinstance(event, SlurmJobsSeen):
        return replace(state, slurm_jobs=tuple(event.jobs), slurm_error=event.error)
    if state.manifest is None:
        return state  # facts about files mean nothing without a manifest to tie them to
    if isinstance(event, Rescanned):
        if event.box_id != state.box_id:
            return replace(
                state,
                rescan_matches=False,
                rescan_at=None,
                rescan_error=f"the re-scan listed another box ({event.box_id})",
                confirmed=False,
            )
        changes = _rescan_changes(state, event)
        if changes:
            return _invalidate(state, CHANGED_SINCE + changes)
        # The confirmation holds only through the re-scan taken for it.
        keeps = state.confirmed and event.attempt != "" and event.attempt == state.attempt
        return replace(
            state, rescan_matches=True, rescan_at=event.at, rescan_error=None, confirmed=keeps
        )
    if isinstance(event, VerificationRead):
        return replace(
            state,
            verify_ok=event.ok and not event.problems,
            verify_problems=tuple(event.problems),
            verify_left_to_roster=tuple(event.left_to_roster),
            verify_empty_left_to_roster=event.empty_left_to_roster,
            confirmed=state.confirmed and event.ok and not event.problems,
        )
    if isinstance(event, FilePulled):
        facts = state.manifest.get(event.path)
        if facts is None:
            return state
        if facts.sha256 == event.sha256:
            return replace(state, pulled=state.pulled | {event.path})
        return replace(state, pulled=state.pulled - {event.path}, confirmed=False)
    if isinstance(event, LocalCopyChecked):
        return replace(state, local=event)
    if isinstance(event, ArtifactChecked):
        if event.path not in state.manifest:
            return state
        failed = {k: v for k, v in state.failed.items() if k != event.path}
        loaded = state.loaded - {event.path}
        if not event.ok:
            failed[event.path] = event.detail or "failed verification"
        elif event.loadable:
            loaded = loaded | {event.path}
        loadable = (
            state.loadable | {event.path} if event.loadable else state.loadable - {event.path}
        )
        return replace(
            state,
            loaded=loaded,
            failed=failed,
            loadable=loadable,
            checked=state.checked | {event.path},
            confirmed=state.confirmed and event.ok,
        )
    if isinstance(event, RosterChecked):
        return replace(state, expected_cells=event.expected, present_cells=frozenset(event.present))
    raise TypeError(f"unknown gate event {event!r}")


def run_started(run: str) -> int | None:
    """When run ``run`` began, by the box's clock (whole seconds), from its key
    (``domain.unfinished.run_key``: attempts/started_at/task); None when it names none."""
    parts = run.split("/")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def _started_since(
    state: GateState,
    names: Sequence[str],
    runs: Sequence[tuple[str, str]],
    taken_at: float | None,
) -> list[str]:
    """Of the running cells ``names``, those that may have started after the manifest
    taken at ``taken_at`` (sorted). A run whose start is known counts by it: a cell running
    since before the pull is in its listing, and first seen running only after the pull
    it did not start since (h618 #2: the same manifest read invalid, then valid). One
    whose start is not known (no manifest, or no start in its key) counts when the last
    check did not see it running."""
    began = {name: run_started(run) for name, run in runs}
    since = []
    for name in names:
        start = began.get(name)
        if taken_at is None or start is None:
            if name not in state.running:
                since.append(name)
        elif start > taken_at:
            # Whole seconds: one started in the second the scan began counts as before it
            # (a pull right after a launch is that quick). What it writes after the
            # listing, the re-scan each check and the confirmation take still finds.
            since.append(name)
    return sorted(since)


def _started_words(names: Sequence[str]) -> str:
    return f"cell started: {', '.join(names)}"


def _rescan_changes(state: GateState, event: Rescanned) -> str:
    """How the re-scan differs from the manifest ("" when it matches): files new, changed
    or removed, and refused entries or links the manifest did not have."""
    assert state.manifest is not None
    listing = {path: (size, mtime) for path, size, mtime in event.files}
    expected = {path: (f.size, f.mtime) for path, f in state.manifest.items()}
    added = sorted(set(listing) - set(expected))
    changed = sorted(p for p in set(listing) & set(expected) if listing[p] != expected[p])
    removed = sorted(set(expected) - set(listing))
    # A path the re-scan left on the box by rule (a secret written after the pull, rgt-tui's
    # own state) is no change to the results: verify shows it as skipped, so does the gate.
    refused = sorted(
        {
            f"{path} ({why})"
            for path, why in event.refused
            if path not in state.manifest_refused and not skipped_by_rule(why)
        }
    )
    links = sorted(
        {f"{path} -> {target}" for path, target in event.links}
        - {f"{path} -> {target}" for path, target in state.manifest_links}
    )
    parts = []
    for label, names in (
        ("new", added),
        ("changed", changed),
        ("removed", removed),
        ("refused by the re-scan", refused),
        ("new link", links),
    ):
        if names:
            parts.append(f"{label}: {shown_paths(names)}")
    return "; ".join(parts)


def shown_paths(paths: Sequence[str]) -> str:
    """The first ``SHOWN_PATHS`` of ``paths`` (the box's text, made printable), then
    ``(and N more)``."""
    shown = ", ".join(printable(p, 200) for p in paths[:SHOWN_PATHS])
    more = f" (and {len(paths) - SHOWN_PATHS} more)" if len(paths) > SHOWN_PATHS else ""
    return shown + more


# --- conditions ----------------------------------------------------------------------

SHOWN_PROBLEMS = 10  # verify's problems named in the checklist; verify's report has all
SHOWN_FAILED = 3  # files that did not load named on the loaded line; the rest counted


@dataclass(frozen=True)
class Condition:
    """One checklist item: whether it holds and the evidence shown beside it.

    ``settle``: the cells whose acknowledgement by name would settle it (roster, idle,
    unfinished), for the front ends to name in their fix (``gate_fixes``).
    ``checkpoint``: an unfinished cell's newest verified checkpoint ("" when none), so
    the fix says whether moving it resumes it or starts it over.
    ``cause``: why a locked line is locked, where the fix differs by it (``rescan``:
    ``NO_MANIFEST``, ``CELL_RUNS``; ``box`` and ``idle``: ``NOT_ANSWERING``); "" otherwise.
    ``running`` (idle) and ``pending`` (an unfinished cell waiting in a queue that runs):
    the cells whose results may still come, accepted or not. No acknowledgement as missing
    takes them (``acknowledge`` refuses it), so no line offers one (h618 #1: the roster
    line offered ``--ack-missing`` of a running cell).
    """

    key: str
    ok: bool
    evidence: str
    settle: tuple[str, ...] = ()
    checkpoint: str = ""
    cause: str = ""
    running: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    # loaded: (path, why) of every file that failed, the box's text made printable, not
    # only the SHOWN_FAILED its evidence names: the fix is said by each kind of failure.
    failures: tuple[tuple[str, str], ...] = ()


# Condition.cause: what the fix of a locked line depends on.
NO_MANIFEST = "no-manifest"  # nothing to match: no valid manifest (pull and verify)
CELL_RUNS = "cell-runs"  # no valid manifest while a cell runs: it changes the box's files
NOT_ANSWERING = "not-answering"  # the box did not answer this check (services/teardown)
# A Slurm host's squeue (or the login node) did not answer: which jobs live is unknown,
# and --cancel-jobs cannot work either (it needs squeue too: s39 Slurm hour #10).
QUEUE_UNREAD = "queue-unread"
# No verification of this manifest yet: its files may all be here (a pull just ended),
# and only verify's record counts them hash-verified. The fix is verify, not a pull.
NOT_VERIFIED = "not-verified"
# An unfinished cell whose queue file line reads ``#moved-to HOST:`` though no move is on
# record (HOST's queue file does not hold it): its work is still this host's. Both the
# cell's state in ``QueueCellsSeen.unfinished`` and its line's cause.
MOVE_NOT_ON_RECORD = "move-not-on-record"
# The cells running on this box are a group's job on every rank (issue 41): the box's own
# kill and --ack-running refuse them, and the group line names the fix (hour s22b #5).
GROUP_CELL = "group-cell"
# The roster of a group's rank box with no queue of its own: its cells are the group's,
# which a launch of the box itself refuses; the group runs them (s35 Slurm hour #9).
GROUP_ROSTER = "group-roster"
# The queue file names a cell on two lines: the second never runs under that name (one
# output folder per name), and no acknowledgement settles it; the queue file's edit does.
NAME_TWICE = "name-twice"
# The re-scan's output opened with text that is not the scan's: the box answered, and
# something there printed first (its python3, a shell startup file). No later check
# settles it, however well the box answers (h618 #6: "check again once box2 answers").
SCAN_GARBLED = "scan-garbled"
# How the scan's parser (domain.manifest_parse) says so, after "<host>: ".
NOT_JSON = "manifest line is not JSON: "


def scan_garbled(why: str) -> bool:
    """Whether a failed scan's error (``ManifestError``'s text) says its output opened
    with text that is not the scan's."""
    return NOT_JSON in why


def garbled_words(why: str) -> str:
    """What a garbled scan (``scan_garbled``) means, quoting the text that came first."""
    quoted = why.split(NOT_JSON, 1)[-1]
    return (
        f"the box answers, but text came before its scan's output ({printable(quoted, 120)}): "
        "the box's python3, or a shell startup file there (~/.bashrc, ~/.zshenv), prints it"
    )


def conditions(state: GateState) -> tuple[Condition, ...]:
    """Every checklist item with its evidence, in the order the screen shows them."""
    m = state.manifest
    n = len(m) if m else 0
    # Files a reclaim deleted on the box after they verified: results whose only copy is
    # here, so a manifest that lists none of them is no empty result set (hour s20c #1).
    reclaimed = state.local.reclaimed if state.local is not None else 0
    # Nor is one whose every cell the user accepted, by name, as having no results (the
    # roster line holds only then): nothing ran there, or every cell moved away first.
    nothing_to_save = n == 0 and _nothing_to_save(state)
    some = n > 0 or reclaimed > 0 or nothing_to_save
    items: list[Condition] = [
        Condition(
            "box",
            state.box_id is not None,
            f"box {state.box_id[:12]}"
            if state.box_id is not None
            else "box not identified: no re-scan has said which box answers under this name",
        )
    ]
    # No manifest while a cell runs: a pull cannot settle the lines that rest on it (the
    # cell goes on changing the box's files), so their fix is the running cell's.
    # With no manifest at all, the lines on it are the manifest's to settle first (a
    # user's hour read "press v" right after a verify, "re-pull the files named" naming
    # none): a pull, then verify.
    blocked = "" if m is not None else CELL_RUNS if state.running else NO_MANIFEST
    if m is None:
        why = f" ({printable(state.invalidated_by, 600)})" if state.invalidated_by else ""
        items.append(Condition("manifest", False, f"no valid manifest{why}", cause=blocked))
    else:
        future = _dated_in_the_future(state)
        written = [f.mtime for p, f in m.items() if p not in dict(future)]
        fresh = state.taken_at is not None and state.taken_at >= max(written, default=0.0)
        items.append(
            Condition(
                "manifest",
                fresh and some,
                f"{plural(n, 'file')}, taken at {local_time(state.taken_at)}"
                + (
                    f" (and {reclaimed} reclaimed on the box, their only copy here)"
                    if reclaimed
                    else ""
                )
                + ("" if fresh else " — before the last write on the box")
                + (
                    " — nothing to save if every cell is accepted as having none (roster)"
                    if nothing_to_save
                    else ""
                )
                + _future_words(future),
            )
        )
    cause = ""
    if state.rescan_error and scan_garbled(state.rescan_error):
        rescan = f"cannot re-scan the box: {garbled_words(state.rescan_error)}"
        cause = SCAN_GARBLED
    elif state.rescan_error:
        rescan = f"cannot re-scan the box: {printable(state.rescan_error)}"
    elif m is None:
        # What the re-scan would match is gone (the manifest line says why): a cell that
        # runs keeps changing the box's files; otherwise a new pull and verify make one.
        rescan = "nothing to match it with: no valid manifest"
        if state.running:
            rescan += f" while {', '.join(state.running)} runs and changes the box's files"
        cause = CELL_RUNS if state.running else NO_MANIFEST
    elif state.rescan_matches:
        rescan = "the box lists the same files, sizes and mtimes as the manifest (a listing: not re-hashed)"
    elif state.confirmed:
        rescan = "no re-scan since the name was typed"
    else:
        rescan = "no matching re-scan since the manifest"
    items.append(Condition("rescan", m is not None and state.rescan_matches, rescan, cause=cause))
    pulled = len(state.pulled) if m else 0
    unverified = m is not None and n > 0 and not state.pulled and not state.checked
    items.append(
        Condition(
            "pulled",
            m is not None and some and pulled == n,
            f"{pulled}/{n} hash-verified" + (" (no verify of this pull yet)" if unverified else "")
            if m is not None
            else "nothing counts without a valid manifest (above)",
            cause=NOT_VERIFIED if unverified else blocked,
        )
    )
    items.append(_local_condition(state, n))
    unchecked = n - len(state.checked) if m else 0
    loaded_ok = (
        m is not None
        and some
        and unchecked == 0
        and not state.failed
        and state.loadable <= state.loaded
    )
    # Whole, for the fix to tell each failure's kind by its words; cut where shown.
    failures = tuple(
        (printable(p, 200), printable(why, None)) for p, why in sorted(state.failed.items())
    )
    failed = "; ".join(f"{p}: {printable(why)}" for p, why in failures[:SHOWN_FAILED])
    # Each failure not shown is counted: "3/9 loaded — FAILED a; b; c" read as three of
    # six (h618 #4).
    if len(failures) > SHOWN_FAILED:
        failed += f" (and {len(failures) - SHOWN_FAILED} more: verify lists them all)"
    items.append(
        Condition(
            "loaded",
            loaded_ok,
            f"{len(state.loaded)}/{len(state.loadable)} loaded"
            + (f", {unchecked} not yet checked" if unchecked else "")
            + (f" — FAILED {failed}" if failed else ""),
            cause=NOT_VERIFIED if unverified else blocked,
            failures=failures,
        )
    )
    if m is None:
        # The manifest line is the cause ("run verify" right after a verify: s19a #12).
        verified = "nothing to verify without a valid manifest (above)"
    elif state.verify_problems is None:
        verified = "no verification of this pull: run verify"
    elif state.verify_problems:
        shown = "; ".join(printable(p) for p in state.verify_problems[:SHOWN_PROBLEMS])
        more = len(state.verify_problems) - SHOWN_PROBLEMS
        verified = f"{plural(len(state.verify_problems), 'problem')}: {shown}" + (
            f" (and {more} more: verify lists them all)" if more > 0 else ""
        )
    elif not state.verify_ok:
        verified = "verify did not report success"
    elif state.verify_left_to_roster:
        # verify said NOT VERIFIED for these cells alone: say so, and where they settle.
        cells = state.verify_left_to_roster
        # Ticked: what was pulled verified; its verdict's only cause is the roster's. A
        # user's hour read "[x] verified … verify said NOT VERIFIED" as a contradiction.
        # "missing cell" named a failed one too, while the roster and unfinished lines
        # said unfinished: --ack-missing and --ack-unfinished are not one (hour s22a #11).
        verified = (
            "what was pulled verified; verify's NOT VERIFIED is only for "
            f"{plural(len(cells), 'cell')} without verified results ({', '.join(cells)}): "
            "the roster line, or each cell's own line, settles them"
        )
    else:
        verified = "verify reported no problem"
    items.append(
        Condition(
            "verified",
            m is not None and state.verify_ok and state.verify_problems == (),
            verified,
            cause=blocked or (NOT_VERIFIED if unverified or state.verify_problems is None else ""),
        )
    )
    items.append(_roster_condition(state, blocked))
    unacked_running = [c for c in state.running if not running_acked(state, c)]
    items.append(
        Condition(
            "idle",
            not unacked_running,
            "the queue is idle"
            if not state.running
            else f"running: {', '.join(state.running)}"
            + (" (acknowledged)" if not unacked_running else ""),
            tuple(unacked_running),
            running=tuple(state.running),
        )
    )
    items += _unfinished_conditions(state)
    if state.slurm_jobs is not None:
        items.append(_jobs_condition(state.slurm_jobs, state.slurm_error))
    items.append(
        Condition(
            "confirmed",
            state.confirmed,
            f"typed '{state.host}'" if state.confirmed else "not typed yet",
        )
    )
    # Every piece of the box's text went through printable above; this pass is the net
    # for any that did not (a name in the roster, a running cell's name).
    return tuple(replace(c, evidence=printable(c.evidence, None)) for c in items)


def _roster_condition(state: GateState, blocked: str = "") -> Condition:
    """Every queue cell has verified results, or is missing and acknowledged by name. A
    cell whose run is unfinished or running, or that moved to another box, counts for
    none of that, whatever of it verified: its own line (unfinished, idle, moved)
    settles it (verify leaves them out of its count by the same rule)."""
    if state.expected_cells is None:
        if blocked:  # no valid manifest: its line is the cause, and its fix the way on
            return Condition(
                "roster", False, "nothing to reconcile without a valid manifest (above)",
                cause=blocked,
            )  # fmt: skip
        return Condition("roster", False, "roster not reconciled")
    # The queue file's #moved-to is said over the box's last word (a "running" read
    # before the box was lost and its cell moved): the idle line still says any run.
    open_work = {name: "running" for name in state.running}
    open_work |= {name: "unfinished" for name, _, _ in state.unfinished}
    open_work |= {name: "moved" for name, _ in state.moved_cells}
    deferred = [c for c in state.expected_cells if c in open_work]
    cells = [c for c in state.expected_cells if c not in open_work]
    missing = [c for c in cells if c not in state.present_cells]
    unacked = [c for c in missing if c not in state.acked_missing]
    k = len(cells) - len(missing)
    text = f"{k}/{len(state.expected_cells)} cells have results"
    if missing:
        text += f"; missing: {', '.join(missing)}" + (
            f" (unacknowledged: {', '.join(unacked)})" if unacked else " (acknowledged)"
        )
    if deferred:
        named = ", ".join(f"{c} ({open_work[c]})" for c in deferred)
        text += f"; not counted, each settled on its own line: {named}"
    return Condition("roster", not unacked, text, tuple(unacked))


def running_run(state: GateState, name: str) -> str:
    """Which run of running cell ``name`` the last check saw ("" when none is known)."""
    return next((run for cell, run in state.running_runs if cell == name), "")


def running_acked(state: GateState, name: str) -> bool:
    """Whether the user accepted tearing down while this run of ``name`` runs."""
    return (name, running_run(state, name)) in state.acked_running


def unfinished_run(state: GateState, name: str) -> str:
    """Which run of unfinished cell ``name`` the last queue read saw ("" when none is
    known): the one an acknowledgement must name to hold."""
    return next((run for cell, run in state.unfinished_runs if cell == name), "")


def _unfinished_conditions(state: GateState) -> list[Condition]:
    """One line per unfinished cell (its state, and what of it is pulled and verified
    here), locked until acknowledged by name; one open line per cell moved away."""
    items = []
    files = state.manifest or {}
    # A checkpoint the last local re-check found missing or changed is no checkpoint to
    # resume from (the move refuses to push it): the local line names it.
    spoilt = locally_spoilt(state.local, files)
    for name, status, what in state.unfinished:
        prefixes = [pre for cell, pre in state.cell_outputs if cell == name]
        verified = newest_checkpoint(
            name, prefixes, files, state.pulled, state.loaded, set(state.failed)
        )
        found = newest_checkpoint(
            name, prefixes, files, state.pulled, state.loaded, set(state.failed) | spoilt
        )
        # Its files that verified, checkpoint or not: "nothing of it is pulled and
        # verified" was said of a cell whose metrics.json was (h618 #3).
        kept = [
            p
            for p in sorted(files)
            if in_outputs(p, name, prefixes)
            and p in state.pulled
            and p in state.checked
            and p not in state.failed
            and p not in spoilt
        ]
        if found is not None:
            path, mtime = found
            safe = (
                f"its checkpoint from {local_time(mtime)} ({printable(path, 200)}) is pulled "
                "and verified"
            )
        elif state.manifest is None:
            # Whatever an earlier pull brought of it is void with its manifest: said so,
            # not that none of it was ever pulled.
            safe = (
                "none of it counts as pulled and verified while no manifest is valid (the "
                "manifest line says why)"
            )
        else:
            safe = "no checkpoint of it is pulled and verified here" + (
                f" (only {shown_paths(kept)} {'is' if len(kept) == 1 else 'are'})" if kept else ""
            )
        if verified is not None and verified != found:
            safe += (
                f" — {printable(verified[0], 200)} was, but its local copy is missing or "
                "changed now (the local line): pull it again to resume from it"
            )
        acked = (name, unfinished_run(state, name)) in state.acked_unfinished
        text = f"{name} {what} — {safe}" + ("; acknowledged" if acked else "")
        checkpoint = found[0] if found else ""
        cause = MOVE_NOT_ON_RECORD if status == MOVE_NOT_ON_RECORD else ""
        items.append(
            Condition(
                "unfinished",
                acked,
                text,
                () if acked else (name,),
                checkpoint=checkpoint,
                cause=cause,
                pending=(name,) if status == PENDING else (),
            )
        )
    for name, host in state.moved_cells:  # host: "box2", or "box2 → box3" moved on
        last = host.rsplit(" → ", 1)[-1]
        items.append(
            Condition(
                "moved",
                True,
                f"{name} moved to {host} (the queue file's #moved-to; {last}'s queue file "
                "holds it)",
            )
        )
    return items


FUTURE_SLACK_S = 2.0  # a file's mtime past the scan's end by more: dated in the future


def _dated_in_the_future(state: GateState) -> list[tuple[str, float]]:
    """The manifest's files dated after its scan ended, by the box's own clock: not
    written after the scan (nothing is), but a clock stepped back or a copy that kept a
    future time. The re-scan, not the date, says whether they changed since."""
    end = state.finished_at
    if end is None or state.manifest is None:
        return []
    return sorted(
        ((p, f.mtime) for p, f in state.manifest.items() if f.mtime > end + FUTURE_SLACK_S),
        key=lambda item: -item[1],
    )


def _future_words(future: list[tuple[str, float]]) -> str:
    if not future:
        return ""
    path, mtime = future[0]
    more = f" (and {plural(len(future) - 1, 'more file')})" if len(future) > 1 else ""
    return (
        f"; {printable(path, 200)}{more} is dated {local_time(mtime)}, after the scan "
        "ended (the box's clock, or a copy that kept a future time): not counted as a "
        "later write — the re-scan line says whether it changed since"
    )


def locally_spoilt(local: LocalCopyChecked | None, files: dict[str, FileFacts]) -> set[str]:
    """The manifest's paths the last local re-check found missing or changed."""
    if local is None:
        return set()
    # A changed entry reads "<path>: <why>".
    return set(local.missing) | {
        p for p in files if any(c.startswith(p + ": ") for c in local.changed)
    }


SHOWN_JOBS = 5  # Slurm tasks named in the "jobs" line; the rest are counted


def _jobs_condition(jobs: tuple[str, ...], error: str) -> Condition:
    """A Slurm host: every job of its queue ended (none pending or running in squeue)."""
    if error:
        return Condition(
            "jobs", False, f"cannot read the cluster's queue: {printable(error, 300)}",
            cause=QUEUE_UNREAD,
        )  # fmt: skip
    if not jobs:
        return Condition("jobs", True, "every job of this host's queue ended (none in squeue)")
    shown = "; ".join(printable(j, 200) for j in jobs[:SHOWN_JOBS])
    more = f" (and {len(jobs) - SHOWN_JOBS} more)" if len(jobs) > SHOWN_JOBS else ""
    return Condition("jobs", False, f"{plural(len(jobs), 'job')} not ended: {shown}{more}")


@dataclass(frozen=True)
class GroupRunSeen:
    """This box is rank ``rank`` of group ``group`` (issue 41), read at this check: the
    group's cells its records show running on this box, or why they could not be read.
    Not journaled: it is read at every check, and nothing but the cell ending settles it
    (no acknowledgement: tearing one rank away hangs or fails every other rank's job)."""

    group: str
    rank: int
    running: tuple[str, ...] = ()
    error: str = ""
    # The files of the group's folders on this box that no verified pull here holds (the
    # box's own, or the group's of this rank), as the box names them (h501 #1: a rank's
    # gate opened while the group's folder on it held a finished cell's only copy), and
    # the pull that brings them (``fix``).
    unsaved: tuple[str, ...] = ()
    fix: str = ""
    refused: str = ""  # the group's pull is refused (a whole home): nothing of it counts
    unlisted: str = ""  # why the group's folders on the box could not be listed


def group_condition(seen: GroupRunSeen) -> Condition:
    """A box of a running group cannot be torn down alone: locked while the group's cell
    runs on it (or its records cannot be read), naming the group and the fix."""
    group = printable(seen.group, 200)
    who = f"rank {seen.rank} of group {group}"
    if seen.error:
        return Condition(
            "group",
            False,
            f"{who}: cannot read the group's records on this box "
            f"({printable(seen.error, 300)}); check again once it answers",
        )
    if not seen.running and (seen.refused or seen.unlisted):
        why = (
            f"the group's pull is refused ({printable(seen.refused, 300)}), so nothing of "
            "its folder on this box can be pulled or counted — fix the group's pull folders"
            if seen.refused
            else f"cannot list the group's folder on this box ({printable(seen.unlisted, 300)})"
        )
        return Condition("group", False, f"{who}: {why}, then check again")
    if not seen.running and seen.unsaved:
        return Condition(
            "group",
            False,
            f"{who}: the group's folder on this box holds "
            f"{plural(len(seen.unsaved), 'file')} no verified pull here holds "
            f"({shown_paths(seen.unsaved)}) — {seen.fix}, then check again",
        )
    if not seen.running:
        return Condition("group", True, f"{who}: no cell of the group runs on this box")
    cells = ", ".join(printable(c, 200) for c in seen.running)
    return Condition(
        "group",
        False,
        f"{who}, whose cell {cells} runs: a box of a running group cannot be torn down "
        f"alone — wait for the cell to end, or stop it on every box with "
        f"`rgt-tui queue kill {group}` (or `rgt-tui queue stop {group}` after it), "
        "then check again",
        tuple(seen.running),
    )


def _nothing_to_save(state: GateState) -> bool:
    """verify left the empty manifest to the roster (every cell missing, none present):
    the roster line then holds only once each cell is accepted by name as having none."""
    return (
        state.verify_empty_left_to_roster and bool(state.expected_cells) and not state.present_cells
    )


def _local_condition(state: GateState, n: int) -> Condition:
    """Whether the local copy was re-hashed since the name was typed (or, before that,
    since the manifest) and every file the manifest lists is there, unchanged, and so is
    every file whose only copy is here (deleted on the box by a reclaim)."""
    local = state.local
    if state.manifest is None or local is None:
        since = "the name was typed" if state.confirmed else "the manifest"
        return Condition("local", False, f"the local copy was not re-checked since {since}")
    where = f"under {printable(local.folder, 300)}"
    n += local.reclaimed  # their only copy is here: re-hashed with the manifest's
    only = (
        f" ({local.reclaimed} of them deleted on the box by a reclaim: this copy is the only one)"
        if local.reclaimed
        else ""
    )
    if local.ok and local.matched == n and (n > 0 or _nothing_to_save(state)):
        return Condition(
            "local",
            True,
            f"{local.matched}/{n} files re-hashed {where} at {local_time(local.at)}: "
            f"every SHA-256 matches{only}",
        )
    parts = []
    for label, names in (("MISSING", local.missing), ("CHANGED", local.changed)):
        if names:
            parts.append(f"{label} {shown_paths(names)}")
    if not parts:
        parts.append(f"only {local.matched}/{n} files re-hashed")
    return Condition("local", False, f"{'; '.join(parts)} — {where}{only}")


def is_unlocked(state: GateState) -> bool:
    """True only when every condition holds."""
    return all(c.ok for c in conditions(state))


def missing_conditions(
    state: GateState, *, ignore_confirmation: bool = False
) -> tuple[Condition, ...]:
    """The conditions that do not hold (for `teardown --check`)."""
    return tuple(
        c
        for c in conditions(state)
        if not c.ok and not (ignore_confirmation and c.key == "confirmed")
    )
