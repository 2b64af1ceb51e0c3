"""The checklist lines that need what this check found, beside the recorded state.

``domain.teardown_gate`` evaluates the journal's facts; ``gate.gather`` then holds a few
of its lines to what only this check knows (``BoxNow``, the queue file now, the fleet):
the box line (which box, not answering, a refused host key), the idle line (unknown
while the box does not answer; a group's cell), the roster (a cell added to the queue
file since the last verify, or a name on two lines; a cell last seen on a box that does not answer), and the
account line (another entry of the fleet logs in to this account or reached this box).
Pure but for ``other_boxes``, which reads the other entries' journals.
"""

from __future__ import annotations

from dataclasses import replace

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import local_time
from rgt_tui.services.journal import HostJournal, Journal, JournalError
from rgt_tui.services.teardown.gate_scan import BoxNow


def box_condition(c: g.Condition, jh: HostJournal, now: BoxNow) -> g.Condition:
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


def idle_condition(c: g.Condition, state: g.GateState, now: BoxNow) -> g.Condition:
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


def roster_unanswered(c: g.Condition, said: tuple[str | None, str | None] | None) -> g.Condition:
    """The roster while the box does not answer (``said``: ``BoxNow.said``; None while it
    answers): which cells ran there is unknown, so a cell last seen running there is not
    offered to --ack-missing: the fix the rest of the product gives, moving it, is said
    instead."""
    if c.ok or said is None:
        return c
    fix, cell = said
    settle = tuple(x for x in c.settle if x != cell)
    text = c.evidence + (f"; {fix}" if fix else "")
    return replace(c, evidence=printable(text, None), settle=settle, cause=g.NOT_ANSWERING)


def roster_now(
    c: g.Condition, state: g.GateState, cells_now: tuple[str, ...] | None
) -> g.Condition:
    """The roster the last verify reconciled, held to the queue file as it is now: a cell
    added since (never sent, never verified) keeps the gate locked until a verify counts
    it or it is accepted as missing (a user's hour found the gate open, and autostop
    stopping the box, with an appended cell that had never run)."""
    if cells_now is None or state.expected_cells is None:
        return c
    twice = sorted({n for n in cells_now if cells_now.count(n) > 1})
    if twice:
        # A line whose name another line already has never runs (launch and append refuse
        # it; one output folder per name), yet its name is counted: the work the user
        # wrote down is not done (s37 money hour #12 found the gate open on it).
        named = ", ".join(twice[:3]) + (f" and {len(twice) - 3} more" if len(twice) > 3 else "")
        return g.Condition(
            "roster",
            False,
            f"{c.evidence}; the queue file names {named} on more than one line, and one "
            "name runs once",
            cause=g.NAME_TWICE,
        )
    new = [n for n in cells_now if n not in state.expected_cells and n not in state.acked_missing]
    if not new:
        return c
    named = ", ".join(new[:3]) + (f" and {len(new) - 3} more" if len(new) > 3 else "")
    return g.Condition(
        "roster",
        False,
        # Not "verify again": verify counts a cell never run as missing, and the gate
        # stays shut; the fix names launch or accepting it (s37 money hour #10).
        f"{c.evidence}; the queue file now also has {named}, which the last verify did not "
        "count (run since: pull and verify; never run: launch it, or accept it as missing)",
        tuple(new),
    )


def other_boxes(fleet: Fleet, host: HostConfig, journal: Journal) -> list[tuple[str, HostJournal]]:
    """(name, its journal) of every other entry whose journal has a box and no teardown:
    read once per check for ``same_box`` and ``same_key`` (blocking: a journal read each)."""
    found = []
    for other in fleet.hosts:
        if other.name == host.name or other.group is not None:
            continue
        try:
            jh = journal.load(other.name)
        except JournalError:
            continue
        if jh.box is not None and jh.torn_down_at is None:
            found.append((other.name, jh))
    return found


def same_box(others: list[tuple[str, HostJournal]], box_id: str) -> tuple[str, ...]:
    """Those of ``others`` (``other_boxes``) whose last box is ``box_id``."""
    return tuple(name for name, jh in others if jh.box is not None and jh.box.box_id == box_id)


def same_key(
    fleet: Fleet, host: HostConfig, others: list[tuple[str, HostJournal]], box: BoxIdentity
) -> tuple[str, ...]:
    """Each of ``others`` whose last box answered with ``box``'s host key under another box
    id, with where its results stand here (``box3 (verified here)``): most likely another
    login account on the same machine (each account has its own ~/.rgt/box-id; h511 #2),
    or boxes made from one image that carries its host keys."""
    if not box.host_key or host.is_local or host.is_login_node:
        return ()  # a cluster's login node: its accounts share the key, not a teardown
    kinds = {h.name: h for h in fleet.hosts}
    found = []
    for name, jh in others:
        other = jh.box
        if other is None or other.host_key != box.host_key or other.box_id == box.box_id:
            continue
        if kinds[name].is_local or kinds[name].is_login_node:
            continue
        state = jh.gate()
        # Where the user's "pull and verify it first" stands (h515 #2: the note read the
        # same before and after).
        verified = state.verify_ok and state.verify_problems == ()
        found.append(f"{name} ({'verified here' if verified else 'not verified here'})")
    return tuple(found)


def account_condition(host: HostConfig, shared: tuple[str, ...], how: str, box: str) -> g.Condition:
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
