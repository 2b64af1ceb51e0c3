"""A teardown done by hand: the record of it, and what voids the confirmation it needs.

With no teardown command, ``confirm.confirm_and_tear_down`` shows what to destroy; the
user destroys the box and types its name again, and ``record_destroyed`` records the
teardown, only for the box a typed confirmation opened (``confirmed_at``) and only while
that confirmation holds: ``changed_since`` says what since voids it (a launch, a cell
appended, a check since that found the gate locked, a file the box wrote that is not safe
here). The drivers that a confirmation holds (periodic pulls, autostop) ask the same
(``voided_by``). Split from ``confirm`` (which runs the confirmation and the command):
these rules are read together when a box may be recorded gone while it holds results.
Over 450 lines on purpose, for that reason: the record and every rule that refuses it.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from rgt_tui.agent.secret_paths import skipped_by_rule
from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.manifest import ManifestError
from rgt_tui.domain.text import printable
from rgt_tui.services.journal import HostJournal, Journal, TeardownRecord
from rgt_tui.services.queue.launch_acks import load_launch_acks_in
from rgt_tui.services.records import host_results_dir, load_manifest, pull_running
from rgt_tui.services.teardown.acknowledge import BoxMismatch, queue_cells, same_box_or_refuse
from rgt_tui.services.teardown.events import manifest_event, verification_events
from rgt_tui.services.teardown.gate import gather
from rgt_tui.services.teardown.group import group_refusal
from rgt_tui.services.teardown.held_here import local_records, rank_folder

MANUAL_OUTPUT = "destroyed by hand: the user typed the host's name again after the instructions"


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


def new_cells(host: HostConfig, was: set[str]) -> list[str]:
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
    results_dir: Path | None = None,
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
    #9: cells appended there did not void it). ``results_dir``: the fleet's, where a pull
    of such a group keeps what it took from this box (``_group_pulls_since``). Reads
    files."""
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
    new = new_cells(host, was)
    if new:
        said.append(f"its queue file holds cells the confirmation did not know ({_named(new)})")
    # A confirmation recorded before the group's cells were kept knows none of them:
    # compared, every cell would read as new and void it, and a box already destroyed
    # could never be recorded so (its name cannot be typed again on a box that is gone).
    kept = typed.group_cells
    for group in groups if kept is not None else ():
        # The group's file, not the box's: its cells run on every rank (review s25 #9).
        new = new_cells(group, {cell for name, cell in kept if name == group.name})
        if new:
            file = printable(group.queue.name if group.queue else "", 100)
            said.append(
                f"the queue file {file} of its group {printable(group.name, 100)} holds cells "
                f"the confirmation did not know ({_named(new)})"
            )
    if results_dir is not None:
        said += _group_pulls_since(host, groups, results_dir, opened)
    return "; ".join(said)


def _group_pulls_since(
    host: HostConfig, groups: Sequence[HostConfig], results_dir: Path, opened: float
) -> list[str]:
    """A pull of a group ``host`` is a rank of, taken since the confirmation at
    ``opened``, whose listing of this box holds files verify has not found here (review
    s44 #10: such a pull voided nothing, and the box's new files were on it only). The
    group's pull keeps them in a folder of its own (its own for rank 0, ``<group>.rank<k>``
    for the others: ``services.pull.ranks``); a record there that cannot be read is the
    group's verify's to tell."""
    said = []
    for group in groups:
        folder = rank_folder(results_dir, group, host.name)
        if folder is None:
            continue
        manifest, record, unusable = local_records(folder)
        if manifest is None or unusable or manifest.taken_at <= opened:
            continue
        state = g.GateState(group.name)
        for event in (manifest_event(manifest), *verification_events(record, manifest)):
            state = g.apply(state, event)
        unverified = sorted(p for p in state.manifest or {} if p not in state.pulled)
        if unverified:
            name = printable(group.name, 100)
            said.append(
                f"a pull of its group {name} listed files on it not verified here "
                f"({_named(unverified)}: `rgt-tui verify {name}`, which needs no box)"
            )
    return said


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
    jh: HostJournal,
    host: HostConfig,
    directory: Path,
    groups: Sequence[HostConfig],
    results_dir: Path | None = None,
) -> Callable[[float], str]:
    """``changed_since`` for ``jh``'s confirmation at the ``opened`` it is given: what the
    drivers (periodic pulls, autostop) ask before a confirmation holds them. It reads the
    launch records and queue files: call it in a thread."""
    return lambda opened: changed_since(jh, host, directory, opened, groups, results_dir)


def _no_longer_holds(opened: float, since: str) -> str:
    return f"your confirmation of {_hhmm(opened)} no longer holds: since then, {since}"


def void_since_confirmation(
    journal: Journal,
    host: HostConfig,
    groups: Sequence[HostConfig],
    results_dir: Path | None = None,
) -> str:
    """Why the typed confirmation that last opened ``host``'s gate no longer holds for a
    teardown by hand (``changed_since``); "" when it holds, or none opened it. Blocking
    (it reads the journal and the launch records)."""
    jh = journal.load(host.name)
    opened = confirmed_at(jh)
    if opened is None:
        return ""
    since = changed_since(jh, host, journal.directory, opened, groups, results_dir)
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
    results_dir: Path | None = None,
    clock: Callable[[], float] = time.time,
) -> HostJournal:
    """Record that the user destroyed ``box`` by hand: only when ``typed`` is the host's
    name (typed again, after the instructions), ``box`` is the box the journal holds now
    (the one the confirmation was about: ``TeardownOutcome.report.box``) and a typed
    confirmation opened that box's gate (``confirmed_at``). Otherwise ValueError
    (BoxMismatch for the box), and nothing is recorded. Both are checked under the
    journal's lock, with the write. ``groups``: the ``[[groups]]`` entries the box is a rank
    of (``Fleet.groups_of``): a launch of one since the confirmation, or a cell its queue
    file holds that the confirmation did not know, voids it too, and so does a pull of
    one since that listed files on the box not verified here (in ``results_dir``).
    """
    if typed != host.name:
        raise ValueError(f"'{typed}' is not '{host.name}': nothing was recorded")
    refused = group_refusal(host)
    if refused is not None:
        raise ValueError(f"{refused}; nothing was recorded")
    at = clock()

    def append(jh: HostJournal) -> bool:
        current = _recordable(jh, host, box, journal, groups, results_dir)
        jh.teardowns.append(
            TeardownRecord(at, None, None, MANUAL_OUTPUT, True, current.box_id, True)
        )
        return True

    return journal.update(host.name, append)


def _recordable(
    jh: HostJournal,
    host: HostConfig,
    box: BoxIdentity | None,
    journal: Journal,
    groups: Sequence[HostConfig],
    results_dir: Path | None,
) -> BoxIdentity:
    """The journal's box when its manual teardown may be recorded now; otherwise
    BoxMismatch or ConfirmationVoid, saying why and what to do."""
    current = same_box_or_refuse(jh, box, "nothing was recorded")
    opened = confirmed_at(jh)
    if opened is None:
        raise BoxMismatch(
            f"the teardown gate of {current.describe()} was never opened by a typed "
            f"confirmation: nothing was recorded. Run `rgt-tui teardown {host.name}` "
            "first: it checks the box and, once you type its name, says what to destroy. "
            "If it was destroyed already outside rgt-tui (it no longer answers, so no "
            "check can open its gate), what it wrote that is not here is lost: remove its "
            "[[hosts]] entry to stop counting it"
        )
    since = changed_since(jh, host, journal.directory, opened, groups, results_dir)
    if since:
        raise ConfirmationVoid(
            f"{_no_longer_holds(opened, since)}; nothing was recorded. Run `rgt-tui teardown {host.name}` again: it checks "
            "the box as it is now. If you already destroyed it, what it wrote that is not "
            "here is lost: remove its [[hosts]] entry to stop counting it"
        )
    return current


async def record_destroyed(
    fleet: Fleet,
    host: HostConfig,
    journal: Journal,
    typed: str,
    box: BoxIdentity | None,
    *,
    clock: Callable[[], float] = time.time,
    answers: Callable[[BoxIdentity], Awaitable[str | None]] | None = None,
) -> HostJournal:
    """``record_manual_teardown``, once the records of a pull or verify taken since the
    confirmation are in the journal (``gather``, records only: no connection, the box
    may be gone): a pull run meanwhile, in another window or by the command line, is
    what says the box wrote files this machine lacks (``changed_since``).

    ``answers``: asked, once nothing else refuses, whether the box to be recorded still
    answers (``box.identity.box_still_answers``); what it returns refuses the record (ValueError). The TUI
    knows that from its telemetry and passes none."""
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
        for group in fleet.groups_of(host.name):
            # A pull of its group lists this box too, and writes that listing once the box
            # has hashed every file, as the host's own pull does (review s45 #2).
            rank = rank_folder(fleet.results_dir, group, host.name)
            if rank is not None and await asyncio.to_thread(pull_running, rank):
                raise ValueError(
                    f"a pull of its group {printable(group.name, 100)} is running: its "
                    "listing of this box is not recorded yet; nothing was recorded — once it "
                    "ends (and verify passes), record it again"
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
    if answers is not None and typed == host.name and group_refusal(host) is None:
        # Asked only once every other check passed: its refusal is the last word, and a
        # record refused for another reason costs no connection.
        current = await asyncio.to_thread(
            lambda: _recordable(
                journal.load(host.name), host, box, journal, groups, fleet.results_dir
            )
        )
        still = await answers(current)
        if still is not None:
            raise ValueError(still)
    return await asyncio.to_thread(
        record_manual_teardown,
        journal,
        host,
        typed,
        box,
        groups=groups,
        results_dir=fleet.results_dir,
        clock=clock,
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
