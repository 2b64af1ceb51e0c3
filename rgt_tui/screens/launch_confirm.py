"""LaunchConfirmScreen: the launch plan of one host's queue, confirmed before it runs.

The plan is built in a worker (the box is read over the network); changing the start
index re-plans. Only the plan asked for the start box's text as it is now is shown: a
plan for an older text is dropped when it comes (each key's ``Input.Changed`` is a
message behind the key, so a plan can arrive after the box changed and before its
message did), the box is never rewritten under the user's keys, and while it holds no
index no plan is shown. A plan with problems (already running, names collide,
unreachable) is shown as a refusal: the reasons first in the plan, no Launch button, and
no Acknowledge button (acknowledging a check would not lift it). Preflight's results
are shown under the plan; while a check has failed, an "Acknowledge <check>" button names
the first one not yet acknowledged and re-plans with it acknowledged (then names the
next), and Launch stays disabled until none is left. While a plan is being re-made, Enter does
nothing and the line says "re-planning…" (``dialog.ReplanScreen``); so does it while the
launch itself runs, and the line says "launching…" (Launch, disabled, would otherwise
hand its focus to Cancel, and Enter close the dialog under the launch). What the launch
acknowledged is recorded with it (``services.launch_acks``): its retries go ahead on it.
The plan scrolls (↑↓, PgUp/PgDn: ``dialog.DialogBody``, no Tab stop of its own, nor is
the cells' table); the buttons stay in view. The line under the buttons says what Enter
does where the focus is (``screens/dialog.py``).

Over 450 lines: one dialog, its plan's text and its replan/acknowledge/focus rules,
which must be read together (Enter never answers what the user did not choose).
"""

from __future__ import annotations

from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Label, Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.ready_text import preflight_lines
from rgt_tui.controllers.launch_plan import LaunchControl
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_state import DONE
from rgt_tui.domain.text import is_digits
from rgt_tui.domain.units import plural
from rgt_tui.screens.dialog import (
    DialogBody,
    DialogButton,
    KeyHint,
    ReplanScreen,
    enter_does,
    noted,
)
from rgt_tui.screens.type_ahead import InOrderInput, drop_typed
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.credentials import plan_line
from rgt_tui.services.queue.launch import LaunchPlan, LaunchResult, PlannedCell
from rgt_tui.services.queue.launch_preflight import is_preflight_problem
from rgt_tui.widgets.plan_table import PlanTable

LAUNCHING = "launching…"


def _reruns_done(plan: LaunchPlan) -> list[PlannedCell]:
    """The done cells ``plan`` runs again (a start typed before them: paid work)."""
    return [c for c in plan.cells if c.index >= plan.start_index and c.status == DONE]


def plan_notes(plan: LaunchPlan) -> Content:
    """Detach method, session and workdir, what will run, then warnings (why the launch
    is refused is ``refusal_lines``)."""
    muted = "$foreground-muted"
    lines = [
        Content.assemble(
            ("detach ", muted),
            # "" when the box was not asked (a refused start, an unreachable box).
            (plan.detach or "not asked", "bold"),
            # A nohup (or Slurm) queue has no tmux session to name: only tmux's does.
            *((("  session ", muted), shown(plan.session)) if plan.detach == "tmux" else ()),
            ("  workdir ", muted),
            shown(plan.workdir or "?"),
        ),
        Content.assemble(
            ("will run ", muted),
            f"{len(plan.runs)} of {len(plan.cells)} cells"
            if plan.ok
            else Content.styled(
                "nothing until each failed preflight check is acknowledged"
                if all(is_preflight_problem(p) for p in plan.problems)
                else "nothing: the launch is refused",
                "bold $error",
            ),
        ),
    ]
    if plan.ok and plan.runs:
        # The command the first cell runs, as the CLI's plan prints each (h522 #2: the
        # template's missing {out} showed nowhere in this dialog).
        first = plan.runs[0]
        lines.append(
            Content.assemble(
                ("command ", muted),
                shown(f"$ {first.command}"),
                (f"  (cell {first.index}; each cell its own fields)", muted),
            )
        )
    lines += [Content(shown(note)) for note in plan.notes]  # a Slurm host: the array, its limits
    if plan.credentials:  # names and sources only (U34)
        lines.append(Content.assemble(("credentials ", muted), plan_line(plan.credentials)))
    # Preflight's own failures and acknowledgements are shown by preflight_notes. A plan
    # refused outright runs nothing: its warnings ("cells 0, 1 will run again") read
    # against its "will run nothing" (h525 #3); the next plan says them.
    if plan.ok or all(is_preflight_problem(p) for p in plan.problems):
        lines += [
            Content.styled(shown(f"⚠ {w}"), "$warning")
            for w in plan.warnings
            if not is_preflight_problem(w)
        ]
    return Content("\n").join(lines)


def refusal_lines(problems: tuple[str, ...]) -> Content | None:
    """Why a plan is refused, a ``✖`` line each, preflight's own failures left to the
    preflight lines (they can be acknowledged); None when nothing else refuses it. Shown
    first in the body, under the status line's "Refused" (the launch and retry
    dialogs): the reason is what the user needs, not the end of a long plan."""
    refused = [p for p in problems if not is_preflight_problem(p)]
    if not refused:
        return None
    return Content("\n").join(
        Content.styled(shown(f"✖ {p}", lines=True), "$error") for p in refused
    )


def preflight_notes(plan: LaunchPlan) -> Content:
    """Preflight's checks: the passed ones on a line, each failed one with its detail and
    fix (an acknowledged one marked), the code identity each cell will record."""
    report = plan.preflight
    if report is None:
        # Not run: refused before the box was asked (a start outside the queue, a Slurm
        # host's refusal) says so, or it reads as a box down (s35 docs audit #3).
        why = "the launch was refused first" if plan.problems else "the box was not reached"
        return Content.styled(f"preflight: not run ({why})", "$foreground-muted")
    head = Content.styled("Preflight", "bold")
    waiting = plan.unacknowledged
    if waiting:
        head += Content.styled(
            f" — {plural(len(waiting), 'failed check')} to fix, or to acknowledge to launch anyway",
            "$error",
        )
    return Content("\n").join(
        [
            head,
            # Its keys are the host screen's behind this dialog: "Esc, then y (sync)".
            *preflight_lines(report, (*plan.acks, *plan.host_acks), keys="dialog"),
        ]
    )


# Said when Launch is pressed on a plan made before a fleet-file edit (review s37).
STALE_PLAN = "the fleet file changed since this plan: planned again with it; launch again"
# The box's refusals of a plan that went stale between the plan and Launch (a sync landed,
# the queue's files changed, another launch started it): the dialog plans again rather
# than leave Enter on Cancel under a plan that can no longer run (s60's note).
REPLAN_ON = frozenset({"code-changed", "changed", "running"})


class LaunchConfirmScreen(ReplanScreen[LaunchResult | None]):
    """Shows the plan; Launch runs it, Cancel (or Escape) leaves the box alone."""

    DEFAULT_CSS = """
    LaunchConfirmScreen > #launch-box { width: 110; }
    LaunchConfirmScreen #launch-cells { height: auto; }
    LaunchConfirmScreen #launch-refused { margin: 0 0 1 0; }
    LaunchConfirmScreen #launch-start-row { height: auto; }
    LaunchConfirmScreen #launch-start { width: 12; }
    LaunchConfirmScreen #launch-preflight { margin: 1 0 0 0; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close without launching")]

    class Planned(Message):
        """A plan was built (or the box could not be read)."""

        def __init__(
            self, asked: int, start: int | None, plan: LaunchPlan | None, error: str = ""
        ) -> None:
            super().__init__()
            self.asked = asked  # which plan asked for this is (the screen's count)
            self.start = start  # the start it was asked with (None: the plan's default)
            self.plan = plan
            self.error = error

    def __init__(
        self,
        fleet: Fleet,
        host: HostConfig,
        connections: FleetConnections,
        control: LaunchControl | None = None,
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.host = host
        self.connections = connections
        self.plan: LaunchPlan | None = None  # the plan shown: for the start box's text
        # Preflight checks the user acknowledged in this dialog, by name (each re-plans).
        self.acks: tuple[str, ...] = ()
        # Start over (``launch --fresh``): chosen with its button, after a refusal that
        # names it (h522 #5: the refusal sent the user to a second terminal).
        self.fresh = False
        # The plan and the launch (a test hands in its own to hold plans back).
        # Each plan with the fleet file as applied then (``LaunchControl.current``).
        self.control = control or LaunchControl(fleet, host, connections, lambda: self.app.fleet)
        self.launching = False  # Launch was pressed and its worker runs
        # The latest plan asked for: its number (a Planned of any other is stale) and the
        # start box's text it is for.
        self._asked = 0
        self._asked_for = ""
        # Enter pressed in the start box: typing is over, so the plan's button takes the
        # focus from the box (end_replan leaves an Input alone while the user types).
        self._leave_box = False
        # Why the plan on its way was asked again (a stale plan's refusal): shown above
        # its status when it comes, where the status line alone was overwritten by it.
        self._note = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="launch-box", classes="dialog-box"):
            yield Static(
                Content.assemble(("Launch queue on ", "bold"), (self.host.name, "bold $accent")),
                id="launch-title",
            )
            yield Static(Content.styled("planning…", "$foreground-muted"), id="launch-status")
            # The plan scrolls (preflight's fixes are long), so the buttons stay on screen;
            # why a launch is refused comes first in it, under the status line's "Refused".
            with DialogBody(id="launch-body"):
                refused = Static(id="launch-refused")
                refused.display = False
                yield refused
                yield PlanTable(id="launch-cells")
                with Horizontal(id="launch-start-row"):
                    yield Label("start at cell index ")
                    # Empty until the default start is known: a "0" there read as the
                    # plan's start for the seconds the first plan takes (a user's hour).
                    yield InOrderInput("", id="launch-start", type="integer")
                yield Static(id="launch-notes")
                yield Static(id="launch-preflight")
            with Horizontal(id="launch-buttons", classes="dialog-buttons"):
                ack = DialogButton("Acknowledge", does="", id="launch-ack", variant="warning")
                ack.display = False
                yield ack
                fresh = DialogButton(
                    "Start over", does="plan a fresh start", id="launch-fresh", variant="warning"
                )
                fresh.display = False
                yield fresh
                yield DialogButton(
                    "Launch", does="launch", id="launch-go", variant="primary", disabled=True
                )
                yield DialogButton("Cancel", does="cancel", id="launch-cancel")
            yield KeyHint(id="launch-hint")

    def cut_by_quit(self) -> str | None:
        """What quitting now cuts short (the app's quit question lists it), if anything."""
        if not self.launching:
            return None
        return (
            f"{self.host.name}: the launch is cut off where it stands; "
            f"rgt-tui queue show {self.host.name} says what started"
        )

    def on_mount(self) -> None:
        drop_typed(
            self, "while the launch plan opened"
        )  # no key of a burst with L is a plan's answer
        self.replan(None)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.show_hint()

    def on_key(self, event: events.Key) -> None:
        """A digit or Backspace typed on a button starts a new start index in the start
        box, which takes the focus: the focus sits on Launch once a plan comes, and
        "BackSpace 3" there did nothing, unsaid, while Enter would launch from the old
        start (h481 #7). The digit replaces the index there, as a start typed afresh: added
        to it, "5" on a box holding 2 read 25 (review h483 #10)."""
        if self.launching or isinstance(self.focused, Input):
            return
        if event.key != "backspace" and not (event.character or "").isdigit():
            return
        event.stop()
        event.prevent_default()
        start = self.query_one("#launch-start", Input)
        start.focus()
        start.value = "" if event.key == "backspace" else event.character or ""
        start.cursor_position = len(start.value)

    def show_hint(self) -> None:
        """Say what Enter does where the focus is; Escape leaves the box alone (while the
        launch runs it is too late for that: the line says only "launching…")."""
        if self.launching:
            self.query_one("#launch-hint", KeyHint).show_keys(None, lead=self.hint_lead())
            self.call_after_refresh(self.fit_body)
            return
        enter = enter_does(self.focused, {"launch-start": "plan from this cell"})
        self.query_one("#launch-hint", KeyHint).show_keys(
            enter, ("Tab", "next"), *self.scroll_keys(), ("Esc", "cancel, nothing launched"),
            lead=self.hint_lead(),
        )  # fmt: skip
        self.call_after_refresh(self.fit_body)

    def hint_lead(self) -> str:
        """The hint's lead: "launching…" while the launch runs, else the re-plan's."""
        return LAUNCHING if self.launching else super().hint_lead()

    # -- planning ------------------------------------------------------------------------

    def _start_text(self) -> str:
        return self.query_one("#launch-start", Input).value.strip()

    def replan(self, start: int | None) -> None:
        """Build the plan in a worker (``start`` None: the plan's own default) for the
        start box's text as it is now; Enter waits for it (``begin_replan``)."""
        self._asked += 1
        self._asked_for = self._start_text()
        self.begin_replan()
        self.query_one("#launch-go", Button).disabled = True
        # One acknowledgement per plan: the next one is for the next plan's first failure.
        self.query_one("#launch-ack", Button).disabled = True
        if start is not None and (self.plan is None or self.plan.start_index != start):
            # The plan on screen is another start's: never shown beside this box's index
            # (a user's hour read "cells 0, 1 come before start index 2" with 1 in the box
            # for the seconds a plan takes).
            self._clear_plan(f"planning from cell {start}…", "will run: planning…")
        self.show_hint()
        run_host_worker(self, self._plan(self._asked, start), "queue-plan", self.host.name)

    async def _plan(self, asked: int, start: int | None) -> None:
        plan, error = await self.control.plan_launch(start, self.acks, fresh=self.fresh)
        self.post_message(self.Planned(asked, start, plan, error))

    def plan_for_start_box(self, *, again: bool = False) -> None:
        """Ask for the plan of the start box's text as it is now (not as a queued
        ``Changed`` saw it: keys typed since are in the box), unless that plan is shown
        or on its way (``again``: ask anyway, after an acknowledgement); no index in the
        box: no plan."""
        if self.launching:
            return  # the plan being launched stays the one on screen
        text = self._start_text()
        if text == self._asked_for and not again:
            return
        if is_digits(text):
            self.replan(int(text))
        elif text != self._asked_for:
            self._no_start(text)

    def _no_start(self, text: str) -> None:
        """The box holds no index: no plan is shown (nor Launch), the one on its way is
        dropped when it comes."""
        self._asked += 1
        self._asked_for = text
        self.query_one("#launch-go", Button).disabled = True
        self.query_one("#launch-ack", Button).disabled = True
        self._clear_plan(
            "type the index of the cell to start at",
            "will run: no plan until the start box holds a cell index",
        )
        self.end_replan(None)
        self.show_hint()

    def _clear_plan(self, status: str, notes: str) -> None:
        """No plan on screen (none for the box's text yet): ``status`` and ``notes`` say
        why; Launch stays disabled until one comes."""
        self.plan = None
        muted = "$foreground-muted"
        self.query_one("#launch-status", Static).update(Content.styled(status, muted))
        self.query_one("#launch-notes", Static).update(Content.styled(notes, muted))
        self.query_one("#launch-preflight", Static).update("")  # it checks the first cell
        show_refusal(self.query_one("#launch-refused", Static), ())

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        start = self.query_one("#launch-start", Input)
        if message.asked != self._asked or start.value.strip() != self._asked_for:
            # Asked for an older text of the box: the plan of the text there now is on
            # its way, or is asked for when the box's Changed comes.
            return
        status = self.query_one("#launch-status", Static)
        note, self._note = self._note, ""
        if message.plan is None:
            self.plan = None  # the one shown was for another start or other acks
            status.update(
                noted(
                    note,
                    Content.styled(shown(f"Could not plan: {message.error}", lines=True), "$error"),
                )
            )
            self.query_one("#launch-go", Button).display = False
            show_refusal(self.query_one("#launch-refused", Static), ())
            self.end_replan(self.query_one("#launch-cancel", Button))
            self.show_hint()
            return
        plan = self.plan = message.plan
        self.query_one(PlanTable).show_rows(
            (cell.index, cell.name, cell.task, _epochs_shown(cell), cell.status or "new")
            for cell in plan.cells
        )
        # The default plan's start (the resume index) goes into the box: it still holds
        # the text the plan was asked with (checked above), so no key of the user's is
        # lost. A plan asked for an index typed in the box never rewrites it.
        if message.start is None and self._asked_for != str(plan.start_index):
            with start.prevent(Input.Changed):
                start.value = str(plan.start_index)
                start.cursor_position = len(start.value)
            self._asked_for = start.value
        self.query_one("#launch-notes", Static).update(plan_notes(plan))
        self.query_one("#launch-preflight", Static).update(preflight_notes(plan))
        show_refusal(self.query_one("#launch-refused", Static), plan.problems)
        # Failed preflight checks alone can be acknowledged: Launch is then shown, disabled
        # until each one is. Any other problem refuses the launch outright (no Launch, and
        # no Acknowledge: it would change nothing).
        acknowledgeable = bool(plan.unacknowledged) and all(
            is_preflight_problem(p) for p in plan.problems
        )
        show_ack_button(
            self.query_one("#launch-ack", DialogButton),
            plan,
            refused=not plan.ok and not acknowledgeable,
        )
        go = self.query_one("#launch-go", Button)
        go.display = plan.ok or acknowledgeable
        go.disabled = not plan.ok
        # Offered where a fresh start settles the refusal (``plan.starts_over``): the plan
        # is made again with the queue set aside.
        self.query_one("#launch-fresh", Button).display = plan.starts_over and not self.fresh
        # Enter confirms a ready plan, and closes a refused one (never launches it). A
        # plan that runs done cells again (a start typed before them: paid work) is
        # launched only by a deliberate Tab to Launch, never by the Enter that follows.
        rerun = _reruns_done(plan)
        target = self._plan_button(plan)
        self.end_replan(target)
        if self._leave_box:  # Enter ended the typing: the button takes the box's focus
            self._leave_box = False
            self.set_focus(target)
        self.show_hint()
        if plan.ok and rerun:
            said = Content.styled(
                f"{plural(len(rerun), 'done cell')} will run again: Shift+Tab to Launch if you mean it",
                "bold $warning",
            )
        elif plan.ok and plan.fresh:
            said = Content.styled(
                "Start over: the box's queue is set aside (kept) and a new one starts: "
                "Shift+Tab to Launch if you mean it",
                "bold $warning",
            )
        elif plan.ok:
            said = Content.styled(
                f"{plural(len(plan.cells), 'cell')} in the queue", "$foreground-muted"
            )
        elif acknowledgeable:
            said = Content.styled(
                "Preflight failed: fix the box, or acknowledge each failed check", "bold $error"
            )
        else:
            said = Content.styled("Refused: this queue cannot be launched now", "bold $error")
        status.update(noted(note, said))

    @on(Button.Pressed, "#launch-fresh")
    def _start_over(self) -> None:
        if self.launching or self.fresh:
            return
        self.fresh = True
        self.query_one("#launch-fresh", Button).display = False
        start = self.query_one("#launch-start", Input)
        with start.prevent(Input.Changed):
            start.value = ""  # a fresh queue's own default start (its first cell)
        self._asked_for = ""
        self.replan(None)

    @on(Button.Pressed, "#launch-ack")
    def _acknowledge(self) -> None:
        plan = self.plan
        if plan is None or not plan.unacknowledged or self.launching:
            return
        name = plan.unacknowledged[0]
        if name not in self.acks:
            self.acks = (*self.acks, name)
        self.plan_for_start_box(again=True)

    @on(Input.Changed, "#launch-start")
    def _start_changed(self) -> None:
        self._leave_box = False  # typing again after an Enter: the box keeps the focus
        self.plan_for_start_box()

    @on(Input.Submitted, "#launch-start")
    def _start_submitted(self) -> None:
        self._leave_box = True
        self.plan_for_start_box()
        if not self.replanning and self.plan is not None:  # its plan is on screen already
            self._leave_box = False
            self.set_focus(self._plan_button(self.plan))

    def _plan_button(self, plan: LaunchPlan) -> Button:
        """Where the focus goes for ``plan``: Launch for a ready one; Cancel for a refused
        one, one that runs done cells again or a fresh start (paid work, records set
        aside: a deliberate Tab to Launch)."""
        ready = plan.ok and not _reruns_done(plan) and not plan.fresh
        return self.query_one("#launch-go" if ready else "#launch-cancel", Button)

    # -- launching -----------------------------------------------------------------------

    @on(Button.Pressed, "#launch-go")
    def _go(self) -> None:
        plan = self.plan
        if plan is None or not plan.ok or self.launching or self._start_text() != self._asked_for:
            return  # no plan, a refused one, or the box changed and its Changed is queued
        if self.control.stale():  # the fleet file changed under the plan shown: plan again
            self._note = STALE_PLAN
            self.plan_for_start_box(again=True)
            self.query_one("#launch-status", Static).update(Content.styled(STALE_PLAN, "$warning"))
            return
        self.launching = True
        self.begin_replan()  # Enter held, no button focused, until the launch answers
        self.query_one("#launch-go", Button).disabled = True
        self.query_one("#launch-ack", Button).disabled = True
        self.query_one("#launch-status", Static).update(Content.styled(LAUNCHING, "$accent"))
        self.show_hint()
        run_host_worker(self, self._launch(plan), "queue-launch", self.host.name)

    async def _launch(self, plan: LaunchPlan) -> None:
        app: Any = self.app
        done = await self.control.launch(plan)
        if done.result is None and done.code in REPLAN_ON:
            # The plan went stale on the box: said once, above the plan made again (no
            # toast repeating the status line), whose button takes the focus.
            why = done.error.removesuffix(" — plan the launch again")
            self._note = f"Not launched: {why} — planned again below"
            self.launching = False
            self.end_replan(self.query_one("#launch-cancel", Button))
            self.plan_for_start_box(again=True)
            return
        if done.result is None:  # QueueError / TransportError: shown, the modal stays
            app.notify(
                shown(done.error, lines=True), title=f"{self.host.name}: launch failed",
                severity="error", markup=False,
            )  # fmt: skip
            self.query_one("#launch-status", Static).update(
                Content.styled(shown(f"Launch failed: {done.error}", lines=True), "$error")
            )
            self.launching = False
            self.end_replan(self.query_one("#launch-cancel", Button))
            self.show_hint()
            self.plan_for_start_box()  # the start box may have been edited meanwhile
            return
        app.notify(
            shown(done.message, lines=True),
            title=f"{self.host.name}: queue launched",
            timeout=10,
            markup=False,
        )
        self.launching = False  # done: the quit question no longer names it (h595 #2)
        self.close_with(done.result)

    @on(Button.Pressed, "#launch-cancel")
    def action_cancel(self) -> None:
        if self.launching:
            return  # "nothing launched" would be false: the launch answers, then it closes
        self.dismiss(None)


def show_refusal(widget: Static, problems: tuple[str, ...]) -> None:
    """``refusal_lines`` in ``widget``, shown only when there are some, and scrolled
    into view unless the user is typing in the start box (kept in view instead)."""
    lines = refusal_lines(problems)
    widget.display = lines is not None
    widget.update(lines or "")
    if lines is not None and not isinstance(widget.screen.focused, Input):
        widget.call_after_refresh(widget.scroll_visible, animate=False)


def show_ack_button(button: DialogButton, plan: LaunchPlan, *, refused: bool = False) -> None:
    """The "Acknowledge <check>" button, for the first failed check of ``plan`` not yet
    acknowledged: one button, so the row fits 80 columns however many checks failed;
    each press names the check it acknowledges (the launch and retry dialogs). Hidden
    when the plan is ``refused`` for another reason: acknowledging would change nothing."""
    waiting = () if refused else plan.unacknowledged
    button.display = bool(waiting)
    button.disabled = not waiting
    if waiting:
        name = waiting[0]
        button.set_caption(f"Acknowledge {name}", does=f"go ahead without the {name} check")


def _epochs_shown(cell: PlannedCell) -> str:
    """The epochs column: the value passed and where it came from (U32), without the
    ``epochs`` the column's header already says."""
    note = cell.epochs_note.removeprefix("epochs").lstrip(": ")
    return note or str(cell.epochs)
