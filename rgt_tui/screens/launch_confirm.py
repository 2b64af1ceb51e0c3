"""LaunchConfirmScreen: the launch plan of one host's queue, confirmed before it runs.

The plan is built in a worker (the box is read over the network); changing the start
index re-plans. A plan with problems (already running, names collide, unreachable) is
shown as a refusal: the reasons and no Launch button. Preflight's results are shown
under the plan; while a check has failed, an "Acknowledge <check>" button names the
first one not yet acknowledged and re-plans with it acknowledged (then names the next),
and Launch stays disabled until none is left. While a plan is being re-made, Enter does
nothing and the line says "re-planning…" (``dialog.ReplanScreen``); so does it while the
launch itself runs, and the line says "launching…" (Launch, disabled, would otherwise
hand its focus to Cancel, and Enter close the dialog under the launch). What the launch
acknowledged is recorded with it (``services.launch_acks``): its retries go ahead on it.
The plan scrolls; the buttons stay in view. The line under the buttons says what Enter
does where the focus is (``screens/dialog.py``).
"""

from __future__ import annotations

from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, DataTable, Input, Label, Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.ready_text import preflight_lines
from rgt_tui.controllers.launch_plan import LaunchControl
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.units import plural
from rgt_tui.screens.dialog import DialogButton, KeyHint, ReplanScreen, enter_does
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.credentials import plan_line
from rgt_tui.services.queue.launch import LaunchPlan, LaunchResult, PlannedCell
from rgt_tui.services.queue.launch_preflight import is_preflight_problem

LAUNCHING = "launching…"


def plan_notes(plan: LaunchPlan) -> Content:
    """Detach method, session and workdir, then warnings and problems."""
    muted = "$foreground-muted"
    lines = [
        Content.assemble(
            ("detach ", muted),
            (plan.detach or "?", "bold"),
            ("  session ", muted),
            shown(plan.session),
            ("  workdir ", muted),
            shown(plan.workdir or "?"),
        ),
        Content.assemble(
            ("will run ", muted),
            f"{len(plan.to_run)} of {len(plan.cells)} cells"
            if plan.ok
            else Content.styled(
                "nothing until each failed preflight check is acknowledged"
                if all(is_preflight_problem(p) for p in plan.problems)
                else "nothing: the launch is refused",
                "bold $error",
            ),
        ),
    ]
    lines += [Content(shown(note)) for note in plan.notes]  # a Slurm host: the array, its limits
    if plan.credentials:  # names and sources only (U34)
        lines.append(Content.assemble(("credentials ", muted), plan_line(plan.credentials)))
    # Preflight's own failures and acknowledgements are shown by preflight_notes.
    lines += [
        Content.styled(shown(f"⚠ {w}"), "$warning")
        for w in plan.warnings
        if not is_preflight_problem(w)
    ]
    problems = [p for p in plan.problems if not is_preflight_problem(p)]
    if problems:
        lines.append(Content.styled("Refused:", "bold $error"))
        lines += [Content.styled(shown(f"✖ {p}"), "$error") for p in problems]
    return Content("\n").join(lines)


def preflight_notes(plan: LaunchPlan) -> Content:
    """Preflight's checks: the passed ones on a line, each failed one with its detail and
    fix (an acknowledged one marked), the code identity each cell will record."""
    report = plan.preflight
    if report is None:
        return Content.styled("preflight: not run (the box was not reached)", "$foreground-muted")
    head = Content.styled("Preflight", "bold")
    waiting = plan.unacknowledged
    if waiting:
        head += Content.styled(
            f" — {plural(len(waiting), 'failed check')} to fix, or to acknowledge to launch anyway",
            "$error",
        )
    return Content("\n").join([head, *preflight_lines(report, (*plan.acks, *plan.host_acks))])


class LaunchConfirmScreen(ReplanScreen[LaunchResult | None]):
    """Shows the plan; Launch runs it, Cancel (or Escape) leaves the box alone."""

    DEFAULT_CSS = """
    LaunchConfirmScreen > #launch-box { width: 110; }
    LaunchConfirmScreen #launch-cells { height: auto; max-height: 16; }
    LaunchConfirmScreen #launch-start-row { height: auto; }
    LaunchConfirmScreen #launch-start { width: 12; }
    LaunchConfirmScreen #launch-body { height: auto; max-height: 45vh; }
    LaunchConfirmScreen #launch-preflight { margin: 1 0 0 0; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close without launching")]

    class Planned(Message):
        """A plan was built (or the box could not be read)."""

        def __init__(self, plan: LaunchPlan | None, error: str = "") -> None:
            super().__init__()
            self.plan = plan
            self.error = error

    def __init__(self, fleet: Fleet, host: HostConfig, connections: FleetConnections) -> None:
        super().__init__()
        self.fleet = fleet
        self.host = host
        self.connections = connections
        self.plan: LaunchPlan | None = None
        self._first = True
        # Preflight checks the user acknowledged in this dialog, by name (each re-plans).
        self.acks: tuple[str, ...] = ()
        self.control = LaunchControl(fleet, host, connections)  # the plan and the launch
        self.launching = False  # Launch was pressed and its worker runs

    def compose(self) -> ComposeResult:
        with Vertical(id="launch-box", classes="dialog-box"):
            yield Static(
                Content.assemble(("Launch queue on ", "bold"), (self.host.name, "bold $accent")),
                id="launch-title",
            )
            yield Static(Content.styled("planning…", "$foreground-muted"), id="launch-status")
            # The plan scrolls (preflight's fixes are long), so the buttons stay on screen.
            with VerticalScroll(id="launch-body"):
                yield DataTable(id="launch-cells", cursor_type="row", zebra_stripes=True)
                with Horizontal(id="launch-start-row"):
                    yield Label("start at cell index ")
                    yield Input("0", id="launch-start", type="integer")
                yield Static(id="launch-notes")
                yield Static(id="launch-preflight")
            with Horizontal(id="launch-buttons", classes="dialog-buttons"):
                ack = DialogButton("Acknowledge", does="", id="launch-ack", variant="warning")
                ack.display = False
                yield ack
                yield DialogButton(
                    "Launch", does="launch", id="launch-go", variant="primary", disabled=True
                )
                yield DialogButton("Cancel", does="cancel", id="launch-cancel")
            yield KeyHint(id="launch-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("#", "name", "task", "epochs", "status")
        self.replan(None)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._hint()

    def _hint(self) -> None:
        """Say what Enter does where the focus is; Escape leaves the box alone (while the
        launch runs it is too late for that: the line says only "launching…")."""
        if self.launching:
            self.query_one("#launch-hint", KeyHint).show_keys(None, lead=self.hint_lead())
            return
        enter = enter_does(self.focused, {"launch-start": "plan from this cell"})
        self.query_one("#launch-hint", KeyHint).show_keys(
            enter, ("Tab", "next"), ("Esc", "cancel, nothing launched"), lead=self.hint_lead()
        )

    def hint_lead(self) -> str:
        """The hint's lead: "launching…" while the launch runs, else the re-plan's."""
        return LAUNCHING if self.launching else super().hint_lead()

    # -- planning ------------------------------------------------------------------------

    def replan(self, start: int | None) -> None:
        """Build the plan in a worker (``start`` None: the plan's own default); Enter
        waits for it (``begin_replan``)."""
        self.begin_replan()
        self.query_one("#launch-go", Button).disabled = True
        # One acknowledgement per plan: the next one is for the next plan's first failure.
        self.query_one("#launch-ack", Button).disabled = True
        self._hint()
        run_host_worker(self, self._plan(start), "queue-plan", self.host.name)

    async def _plan(self, start: int | None) -> None:
        plan, error = await self.control.plan_launch(start, self.acks)
        self.post_message(self.Planned(plan, error))

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        status = self.query_one("#launch-status", Static)
        if message.plan is None:
            status.update(
                Content.styled(shown(f"Could not plan: {message.error}", lines=True), "$error")
            )
            self.query_one("#launch-go", Button).display = False
            self.end_replan(self.query_one("#launch-cancel", Button))
            self._hint()
            return
        start = self.query_one("#launch-start", Input)
        typed = start.value.strip()
        if (
            not self._first
            and start.has_focus
            and typed.isdigit()
            and int(typed) != message.plan.start_index
        ):
            return  # a plan for what was typed before: the one for the box's text is coming
        plan = self.plan = message.plan
        table = self.query_one(DataTable)
        table.clear()
        for cell in plan.cells:
            # A DataTable reads a str cell as markup: every cell goes in as Content.
            table.add_row(
                *(
                    Content(shown(value))
                    for value in (
                        str(cell.index), cell.name, cell.task, _epochs_shown(cell),
                        cell.status or "new",
                    )
                )
            )  # fmt: skip
        # The box shows the plan's start, but never rewrites what the user is typing (that
        # moved the cursor and mixed old digits into new ones).
        if self._first or (not start.has_focus and typed != str(plan.start_index)):
            with start.prevent(Input.Changed):
                start.value = str(plan.start_index)
                start.cursor_position = len(start.value)
        self._first = False
        self.query_one("#launch-notes", Static).update(plan_notes(plan))
        self.query_one("#launch-preflight", Static).update(preflight_notes(plan))
        self._ack_button(plan)
        # Failed preflight checks alone can be acknowledged: Launch is then shown, disabled
        # until each one is. Any other problem refuses the launch outright (no Launch).
        acknowledgeable = bool(plan.unacknowledged) and all(
            is_preflight_problem(p) for p in plan.problems
        )
        go = self.query_one("#launch-go", Button)
        go.display = plan.ok or acknowledgeable
        go.disabled = not plan.ok
        # Enter confirms a ready plan, and closes a refused one (never launches it).
        self.end_replan(go if plan.ok else self.query_one("#launch-cancel", Button))
        self._hint()
        if plan.ok:
            said = Content.styled(
                f"{plural(len(plan.cells), 'cell')} in the queue", "$foreground-muted"
            )
        elif acknowledgeable:
            said = Content.styled(
                "Preflight failed: fix the box, or acknowledge each failed check", "bold $error"
            )
        else:
            said = Content.styled("Refused: this queue cannot be launched now", "bold $error")
        status.update(said)

    def _ack_button(self, plan: LaunchPlan) -> None:
        show_ack_button(self.query_one("#launch-ack", DialogButton), plan)

    @on(Button.Pressed, "#launch-ack")
    def _acknowledge(self) -> None:
        plan = self.plan
        if plan is None or not plan.unacknowledged or self.launching:
            return
        name = plan.unacknowledged[0]
        if name not in self.acks:
            self.acks = (*self.acks, name)
        self.replan(plan.start_index)

    @on(Input.Submitted, "#launch-start")
    @on(Input.Changed, "#launch-start")
    def _start_changed(self, event: Input.Changed | Input.Submitted) -> None:
        if self.launching:
            return  # the plan being launched stays the one on screen
        text = event.value.strip()
        if not text.isdigit():
            self.query_one("#launch-go", Button).disabled = True
            return
        if self.plan is None or int(text) != self.plan.start_index:
            self.replan(int(text))

    # -- launching -----------------------------------------------------------------------

    @on(Button.Pressed, "#launch-go")
    def _go(self) -> None:
        plan = self.plan
        if plan is None or not plan.ok or self.launching:
            return
        self.launching = True
        self.begin_replan()  # Enter held, no button focused, until the launch answers
        self.query_one("#launch-go", Button).disabled = True
        self.query_one("#launch-ack", Button).disabled = True
        self.query_one("#launch-status", Static).update(Content.styled(LAUNCHING, "$accent"))
        self._hint()
        run_host_worker(self, self._launch(plan), "queue-launch", self.host.name)

    async def _launch(self, plan: LaunchPlan) -> None:
        app: Any = self.app
        done = await self.control.launch(plan)
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
            self._hint()
            return
        app.notify(
            shown(done.message, lines=True),
            title=f"{self.host.name}: queue launched",
            timeout=10,
            markup=False,
        )
        self.dismiss(done.result)

    @on(Button.Pressed, "#launch-cancel")
    def action_cancel(self) -> None:
        if self.launching:
            return  # "nothing launched" would be false: the launch answers, then it closes
        self.dismiss(None)


def show_ack_button(button: DialogButton, plan: LaunchPlan) -> None:
    """The "Acknowledge <check>" button, for the first failed check of ``plan`` not yet
    acknowledged: one button, so the row fits 80 columns however many checks failed;
    each press names the check it acknowledges (the launch and retry dialogs)."""
    waiting = plan.unacknowledged
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
