"""QueueMoveScreen: "Move cells…" of one host's queue to another host (``queue move``).

Type the cells' names and the destination host; Plan shows what happens and every
refusal; Move does it. One cell is planned as ``rgt-tui queue move CELL --to HOST`` plans
it (``services.queue.resume``): a cell that ran and did not finish (interrupted, killed,
failed, preempted, or whose box no longer answers) moves with its pulled-and-verified
checkpoint, and the plan names it (step, age, size), the target's free space and the
work the resume repeats. With no verified checkpoint a *From scratch* button offers
"from scratch: no verified checkpoint — the run starts over". When the target will launch
the cell, its preflight is run with the plan: each failed check has its Acknowledge
button, as in the launch dialog, and Move waits for them. Several cells move as lines
(``services.queue.move``). When the source box holds a cell, the Move button names the
cells the box will skip, so pressing it is the confirmation. Plans and moves run in
workers over the hosts' shared connections; while a plan is made Enter does nothing and
the line says "re-planning…" (``dialog.ReplanScreen``). Escape leaves everything as it was.

Past 450 lines on purpose: the plan, the acknowledgements and the move share one set of
fields and one rule for what Enter does; split, each part would keep its own copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.host_text import clock_hhmm
from rgt_tui.content.ready_text import preflight_lines
from rgt_tui.controllers.move import MoveControl, Moved
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_state import INTERRUPTED, RUNNING, CellView, QueueView
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import plural
from rgt_tui.screens.dialog import DialogBody, DialogButton, KeyHint, ReplanScreen, enter_does
from rgt_tui.screens.launch_confirm import show_ack_button
from rgt_tui.screens.type_ahead import HandOnInput, InOrderInput, typed_into
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue.move import MovePlan, MoveResult, plan_lines, target_torn_down
from rgt_tui.services.queue.moved_skips import moved_on
from rgt_tui.services.queue.resume import FROM_SCRATCH, SCRATCH_TUI, ResumeResult, resume_lines
from rgt_tui.services.queue.resume_preflight import ResumeDialogPlan


class QueueMoveScreen(ReplanScreen[MoveResult | ResumeResult | None]):
    """Cells and destination typed, planned, then moved (or cancelled)."""

    DEFAULT_CSS = """
    QueueMoveScreen > #move-box { width: 100; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close without moving")]

    class Planned(Message):
        """A move plan was built (or could not be)."""

        def __init__(
            self,
            asked: tuple[list[str], str],
            plan: MovePlan | ResumeDialogPlan | None,
            error: str = "",
        ) -> None:
            super().__init__()
            self.asked = asked  # the (cells, host) typed when it was asked for
            self.plan = plan
            self.error = error

    def __init__(
        self,
        fleet: Fleet,
        host: HostConfig,
        connections: FleetConnections,
        view: QueueView | None = None,
        *,
        answering: bool = True,
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.host = host
        self.connections = connections
        self.view = view  # the queue's latest view: its cells are listed to choose from
        # False: the box is silent and ``view`` its last read: a cell it read running is
        # said as such, not "(running)" (a preempted box's cell: s35 resume hour #8).
        self.answering = answering
        self.control = MoveControl(fleet, host, connections)  # the plan and the move
        self.plan: MovePlan | ResumeDialogPlan | None = None
        # For what is typed now: From scratch pressed, the target's checks acknowledged.
        self.from_scratch = False
        self.acks: tuple[str, ...] = ()
        # Move was pressed and its worker runs: the screen's worker, so closing the dialog
        # would cut it short (files half pushed, one queue file rewritten): Escape waits.
        self.moving = False

    def compose(self) -> ComposeResult:
        # Not a host recorded as torn down: a launch there is refused (hour s17a #14).
        jobs = getattr(self.app, "jobs", None)
        gone = (lambda name: jobs.state(name).shown_torn_down_at is not None) if jobs else None
        others = [
            h.name
            for h in self.fleet.hosts
            if h.queue and h.name != self.host.name and not (gone and gone(h.name))
        ]
        with Vertical(id="move-box", classes="dialog-box"):
            yield Static(
                Content.assemble(("Move cells from ", "bold"), (self.host.name, "bold $accent")),
                id="move-title",
            )
            yield HandOnInput(
                placeholder="cells to move: names, space-separated ('my run' quoted)",
                id="move-cells",
                next_id="move-to",
                # A cell filled in (a silent box's) is kept when a key is typed after it.
                select_on_focus=False,
            )
            yield InOrderInput(
                # "to host: box3" read as a host already filled in, and Enter then
                # asked for it (a user's hour, session 29): a verb, the hosts in brackets.
                placeholder=(
                    f"type the host to move to ({' or '.join(others)})"
                    if 0 < len(others) <= 3
                    else f"type the host to move to (one of {', '.join(others)})"
                    if others
                    else "no other host has a queue to move to"
                ),
                id="move-to",
                # The host typed after Tab is in it before its focus event: selected, the
                # next key replaced it (hour s22c #3).
                select_on_focus=False,
            )
            # The plan scrolls (a preflight's fixes are long), so the buttons and the key
            # line stay on screen, at 80x24 too (ux-e #8).
            with DialogBody(id="move-body"):
                yield Static(
                    Content("\n").join(
                        [
                            Content.styled(
                                "Cells move to the end of the other host's queue file, names "
                                "unchanged; the old host's outputs stay. One unfinished cell "
                                "takes its pulled and verified checkpoint with it and resumes "
                                "there.",
                                "$foreground-muted",
                            ),
                            *_cells_line(self.view, answering=self.answering),
                        ]
                    ),
                    id="move-notes",
                )
            with Horizontal(id="move-buttons", classes="dialog-buttons"):
                yield DialogButton("Plan", does="show what the move does", id="move-plan")
                scratch = DialogButton("From scratch", does=FROM_SCRATCH, id="move-scratch")
                scratch.display = False
                yield scratch
                ack = DialogButton("Acknowledge", does="", id="move-ack", variant="warning")
                ack.display = False
                yield ack
                yield DialogButton(
                    "Move", does="move", id="move-go", variant="primary", disabled=True
                )
                yield DialogButton("Cancel", does="cancel", id="move-cancel")
            yield KeyHint(id="move-hint")

    def cut_by_quit(self) -> str | None:
        """What quitting now cuts short (the app's quit question lists it), if anything:
        a move cut off may leave its lines moved and a checkpoint pushed with the
        destination's queue not launched (h592 #3: Ctrl+C quit with nothing said)."""
        plan = self.plan
        if not self.moving or plan is None:
            return None
        move = plan.plan.move if isinstance(plan, ResumeDialogPlan) else plan
        return (
            f"{move.source}: the move to {move.dest} is cut off where it stands (its lines "
            f"may be moved, and {move.dest}'s queue not launched); rgt-tui queue show "
            f"{move.source} and {move.dest} say where it stopped"
        )

    def on_mount(self) -> None:
        cells = self.query_one("#move-cells", Input)
        if not self.answering and self.view is not None:
            # A silent box (preempted?): the cell its last read saw running, or one
            # interrupted, is the one to move — the field opened empty (s43 spot hour).
            cut = [
                c.name
                for c in self.view.cells
                if c.status in (RUNNING, INTERRUPTED) and printable(c.name, None) == c.name
            ]
            if cut:
                run_host_worker(self, self._fill_in(cut), "queue-move-fill", self.host.name)
        self.set_focus(cells)
        typed_into(self, cells)  # keys typed with m in one burst: the cells' names
        self.show_hint()

    async def _fill_in(self, cut: list[str]) -> None:
        """``cut`` filled in, less the cells the local queue file moved away since the
        box's last read (it still reads them running: s43 spot hour #3 was offered the
        cell it had just moved). Read off the event loop; a key typed first wins."""
        try:
            moved = await asyncio.to_thread(moved_on, self.fleet, self.host)
        except (OSError, ValueError):
            moved = {}
        cut = [name for name in cut if name not in moved]
        cells = self.query_one("#move-cells", Input)
        if cut and not cells.value:
            cells.value = shlex.join(cut)
            cells.cursor_position = len(cells.value)
            if self.focused is cells:  # what is left to type is the host (h592 #4: a
                # host typed at once went on the end of the filled-in cell's name)
                self.set_focus(self.query_one("#move-to", Input))

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.show_hint()

    def show_hint(self) -> None:
        """Say what Enter does where the focus is (and the scroll keys while the plan
        holds more than it shows); then fit the plan to the room left."""
        if self.moving:  # "Esc: cancel, nothing moved" would be false (hour s21a #13)
            self.query_one("#move-hint", KeyHint).show_keys(
                None, lead="moving… (it cannot be cut short: the dialog closes when it ends)"
            )
            self.call_after_refresh(self.fit_body)
            return
        enter = enter_does(self.focused, {"move-cells": "next", "move-to": "plan the move"})
        self.query_one("#move-hint", KeyHint).show_keys(
            enter, ("Tab", "next"), *self.scroll_keys(), ("Esc", "cancel, nothing moved"),
            lead=self.hint_lead(),
        )  # fmt: skip
        self.call_after_refresh(self.fit_body)

    def _typed(self) -> tuple[list[str], str]:
        text = self.query_one("#move-cells", Input).value
        cells = text.split()
        # A name with a space is quoted, as on the command line (h585 #2); only a word
        # that starts with a quote is read so, or "bob's alice's" read as one name
        # (review h586 #3).
        if re.search(r"(^|\s)['\"]", text):
            with contextlib.suppress(ValueError):  # a quote not closed yet: as typed
                cells = shlex.split(text)
        return cells, self.query_one("#move-to", Input).value.strip()

    @on(Input.Changed)
    def _changed(self) -> None:
        shown_plan = self.plan is not None
        self.plan = None  # a plan is for what was typed when it was made
        self.from_scratch, self.acks = False, ()
        go = self.query_one("#move-go", DialogButton)
        go.disabled = True
        go.set_caption("Move", does="move")
        for ident in ("#move-scratch", "#move-ack"):
            self.query_one(ident, Button).display = False
        if shown_plan and not self.moving:
            # The plan shown was for what was typed before: "line 6 becomes '#moved-to
            # box2'" and "Move, 2 skipped" stayed under box3 typed since (hour s45a #8).
            self._show(
                Content.styled(
                    "changed since the plan: Enter in the host box (or Plan) plans again",
                    "$warning",
                )
            )

    @on(Input.Submitted, "#move-cells")
    def _next(self) -> None:
        self.set_focus(self.query_one("#move-to", Input))

    @on(Input.Submitted, "#move-to")
    @on(Button.Pressed, "#move-plan")
    def _replan(self) -> None:
        if self.moving:
            # A plan made now enabled Move again, and a second move (the same worker
            # group) cancelled the first halfway (a user's hour, s21b #1).
            return
        cells, dest = self._typed()
        if not cells or not dest:
            self._show(
                Content.styled("type the cells' names and the host to move them to", "$warning")
            )
            return
        self._show(Content.styled("planning…", "$foreground-muted"))
        # Move moves what the plan on screen says: not while another one is being made.
        self.query_one("#move-go", Button).disabled = True
        for ident in ("#move-scratch", "#move-ack"):
            self.query_one(ident, Button).disabled = True
        self.begin_replan()
        self.show_hint()
        run_host_worker(self, self._plan(cells, dest), "queue-move-plan", self.host.name)

    async def _plan(self, cells: list[str], dest: str) -> None:
        plan, error = await self.control.plan(
            cells, dest, from_scratch=self.from_scratch, acks=self.acks
        )
        self.post_message(self.Planned((cells, dest), plan, error))

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        if message.plan is None and message.asked == self._typed():
            self._show(
                Content.styled(shown(f"Could not plan: {message.error}", lines=True), "$error")
            )
            self.end_replan(None if self.focused else self.query_one("#move-cancel", Button))
            self.show_hint()
            return
        plan = message.plan
        if plan is None or message.asked != self._typed():
            # Made for what was typed before: nothing to show, and nothing to hold Enter
            # for (Move stays disabled until a plan for the new text is asked for).
            self.end_replan(None)
            self.show_hint()
            return
        self.plan = plan
        go = self.query_one("#move-go", DialogButton)
        scratch = self.query_one("#move-scratch", DialogButton)
        ack = self.query_one("#move-ack", DialogButton)
        if isinstance(plan, ResumeDialogPlan):
            self._show(_resume_text(plan))
            move, ok = plan.plan.move, plan.ok
            scratch.disabled = False
            scratch.display = plan.needs_from_scratch
            if plan.preflight is not None and plan.plan.ok:
                show_ack_button(ack, plan.preflight)  # type: ignore[arg-type]
            else:
                ack.display = False
        else:
            self._show(_lines(plan_lines(plan)))
            move, ok = plan, plan.ok
            scratch.display = ack.display = False
        go.disabled = not ok
        self._caption(go, plan, move)
        # Enter in "to host" asked for this plan: a ready one takes the focus from there.
        # Any other goes to Cancel, as in the launch dialog: acknowledging a failed check
        # or giving up the checkpoint (From scratch) is a deliberate Tab, never the next
        # Enter (a user's hour moved a cell past two failed checks, from scratch, with
        # four Enters).
        # A target recorded torn down (GEN1) is warned of, and Move is a deliberate
        # Shift+Tab too: Enter moved the cell onto a box meant to be gone (a user's hour).
        # So is a move that runs a finished cell again, as a launch before done cells is
        # (hour s34 TUI #7: paid re-work was the default).
        self.end_replan(None)
        ready = ok and not target_torn_down(move) and not move.reruns_done
        self.set_focus(go if ready else self.query_one("#move-cancel", Button))
        self.show_hint()

    def _caption(self, go: DialogButton, plan: MovePlan | ResumeDialogPlan, move: MovePlan) -> None:
        """The Move button says what pressing it does (it is the confirmation)."""
        resume = plan.plan if isinstance(plan, ResumeDialogPlan) else None
        if not plan.ok:
            # A refused plan's disabled Move says no more: "Move, restart" beside the
            # From scratch button read as a second way to restart.
            go.set_caption("Move", does="move")
        elif resume is not None and resume.ran:
            what = (
                f"push {plural(len(resume.files), 'verified file')} to {move.dest} and run "
                f"{resume.cell} there"
                if resume.files
                else f"run {resume.cell} on {move.dest} from the start"
            )
            if resume.own_first:
                # The idle target's launch runs its own waiting cells first: paid, and
                # only the plan's last line said so (hour s34 TUI #6).
                what += f", after {plural(resume.own_first, 'pending cell')} of its own"
            go.set_caption("Move, resume" if resume.files else "Move, restart", does=what)
        elif move.on_box:
            # Names go on the hint line, which wraps: a caption with them was cut ("▶ Move (box1").
            names = shown(", ".join(c.name for c in move.on_box))
            # Who skips: "Move, 1 skipped" read as a chosen cell left behind (h461 #10).
            go.set_caption(
                f"Move; {printable(move.source, 12)} skips {len(move.on_box)}",
                does=f"move; {move.source} skips {names}",
            )
        else:
            go.set_caption("Move", does="move")

    def _show(self, text: Content) -> None:
        self.query_one("#move-notes", Static).update(text)

    @on(Button.Pressed, "#move-scratch")
    def _scratch(self) -> None:
        if self.moving:
            return
        plan = self.plan
        if not isinstance(plan, ResumeDialogPlan) or not plan.needs_from_scratch:
            return
        self.from_scratch = True
        self._replan()

    @on(Button.Pressed, "#move-ack")
    def _acknowledge(self) -> None:
        if self.moving:
            return
        plan = self.plan
        if not isinstance(plan, ResumeDialogPlan) or plan.preflight is None:
            return
        waiting = plan.preflight.unacknowledged
        if not waiting:
            return
        self.acks = (*self.acks, waiting[0])
        self._replan()

    @on(Button.Pressed, "#move-go")
    def _go(self) -> None:
        plan = self.plan
        if plan is None or not plan.ok or self.moving:
            return
        self.moving = True
        # Nothing typed or pressed here may start anything while it runs.
        for ident in MOVE_CONTROLS:
            self.query_one(ident).disabled = True
        self.show_hint()
        self._show(Content.styled("moving…", "$accent"))
        work = self._resume(plan) if isinstance(plan, ResumeDialogPlan) else self._move(plan)
        run_host_worker(self, work, "queue-move", self.host.name)

    async def _move(self, plan: MovePlan) -> None:
        self._done(await self._guarded(self.control.move(plan)), plan.source)

    async def _resume(self, planned: ResumeDialogPlan) -> None:
        moved = await self._guarded(self.control.resume(planned, self.acks))
        self._done(moved, planned.plan.move.source)

    async def _guarded(self, work: Any) -> Moved:
        """``work``'s outcome; anything it raises is said as not moved, so the dialog is
        never left at "moving…" with Esc refused (h545 #1: an error the worker swallowed)."""
        try:
            return await work
        except Exception as exc:  # noqa: BLE001 - said in the dialog, which stays
            return Moved(error=f"{type(exc).__name__}: {exc}")

    def _done(self, moved: Moved, source: str) -> None:
        self.moving = False
        if moved.error:  # MoveError / TransportError / QueueError: shown, the modal stays
            for ident in ("#move-cells", "#move-to", "#move-plan", "#move-cancel"):
                self.query_one(ident).disabled = False
            # The focus was on Move, disabled since: nothing had it, and the key line no
            # Enter (hour s45a #8). On Cancel, as the retry dialog does after a refusal.
            self.query_one("#move-cancel", Button).focus()
            self.show_hint()
            self._show(Content.styled(shown(f"Not moved: {moved.error}", lines=True), "$error"))
            return
        self._notify(moved.message, source, partly=moved.partly)
        self.close_with(moved.result)

    def _notify(self, text: str, source: str, *, partly: bool = False) -> None:
        app: Any = self.app
        app.notify(
            shown(text, lines=True),
            title=f"{source}: {'moved, NOT all done' if partly else 'cells moved'}",
            severity="warning" if partly else "information",
            timeout=20 if partly else 10,
            markup=False,
        )

    @on(Button.Pressed, "#move-cancel")
    def action_cancel(self) -> None:
        if self.moving:
            return  # closing would cancel the move's worker halfway: it answers, then closes
        self.dismiss(None)


# What the dialog disables while a move runs, Cancel too: a focused Cancel that did nothing
# drew Enter after Enter, and the last one, landing as the dialog closed, opened a host on
# the grid (s38 spot hour #12). Escape still answers: it waits for the move.
MOVE_CONTROLS = (
    "#move-cells", "#move-to", "#move-plan", "#move-scratch", "#move-ack", "#move-go",
    "#move-cancel",
)  # fmt: skip
CELLS_LISTED = 24  # a long queue's first cells; the rest are counted


def _cells_line(view: QueueView | None, *, answering: bool = True) -> list[Content]:
    """``Its cells: warmup (done), train (interrupted), …`` from the queue's latest view
    (moved ones left out); none before the queue was read. Names are the box's text.
    ``answering`` False: the box is silent, so the list is its last read, said with when,
    and a cell read running then is not said to run now."""
    cells = [c for c in view.cells if c.label != "moved"] if view is not None else []
    if view is None or not cells:
        return []

    def label(cell: CellView) -> str:
        return "running when last read" if not answering and cell.status == RUNNING else cell.label

    named = ", ".join(f"{c.name} ({label(c)})" for c in cells[:CELLS_LISTED])
    more = f", and {len(cells) - CELLS_LISTED} more" if len(cells) > CELLS_LISTED else ""
    head = (
        "Its cells"
        if answering
        else f"Its cells as last read at {clock_hhmm(view.now)} (the box does not answer)"
    )
    return [Content(shown(f"{head}: {named}{more}"))]


def _lines(lines: list[str]) -> Content:
    """Plan lines, a refusal in the error colour (box text: never markup). A refusal may
    span lines (the box's copy against the file, line by line): kept, not shown as \\n."""
    return Content("\n").join(
        Content.styled(shown(line, lines=True), "$error" if line.startswith("REFUSED") else "")
        for line in lines
    )


def _resume_text(planned: ResumeDialogPlan) -> Content:
    """The resume plan's lines, then the target's preflight when it will launch the cell."""
    parts = [_lines(resume_lines(planned.plan, SCRATCH_TUI))]
    pf = planned.preflight
    if pf is not None and pf.error:
        parts.append(Content.styled(shown(pf.error), "$warning"))
    elif pf is not None and pf.report is not None:
        waiting = pf.unacknowledged
        head = f"preflight on {pf.host}" + (
            f" — {plural(len(waiting), 'failed check')} to fix, or to acknowledge to move anyway"
            if waiting
            else ""
        )
        parts.append(Content.styled(head, "bold $error" if waiting else "bold"))
        # The destination's checks: the keys behind this dialog are another host's.
        parts += preflight_lines(pf.report, pf.acknowledged, keys="commands")
    return Content("\n").join(parts)
