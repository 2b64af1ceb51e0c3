"""A group's cell as one job over its boxes (issue 41): each rank's command and
environment, the group's view from every rank's records, and when to stop the others.

Pure. Each rank runs the box runner's machinery on its own box (records in that box's
``~/.rgt/queue/``); ``group_view`` reads the cell the way the job is: running only while
every rank runs it, failed as soon as one rank ended without success, naming the rank
that died first and its last line (MN3). ``stop_order`` says which ranks must be stopped
because a peer died or its box went quiet: left alone, they would wait in a collective
until NCCL's timeout.

Over 450 lines on purpose: how a group's job is read from its ranks' records (the
cell's state, the rank that failed first, the group's own stop, a box that holds its
own queue) is one reading, reviewed together; the rank's command and env are its head.
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rgt_tui.domain.config import GROUP_FIELDS, GroupConfig
from rgt_tui.domain.queue_records import RunnerLaunch
from rgt_tui.domain.queue_state import (
    BY_GROUP,
    BY_OWN_FAILURE,
    BY_USER,
    DONE,
    FAILED,
    GROUP_STOPPED,
    INTERRUPTED,
    KILLED,
    NOT_DEPLOYED,
    Q_RUNNING,
    RETRY,
    RUNNING,
    CellView,
    QueueView,
)
from rgt_tui.domain.vanished import Diagnosis

# Where each rank's environment is written before a launch (mode 0600, over stdin) and
# sourced by the rank's command: NCCL settings may change between launches (INFO on the
# first) without changing the cell's command, which must stay the same for its index.
ENV_FILE = ".rgt/group.env"
ENV_PREFIX = f'set -a && . "$HOME/{ENV_FILE}" && set +a && '
ENDED_BADLY = (FAILED, INTERRUPTED, KILLED)
# A rank's last line when it failed because a peer went: torchrun's agents share one
# rendezvous store, and when the agent of the rank that crashed exits, the others fail
# on it (often within the same second: the records' ends are whole seconds).
PEER_GONE = ("RendezvousConnectionError", "RendezvousClosedError", "C10d store")
# A rank whose box answers no probe for this long is lost: the others are stopped.
LOST_AFTER_S = 60.0
# A group's diagnosis cause beyond ``vanished.CAUSES``: the rank that went first does not
# answer, so its records (which would weigh those causes) cannot be read (ux-h #5).
NO_ANSWER = "no answer"


# The rendezvous address is where the job meets, not what a cell is: a box that came
# back with a new private IP, or a port another job holds, changes it between launches.
# The rank's command reads it from the environment file written before each launch, so
# cell k's command stays the same and no done cell has to run again (s22b #3: a literal
# address made such a change refuse the launch until --fresh reran every cell).
RENDEZVOUS_ENV = {"master_addr": "RGT_MASTER_ADDR", "master_port": "RGT_MASTER_PORT"}


def rank_template(template: str, group: GroupConfig, rank: int) -> str:
    """``template`` for rank ``rank``: the job's shape (``{nnodes}``, ``{node_rank}``,
    ``{nproc_per_node}``) filled in, shell-quoted; the rendezvous (``{master_addr}``,
    ``{master_port}``) made references to the environment file, which is sourced first;
    the cell's own placeholders (``{cfg}``, ``{out}``…) left for the box runner."""
    values = {
        "nnodes": str(group.nnodes),
        "node_rank": str(rank),
        "nproc_per_node": str(group.nproc_per_node),
    }
    out = []
    for literal, field, spec, conv in string.Formatter().parse(template):
        out.append(_braces(literal))
        if field is None:
            continue
        if field in RENDEZVOUS_ENV:
            out.append(f'"${RENDEZVOUS_ENV[field]}"')
        elif field in GROUP_FIELDS:
            out.append(_braces(shlex.quote(values[field])))
        else:
            out.append(
                "{" + field + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            )
    return ENV_PREFIX + "".join(out)


def _braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def rank_env(group: GroupConfig, name: str, rank: int, *, first_launch: bool) -> dict[str, str]:
    """What rank ``rank`` of group ``name`` exports: the same NCCL settings on every rank
    (MN2, MN3), and its own place in the job."""
    env = {
        "RGT_GROUP": name,
        "RGT_NODE_RANK": str(rank),
        "RGT_NNODES": str(group.nnodes),
        "RGT_NPROC_PER_NODE": str(group.nproc_per_node),
        "RGT_MASTER_ADDR": group.master_addr,
        "RGT_MASTER_PORT": str(group.master_port),
        # The script's init_process_group(timeout=...) should read this (MN3): NCCL's
        # default 1800 s leaves the others waiting half an hour on a dead rank.
        "RGT_NCCL_TIMEOUT_S": str(group.nccl_timeout_s),
        # A dead peer tears the process group down instead of hanging it (MN3).
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        "NCCL_ASYNC_ERROR_HANDLING": "1",
    }
    if group.nccl_socket_ifname:
        # Gloo (CPU, and the tests' stand-in for NCCL) reads its own variable.
        env["NCCL_SOCKET_IFNAME"] = env["GLOO_SOCKET_IFNAME"] = group.nccl_socket_ifname
    if group.nccl_ib == "off":
        env["NCCL_IB_DISABLE"] = "1"
    elif group.nccl_ib != "on":
        env["NCCL_IB_HCA"] = group.nccl_ib
    debug = group.nccl_debug
    if debug == "auto":
        debug = "INFO" if first_launch else "WARN"
    if debug != "off":
        env["NCCL_DEBUG"] = debug
    return env


def env_file_text(env: dict[str, str]) -> str:
    """``KEY=value`` lines, each value shell-quoted (the file is sourced)."""
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in env.items())


@dataclass(frozen=True)
class RankView:
    """One rank's box as last read: its queue view, or why it was not read."""

    rank: int
    box: str
    view: QueueView | None
    error: str = ""


def group_view(name: str, ranks: Sequence[RankView]) -> QueueView:
    """The group's queue as one job: each cell running only while every rank runs it,
    failed (naming the rank that failed first, its exit and last line) once one rank
    ended without success, done when every rank is done."""
    read = [r for r in ranks if r.view is not None]
    if not read:
        why = "; ".join(f"rank {r.rank} ({r.box}): {r.error}" for r in ranks)
        raise LookupError(f"{name}: no rank's box answered — {why}")
    # A box whose records are its own queue's, not a group's job (it ran alone since, or
    # the group never ran there): not this group's cells (a user's hour saw box1's own
    # queue read as a failed group job).
    own = [r.rank for r in read if r.view is not None and r.view.cells and not r.view.group_job]
    if len(own) == len(read):
        return _no_group_job(name, read[0].view)
    ranks = [RankView(r.rank, r.box, None, OWN_QUEUE) if r.rank in own else r for r in ranks]
    read = [r for r in ranks if r.view is not None]
    lead = read[0].view
    assert lead is not None
    cells = tuple(_group_cell(cell, ranks) for cell in lead.cells)
    views = [r.view for r in read if r.view is not None]
    running = any(v.state == Q_RUNNING for v in views)
    view = replace(
        lead,
        host=name,
        cells=cells,
        state=Q_RUNNING if running else lead.state,
        runner_alive=any(v.runner_alive for v in views),
        session_present=any(v.session_present for v in views),
    )
    stop = None if running else own_stop(ranks)
    return view if stop is None else _stopped_by_group(view, stop)


# Why a rank's records are not read as the group's: its box ran its own queue since.
OWN_QUEUE = "its box holds its own queue's records, not this group's"


def _no_group_job(name: str, base: QueueView | None) -> QueueView:
    """The group's view where no box holds a job of it: nothing deployed for the group
    (its boxes' own queues are theirs: ``queue show BOX``)."""
    assert base is not None
    return replace(
        base, host=name, state=NOT_DEPLOYED, cells=(), launch=None, resume_index=None,
        runner_alive=False, session_present=False, group_stop="", group_job=False,
    )  # fmt: skip


@dataclass(frozen=True)
class GroupStop:
    """A group's own stop (ux-h #1): rank ``rank`` failed by itself in ``cell`` and the
    other ranks were stopped with it: by rgt-tui's watch (``supervise``: their kill
    records say ``group``), or, read from records that say ``user`` (a box an older
    rgt-tui wrote to, or a kill of the group once it had failed: they tell these apart no
    better), the job's end all the same, not a user's stop."""

    index: int
    cell: str
    rank: int
    box: str

    @property
    def words(self) -> str:
        """What the stop line says in place of "stopped by the user"."""
        return (
            f"rank {self.rank} ({self.box}) failed first in cell {self.index} ({self.cell}); "
            "the other ranks were stopped with it (one torchrun job is all its ranks or none)"
        )

    @property
    def note(self) -> str:
        """A stopped rank's killed cell's note: which rank failed first."""
        return f"stopped with the group: rank {self.rank} ({self.box}) failed first"


def own_stop(ranks: Sequence[RankView]) -> GroupStop | None:
    """The group's own stop in its latest launch: the first cell (by index) whose attempt
    on one rank ended badly by itself (not killed) while another rank was stopped in that
    launch. The record says so first: a rank whose kill record says ``group`` was stopped
    by the group. Records that say ``user`` (all an older rgt-tui wrote) are read as
    before, by inference: a cell of it killed, or its runner stopped by a kill. None
    otherwise: a kill of every rank is the user's, and ranks that all failed by
    themselves stopped nobody."""
    read = [r for r in ranks if r.view is not None]
    if not read or read[0].view is None:
        return None
    for lead in read[0].view.cells:
        first = first_failure(lead.name, ranks)
        if first is None or first[1].status == KILLED:
            continue
        failed, cell = first
        if (cell.started_at or 0) < _launched(failed.view):
            continue  # history: a failure before its rank's latest launch
        others = [r.view for r in read if r.rank != failed.rank]
        if any(_killed_by_group(v) for v in others):  # the record says it
            return GroupStop(lead.index, lead.name, failed.rank, failed.box)
        if any(_stopped(v) for v in others):  # "user" records (an older rgt-tui): inferred
            return GroupStop(lead.index, lead.name, failed.rank, failed.box)
    return None


def _launched(view: QueueView | None) -> int:
    return view.launch.ts if view is not None and view.launch is not None else 0


def _killed_by_group(view: QueueView | None) -> bool:
    """The record says it: a cell of this rank's latest launch was killed by its group."""
    if view is None or view.launch is None:
        return False
    since = view.launch.ts
    return any(
        c.status == KILLED and c.killed_by == BY_GROUP and (c.started_at or 0) >= since
        for c in view.cells
    )


def _stopped(view: QueueView | None) -> bool:
    """A kill stopped this rank in its latest launch: a cell of it killed (by the group,
    as its record says, or by a ``user`` record an older rgt-tui may have written for
    the group's stop), or its runner stopped by a kill between cells."""
    if view is None or view.launch is None:
        return False
    if view.state == GROUP_STOPPED:  # read with the group's stop already (its records cleared)
        return True
    since = view.launch.ts
    return view.launch.stop_by in ("kill", BY_GROUP, BY_OWN_FAILURE) or any(
        c.status == KILLED and (c.started_at or 0) >= since for c in view.cells
    )


def _without_stop(launch: RunnerLaunch | None) -> RunnerLaunch | None:
    """The launch without its stop records: they are the group's kill, not the user's
    stop (so no reader of the launch calls it "stopped by you")."""
    if launch is None:
        return None
    return replace(launch, stop_requested_at=None, stop_by="", stopped_before=None, stop_held=())


def _stopped_by_group(view: QueueView, stop: GroupStop) -> QueueView:
    """``view`` (the group's, or a stopped rank's) as the group's own stop: its state, its
    stop line, and a resume index at the cell that failed (a relaunch must run it
    again, not start after it)."""
    resume = min(i for i in (stop.index, view.resume_index) if i is not None)
    return replace(
        view,
        state=GROUP_STOPPED,
        group_stop=stop.words,
        resume_index=resume,
        launch=_without_stop(view.launch),
    )


def with_group_stop(ranks: Sequence[RankView]) -> tuple[RankView, ...]:
    """Each rank's own view read with the group's own stop (``own_stop``): a rank the
    group stopped has its killed cell's note and its stop say which rank failed first
    (its own records say only "stopped with its group", or, written by an older rgt-tui,
    "user"). Unchanged when the group did not stop itself."""
    stop = own_stop(ranks)
    if stop is None:
        return tuple(ranks)
    out = []
    for r in ranks:
        view = r.view
        if view is None or r.rank == stop.rank or not _stopped(view):
            out.append(r)
            continue
        since = _launched(view)
        cells = tuple(
            replace(c, note=stop.note) if c.status == KILLED and (c.started_at or 0) >= since else c
            for c in view.cells
        )
        view = replace(view, cells=cells)
        if view.state != Q_RUNNING:
            view = _stopped_by_group(view, stop)
        out.append(replace(r, view=view))
    return tuple(out)


def _cell_of(view: QueueView | None, name: str) -> CellView | None:
    if view is None:
        return None
    return next((c for c in view.cells if c.name == name), None)


def first_failure(cell: str, ranks: Sequence[RankView]) -> tuple[RankView, CellView] | None:
    """The rank whose attempt at ``cell`` ended badly first: a failure of its own before
    one that says a peer went (``PEER_GONE``) and before a kill (the product kills the
    others after a peer died), then the earliest end."""
    bad = [
        (r, c)
        for r in ranks
        if (c := _cell_of(r.view, cell)) is not None and c.status in ENDED_BADLY
    ]
    if not bad:
        return None

    def order(rc: tuple[RankView, CellView]) -> tuple[bool, bool, int, int]:
        rank, c = rc
        peer_gone = any(mark in (c.note or "") for mark in PEER_GONE)
        return (c.status == KILLED, peer_gone, c.ended_at or 2**62, rank.rank)

    return min(bad, key=order)


def _stopped_first(cell: str, ranks: Sequence[RankView], failed: CellView) -> RankView | None:
    """The rank whose attempt at ``cell`` its group killed no later than ``failed`` (a
    failure that says its peer went) ended; None when ``failed`` is a fault of its own,
    or no kill of the group's came first."""
    if not any(mark in (failed.note or "") for mark in PEER_GONE):
        return None
    end = failed.ended_at or 2**62
    for r in ranks:
        c = _cell_of(r.view, cell)
        killed = c is not None and c.status == KILLED and c.killed_by == BY_GROUP
        if killed and c is not None and (c.ended_at or 0) <= end:
            return r
    return None


def unanswered_first(cell: str, ranks: Sequence[RankView]) -> RankView | None:
    """The rank to name first for ``cell`` when it failed only because a peer went
    (``PEER_GONE``, ux-h #5) and a rank's box does not answer: that rank, whose records
    cannot say how its attempt ended (preempted? lost?). None otherwise: a failure of a
    read rank's own is named as it is."""
    first = first_failure(cell, ranks)
    if first is None or not any(mark in (first[1].note or "") for mark in PEER_GONE):
        return None
    return next((r for r in ranks if r.view is None), None)


def unanswered_note(quiet: RankView, failed: RankView, cell: CellView) -> str:
    """``rank 1 (b2) does not answer (…): preempted or lost? rank 0 (b1) then failed …``."""
    note = (
        f"rank {quiet.rank} ({quiet.box}) does not answer ({quiet.error}): preempted or lost? "
        f"rank {failed.rank} ({failed.box}) then {cell.status}{_exit(cell)}, its peer gone"
    )
    return note + (f": {cell.note}" if cell.note else "")


def _exit(cell: CellView) -> str:
    """`` (exit 1)``; "" when the rank's attempt has no exit code (interrupted: no end
    record), where "interrupted first (interrupted)" said its state twice (h617 #4)."""
    return f" (exit {cell.exit_code})" if cell.exit_code is not None else ""


def unanswered_diagnosis(name: str, cell: CellView, quiet: RankView) -> Diagnosis:
    """``diagnose GROUP`` while the rank that went first does not answer (ux-h #5): its
    box is named, not the survivor's error as a failure "by itself" to fix."""
    return Diagnosis(
        host=name,
        subject=f"cell {cell.index} ({cell.name})",
        cause=NO_ANSWER,
        cell=cell.name,
        summary=(
            f"rank {quiet.rank} ({quiet.box}) does not answer ({quiet.error}): preempted or "
            f"lost? cell {cell.index} ({cell.name}) "
            + (
                "was stopped on the other ranks with it (one torchrun job is all its ranks or none)"
                if cell.status == KILLED
                else "failed on the other ranks because their peer went, not by a fault of "
                "their own"
            )
        ),
        next_step=(
            f"find out what became of rank {quiet.rank}'s box ({quiet.box}): rgt-tui status "
            f"{quiet.box}; once it answers, rgt-tui diagnose {name} reads how its attempt "
            f"ended, and a relaunch from cell {cell.index} resumes from the checkpoint"
        ),
    )


def _group_cell(lead: CellView, ranks: Sequence[RankView]) -> CellView:
    per = [_cell_of(r.view, lead.name) for r in ranks]
    statuses = [c.status for c in per if c is not None]
    first = first_failure(lead.name, ranks)
    if first is not None and first[1].status == KILLED and first[1].killed_by == BY_USER:
        rank, cell = first
        running = [(r, c) for r, c in zip(ranks, per, strict=True) if c and c.status == RUNNING]
        if cell.ended_at is not None and any(
            (c.started_at or 0) > cell.ended_at for _, c in running
        ):
            # That kill was of an earlier attempt (another launch's record): the cell runs
            # now, read as any running cell below. As "failed", no kill found a rank
            # running it alone (h575 #1).
            first = None
        elif missed := [r for r, c in running if not c.killed_by]:  # not one whose kill is
            # under way: the user's kill did not reach it (a box that did not answer then),
            # and it runs on alone. Running, the next k kills it there (h572 #2).
            note = (
                f"killed by the user on rank {rank.rank} ({rank.box}), still running on "
                + ", ".join(f"rank {r.rank} ({r.box})" for r in missed)
                + ": the kill did not reach it — kill it again"
            )
            return replace(lead, status=RUNNING, note=note, ended_at=None, exit_code=None)
    if first is not None:
        rank, cell = first
        if cell.status == KILLED and all(s in (KILLED, DONE) for s in statuses):
            # Not a box that answered with its own queue's records (review h576 #3).
            silent = next((r for r in ranks if r.view is None and r.error != OWN_QUEUE), None)
            if silent is not None and cell.killed_by == BY_USER:
                # The user's kill, that rank not heard: not known stopped (h575 #3).
                note = (
                    f"killed by the user; rank {silent.rank} ({silent.box}) does not answer "
                    f"({silent.error}): whether it still runs there is not known (rgt-tui "
                    f"status {silent.box})"
                )
                return replace(lead, status=KILLED, note=note)
            if silent is not None:
                # Not "killed on every rank": that rank was never reached, and its going
                # quiet is most likely why the group stopped the others (h531 #2).
                note = (
                    f"rank {silent.rank} ({silent.box}) does not answer ({silent.error}): "
                    "preempted or lost? the other ranks were stopped with it"
                )
                return replace(lead, status=KILLED, note=note)
            return replace(lead, status=KILLED, note=f"killed on every rank ({lead.note})".strip())
        note = f"rank {rank.rank} ({rank.box}) {cell.status} first{_exit(cell)}"
        if cell.note:
            note += f": {cell.note}"
        quiet = unanswered_first(lead.name, ranks)
        stopped = _stopped_first(lead.name, ranks, cell)
        if quiet is not None:
            note = unanswered_note(quiet, rank, cell)
        elif stopped is not None:
            # Its peer went because the group stopped that peer (a rank that went quiet,
            # now back): the survivor's "failed first (exit 1): RendezvousConnectionError"
            # read as a fault of its own to fix (h531 #2). Named first, so that diagnose
            # reads the stopped rank's records.
            note = (
                f"rank {stopped.rank} ({stopped.box}) was stopped by its group first (a rank "
                f"did not answer, or failed); rank {rank.rank} ({rank.box}) then "
                f"{cell.status}{_exit(cell)}, its peer gone"
            )
        ended = [c.ended_at for c in per if c is not None and c.ended_at]
        return replace(
            lead,
            status=FAILED,
            exit_code=cell.exit_code,
            note=note,
            ended_at=max(ended) if ended else cell.ended_at,
        )
    if statuses and len(statuses) == len(ranks) and all(s == DONE for s in statuses):
        ended = [c.ended_at for c in per if c is not None and c.ended_at]
        return replace(lead, status=DONE, ended_at=max(ended) if ended else lead.ended_at)
    if RUNNING in statuses:
        missing = [r for r, c in zip(ranks, per, strict=True) if c is None or c.status != RUNNING]
        # A rank whose box did not answer is not one to wait for: it may be gone, and its
        # peers then fail on it (h617 #5: "waiting for rank 1 (box2)" while box2 was down).
        silent = [r for r in missing if r.view is None and r.error != OWN_QUEUE]
        waiting = [r for r in missing if r not in silent]
        said = [
            f"rank {r.rank} ({r.box}) does not answer ({r.error}): preempted or lost?"
            for r in silent
        ]
        if waiting:
            said.append("waiting for " + ", ".join(f"rank {r.rank} ({r.box})" for r in waiting))
        note = "; ".join(said)
        # The running attempt's own start, never an older attempt's end or exit (rank 0
        # may hold a killed record of another launch: review h576 #1).
        run = next(c for c in per if c is not None and c.status == RUNNING)
        return replace(
            lead, status=RUNNING, note=note, started_at=run.started_at, ended_at=None,
            exit_code=None, killed_by="",
        )  # fmt: skip
    if RETRY in statuses:
        return replace(lead, status=RETRY)
    unread = [r for r, c in zip(ranks, per, strict=True) if c is None]
    if unread:  # said, never guessed: a rank not read is not known done
        note = "; ".join(
            f"rank {r.rank} ({r.box}) "
            + (f"not read: {r.error}" if r.view is None else "holds no record of it")
            for r in unread
        )
        return replace(lead, note=f"{lead.note}; {note}" if lead.note else note)
    return lead


@dataclass(frozen=True)
class StopOrder:
    """Ranks to stop now, and why (said in the log and the notes)."""

    cell: str
    why: str
    ranks: tuple[int, ...]


def stop_order(
    ranks: Sequence[RankView], quiet_since: dict[int, float], now: float
) -> StopOrder | None:
    """The ranks still running (a cell, or a runner about to start the next) after a
    peer's attempt ended badly, or while a peer's box has answered nothing for
    ``LOST_AFTER_S`` (``quiet_since``: when each unanswering rank was first missed).
    None when every rank agrees."""
    alive = [r for r in ranks if r.view is not None and r.view.runner_alive]
    if not alive:
        return None
    for r in ranks:
        if r.view is None or r.view.launch is None:
            continue
        since = r.view.launch.ts  # a failure before this rank's latest launch is history
        for cell in r.view.cells:
            if _stops_peers(cell) and (cell.ended_at or since) >= since:
                peers = [a for a in alive if a.rank != r.rank]
                late = [a for a in peers if _started_after(a, cell)]
                # A peer already running a later cell has moved on with its own runner:
                # it is stopped too (the group's queue stops at a failed cell).
                if peers and (late or any(_runs(a, cell.name) for a in peers)):
                    why = f"rank {r.rank} ({r.box}) {cell.label} in {cell.name}"
                    return StopOrder(cell.name, why, tuple(a.rank for a in alive))
    lost = [
        r for r in ranks if r.view is None and now - quiet_since.get(r.rank, now) >= LOST_AFTER_S
    ]
    running = [a for a in alive if a.view is not None and a.view.current is not None]
    if lost and running:
        current = running[0].view.current if running[0].view is not None else None
        why = ", ".join(f"rank {r.rank} ({r.box}) lost: {r.error}" for r in lost)
        return StopOrder(current.name if current else "", why, tuple(a.rank for a in alive))
    return None


def _stops_peers(cell: CellView) -> bool:
    """A rank's cell that ended so its peers must not go on with it: failed, cut short,
    or killed by the group's own stop. The last: a rank whose box went quiet while the
    group was stopped came back still running the cell, alone, and nothing stopped it
    (a groups hour, s39 #1). A user's kill is not one: with ``--then next`` every rank
    goes on to the next cell together."""
    if cell.status in (FAILED, INTERRUPTED):
        return True
    return cell.status == KILLED and cell.killed_by == BY_GROUP


def _runs(rank: RankView, cell: str) -> bool:
    c = _cell_of(rank.view, cell)
    return c is not None and c.status == RUNNING


def _started_after(rank: RankView, failed: CellView) -> bool:
    """``rank`` runs a cell that started after ``failed`` ended (its runner went on)."""
    current = rank.view.current if rank.view is not None else None
    return (
        current is not None
        and current.name != failed.name
        and failed.ended_at is not None
        and (current.started_at or 0) >= failed.ended_at
    )
