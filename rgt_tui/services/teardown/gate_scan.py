"""The gate's re-scan of the box now: what answers, what runs there, what is unfinished.

``scan_now`` re-scans the box (its listing without hashes, which box it is, its queue's
cells as the backend reads them) and, where the host's backend gates on its jobs
(Slurm), the queue's jobs; a box that does not answer is said so as the rest of the
product says it (``_unanswered``). ``groups_seen`` reads the groups it is a rank of, once
the gate has re-hashed the local copy; ``hand_run_note`` names processes holding the
GPUs while no cell runs (``gpu_holders`` reads them). ``cells_seen`` turns the queue's
view into the gate's unfinished and moved cells (a move counts only when it is on
record); ``moved_now`` is that fact for a box that did not answer, from the last check.
All of it is what this check found (``BoxNow``); ``gate`` records it in the journal.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.domain.queue_state import DONE, RUNNING, QueueView
from rgt_tui.domain.roster import output_prefixes
from rgt_tui.domain.text import printable
from rgt_tui.domain.unfinished import queue_cells_seen
from rgt_tui.services.manifest import take_manifest
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.moved_skips import MovesSeen, moves_on_record
from rgt_tui.services.queue.scheduler import JobGated
from rgt_tui.services.runtime.preemption import told_with_fix
from rgt_tui.services.teardown.held_here import OwnCopy, unsaved_of_group
from rgt_tui.transport.base import Transport

if TYPE_CHECKING:
    from rgt_tui.services.box.vram import VramEvidence, VramProcess


@dataclass(frozen=True)
class BoxNow:
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


async def scan_now(fleet: Fleet, host: HostConfig, transport: Transport | None) -> BoxNow:
    """Re-scan the box now, and where the host's backend gates on its jobs (Slurm) read
    the queue's jobs from the scheduler too. The groups it is a rank of are read apart
    (``groups_seen``), once the local copy is re-hashed."""
    now = await _rescan(host, transport)
    if not now.answered:
        said = await asyncio.to_thread(_unanswered, fleet, host)
        now = replace(now, said=said)
        if now.error_exc is not None:
            # Stopped by watch, preempted: what the rest of the product says of it.
            now = replace(now, error=printable(told_with_fix(now.error_exc, said[0]), 1000))
    backend = backend_for(host)
    if not isinstance(backend, JobGated):
        return now
    if transport is None or now.error is not None:
        why = f"not read: {now.error or 'no connection'}"
        return replace(now, jobs=g.SlurmJobsSeen((), error=why))
    return replace(now, jobs=await backend.jobs_seen(transport))


async def _rescan(host: HostConfig, transport: Transport | None) -> BoxNow:
    """Re-scan the box now: its listing (no hashes), which box it is, its running cells."""
    if transport is None:
        why = "the box was not re-scanned (no connection)"
        return BoxNow(None, None, None, why, answered=False)
    try:
        await transport.connect()
    except (TransportError, OSError) as exc:
        refused = exc.kind if isinstance(exc, HostKeyError) else ""
        return BoxNow(
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
            return BoxNow(None, None, None, printable(exc, 1000), answered=False)
        running = tuple(c.name for c in view.cells if c.status == RUNNING)
        return BoxNow(None, None, running, host.pull_refused, view=view)
    try:
        rescan = await take_manifest(host, transport, hash_files=False)
        view = await _queue_view(host, transport)
    except (TransportError, ManifestError, OSError) as exc:
        return BoxNow(None, None, None, printable(exc, 1000))
    running = tuple(c.name for c in view.cells if c.status == RUNNING)
    identity = rescan.identity
    if identity is None:
        why = printable(rescan.box_id_error or "no id reported")  # the box's own text
        return BoxNow(None, None, running, f"the box did not say which box it is: {why}")
    return BoxNow(rescan, identity, running, None, view=view)


async def groups_seen(
    fleet: Fleet, host: HostConfig, transport: Transport, own: OwnCopy | None = None
) -> tuple[g.GroupRunSeen, ...]:
    """Each group of the fleet this box is a rank of, with the group's cells its records
    on this box show running (issue 41: a box of a running group is not torn down alone)
    and the files of the group's folders on it no verified pull here holds (h501 #1).
    This box's own rank is read, over its own connection: a cell runs on the group only
    while it runs on every rank, and this rank running is what tearing it down would cut.
    ``own``: this box's own pulled copy as the gate read and re-hashed it in this check,
    so its files are not hashed a second time."""
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.queue.box_backend import BoxRunner
    from rgt_tui.services.queue.group.ranks import rank_hosts

    seen = []
    for group in fleet.hosts:
        if group.group is None or host.name not in group.group.hosts:
            continue
        rank = group.group.hosts.index(host.name)
        as_rank = rank_hosts(group)[rank]
        try:
            view = await BoxRunner(as_rank).read_view(transport)
        except (TransportError, QueueError, OSError, ValueError) as exc:
            seen.append(g.GroupRunSeen(group.name, rank, error=printable(exc, 300)))
            continue
        running = tuple(c.name for c in view.cells if c.status == RUNNING)
        if running:  # locked by the running cell: its files are listed once it ends
            seen.append(g.GroupRunSeen(group.name, rank, running))
        elif group.pull_refused:  # its folder is a whole home: never walked, never counted
            seen.append(g.GroupRunSeen(group.name, rank, refused=group.pull_refused))
        else:
            try:
                unsaved, fix = await unsaved_of_group(fleet, host, group, as_rank, transport, own)
            except (TransportError, ManifestError, OSError) as exc:
                why = printable(exc, 300)
                seen.append(g.GroupRunSeen(group.name, rank, unlisted=why))
                continue
            seen.append(g.GroupRunSeen(group.name, rank, unsaved=unsaved, fix=fix))
    return tuple(seen)


# How the telemetry agent's command line begins on the box (``agent.agent_command``).
AGENT_COMMAND_START = "python3 -u - --interval "


async def gpu_holders(host: HostConfig, transport: Transport, now: BoxNow) -> VramEvidence | None:
    """The box's GPU holders for ``hand_run_note``, or None when no note can be: a cell
    runs, the host is a login node or this machine, or the box cannot say (best effort).
    Read beside the local re-hash (``gate.gather``), so a slow nvidia-smi on the box
    (each of its calls is cut at 20 s there) adds nothing to a check that re-hashes."""
    from rgt_tui.services.box.vram import VramError, read_vram_evidence

    if now.running:
        return None
    if isinstance(backend_for(host), JobGated) or host.is_local:
        # A cluster's login node: its jobs are the jobs line's. This machine: its desktop
        # (a browser, the compositor) holds the GPU (review h516 #3).
        return None
    try:
        return await read_vram_evidence(host.name, transport)
    except (TransportError, VramError, OSError, ValueError):
        return None


def gpu_users(now: BoxNow, evidence: VramEvidence | None) -> list[VramProcess]:
    """The processes ``hand_run_note`` names: those holding the box's GPUs while no cell
    of its queue (nor of a group's) runs; nvidia-smi and rgt-tui's own agent aside."""
    if evidence is None or now.running or any(seen.running for seen in now.groups):
        return []
    return [
        p
        for p in evidence.processes
        if p.visible
        and p.comm != "nvidia-smi"
        and not p.cmdline.startswith(AGENT_COMMAND_START)
        and (p.devices if evidence.walk == "ok" else p.listed)
    ]


def started_by_hand(now: BoxNow, evidence: VramEvidence | None) -> bool:
    """One of ``gpu_users`` is no cell's leftover: a run the user started (an evaluation,
    a notebook), which watch's autostop waits for. A cell's orphan holding memory is
    not: stopping the box is what ends it (review h534 #5)."""
    return any(not p.cell for p in gpu_users(now, evidence))


def hand_run_note(host: HostConfig, now: BoxNow, evidence: VramEvidence | None) -> str:
    """A note, when no cell of the box's queue (nor of a group's) runs, yet processes of
    the box hold its GPUs (``evidence``, from ``gpu_holders``): a run started by hand,
    whose writes after this check no pull holds (h511 #7: the gate read "the queue is
    idle" and "ready" between the saves of a script run by hand). "" when none, and when
    the box could not say: a note, not a condition, so a holder that cannot be stopped
    never locks the gate."""
    users = gpu_users(now, evidence)
    if not users or evidence is None:
        return ""
    shown = "; ".join(
        f"pid {p.pid} {printable(evidence.command_of(p), 80)}"
        + (f" ({p.smi_mib} MiB)" if p.smi_mib is not None else "")
        + (f", left behind by cell {printable(p.cell, 80)}" if p.cell else "")
        for p in users[:3]
    )
    more = f" and {len(users) - 3} more" if len(users) > 3 else ""
    count = f"{len(users)} processes here use" if len(users) != 1 else "a process here uses"
    return (
        f"no queue cell runs, yet {count} the GPUs: {shown}{more} — a run started "
        f"by hand? What it writes after this check is in no pull: stop it (`rgt-tui vram "
        f"{host.name}`, or x on the GPUs tab, lists and stops them), then pull and verify"
    )


def cells_seen(fleet: Fleet, host: HostConfig, now: BoxNow, manifest: Manifest | None) -> BoxNow:
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


def moved_now(host: HostConfig, state: g.GateState, moves: MovesSeen) -> g.QueueCellsSeen:
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
        runs=tuple(r for r in state.unfinished_runs if r[0] not in moved),
    )


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


async def _queue_view(host: HostConfig, transport: Transport) -> QueueView:
    """The queue's cells as the host's backend reads them (``read_queue_view``, the view
    the CLI and the TUI show); TransportError when its records cannot be read."""
    from rgt_tui.services.queue.view import read_queue_view

    try:
        return await read_queue_view(host, transport)
    except (ValueError, OSError) as exc:
        raise TransportError(host.name, f"cannot read the queue records: {exc}") from exc
