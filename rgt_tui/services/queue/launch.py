"""The box runner's launch of a host's queue (DESIGN.md, Queues); appending lives in
``append``, a Slurm host's array in ``slurm.launch`` (built on this plan).

``plan_launch`` reads the local queue file and the box's records and returns a frozen
``LaunchPlan``: the cells, the start index, the detach method, and every reason it must
not go ahead (already running, duplicate names, unreachable, a rewritten line). The UI
shows the plan as the confirmation; ``launch(plan)`` then does it in one round trip.
Callers reach these through the host's backend (``services.queue.backends``).

What the box holds is append-only: ``~/.rgt/queue/queue.txt`` (the queue file as it was
sent) and ``~/.rgt/queue/cells.tsv`` (each cell rendered into its shell command by
``domain.queue_file.render_command``; the runner reads this, so bash never re-parses
the queue format). The box copy must stay a prefix of the local file: a change to an
earlier line would shift the indices ``--start`` counts in, so it is refused with the
differing lines shown (``fresh=True`` moves the old queue aside instead).

Past 450 lines on purpose: ``plan_launch`` is one ordered list of checks, the local ones
first (no box asked for a refusal known here), then the box's, and its refusals' words
sit beside it; ``launch`` is the one round trip that acts on the plan.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rgt_tui.domain.config import Credential, Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_file import QueueCell, expand_home, writes_out
from rgt_tui.domain.queue_prefix import prefix_problem, sent_prefix_end, unsent_text
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.domain.queue_state import (
    DONE,
    FAILED,
    INTERRUPTED,
    KILLED,
    PENDING,
    RETRY,
    SKIPPED,
    QueueView,
    cell_span,
    relaunch_start,
)
from rgt_tui.domain.shared_account import shared_account_problem
from rgt_tui.domain.text import is_digits, printable, shell_word
from rgt_tui.domain.unfinished import is_unfinished
from rgt_tui.domain.units import fmt_duration, plural
from rgt_tui.services.box_ctl import QueueError, deployed_name, refusal, run_ctl
from rgt_tui.services.box_script import script_text
from rgt_tui.services.credentials import launch_credentials
from rgt_tui.services.journal import torn_down_refusal
from rgt_tui.services.preflight_smoke import send_cell_env
from rgt_tui.services.queue.box import probe, read_box_queue_text
from rgt_tui.services.queue.cells import (
    PlannedCell,
    read_local_queue,
    render_queue,
    unsent_moved,
)
from rgt_tui.services.queue.check import display_path, missing_configs
from rgt_tui.services.queue.epochs import epochs_warnings
from rgt_tui.services.queue.launch_checks import unreadable_credentials
from rgt_tui.services.queue.launch_preflight import (
    cell_env_of,
    cells_to_run,
    first_cell_command,
    preflight_acks,
    preflight_problems,
    preflight_warnings,
    run_preflight,
    unknown_acks_problem,
)
from rgt_tui.services.queue.moved_skips import (
    moved_skip_notes,
    record_moved_skips,
    unskipped_moved,
)
from rgt_tui.services.queue.records import other_queue_problem, view_from_facts
from rgt_tui.services.queue.verified_checkpoint import newest_failed
from rgt_tui.transport import Transport

if TYPE_CHECKING:
    from rgt_tui.services.preflight import PreflightReport

DETACH_CHOICES = ("auto", "tmux", "nohup")
# A planned cell's status when it is a '#moved-to' line (its box skips it), as the
# Queue tab and `queue show` say it (domain.queue_state.CellView.label).
MOVED = "moved"
NOT_RUN = (SKIPPED, MOVED)  # what the runner passes over: it runs the cell elsewhere, or never

__all__ = [
    "LaunchPlan", "LaunchResult", "PlannedCell", "QueueError", "default_start", "launch",
    "plan_launch",
]  # fmt: skip


@dataclass(frozen=True)
class LaunchPlan:
    """What a launch would do, or why it must not; shown to the user before ``launch``."""

    host: str
    cells: tuple[PlannedCell, ...]
    start_index: int
    detach: str  # tmux | nohup, as the box will do it; "" when the box was not reached
    session: str  # the tmux session name (rgt-<host>)
    box_queue_dir: str
    workdir: str
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    fresh: bool = False
    # A refusal here that a fresh start settles (lines sent before changed, another
    # entry's or kind's queue on the box): the launch dialog offers Start over for it,
    # and for no other refusal (review h526 #6: a shared account's said the opposite).
    starts_over: bool = False
    current: QueueView | None = None
    queue_append: str = ""  # bytes to append to the box's queue.txt
    cells_append: str = ""  # lines to append to the box's cells.tsv
    expect_qbytes: int = 0  # queue.txt/cells.tsv sizes the plan was made against
    expect_clines: int = 0
    # The code identity (domain.code_identity.CodeIdentity.record()) the launch was
    # checked against; each cell's state records it (U42). "" when none is known.
    code_id: str = ""
    # The box's sync record that check read (PreflightReport.code_stamp): the box refuses
    # the start when a sync replaced it since (h603 #1). "" when none was checked.
    code_stamp: str = ""
    # What preflight found on the box before the meter runs (None: not run, or the box
    # was not reached), and the checks this plan was asked to go ahead without (--ack).
    preflight: PreflightReport | None = None
    acks: tuple[str, ...] = ()
    host_acks: tuple[str, ...] = ()  # the host's preflight_ack, acknowledged for every launch
    # Where each credential the launch sends is read (names and sources only, never a
    # value: services.credentials reads them at send time, U34).
    credentials: tuple[Credential, ...] = ()
    # What every cell gets exported from the fleet file (the mirrors: PIP_INDEX_URL,
    # HF_ENDPOINT, generic-ssh §3), written to the box's ~/.rgt/cell.env before the runner.
    cell_env: tuple[tuple[str, str], ...] = ()
    # What the detach method will do beyond the cells, one line each (a Slurm host's
    # array, limits and sbatch command: services.queue.slurm.launch); shown with the plan.
    notes: tuple[str, ...] = ()
    # A scheduler's submit command (detach "slurm": the whole sbatch argv), () otherwise.
    sbatch: tuple[str, ...] = ()
    # ``(cell, host it moved to)``: '#moved-to' cells the box holds without a skip record
    # (moved while it did not answer); the launch records their skips first.
    moved_skips: tuple[tuple[str, str], ...] = ()

    @property
    def unacknowledged(self) -> tuple[str, ...]:
        """The names of the failed preflight checks that still refuse this launch."""
        if self.preflight is None:
            return ()
        return tuple(c.name for c in self.preflight.unacknowledged((*self.acks, *self.host_acks)))

    @property
    def ok(self) -> bool:
        """True when nothing stops the launch."""
        return not self.problems

    @property
    def to_run(self) -> tuple[PlannedCell, ...]:
        """The cells from the start index on (``runs``: those the runner runs)."""
        return self.cells[self.start_index :]

    @property
    def runs(self) -> tuple[PlannedCell, ...]:
        """The cells the runner will run: first those before the start index that wait
        for their retry (a stop left them waiting: the runner runs retries first, and
        the plan said they would not run: hour s20c #6), then those from the start
        index, less those it skips (moved to another host, or skipped by the user)."""
        retries = tuple(c for c in self.cells[: self.start_index] if c.status == RETRY)
        return retries + tuple(c for c in self.to_run if c.status not in NOT_RUN)


@dataclass(frozen=True)
class LaunchResult:
    """A started runner."""

    host: str
    pid: int
    detach: str
    session: str
    start_index: int
    cells: int  # how many cells the runner will run (LaunchPlan.runs)
    archived: str | None = None  # where ``fresh`` moved the previous queue
    # One line when the launch removed a credentials file an earlier launch left on the
    # box (it sends none: services.credentials.launch_credentials); "" otherwise.
    credentials: str = ""


def _damaged_checkpoints(fleet: Fleet, host: HostConfig, cells: list[PlannedCell]) -> list[str]:
    """A warning for each of ``cells`` whose newest pulled checkpoint failed the last
    verify here. Reads the records."""
    said = []
    for cell in cells:
        failed = newest_failed(fleet, host, cell.name)
        if failed is not None:
            rel, status = failed
            said.append(
                f"cell {cell.index} ({cell.name}) resumes from its newest checkpoint, {rel}, "
                f"which failed the last verify here ({status}): it may fail as it loads it "
                f"— R (rgt-tui queue retry {host.name} {shell_word(cell.name)}) starts it over, rgt-tui "
                "queue move resumes it from a verified copy on another box"
            )
    return said


def default_start(plan: LaunchPlan) -> int:
    """Where a launch starts when no index is given (the TUI's launch dialog):
    ``relaunch_start`` — the resume index of an interrupted or stopped queue, else the
    first cell after the last done one that is not done nor moved away (a finished queue
    with cells appended, or a failed one: a start before a done cell runs it again, paid
    work). A cell moved while its box did not answer counts as moved here, not as the
    interrupted cell the box's records alone make it."""
    current = plan.current
    start = relaunch_start(
        current.resume_index if current is not None else None, plan.cells, NOT_RUN
    )
    # The box holds more cells than the local file (a new queue file): its resume index
    # may lie past the file's cells, and the plan from the file's last cell refuses with
    # the way on (--fresh, Start over). From the box's index it was refused as "start
    # index 5 is outside the queue", a start the user never gave (h531 #9).
    if current is not None and len(plan.cells) < len(current.cells):
        return min(start, max(len(plan.cells) - 1, 0))
    return start


def start_problem(host: HostConfig, cells: tuple[QueueCell, ...], start_index: int) -> str | None:
    """The refusal of a start index that is no cell of ``host``'s local queue file: known
    before the box is asked anything (hour s25b #9: refused after ~25 s of connecting and
    preflight). None when it is a cell, or the file has none (``_empty_queue`` says so)."""
    if not cells or 0 <= start_index < len(cells):
        return None
    last = len(cells) - 1
    indices = f"index {last}" if last == 0 else f"indices 0–{last}"
    return (
        f"start index {start_index} is outside the queue: {display_path(host.queue)} has "
        f"{plural(len(cells), 'cell')}, {indices} — start index {last} runs the last one"
    )


def _ran_again(
    host: HostConfig, view: QueueView, cells: Sequence[QueueCell], home: str
) -> list[str]:
    """A fresh launch's cells that ran on the box before: each starts again in its same
    ``{out}``, where the earlier run's files stay and may be overwritten — moving the
    queue aside moves records and logs, not outputs (h501 #9: a done, pulled cell was
    rerun into its folder with no word of it; a retry sets the folder aside first)."""
    if host.run is None or "{out}" not in host.run:
        return []  # the template writes no folder of the cell's own (as ``cell_out``)
    ran = {c.name for c in view.cells if c.status not in (PENDING, *NOT_RUN)}
    again = [c.name for c in cells if c.name in ran]
    if not again:
        return []
    one = len(again) == 1
    named = ", ".join(printable(n, 100) for n in again[:5]) + (" …" if len(again) > 5 else "")
    out = f"{expand_home(host.durable_dir, home).rstrip('/')}/{printable(again[0], 100)}"
    return [
        f"{named} ran on {host.name} before: this launch runs {'it' if one else 'them'} again "
        f"in the same output folder ({out}{'' if one else ', …'}), where the earlier files "
        "stay and may be overwritten — pull and verify them first (a retry, R, sets a "
        "cell's folder aside instead)"
    ]


def _unfinished_set_aside(host: HostConfig, view: QueueView) -> list[str]:
    """The box's queue cells left unfinished (failed, killed, interrupted, waiting for a
    retry): the teardown gate reads the box's current queue only, so once it is moved
    aside they lock nothing (h531 #3: two unfinished cells, never acknowledged, were
    forgotten by the gate after a --fresh launch)."""
    left = [c.name for c in view.cells if is_unfinished(c, view)]
    if not left:
        return []
    one = len(left) == 1
    named = ", ".join(printable(n, 100) for n in left[:5]) + (" …" if len(left) > 5 else "")
    return [
        f"{named} {'is' if one else 'are'} unfinished in that queue: once it is moved aside, "
        f"the teardown gate no longer counts {'it' if one else 'them'} as unfinished work "
        f"— pull and verify what {'it' if one else 'they'} left first, or run "
        f"{'it' if one else 'them'} in this queue"
    ]


def _empty_queue(host: HostConfig) -> str:
    queue = host.queue or "its queue file"
    return f"the queue of {host.name} has no cells: add lines to {queue}, then launch"


def running_problem(
    host: str, view: QueueView, session: str, host_config: HostConfig | None = None
) -> str | None:
    """The refusal when ``host``'s queue is running: this boot, no done, runner or session
    alive; ``host_config`` tells a box running another kind of queue (a rank's own)."""
    launch = view.launch
    if launch is None or launch.done is not None or launch.boot_id != view.boot_id:
        return None
    if not (view.runner_alive or view.session_present):
        return _orphan_problem(host, view)
    where = f"runner pid {launch.pid}" if view.runner_alive else f"tmux session {session}"
    current = view.current
    on = f", on cell {current.index} ({current.name})" if current else ""
    if host_config is not None and other_queue_problem(host_config, view) is not None:
        # A rank's box running its own queue (or a box a group's job): not this queue's
        # to stop under this name (hour s23c #9 named the group's queue, and its kill).
        return (
            f"the box runs another queue ({where}, launched "
            f"{fmt_duration(view.now - launch.ts)} ago{on}), not {host}'s — wait for it, or "
            "stop it under the host name whose queue it is (rgt-tui queue stop / queue kill "
            "HOST, or S / X on that host's Queue tab)"
        )
    return (
        f"the queue on {host} is already running ({where}, launched {fmt_duration(view.now - launch.ts)} ago{on}) "
        "— wait for it, append cells to it (they join the running queue), or stop it first: "
        "S / X on the Queue tab, queue stop / queue kill on the command line (they record "
        "who stopped it; a tmux kill-session or kill reads later as a manual kill)"
    )


def _orphan_problem(host: str, view: QueueView) -> str | None:
    """A cell that still runs though its runner is gone (the runner killed, a cell that
    outlived its hang-up): a launch would start a second copy of it beside the first,
    both writing its output (h612 #1). None when no cell runs."""
    cell = view.current
    if cell is None:
        return None
    name = printable(cell.name, 60)
    return (
        f"cell {cell.index} ({name}) still runs on {host} though its runner is gone: a launch "
        f"now would start a second copy beside it — kill it first (X on the Queue tab, or "
        f"rgt-tui queue kill {host} {shell_word(cell.name)}), then launch"
    )


async def plan_launch(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport,
    *,
    start_index: int = 0,
    detach: str = "auto",
    fresh: bool = False,
    acks: Iterable[str] = (),
    preflight: bool = True,
    retry_only: bool = False,
) -> LaunchPlan:
    """Everything a launch of ``host``'s queue would do, and every reason it must not.

    ``preflight``: run preflight on the box first (services.preflight); each failed check
    refuses the launch unless it is acknowledged by name in ``acks`` (``--ack``, the plan
    dialog) or in the host's ``preflight_ack``; with it, every credential the launch
    sends is read here first, and each that cannot be read refuses the launch, all named
    at once (``launch_checks``). Off only where a caller is about something else than the
    box's readiness (and says so).

    ``retry_only`` (services.queue.control): start past the last cell, so the runner
    runs only the cells marked for a retry (and the start index is not a cell).
    """
    if detach not in DETACH_CHOICES:
        raise ValueError(f"detach must be one of {', '.join(DETACH_CHOICES)}, not {detach!r}")
    session = tmux_session_name(host.name)
    acked = tuple(dict.fromkeys(a.strip() for a in acks if a.strip()))
    problems, cells, text = await read_local_queue(fleet, host)
    if retry_only:
        start_index = len(cells)
        if problems and host.queue is not None:
            # Why a retry cares about lines it never sends (h612 #5: refused for two bad
            # unsent lines, with no word of why or of the check that names them).
            where = display_path(host.queue)
            problems.append(
                f"a retry sends none of {where}'s unsent lines, but reads the whole file to "
                f"match it to the box's copy: fix the lines named first (rgt-tui queue "
                f"check {shell_word(str(where))})"
            )
    unknown = unknown_acks_problem(acked)
    if unknown:
        problems.append(unknown)
    shared = shared_account_problem(fleet, host)
    if shared:
        problems.append(shared)
    if preflight:
        problems += await unreadable_credentials(host)
    base = {
        "host": host.name, "session": session, "start_index": start_index, "fresh": fresh,
        "acks": acked, "host_acks": preflight_acks(host),
        "credentials": host.ready.credentials, "cell_env": cell_env_of(host),
    }  # fmt: skip

    def refused() -> LaunchPlan:
        return LaunchPlan(
            cells=(), detach="", box_queue_dir="", workdir=host.workdir, problems=tuple(problems), **base
        )  # fmt: skip

    # No run template: nothing can be rendered (host_problems said why, with the line).
    if (problems and not cells) or host.run is None:
        return refused()
    # GEN1: refused in the TUI's plan too; a file read, off the event loop. Before the
    # box is asked anything: a torn-down host's plan ran preflight for ~10 s only to be
    # refused for this (hour s23b #9).
    torn_down = await asyncio.to_thread(torn_down_refusal, fleet, host.name)
    if torn_down is not None:
        problems.append(torn_down)
        if not cells and not retry_only:
            problems.append(_empty_queue(host))  # said too: a local fact, no box asked
    # A start index past the file's last cell: a local fact too, said before the box is
    # asked anything (hour s25b #9).
    past = None if retry_only else start_problem(host, cells, start_index)
    if past is not None:
        problems.append(past)
    if torn_down is not None or past is not None:
        return refused()
    try:
        await transport.connect()
        facts = await probe(
            transport,
            host.name,
            session=session,
            workdir=host.workdir,
            durable_dir=host.durable_dir,
        )
        box_text = "" if fresh else await read_box_queue_text(transport, host.name)
        todo = None if retry_only else cells_to_run(cells, start_index)
        first = None
        if preflight and not retry_only and (host.ready.smoke_seconds or host.ready.smoke):
            first = first_cell_command(host, cells, facts.home, start_index)
        report = (
            await run_preflight(fleet, host, transport, cells=todo, first_cell=first)
            if preflight
            else None
        )
    except TransportError as exc:
        problems.append(
            f"{host.name} is unreachable: {exc.message}" + (f" — {exc.fix}" if exc.fix else "")
        )
        return refused()
    except QueueError as exc:
        problems.append(exc.message)
        return refused()
    held_back = ""
    # Where the part the box holds ends in the local file; a sent line rewritten as its
    # '#moved-to' line still counts as sent (h471 #1: a plain prefix test missed it).
    sent_end = sent_prefix_end(box_text, text) if retry_only and box_text else None
    if sent_end is not None and len(cells) > len(facts.deployed):
        # A retry runs the cells it retries and no more: lines added to the file and not
        # sent stay for append or a launch. Sent with it, the box's copy took them and its
        # cell table did not, so they never ran and append saw nothing new (s37 dev-loop
        # hour #4).
        unsent = len(cells) - len(facts.deployed)
        cells, text = cells[: len(facts.deployed)], text[:sent_end]
        start_index = base["start_index"] = len(cells)
        held_back = (
            f"{plural(unsent, 'line')} of {display_path(host.queue)} not sent yet "
            f"{'stays' if unsent == 1 else 'stay'} unsent by this retry: a (Append) or "
            f"rgt-tui queue append {host.name} sends {'it' if unsent == 1 else 'them'}"
        )
    rendered = render_queue(host, cells, text, facts.home)
    # The box's records alone (they must show the skips it misses, to record them), and
    # as people read them: a '#moved-to' cell moved, not interrupted (records.py).
    view = view_from_facts(host, facts)
    moved = {c.name: c.moved_to for c in cells if c.moved_to}
    shown_view = view_from_facts(host, facts, moved) if moved else view
    warnings: list[str] = [held_back] if held_back else []
    if report is not None:
        problems += preflight_problems(report, acked, host.ready.preflight_ack)
        warnings += preflight_warnings(report, acked, host.ready.preflight_ack)
    workdir = expand_home(host.workdir, facts.home)
    if not facts.workdir_exists:
        problems.append(
            f"workdir {workdir} does not exist on {host.name} — create it, or fix workdir in hosts.toml"
        )
    if host.run and not writes_out(host.run):
        # Where each cell writes is then unknown: the roster matches results by the cell's
        # name, which an earlier run's folder of that name satisfies (h522 #1).
        warnings.append(
            "the run template has no {out}: where each cell writes is not known, so verify "
            "and the teardown gate find its results only by a folder named after it under "
            "the pull folders — pass {out} to the command (e.g. --out {out})"
        )
    if not facts.durable_exists:
        warnings.append(
            f"durable_dir {expand_home(host.durable_dir, facts.home)} does not exist yet: "
            "each cell's command must create its {out} directory"
        )
    running = running_problem(host.name, view, session, host)
    if running:
        problems.append(running)
    qbytes, clines, deployed = facts.qbytes, facts.clines, len(facts.deployed)
    other = None  # the box's records are another kind of queue's (other_queue_problem)
    starts_over = False  # a refusal below that --fresh settles
    # Another entry for this account launched the queue on the box (one box under two
    # spellings): said as such, not as this file's lines "changed since they were sent"
    # with --fresh for a fix that moved the other entry's queue aside unnamed (s20c #3).
    owner = facts.owner if facts.owner and facts.owner != session and facts.deployed else ""
    if fresh:
        qbytes = clines = deployed = 0
        if facts.deployed:
            whose = f", launched by another host entry (tmux session {owner})," if owner else ""
            warnings.append(
                f"the box's current queue ({plural(len(facts.deployed), 'cell')}){whose} will be "
                "moved aside to ~/.rgt/queue.archived.<time>, records and logs included"
            )
            warnings += _ran_again(host, view, cells[start_index:], facts.home)
            warnings += _unfinished_set_aside(host, view)
    elif (
        owner
        and prefix_problem(box_text, text) is not None
        and other_queue_problem(host, view) is None  # a group's job says itself (rank)
    ):
        # (Its lines the same as this file's, as after a rename of the entry: it goes on.)
        other = (
            f"this account's queue on the box was launched by another host entry (tmux "
            f"session {owner}), not {host.name} ({session}): both entries log in to one "
            "account, which holds one queue (~/.rgt/queue) — launch, stop and append from "
            f"that entry; to make {host.name} the account's, launch with --fresh (that "
            "queue is moved aside, its records and logs kept)"
        )
        problems.append(other)
        starts_over = True
    else:
        changed = prefix_problem(box_text, text)
        other = other_queue_problem(host, view) if changed is not None else None
        if other is not None:
            problems.append(other)
        elif changed is not None:
            problems.append(
                f"earlier lines of {display_path(host.queue)} changed since they were sent to {host.name} "
                "(cells keep their index: append lines, comment nothing out that was sent; a "
                "sent line cannot be changed on the box — to run an edited one, add it at "
                "the end under a new name, a copy of its config; or start a new queue: launch "
                "with --fresh, or Start over in the Launch dialog):\n" + changed
            )
        mismatch = rendered.mismatch_problem(host.name, facts.deployed)
        if mismatch and changed is None:
            problems.append(mismatch)
        starts_over = bool(other or changed or mismatch)
    problems += unsent_moved(host, cells, deployed)
    # Another queue's records on the box say nothing of this file's moved lines.
    moved_skips = unskipped_moved(cells, deployed, view) if other is None else ()
    warnings += moved_skip_notes(host.name, moved_skips)
    if not cells and not retry_only:
        problems.append(_empty_queue(host))
    method = detach
    if detach == "auto":
        method = "tmux" if facts.tmux else "nohup"
    elif detach == "tmux" and not facts.tmux:
        problems.append(f"tmux is not installed on {host.name} — use --detach nohup (setsid nohup)")
    if method == "tmux" and facts.session_present and not running:
        problems.append(
            f"tmux session {session} is left over on {host.name} though the queue is not running "
            f"— look at it (tmux attach -t '={session}'), then close it: tmux kill-session -t '={session}'"
        )
    planned = rendered.planned(
        deployed,
        {c.name: MOVED if c.label == MOVED else c.status for c in shown_view.cells}
        if not fresh
        else {},
    )
    before = planned[:start_index]
    skipped = [c.index for c in before if c.status not in (DONE, RETRY, *NOT_RUN)]
    if skipped and 0 < start_index < len(cells) and not retry_only:
        warnings.append(
            f"{cell_span(skipped, 'comes', 'come')} before start index {start_index} and "
            f"{'is' if len(skipped) == 1 else 'are'} not done: not run by this launch"
        )
    retried = [c.index for c in before if c.status == RETRY]
    if retried and not retry_only:
        warnings.append(
            f"{cell_span(retried, 'waits', 'wait')} to run again: the runner runs "
            f"{'it' if len(retried) == 1 else 'them'} first, then from start index {start_index}"
        )
    # A config the code tree does not hold (or sync does not send) fails its cell on the
    # box, paid time spent: each cell still to run (not done; a retried one too) is checked.
    due = [c.index for c in planned if c.status not in (DONE, *NOT_RUN)]
    due = [i for i in due if i >= start_index or planned[i].status == RETRY]
    absent = await asyncio.to_thread(missing_configs, fleet, host, [cells[i] for i in due])
    problems += [str(p) for p in absent]
    if report is not None and any(c.name == "code" and not c.ok for c in report.checks):
        # The box's code differs, and an acknowledged code check lets the launch go on:
        # a config the box lacks still fails its cell at once, paid time spent (a new
        # user's hour, s39 #4: "code" acknowledged for uncommitted changes hid it).
        code_acked = "code" in (*acked, *host.ready.preflight_ack)
        missing, unread = await configs_not_on_box(
            host, transport, [cells[i] for i in due], code_acked=code_acked
        )
        problems += missing
        warnings += unread
    elif host.ready.code is None and transport.connected:
        # No code tree says what the box holds: it is asked for the due cells' configs
        # (h612 #2: cells moved there failed at their start, paid time spent). A warning:
        # without a tree, a {cfg} that names no file of the workdir may be a name the run
        # reads its own way.
        missing, unread = await configs_not_on_box(
            host, transport, [cells[i] for i in due], code_acked=False
        )
        warnings += missing + unread
    again = [c.index for c in planned[start_index:] if c.status == DONE]
    if again:
        warnings.append(
            f"{cell_span(again, 'is', 'are')} done and will run again (each reloads its checkpoint)"
        )
    # A cell run again resumes from the checkpoint in its {out}: one the last verify here
    # found damaged crashes it at its first load (hour s24c #1: only the retry said so).
    resumed = [c for c in planned[start_index:] if c.status in (FAILED, KILLED, INTERRUPTED)]
    if resumed and not fresh:
        warnings += await asyncio.to_thread(_damaged_checkpoints, fleet, host, resumed)
    if facts.workdir_exists:  # U32: a host default overriding the epochs a config declares
        from_start = list(enumerate(cells))[start_index:]
        warnings += await epochs_warnings(host, from_start, transport, workdir)
    box_qdir = facts.home.rstrip("/") + "/.rgt/queue"
    return LaunchPlan(
        cells=planned,
        detach=method,
        box_queue_dir=box_qdir,
        workdir=workdir,
        problems=tuple(problems),
        warnings=tuple(warnings),
        current=None if fresh else shown_view,
        queue_append=unsent_text(box_text, text) if not problems else "",
        cells_append="".join(rendered.lines[deployed:]) if not problems else "",
        expect_qbytes=qbytes,
        expect_clines=clines,
        preflight=report,
        code_id=report.code.record() if report is not None and report.code is not None else "",
        code_stamp=report.code_stamp if report is not None and report.code is not None else "",
        moved_skips=moved_skips,
        starts_over=starts_over and not fresh,
        **base,
    )


async def configs_not_on_box(
    host: HostConfig, transport: Transport, cells: list[QueueCell], *, code_acked: bool
) -> tuple[list[str], list[str]]:
    """A problem for each config of ``cells`` (the code tree's, as ``tree_configs`` reads
    them) that the box's workdir does not hold; one command, however many configs. And
    a warning when the box could not be asked (a launch does not wait on it).
    ``code_acked``: the failed code check is acknowledged, which the problem then says
    is not enough (without it, the code check's own refusal stands beside it)."""
    from rgt_tui.services.box_script import box_path, box_refusal, run_box_script
    from rgt_tui.services.queue.check import tree_configs

    configs = tree_configs(host, cells, without_code=True)
    if host.ready.code is None:
        # No tree says what {cfg} is: only a value shaped as a file is asked after; a
        # Hydra `--config-name exp1` or `--model gpt2` was warned of as a missing file at
        # every plan (review h620 #4).
        configs = {rel: c for rel, c in configs.items() if _file_shaped(rel)}
    if not configs:
        return [], []
    names = sorted(configs)[:CONFIGS_LOOKED_AT]
    script = (
        'cd "$1" 2>/dev/null || exit 0; shift; for f; do [ -e "$f" ] || printf "%s\\n" "$f"; done'
    )
    try:
        await transport.connect()  # a move's target is connected only when there is this to ask
        result = await run_box_script(
            transport, script, "configs", box_path(host.workdir), *names, timeout=CONFIG_LOOK_S
        )
    except TransportError as exc:
        return [], [_configs_unasked(host, exc.message)]
    failed = box_refusal(result, "the look")
    if failed is not None:
        # A look that failed or was cut short lists only some of what is missing (s44
        # note: its exit status was ignored, and a partial list passed for a whole one).
        return [], [_configs_unasked(host, failed.message)]
    gone = [line for line in result.stdout.splitlines() if line in configs]
    # Said only when true (a user's second hour, s41: "acknowledged" beside the code
    # check's own unacknowledged refusal).
    acked = "the code check is acknowledged, but " if code_acked else ""
    fix = (
        f"rgt-tui sync {host.name} (y in the TUI)"
        if host.ready.code is not None
        else f"copy it to the box (no code tree is set for {host.name} to sync: docs/ready.md)"
    )
    return [
        f"{printable(rel, 200)} is not on {host.name} (its workdir {host.workdir}): cell "
        f"{', '.join(printable(c.name, 60) for c in configs[rel][:3])} would fail at once — "
        f"{acked}no cell runs without its config: {fix}, or fix the path in the queue file"
        for rel in gone
    ], []


# Suffixes of the files a run reads as its config or script.
FILE_SUFFIXES = frozenset(
    {".py", ".sh", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".conf", ".txt"}
)


def _file_shaped(rel: str) -> bool:
    """Whether ``rel`` reads as a file's path: in a folder, or with a file's suffix."""
    return "/" in rel or posixpath.splitext(rel)[1].lower() in FILE_SUFFIXES


def _configs_unasked(host: HostConfig, why: str) -> str:
    fix = f" — rgt-tui sync {host.name}" if host.ready.code is not None else ""
    return (
        f"could not ask {host.name} for the cells' configs ({why}): a config the box "
        f"lacks fails its cell at once{fix}"
    )


CONFIGS_LOOKED_AT = 500  # a queue's distinct configs looked at on the box, at most
CONFIG_LOOK_S = 30.0


async def launch(plan: LaunchPlan, transport: Transport) -> LaunchResult:
    """Start the planned runner detached; returns once its launch record is on the box.

    The box re-checks under a lock that the queue is not running and that queue.txt and
    cells.tsv are the sizes the plan saw, so a plan that went stale is refused, not run.
    """
    if not plan.ok:
        raise QueueError(plan.host, "the launch plan has problems:\n" + "\n".join(plan.problems))
    await transport.connect()
    # Read here and sent over stdin before the runner starts (U34); one that cannot be
    # read stops the launch before anything changes on the box. A launch that names none
    # removes the file an earlier one left, so no cell of this run sources old tokens.
    creds_line = await launch_credentials(plan.host, plan.credentials, transport)
    await send_cell_env(plan.host, plan.cell_env, transport)  # before the runner sources it
    # Before the runner starts: a cell moved while this box did not answer never runs here.
    await record_moved_skips(transport, plan.host, plan.moved_skips)
    rq, ro = script_text("run_queue.sh"), script_text("run_one.sh")
    code_line = plan.code_id + "\n" if plan.code_id else ""
    parts = [rq, ro, plan.queue_append, plan.cells_append, code_line]
    sizes = [len(p.encode("utf-8")) for p in parts]
    result = await run_ctl(
        transport, "launch", plan.session, plan.start_index, plan.detach, plan.workdir,
        plan.expect_qbytes, plan.expect_clines, int(plan.fresh),
        deployed_name("run_queue.sh"), sizes[0], deployed_name("run_one.sh"), sizes[1],
        sizes[2], sizes[3], sizes[4], plan.code_stamp, input="".join(parts),
    )  # fmt: skip
    error = refusal(plan.host, result)
    if error is not None and error.code == "running":
        # Another launch got there between this one's plan and its start (two at once):
        # the box's bare "runner pid N is alive" said nothing else (hour s20b #13).
        raise QueueError(
            plan.host,
            f"the queue on {plan.host} started meanwhile ({error.message}): another launch got "
            f"there first, and this one did nothing — follow it: rgt-tui queue show {plan.host}",
            code="running",
        )
    if error is not None:
        raise error
    fields = dict((line.split("\t", 1) + [""])[:2] for line in result.stdout.splitlines())
    pid, _, method = fields.get("launched", "").partition("\t")
    if not is_digits(pid):
        raise QueueError(
            plan.host, f"the box did not confirm the launch: {result.stdout.strip()!r}"
        )
    return LaunchResult(
        plan.host, int(pid), method, plan.session, plan.start_index, len(plan.runs),
        fields.get("archived") or None, creds_line,
    )  # fmt: skip
