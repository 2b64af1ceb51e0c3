"""`rgt-tui queue append`: send lines appended to a host's queue file to its box.

Only growth is sent. The box's ``queue.txt`` must be a prefix of the local file, ending on
a line boundary, and every cell already in ``cells.tsv`` must render to the same command:
otherwise an index would name a different cell than it did, and ``--start`` would resume
the wrong one (parallel_ablation.md §7). Such a change is refused with the differing
lines shown; to drop a cell, let it run, or relaunch with ``--fresh``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_file import QueueCell
from rgt_tui.domain.queue_prefix import (
    NotSent,
    lines_before,
    prefix_problem,
    sent_prefix_end,
    unsent_text,
)
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.domain.queue_state import DONE, PENDING, RETRY, QueueView, relaunch_start
from rgt_tui.services.box_ctl import QueueError, refusal, run_ctl
from rgt_tui.services.code_sync.rules import fleet_files
from rgt_tui.services.code_sync.status import stale_on_box
from rgt_tui.services.code_sync.types import SyncError
from rgt_tui.services.journal import torn_down_refusal
from rgt_tui.services.queue.box import probe, read_box_queue_text
from rgt_tui.services.queue.cells import (
    PlannedCell,
    read_local_queue,
    render_queue,
    unsent_moved,
)
from rgt_tui.services.queue.check import (
    check_fleet_queues,
    display_path,
    missing_configs,
    read_queue_file,
    tree_configs,
)
from rgt_tui.services.queue.moved_skips import record_moved_skips, unskipped_moved
from rgt_tui.services.queue.records import other_queue_problem, view_from_facts
from rgt_tui.transport import Transport, TransportError


@dataclass(frozen=True)
class AppendResult:
    """Cells sent to the box by ``append_cells``."""

    host: str
    added: tuple[PlannedCell, ...]
    running: bool  # the runner is alive and will reach them
    detail: str
    start: int | None = None  # where a launch that runs them begins (not running)


# What to do about sent lines edited here (hour s20b #5: "relaunch with --fresh" came
# first, which runs every done cell again).
SENT_FIX = (
    "Put the lines shown back as they are on the box: a sent line cannot be changed "
    "there. To run an edited line, add it at the end under a new name — a copy of its "
    "config with another file name (the name is the config's stem, and so is {out}); "
    "the same name again is refused as used twice. To run a pending cell "
    "elsewhere, move it (`rgt-tui queue move`); --fresh starts over and runs done cells "
    "again"
)


@dataclass(frozen=True)
class AgainstBox:
    """The local queue file against the box's copy, which is what the box runs."""

    # Why the box's copy is not this file, in words: the lines already sent that differ,
    # or the file that cannot be read.
    changed: str | None = None
    not_sent: NotSent | None = None  # None: nothing added, or not compared


async def against_box(
    host: HostConfig,
    transport: Transport,
    view: QueueView | None = None,
    fleet: Fleet | None = None,
) -> AgainstBox:
    """The local queue file against the box's copy, in one read of each: the lines
    already sent that differ, else the cells not sent yet.

    An edit to a sent line was ignored without a word until an append (hour s20b #3).
    ``view``: the box's records as just read; when they are another kind of queue's (a
    group's job on a box with a queue of its own), that is said instead: "put the lines
    back as on the box" would have written the group's lines over the box's own queue
    (hour s22b #9). ``fleet``: a cell not sent whose name another line of the fleet's
    queues uses, or whose config the host's code tree lacks, counts as a line at fault,
    as append and launch refuse it (the Queue tab said "a sends it" over a name used
    twice, and the append was refused). A config the box holds an older copy of is not
    checked here: that reads the box's files, and append says it when it does."""
    if host.queue is None or host.slurm is not None or host.group is not None:
        return AgainstBox()
    other = other_queue_problem(host, view) if view is not None else None
    if other is not None:
        return AgainstBox(other)
    twice: set[str] = set()  # file:line of each cell whose name is used more than once
    if fleet is not None:
        checked = await asyncio.to_thread(check_fleet_queues, fleet)
        source = checked.source_for(host.name)
        twice = {c.where for d in checked.duplicates for c in d.places}
    else:
        source = await asyncio.to_thread(
            read_queue_file, Path(host.queue), host=host.name, default_epochs=host.epochs
        )
    if source is None:
        return AgainstBox()
    if source.text is None:
        # Not readable (a typo in the queue path, a file deleted or not UTF-8): the tab's
        # "not sent" lines vanished without a word (s37 fleet hour #7). Said as the note
        # of a copy that differs: the box runs its own.
        problem = source.parsed.problems[0] if source.parsed.problems else None
        if problem is None:
            return AgainstBox()
        return AgainstBox(f"{problem}; the box runs its own copy of the queue")
    text = source.text
    box_text = await read_box_queue_text(transport, host.name)
    if box_text:
        end = sent_prefix_end(box_text, text)
        if end is None:
            changed = prefix_problem(box_text, text) or ""
            return AgainstBox(
                f"{display_path(host.queue)} differs from the copy on {host.name} in lines "
                f"already sent: the box runs its copy, not your edit. {SENT_FIX}:\n{changed}"
            )
        held = lines_before(text, end)
    elif view is not None and not view.cells:
        # Nothing sent yet: every cell of the file waits for the first launch (the Queue
        # tab read "no cells on the box" while `queue show` listed the file's three).
        held = 0
    else:
        return AgainstBox()  # records without the copy: the view says what the box holds
    cells = tuple(
        (i, c) for i, c in enumerate(source.parsed.slots) if c.line > held and not c.moved_to
    )
    faults = sum(1 for p in source.parsed.problems if p.line is not None and p.line > held)
    # A name used twice, or a config the code tree lacks, is refused by append as by
    # launch: "a sends it" over either was a promise the append broke (a user's hour).
    absent: set[int] = set()
    if fleet is not None and cells:
        problems = await asyncio.to_thread(missing_configs, fleet, host, [c for _, c in cells])
        absent = {p.line for p in problems if p.line is not None}
    faulty = frozenset(c.line for _, c in cells if c.where in twice or c.line in absent)
    faults += len(faulty)
    if not cells and not faults:
        return AgainstBox()
    return AgainstBox(not_sent=NotSent(source.parsed.file, cells, faults, faulty))


async def stale_configs(
    fleet: Fleet, host: HostConfig, transport: Transport, cells: tuple[QueueCell, ...]
) -> dict[str, list[QueueCell]]:
    """The configs of ``cells`` the box's workdir does not hold as this machine does
    (missing there, or an older copy), each with its cells; none when the code tree
    cannot be listed here (sync and preflight say why). Reads the box's files."""
    wanted = tree_configs(host, cells)
    if not wanted:
        return {}
    try:
        stale = await stale_on_box(host, transport, wanted, withhold=fleet_files(fleet))
    except SyncError:
        return {}
    return {p: wanted[p] for p in stale}


async def with_stale_configs(
    fleet: Fleet, host: HostConfig, transport: Transport, view: QueueView, compared: AgainstBox
) -> AgainstBox:
    """``compared`` with its not-sent cells' configs the box does not hold as here (an
    append to a running queue refuses them, ``configs_on_box``, and so does a launch of a
    stopped one until a sync: h493 #2 read "L sends and runs it", and L was refused); the
    box is asked only for a queue it holds. A look that fails leaves ``compared`` as it
    is: the list was compared already (review s46 #13), and the append asks again."""
    from dataclasses import replace

    not_sent = compared.not_sent
    if not_sent is None or not not_sent.cells or not view.cells:
        return compared
    cells = tuple(c for _, c in not_sent.cells)
    try:
        stale = await stale_configs(fleet, host, transport, cells)
    except (QueueError, TransportError):
        return compared
    return replace(compared, not_sent=replace(not_sent, stale=tuple(stale)))


async def configs_on_box(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport,
    cells: tuple[QueueCell, ...],
    *,
    way_on: str = "",
) -> None:
    """A running queue runs new cells on the box's code as it is, and sync never rewrites
    a running queue's files: a new cell whose config the box lacks (or holds an older copy
    of) would fail, or run the old config. Refused (QueueError, ``stale-config``) then,
    naming the files and the way on (``way_on``: another host kind's, e.g. a Slurm login
    node's workdir, which an append submits from as it is)."""
    stale = await stale_configs(fleet, host, transport, cells)
    if not stale:
        return
    files = ", ".join(f"{p} (cell {', '.join(c.name for c in cs)})" for p, cs in stale.items())
    way_on = way_on or (
        "and a running queue's code is never synced: the cell would fail, or run the old "
        f"config. Append it once the queue ends (or stop it: S, or rgt-tui queue stop "
        f"{host.name}), after a sync (y, or rgt-tui sync {host.name}); or name a config "
        "the box has"
    )
    raise QueueError(
        host.name,
        f"refused: {files} not on {host.name} as it is here (missing there, or an older "
        f"copy), {way_on}",
        code="stale-config",
    )


async def append_cells(fleet: Fleet, host: HostConfig, transport: Transport) -> AppendResult:
    """Send the lines appended to ``host``'s local queue file to its box.

    Refused (QueueError, code ``rewritten``) when an earlier line changed — the message
    shows the differing lines — and refused when a new name collides anywhere in the
    fleet or nothing was launched on the box yet. A runner that is still going runs the
    new cells; otherwise they wait for the next launch (``detail`` says which).
    """
    problems, cells, text = await read_local_queue(fleet, host)
    if problems:
        raise QueueError(host.name, "cannot append:\n" + "\n".join(problems))
    # Asked before any connection, as a launch's: a destroyed box's refused port read as
    # the fleet file's mistake ("check the port", h471 #2).
    torn_down = await asyncio.to_thread(torn_down_refusal, fleet, host.name)
    if torn_down is not None:  # cells sent there would run where nothing pulls them
        raise QueueError(host.name, f"cannot append: {torn_down}")
    session = tmux_session_name(host.name)
    await transport.connect()
    facts = await probe(
        transport, host.name, session=session, workdir=host.workdir, durable_dir=host.durable_dir
    )
    if facts.qbytes == 0 and not facts.deployed:
        # The command and the key: the words alone left a user to find how (hour s33 CLI #11).
        raise QueueError(
            host.name,
            f"no queue on {host.name} yet — launch it first: rgt-tui launch {host.name} (L in "
            "its Queue tab) sends and runs the file's cells",
        )
    other = other_queue_problem(host, view_from_facts(host, facts))
    if other is not None:  # a group's job on a box with its own queue (hour s23c #7)
        raise QueueError(host.name, f"refused: {other}", code="rewritten")
    box_text = await read_box_queue_text(transport, host.name)
    changed = prefix_problem(box_text, text)
    owner = facts.owner if facts.owner and facts.owner != session and facts.deployed else ""
    if owner and changed is not None:
        # Another entry's queue, as a launch says it; the same lines (an entry renamed in
        # place) go on, as its launch does (h546 #2: refused, naming the gone entry).
        raise QueueError(
            host.name,
            f"refused: this account's queue on the box was launched by another host entry "
            f"(tmux session {owner}), not {host.name} ({session}): both entries log in to one "
            "account, which holds one queue (~/.rgt/queue) — append from that entry; to make "
            f"{host.name} the account's, launch with --fresh (that queue is moved aside, its "
            "records and logs kept)",
            code="owner",
        )
    if changed is not None:
        assert host.queue is not None
        raise QueueError(
            host.name,
            f"refused: earlier lines of {display_path(host.queue)} differ from the copy on "
            f"{host.name}, which the box runs; only lines added at the end can be sent. "
            f"{SENT_FIX}:\n" + changed,
            code="rewritten",
        )
    rendered = render_queue(host, cells, text, facts.home)
    mismatch = rendered.mismatch_problem(host.name, facts.deployed)
    if mismatch:
        raise QueueError(host.name, f"refused: {mismatch}", code="rewritten")
    deployed = len(facts.deployed)
    moved = unsent_moved(host, cells, deployed)
    if moved:
        raise QueueError(host.name, "refused:\n" + "\n".join(moved), code="rewritten")
    # A cell moved while this box did not answer: its skip first, so a runner that goes
    # on (or a later launch) never runs it here again.
    view = view_from_facts(host, facts)
    skips = list(unskipped_moved(cells, deployed, view))
    await record_moved_skips(transport, host.name, skips)
    if skips:
        # Read again: the view of before the skips named a moved cell as one that "runs
        # again first", and a --start that a launch would not use (hour s24a #4).
        facts = await probe(
            transport, host.name, session=session, workdir=host.workdir,
            durable_dir=host.durable_dir,
        )  # fmt: skip
        view = view_from_facts(host, facts)
    new_text, new_lines = unsent_text(box_text, text), "".join(rendered.lines[deployed:])
    if not new_text:
        alive = view.runner_alive
        detail = "nothing new in the queue file"
        # The cells L runs (a launch from its default start): said alone, "nothing new"
        # sent a user with three cells waiting no further (h481 #11).
        start = relaunch_start(view.resume_index, view.cells)
        waiting = sum(1 for c in view.cells if c.index >= start and c.status in (PENDING, RETRY))
        if not alive and waiting:
            them = "it" if waiting == 1 else "them"
            detail += (
                f"; {waiting} sent {'cell waits' if waiting == 1 else 'cells wait'} for a "
                f"launch: L (rgt-tui launch {host.name}) runs {them}"
            )
        return AppendResult(host.name, (), alive, detail)
    # A new cell whose config the code tree does not hold (or sync does not send) would
    # fail on the box, as the launch plan refuses it (check.missing_configs).
    absent = await asyncio.to_thread(missing_configs, fleet, host, cells[deployed:])
    if absent:
        raise QueueError(host.name, "refused:\n" + "\n".join(str(p) for p in absent))
    if view.runner_alive:
        await configs_on_box(fleet, host, transport, cells[deployed:])
    result = await run_ctl(
        transport, "append", session, facts.qbytes, facts.clines,
        len(new_text.encode("utf-8")), len(new_lines.encode("utf-8")),
        input=new_text + new_lines,
    )  # fmt: skip
    error = refusal(host.name, result)
    if error is not None:
        raise error
    answer = next((ln for ln in result.stdout.splitlines() if ln.startswith("appended\t")), "")
    _, state, why = (answer.split("\t", 2) + ["", ""])[:3]
    added = rendered.planned(len(cells))[deployed:]
    start = None
    them = "it" if len(added) == 1 else "them"
    if not added:  # "will run them" of nothing read as if something would run (an hour)
        detail = "only comments or blank lines were added: nothing new to run"
    elif state == "running":
        detail = f"the running queue ({why}) will run {them} after its current cells"
    else:
        # Where a launch without a start begins (the TUI's L, `launch HOST`): never a
        # start the plan would then contradict (a user's hour: "launch from cell 4",
        # and L planned from 0, running a done cell again).
        status = {c.name: c.status for c in view.cells}
        planned = rendered.planned(deployed, status)
        start = relaunch_start(view.resume_index, planned)
        detail = f"the queue is not running: a launch from cell {start} runs {them}"
        # Cells that ended unfinished between the start and the new ones run again first:
        # "runs it" hid that a failed cell reruns (hour s22a #12).
        again = [c for c in planned[start:deployed] if c.status not in (None, PENDING, DONE)]
        if again:
            named = ", ".join(f"{c.index} ({c.name}, {c.status})" for c in again[:3])
            more = f" and {len(again) - 3} more" if len(again) > 3 else ""
            runs = "runs" if len(again) == 1 else "run"
            detail += f"; cell {named}{more} {runs} again first"
    return AppendResult(host.name, added, state == "running", detail, start)
