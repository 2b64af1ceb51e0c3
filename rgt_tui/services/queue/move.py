"""`rgt-tui queue move CELL... --to HOST`: move cells without verified results to another host.

A cell's line moves from the source host's queue file to the end of the destination's,
its name unchanged (the name is its isolation key, so the fleet-wide name check must
still hold). What happens to the source line depends on whether the box holds it:

- **not sent** (beyond the box's ``queue.txt``): the line is simply deleted;
- **sent**: the box's copy must stay a prefix of the local file and cell k must keep its
  index, so the line is rewritten as ``#moved-to HOST: <the line>``
  (``domain.queue_file.moved_marker``), which the parser still counts as cell k and the
  prefix check accepts, and the box is told to skip the cell
  (``services.queue.control.skip_cell``, a ``skip`` record in its state file, which the
  runner honours and the Queue tab shows). The source box's outputs are left untouched.

Refused: a cell that runs now, a cell with verified results (``verify``'s record) —
unless it is a resume move (``resume=True``, ``services.queue.resume``) of a cell that
ran and did not finish (interrupted, killed, failed, preempted), or whose box no longer
answers —, a destination without a queue file, a name already used elsewhere in the
fleet (or once on the destination's box), a source file that no longer matches its box.

A resume move of a cell whose box does not answer (preempted, gone) still moves its line:
it becomes ``#moved-to`` (the box may hold it) and the plan says that box was not told to
skip it (``MovePlan.source_answered``).

Order, so a failure never loses a line: the box's skip first (the one step the box can
refuse), then the destination file, then the source file; each file is replaced
atomically (temp file beside it, fsync, rename, mode kept) with every other byte kept.

Over 450 lines on purpose: the refusals (plan) and the order of the writes (apply) are
one safety argument — "no line is lost, no verified result is moved" — best reviewed
together; the resume's file push lives in ``resume``.
"""

from __future__ import annotations

import asyncio
import difflib
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.manifest import ManifestError
from rgt_tui.domain.queue_file import (
    QueueCell,
    moved_marker,
    parse_queue_line,
    parse_queue_text,
    render_command,
    writes_out,
)
from rgt_tui.domain.queue_prefix import prefix_problem
from rgt_tui.domain.queue_records import parse_cell_marks, parse_cell_state
from rgt_tui.domain.queue_state import DONE, RETRY, RUNNING
from rgt_tui.domain.roster import reconcile
from rgt_tui.domain.text import printable, shell_word
from rgt_tui.domain.unfinished import UNFINISHED
from rgt_tui.fsutil import atomic_write
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.journal import local_minute, recorded_torn_down_at
from rgt_tui.services.queue.box import read_box_queue_text
from rgt_tui.services.queue.check import (
    FleetQueues,
    QueueSource,
    check_fleet_queues,
    display_path,
)
from rgt_tui.services.queue.move_origin import OriginMark, origin_marks, rewrite_origins
from rgt_tui.services.queue.records import other_queue_problem, read_queue_facts, view_from_facts
from rgt_tui.services.records import (
    fleet_host_dir,
    load_manifest,
    load_verification,
    pulled_cell_log,
)
from rgt_tui.timeouts import within
from rgt_tui.transport import Transport

# How long a move planned while its source box did not answer waits, when it is applied,
# for that box to answer now (a box back since is asked again: ``_still_gone``).
RECHECK_CONNECT_S = 15.0


class MoveError(Exception):
    """A move that could not be done, or done only in part; ``str()`` says what to do."""


class PartlyMoved(MoveError):
    """A move stopped once the destination's queue file holds the cell (the source's
    could not be written): what it pushed stays, for the move is to be finished by hand
    as ``str()`` says, not run again (review s35: a take-back lost the resume)."""


class MovedNotRun(MoveError):
    """The cell was moved (its line, its checkpoint) but the target did not start it (its
    launch was refused, its append failed): ``str()`` says why and the command that runs
    it. Not a refused move: trying another host would find it moved already."""


class NotACellError(MoveError):
    """A name to move that is no cell of any host's queue file: the input is wrong (the
    command line's exit 2), not a refused move."""


@dataclass(frozen=True)
class MoveCell:
    """One cell to move, as the source file and its box show it."""

    name: str
    line: int  # 1-based, in the source file
    index: int  # cell k on the source box
    raw: str  # the line as written (a CR kept)
    sent: bool  # the box holds it: it becomes '#moved-to', the box skips it
    status: str = ""  # its state on the source box; "" when not deployed


@dataclass(frozen=True)
class MovePlan:
    """What a move would do, or why it must not (``problems``)."""

    source: str
    dest: str
    cells: tuple[MoveCell, ...]
    problems: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    source_path: Path | None = None
    dest_path: Path | None = None
    source_text: str = ""  # the files' exact texts the plan was made on
    dest_text: str = ""
    box_text: str = ""  # the source box's queue.txt the plan was made on
    # False: a resume move whose source box did not answer; its box skips nothing.
    source_answered: bool = True
    # Other hosts' ``#moved-to SOURCE`` lines of cells the source never held, to point at
    # the destination once moved (``move_origin``).
    origins: tuple[OriginMark, ...] = ()

    @property
    def ok(self) -> bool:
        """Nothing stops the move."""
        return not self.problems and bool(self.cells)

    @property
    def reruns_done(self) -> bool:
        """A cell moved finished on the source (with no verified results): the destination
        runs it again, paid work done twice, so the dialog's Enter is not the move."""
        return any(c.status == DONE for c in self.cells)

    @property
    def on_box(self) -> tuple[MoveCell, ...]:
        """The cells the source box holds: it must skip them (the move asks first)."""
        return tuple(c for c in self.cells if c.sent)


@dataclass(frozen=True)
class MoveResult:
    """A move done: the cells, and which of them the source box now skips."""

    plan: MovePlan
    skipped: tuple[str, ...]
    origins: tuple[str, ...] = ()  # what became of each ``plan.origins`` line, said


def verified_cells(fleet: Fleet, host: HostConfig, names: Iterable[str]) -> dict[str, str]:
    """Each of ``names`` that has verified results of ``host`` (the last ``verify``), with
    where: the record's roster, or its checks matched to the cell's output folder."""
    names = list(names)
    folder = fleet_host_dir(fleet, host)
    record = load_verification(folder)
    if not isinstance(record, dict):
        return {}
    roster = record.get("roster")
    present = set(roster.get("present") or ()) if isinstance(roster, dict) else set()
    checks = record.get("checks")
    statuses = {
        c["path"]: c["status"]
        for c in (checks if isinstance(checks, list) else ())
        if isinstance(c, dict) and isinstance(c.get("path"), str) and isinstance(c.get("status"), str)
    }  # fmt: skip
    try:
        manifest = load_manifest(folder)
    except ManifestError:
        manifest = None
    if manifest is not None and statuses:  # a cell outside the roster it was verified with
        writes = writes_out(host.run)
        present |= set(
            reconcile(names, manifest, host.durable_dir, statuses, writes_out=writes).present
        )
    where = display_path(folder)
    return {n: f"{n} has verified results in {where}" for n in names if n in present}


def plan_lines(plan: MovePlan, refused: bool | None = None) -> list[str]:
    """The plan in words, one line each: every cell and what happens to its line, then
    the warnings and the refusals (the CLI prints them, the dialog shows them).
    ``refused`` (default: the move's own refusals; a resume has its own too): each cell's
    line reads "if moved, …", since it does not happen."""
    if_moved = "if moved, " if (not plan.ok if refused is None else refused) else ""
    # The moved lines go to the end of the destination's file, in this order: each is the
    # cell after its last slot there (a plan that did not say where its cells landed
    # left the user to count: h484).
    first = len(parse_queue_text(plan.dest_text, file="", default_epochs=1).slots)
    lines = []
    for n, c in enumerate(plan.cells):
        if c.sent:
            what = (
                f"line {c.line} becomes '#moved-to {plan.dest}: …'; "
                f"{plan.source}'s box skips cell {c.index}"
            )
        else:
            what = f"line {c.line} moves (not sent to {plan.source}'s box yet)"
        lands = f"; it becomes {plan.dest}'s cell {first + n}"
        lines.append(f"{c.name}{f' [{c.status}]' if c.status else ''}: {if_moved}{what}{lands}")
    lines += [f"warning: {w}" for w in plan.warnings]
    return refusals_first([f"REFUSED: {p}" for p in plan.problems] + lines)


def refusals_first(lines: list[str]) -> list[str]:
    """A refused plan's ``REFUSED`` lines before the rest: a dialog of 24 rows showed the
    plan and hid the refusal below it (a user's hour)."""
    refused = [line for line in lines if line.startswith("REFUSED")]
    return refused + [line for line in lines if not line.startswith("REFUSED")]


def shape_warning(source: HostConfig, target: HostConfig, cell: QueueCell) -> str | None:
    """The plan's warning when ``cell`` moves between a group (one job over several
    boxes) and a host of another size (ux-h 9): how it ran, and the command the
    destination runs under its own template, which may be another program. None when
    both run it on as many boxes."""
    ran_on = source.group.nnodes if source.group is not None else 1
    runs_on = target.group.nnodes if target.group is not None else 1
    if ran_on == runs_on:
        return None
    # "runs", not "ran": the cell may never have run (a pending one moves too).
    if source.group is not None:
        ran = (
            f"{cell.name} runs as one job over {ran_on} boxes on {source.name} "
            f"({', '.join(source.group.hosts)})"
        )
    else:
        ran = f"{cell.name} runs on one box on {source.name}"
    if target.run is None:
        command = f"{target.name} has no run template"
    elif target.group is not None:
        command = f"its run template, on each of its boxes: {printable(target.run, 300)}"
    else:
        # {out} shown as the fleet file gives it (~ expands on the box, so no quotes).
        rendered = render_command(target.run, cell, "/RGT-DURABLE")
        command = printable(
            rendered.replace("/RGT-DURABLE", target.durable_dir.rstrip("/") or "/"), 300
        )
    where = (
        f"over {runs_on} boxes ({', '.join(target.group.hosts)})"
        if target.group is not None
        else "alone"
    )
    return (
        f"{ran}; on {target.name} it runs {where}, under {target.name}'s own run template: "
        f"{command} — check that this program runs this cell (and resumes its checkpoint, "
        "if it has one) before it starts there"
    )


def _did_you_mean(name: str, owner: dict[str, str]) -> str:
    """`` (did you mean 'lr02', box1's?)`` for a typo of a cell name (hour s24a #10)."""
    close = difflib.get_close_matches(name, list(owner), n=1)
    return f" (did you mean {printable(close[0])!r}, {owner[close[0]]}'s?)" if close else ""


def find_source(fleet: Fleet, names: Iterable[str]) -> HostConfig:
    """The host whose queue file holds the live cells ``names`` (names are unique across
    the fleet, so a cell's name says where it is). NotACellError when one is in no host's
    file; MoveError when one was moved already, or they are on several hosts (moved one
    host at a time)."""
    checked = check_fleet_queues(fleet)
    owner: dict[str, str] = {}
    for s in checked.sources:
        for c in s.parsed.cells if s.host else ():
            owner.setdefault(c.name, s.host)
    wanted = list(dict.fromkeys(names))
    missing = [n for n in wanted if n not in owner]
    if missing:
        gone = {c.name: c for s in checked.sources for c in s.parsed.moved}
        # `queue check` only counts the cells; `queue show` lists them (the box's, or the
        # file's before a launch), `queue check --json` every file's, sent or not.
        said = "; ".join(
            f"{n} was moved to {gone[n].moved_to} already ({gone[n].where})"
            if n in gone
            else f"no cell {n!r} in any host's queue file{_did_you_mean(n, owner)} (rgt-tui "
            "queue show HOST lists a host's cells, rgt-tui queue check --json every queue "
            "file's)"
            for n in missing
        )
        raise (NotACellError if any(n not in gone for n in missing) else MoveError)(said)
    hosts = list(dict.fromkeys(owner[n] for n in wanted))
    if len(hosts) != 1:
        where = ", ".join(f"{n} is {owner[n]}'s" for n in wanted)
        raise MoveError(
            f"the cells are on {len(hosts)} hosts ({where}) — move one host's at a time"
        )
    return fleet.host(hosts[0])


def _name_problems(
    checked: FleetQueues,
    cell: QueueCell,
    dest: HostConfig,
    dest_slots: tuple[QueueCell, ...],
    fleet: Fleet,
) -> list[str]:
    """The fleet-wide name check: ``cell``'s name used by any other live cell, or by a cell
    of the destination's file that was moved away (its records on that box bear the name).
    The hosts it offers instead are none recorded as torn down (reads their journals)."""
    others = [c for c in checked.cells if c.name == cell.name and c is not cell]
    problems = []
    if others:
        places = " and ".join(c.where for c in others)
        problems.append(
            f"cell name {cell.name!r} is already used at {places} — the name is a cell's "
            "isolation key (its output directory) across the fleet; rename one config first"
        )
    for old in dest_slots:
        if old.moved_to and old.name == cell.name:
            # Which hosts can take it: a renamed config is a new {out}, which no verified
            # checkpoint is under, so the rename the refusal used to advise started the run
            # over (a user's hour, moving a spot run back to a box it had been on).
            had = {s.host for s in checked.sources if any(
                c.moved_to and c.name == cell.name for c in s.parsed.slots)}  # fmt: skip
            can = [s.host for s in checked.sources if s.host not in had
                   and not any(c is cell for c in s.parsed.cells)
                   and torn_down_warning(fleet, fleet.host(s.host)) is None]  # fmt: skip
            elsewhere = (
                f"move it to a host that never had it ({', '.join(can)})"
                if can
                else "every other host with a queue file had it too (or is recorded as torn down)"
            )
            problems.append(
                f"cell name {cell.name!r} was {dest.name}'s before ({old.where}, moved to "
                f"{old.moved_to}): {dest.name}'s box keeps that cell's records under the "
                f"name, so it cannot take it again — {elsewhere}; or, to run it on "
                f"{dest.name}, rename its config: a new name is a new {{out}}, so the run "
                "starts from scratch, without any checkpoint made under the old name"
            )
    return problems


def torn_down_warning(fleet: Fleet, target: HostConfig) -> str | None:
    """Why a move to ``target`` is refused when the fleet's journal records its box as
    torn down (ux-e #7, hour s22a #1: as a launch there is refused; GEN1); None
    otherwise. Reads the journal."""
    if target.group is not None:  # a group: each of its boxes, under its own name
        return next((w for b in target.group.members if (w := torn_down_warning(fleet, b))), None)
    at = recorded_torn_down_at(fleet, target.name)
    if at is None:
        return None
    return (
        f"{torn_down_words(target.name)} ({local_minute(at)}): nothing would run the cell "
        "there, since a launch there is refused and rgt-tui no longer pulls from it "
        f"(if that box was meant to be destroyed it may still be billing: GEN1, `rgt-tui "
        f"status {target.name}`) — move to another host, or give its [[hosts]] entry a new "
        "name to use that box again"
    )


def torn_down_words(host: str) -> str:
    """How ``torn_down_warning`` begins; the dialog looks for it to keep Move off Enter."""
    return f"{host} is recorded as torn down"


def target_torn_down(plan: MovePlan) -> bool:
    """The plan is refused as its target is recorded torn down (GEN1)."""
    said = (*plan.problems, *plan.warnings)
    return any(w.startswith(torn_down_words(plan.dest) + " (") for w in said)


def _box_lines(box_text: str) -> int:
    """How many lines of the queue file the box holds (a last line without newline counts)."""
    return box_text.count("\n") + (1 if box_text and not box_text.endswith("\n") else 0)


async def plan_move(
    fleet: Fleet,
    source: HostConfig,
    names: Iterable[str],
    dest: str,
    transport: Transport,
    *,
    resume: bool = False,
    target_transport: Transport | None = None,
) -> MovePlan:
    """Everything moving ``names`` from ``source`` to host ``dest`` would do, and every
    reason it must not. ``transport`` reaches the source box (to see which cells it holds
    and which one runs). ``resume``: the cells' verified files go with them
    (``services.queue.resume``), so verified results do not refuse an unfinished cell, and
    a source box that does not answer does not refuse the move. ``target_transport``
    reaches ``dest``'s box: a config of the cells it lacks is warned of (h471 #11: said
    only by the append or launch after the move, when the source box skipped them
    already). A warning, not a refusal: a plain move runs nothing, and a sync of ``dest``
    before its append or launch is the way on (a resume move, which starts the cell,
    refuses it: ``resume.config_missing_words``)."""
    wanted = list(dict.fromkeys(n for n in names if n))
    problems: list[str] = []
    warnings: list[str] = []

    def refused() -> MovePlan:
        return MovePlan(source.name, dest, (), tuple(problems))

    if not wanted:
        problems.append("name at least one cell to move")
    try:
        target = fleet.host(dest)
    except KeyError as exc:
        problems.append(str(exc.args[0]))
        return refused()
    # Said once the cells are looked up: a cell typed in another host's dialog is no
    # cell of this one, and "the cells are on box2 already" was not true of it.
    same = target.name == source.name
    for host in (source, target):
        if host.queue is None:
            problems.append(
                f'host {host.name} has no queue file — add queue = "queues/{host.name}.txt" '
                f"to its [[hosts]] block in {fleet.path or 'hosts.toml'} and create the file"
            )
    if problems:
        return refused()
    # Refused, as a launch or an append there is: moved anyway, the cell waited on a box
    # nothing would run it on, and the source's gate counted it "moved" and opened
    # (hour s22a #1).
    torn = await asyncio.to_thread(torn_down_warning, fleet, target)
    if torn:
        problems.append(torn)
        return refused()
    checked = await asyncio.to_thread(check_fleet_queues, fleet)
    src, dst = checked.source_for(source.name), checked.source_for(target.name)
    assert src is not None and dst is not None
    for s in (src, dst):
        if s.text is None or s.parsed.problems:
            problems += [str(p) for p in s.parsed.problems]
    if problems:
        problems.append("fix the queue files first (rgt-tui queue check), then move")
        return refused()
    assert src.text is not None and dst.text is not None
    slots = src.parsed.slots
    chosen: list[tuple[int, QueueCell]] = []
    for name in wanted:
        found = [(i, c) for i, c in enumerate(slots) if c.name == name and not c.moved_to]
        gone = [c for c in src.parsed.moved if c.name == name]
        if found:
            chosen.append(found[0])
            if not same:
                # Off the loop: it may read other hosts' journals (their torn-down records).
                problems += await asyncio.to_thread(
                    _name_problems, checked, found[0][1], target, dst.parsed.slots, fleet
                )
            shape = shape_warning(source, target, found[0][1])
            warnings += [shape] if shape else []
        elif gone:
            problems.append(f"{name} was moved to {gone[0].moved_to} already ({gone[0].where})")
        else:
            known = ", ".join(c.name for c in src.parsed.cells) or "none"
            problems.append(f"no cell {name!r} in {src.parsed.file} (its cells: {known})")
    if same and chosen:
        problems.append(f"{dest} is the host they are moved from — name another host")
    if same:
        return refused()
    verified = await asyncio.to_thread(verified_cells, fleet, source, wanted)
    try:
        facts = await read_queue_facts(source, transport)
        box_text = await read_box_queue_text(transport, source.name)
    except (TransportError, QueueError) as exc:
        if resume and isinstance(exc, TransportError):
            ended = await asyncio.to_thread(pulled_done, fleet, source, verified)
            finished = {
                name: f"{verified[name]}: it finished on {source.name} (its records as last "
                f"pulled: exit 0 at {local_minute(ended[name])}) and its results are kept — "
                "moving it would run it again (leave it)"
                for name in verified
                if name in ended
            }
            at = await asyncio.to_thread(recorded_torn_down_at, fleet, source.name)
            torn = (
                f"{torn_down_words(source.name)} ({local_minute(at)}): what its box held "
                "is gone unless pulled"
                if at is not None
                else None
            )
            return _unanswered_plan(
                source, target, chosen, src, dst, problems, warnings, exc, finished, torn
            )
        problems.append(
            f"cannot read {source.name}'s queue from its box ({printable(exc.message, None)}) "
            "— a move must know "
            "which cells the box holds and which one runs; try again when it answers"
        )
        return refused()
    view = view_from_facts(source, facts)
    changed = prefix_problem(box_text, src.text)
    if changed is not None:
        problems.append(
            other_queue_problem(source, view)
            or f"{src.parsed.file} no longer matches the copy on {source.name}'s box; put the "
            f"sent lines back first:\n{changed}"
        )
        return refused()
    status = {c.index: c for c in view.cells}
    held = _box_lines(box_text)
    lines = src.text.split("\n")
    cells: list[MoveCell] = []
    for index, cell in chosen:
        on_box = status.get(index)
        state = on_box.status if on_box is not None and on_box.name == cell.name else ""
        running = state == RUNNING or cell.name in facts.alive_cells
        # A running cell's pulled files are mid-run, not results the roster counts: its
        # one refusal is that it runs.
        # UNFINISHED: a cell that ran and stopped before its end, or one waiting to run
        # again (h481 #5: a killed cell set to resume was refused as "it ran and its
        # results are kept"): a resume move may take its verified files.
        if cell.name in verified and not running and not (resume and state in UNFINISHED):
            if state in UNFINISHED:
                # Its verified files are a checkpoint to resume from: a resume move takes
                # one cell at a time (s35 resume hour #7 was told to rename its config,
                # which starts it over).
                # A cell set to run again may have finished before (a retry --done):
                # "stopped before its end" is not known of it (review h483 #7).
                how = "is set to run again" if state == RETRY else "stopped before its end"
                problems.append(
                    f"{verified[cell.name]}: it {how} and has verified files — move it "
                    f"alone to resume from them (rgt-tui queue move {shell_word(cell.name)} --to {dest})"
                )
            else:
                problems.append(
                    f"{verified[cell.name]}: it ran and its results are kept — moving it "
                    "would run it again (leave it, or give the new run a config of another "
                    "name)"
                )
        if running:
            problems.append(
                f"{cell.name} is running on {source.name} now — stop or kill it first "
                f"(S or X on its Queue tab; rgt-tui queue kill {source.name}), then move it"
            )
        elif state == DONE and cell.name not in verified:  # refused above when verified
            warnings.append(
                f"{cell.name} finished on {source.name} but has no verified results: "
                f"{dest} runs it again; its outputs on {source.name} stay where they are"
            )
        elif state in UNFINISHED and state != RETRY and cell.name not in verified and not resume:
            # A move of several cells takes lines, not checkpoints: one that stopped
            # before its end starts over there, said (h612 #3: a one-cell move refuses it
            # without --from-scratch, and two cells moved it silently).
            warnings.append(
                f"{cell.name} did not finish on {source.name} ({state}): on {dest} it "
                f"starts over, and its checkpoints on {source.name} stay there — move it alone "
                f"to resume from a verified one (rgt-tui queue move {shell_word(cell.name)} "
                f"--to {dest})"
            )
        if not cell.epochs_given and source.epochs != target.epochs:
            warnings.append(
                f"{cell.name}'s line gives no epochs: on {dest} it takes {dest}'s default "
                f"{target.epochs} ({source.name}'s is {source.epochs}); add the epochs to keep them"
            )
        raw = lines[cell.line - 1]
        cells.append(MoveCell(cell.name, cell.line, index, raw, cell.line <= held, state))
    unsent = [c.name for c in cells if not c.sent]
    origins = (
        await asyncio.to_thread(origin_marks, fleet, source.name, dest, unsent) if unsent else ()
    )
    warnings += [
        f"{m.cell} came to {source.name} from {m.host}, whose queue file's line {m.line} "
        f"says it moved to {source.name}: that line will say {dest}"
        for m in origins
    ]
    plan = MovePlan(
        source.name, target.name, tuple(cells), tuple(problems), tuple(warnings),
        source.queue, target.queue, src.text, dst.text, box_text, origins=origins,
    )  # fmt: skip
    if target_transport is not None and plan.ok:
        plan = await configs_warned(plan, target, target_transport)
    return plan


async def configs_warned(plan: MovePlan, target: HostConfig, transport: Transport) -> MovePlan:
    """``plan`` with a warning for each config of its cells that ``target``'s box lacks
    (``launch.configs_not_on_box``: one look, however many configs), or could not be
    asked for."""
    from rgt_tui.services.queue.launch import configs_not_on_box

    parsed = (
        parse_queue_line(c.raw, file="", line=c.line, default_epochs=target.epochs)
        for c in plan.cells
    )
    cells = [c for c in parsed if isinstance(c, QueueCell)]
    gone, unasked = await configs_not_on_box(target, transport, cells, code_acked=False)
    if not gone and not unasked:
        return plan
    return replace(plan, warnings=plan.warnings + tuple(gone + unasked))


def run_moved_hint(dest: str, count: int) -> str:
    """How moved cells that never ran get run on ``dest``: appended to a queue that runs
    there, else launched (``queue append`` refuses a box with no queue yet)."""
    what = "them" if count > 1 else "it"
    return (
        f"run {what}: rgt-tui queue append {dest} if a queue runs there, else rgt-tui launch {dest}"
    )


def pulled_done(fleet: Fleet, host: HostConfig, names: Iterable[str]) -> dict[str, int]:
    """Each of ``names`` whose state record, as the last pull brought it from the box,
    says its last attempt ended with exit 0 and nothing (a retry, a skip) came after:
    when it ended (the box's clock). Reads the pulled records."""
    folder = fleet_host_dir(fleet, host)
    done: dict[str, int] = {}
    for name in names:
        try:
            text = (folder / pulled_cell_log(name, ".state")).read_text(errors="replace")
        except (OSError, ValueError):
            continue
        attempts, marks = parse_cell_state(text), parse_cell_marks(text)
        last = attempts[-1] if attempts else None
        if last is None or not last.ended or last.exit_code != 0 or last.end_ts is None:
            continue
        if marks.retry_pending or marks.skipped is not None:
            continue
        done[name] = last.end_ts
    return done


def _unanswered_plan(
    source: HostConfig,
    target: HostConfig,
    chosen: list[tuple[int, QueueCell]],
    src: QueueSource,
    dst: QueueSource,
    problems: list[str],
    warned: list[str],
    exc: TransportError,
    finished: dict[str, str],
    torn: str | None,
) -> MovePlan:
    """A resume move's plan when the source box does not answer: each line becomes
    ``#moved-to`` (the box may hold it; a later launch there refuses a ``#moved-to`` line
    it does not hold, and says to delete it), and nothing is asked of the box.
    ``finished``: the chosen cells whose pulled records say they finished and whose
    results are verified here, with why: refused, as when the box answers (hour s24a #2:
    a done and verified cell was offered as "Move, resume" onto the spare). ``torn``:
    the source's torn-down record, said."""
    why = printable(exc.message, None)
    problems = [*problems, *finished.values()]
    skips = ", ".join(c.name for _, c in chosen)
    warnings = [*warned, *([torn] if torn else [])]
    if skips:  # none chosen (each refused): no skip to tell, and no "skip  now"
        warnings.append(
            f"{source.name} does not answer ({why}): its box is not told to skip {skips} "
            "now — if it comes back, the next launch or append there records the skip "
            "before its runner starts; a runner still going there would not know: look "
            "first (rgt-tui queue show)"
        )
    text = src.text or ""
    lines = text.split("\n")
    cells = tuple(MoveCell(c.name, c.line, i, lines[c.line - 1], True, "") for i, c in chosen)
    return MovePlan(
        source.name, target.name, cells, tuple(problems), tuple(warnings),
        source.queue, target.queue, text, dst.text or "", "",
        source_answered=False,
    )  # fmt: skip


def moved_texts(plan: MovePlan, today: str) -> tuple[str, str]:
    """The source and destination files' new texts (pure). Every other byte is kept: a
    sent line becomes its ``#moved-to`` line, an unsent one is deleted with its newline,
    and the destination gets ``# moved from SOURCE on DAY`` and the lines at its end."""
    eol = "\r\n" if "\r\n" in plan.dest_text else "\n"
    by_line = {c.line: c for c in plan.cells}
    pieces = plan.source_text.split("\n")
    out: list[str] = []
    for number, raw in enumerate(pieces, start=1):
        end = "\n" if number < len(pieces) else ""
        cell = by_line.get(number)
        if cell is None:
            out.append(raw + end)
        elif cell.sent:
            out.append(moved_marker(plan.dest, raw) + end)
        # else: a line the box never had goes, with its newline
    source_text = "".join(out)
    dest = plan.dest_text
    if dest and not dest.endswith("\n"):
        dest += eol
    dest += f"# moved from {plan.source} on {today}{eol}"
    dest += "".join(c.raw.removesuffix("\r") + eol for c in plan.cells)
    return source_text, dest


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


async def apply_move(
    plan: MovePlan, source: HostConfig, transport: Transport, *, today: str | None = None
) -> MoveResult:
    """Do a planned move: the box's skips, then the destination file, then the source.

    Refused (MoveError) when the plan has problems or either file changed since it was
    made. A step that fails says what was done and how to finish.
    """
    await still_as_planned(plan, source, transport)
    if not plan.source_answered:
        return await _write_files(plan, source, (), today)
    skipped: list[str] = []
    if plan.on_box:
        from rgt_tui.services.queue.backends import backend_for

        backend = backend_for(source)  # a scheduler cancels the cell's pending job first
        for cell in plan.on_box:
            try:
                await backend.skip(transport, cell.name, f"moved to {plan.dest}")
            except (QueueError, TransportError) as exc:
                done = f" ({', '.join(skipped)} already skipped there)" if skipped else ""
                raise MoveError(
                    f"{source.name}'s box did not record the skip of {cell.name}: "
                    f"{printable(exc, None)} — "
                    f"no file was changed{done}; run the move again"
                ) from exc
            skipped.append(cell.name)
    # Shielded: once the box skips the cells, both queue files must be written; a
    # cancel between them would leave the cells in both (or in neither).
    return await asyncio.shield(_write_files(plan, source, tuple(skipped), today))


async def still_as_planned(plan: MovePlan, source: HostConfig, transport: Transport) -> None:
    """Everything the move stands on is as the plan saw it: MoveError ("nothing was
    moved") otherwise. ``apply_move`` checks it first; a resume move checks it before its
    push too, so a refusal never leaves pushed files on the target (s35 resume hour #2)."""
    if not plan.ok:
        raise MoveError("the move has problems:\n" + "\n".join(plan.problems))
    assert plan.source_path is not None and plan.dest_path is not None
    for path, text in ((plan.source_path, plan.source_text), (plan.dest_path, plan.dest_text)):
        if await asyncio.to_thread(_read, path) != text:
            raise MoveError(
                f"{display_path(path)} changed since the move was planned — nothing was "
                "moved; run the move again"
            )
    if not plan.source_answered:
        await _still_gone(plan, source, transport)
        return
    # An append since the plan (another terminal) may have sent a line this move would
    # delete as unsent: the box would then hold, and run, a line the file no longer has.
    try:
        await transport.connect()
        box_text = await read_box_queue_text(transport, source.name)
    except (QueueError, TransportError) as exc:
        why = printable(exc, None)  # may quote the box
        raise MoveError(f"cannot read {source.name}'s queue ({why}) — nothing was moved") from exc
    if box_text != plan.box_text:
        raise MoveError(
            f"{source.name}'s queue on its box changed since the move was planned (cells were "
            "appended or launched) — nothing was moved; run the move again"
        )
    if plan.on_box:
        await _cells_as_planned(plan, source, transport)


async def _still_gone(plan: MovePlan, source: HostConfig, transport: Transport) -> None:
    """A plan made while the source box did not answer stands only while it still does
    not: a box back since (a network drop, a restarted instance) may run the cell now,
    and its box was never told to skip it — moved as planned, the cell ran on both boxes
    (h592 #1). MoveError then: the move planned again sees the box's own state."""

    # Asked as the plan asked it, by reading its queue: a connection still open to a box
    # whose commands time out is no answer (review h594 #3: connect() alone returned at
    # once on it, and the move was refused for good).
    async def answers() -> None:
        await transport.connect()
        await read_box_queue_text(transport, source.name)

    try:
        await within(answers(), RECHECK_CONNECT_S)
    except (TransportError, asyncio.TimeoutError):
        return  # still gone: the plan stands (a QueueError is the box's own answer)
    cells = ", ".join(c.name for c in plan.cells)
    raise MoveError(
        f"{source.name} answers again since the move was planned — nothing was moved; "
        f"run the move again: its plan asks the box whether {cells} runs there"
    )


async def _cells_as_planned(plan: MovePlan, source: HostConfig, transport: Transport) -> None:
    """The cells the box holds are as the plan saw them: one that started, or even ran to
    its end, since (a queue goes on while the dialog is open) is not moved as pending,
    to run again on the other box. MoveError naming it; nothing is moved. (The box's
    skip refuses a cell that runs at that moment as well.)"""
    try:
        view = view_from_facts(source, await read_queue_facts(source, transport))
    except (QueueError, TransportError) as exc:
        why = printable(exc, None)
        raise MoveError(f"cannot read {source.name}'s queue ({why}) — nothing was moved") from exc
    now = {c.index: c for c in view.cells}
    for cell in plan.on_box:
        seen = now.get(cell.index)
        status = seen.status if seen is not None and seen.name == cell.name else ""
        if status != cell.status:
            was = cell.status or "not started"
            raise MoveError(
                f"{cell.name} is {seen.label if seen else 'gone'} on {source.name} now (the plan "
                f"saw it {was}) — nothing was moved; plan the move again"
            )


async def _write_files(
    plan: MovePlan, source: HostConfig, skipped: tuple[str, ...], today: str | None = None
) -> MoveResult:
    """The destination file, then the source file (each atomically)."""
    assert plan.source_path is not None and plan.dest_path is not None
    day = today or time.strftime("%Y-%m-%d")
    new_source, new_dest = moved_texts(plan, day)
    try:
        await asyncio.to_thread(atomic_write, plan.dest_path, new_dest)
    except OSError as exc:
        raise MoveError(
            f"could not write {display_path(plan.dest_path)} ({exc}); no file was changed"
            + (f" but {source.name}'s box skips {', '.join(skipped)}" if skipped else "")
            + " — fix it and run the move again"
        ) from exc
    try:
        await asyncio.to_thread(atomic_write, plan.source_path, new_source)
    except OSError as exc:
        raise PartlyMoved(
            f"{display_path(plan.dest_path)} has the moved lines, but {display_path(plan.source_path)} "
            f"could not be written ({exc}) — make it writable and, in it, "
            + "; ".join(
                f"turn line {c.line} into '{moved_marker(plan.dest, c.raw)}'"
                if c.sent
                else f"delete line {c.line}"
                for c in plan.cells
            )
        ) from exc
    return MoveResult(plan, skipped, await asyncio.to_thread(rewrite_origins, plan.origins))
