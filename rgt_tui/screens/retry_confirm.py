"""RetryConfirmScreen: ``R``'s question for one cell, with the plan of what the retry does.

The retry is planned in a worker (``controllers.launch_plan`` asks the backend's
``plan_retry``): the cell's state, where its outputs go and — when no queue runs — the
launch that runs it, which runs preflight first. A failed check is shown as in the launch plan, with an
"Acknowledge <check>" button that re-plans with it acknowledged. Retry starts the cell
over (its ``{out}`` set aside); Resume (a cell that did not finish) runs it again with
its ``{out}`` as it is, so a run that loads its latest checkpoint goes on from it and no
other cell runs again — the dialog names the checkpoint ``{out}`` holds. What the queue's launch
acknowledged (``services.queue.launch_acks``) is applied and said ("acknowledged at launch:
gpu (…)"), and "Revoke launch acks" re-plans without it. While a plan is re-made Enter
does nothing (``dialog.ReplanScreen``). Cancel has the focus whatever the plan says, as
in the stop and kill dialogs: a retry sets the cell's outputs aside and starts it over,
so Enter alone never does it; Retry or Resume (Tab, or a click) runs it over the host's
shared connection. Why a retry is refused comes first in its scrolling plan, as in the launch
dialog; every Tab stop is a button that shows its focus.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Static

from rgt_tui.content.box_text import shown
from rgt_tui.controllers.launch_plan import LaunchControl
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_state import DONE, RETRY, CellView, QueueView
from rgt_tui.screens.dialog import (
    DialogBody,
    DialogButton,
    KeyHint,
    ReplanScreen,
    enter_does,
    noted,
)
from rgt_tui.screens.launch_confirm import (
    STALE_PLAN,
    preflight_notes,
    show_ack_button,
    show_refusal,
)
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.disk.out_checkpoints import checkpoint_notes
from rgt_tui.services.queue.control import RetryPlan
from rgt_tui.services.queue.launch_acks import acks_line
from rgt_tui.services.queue.launch_preflight import is_preflight_problem

MUTED = "$foreground-muted"


def checkpoint_lines(plan: RetryPlan) -> list[Content]:
    """Each checkpoint the retry sets aside and that Resume would go on from it."""
    lines = []
    for _, warning, advice in checkpoint_notes(plan, lambda _name: "press Resume"):
        lines.append(Content.styled(shown("⚠ " + warning), "$warning"))
        if advice is not None:
            lines.append(Content(shown(advice)))
    return lines


def retry_notes(plan: RetryPlan) -> Content:
    """How the cell runs again, what the queue's launch acknowledged, the checkpoint it
    sets aside, then the plan's warnings (preflight's own are shown by
    ``preflight_notes``; why the retry is refused, first in the body: ``refusal_lines``)."""
    if plan.problems:
        how = ""  # refused: not how it would run (h493 #8, review h494 #4)
    elif plan.running:
        how = f"The running queue runs it before its next cell{plan.with_others()}."
    elif plan.launch is not None and plan.others_waiting:
        how = (
            f"The queue is not running: it is launched for this cell and {plan.others_named()}, "
            "set to run again earlier (preflight first)."
        )
    elif plan.launch is not None:
        how = "The queue is not running: it is launched for this cell only (preflight first)."
    elif plan.submits:
        how = f"It is submitted to {plan.submits} as a new array of this cell."
    else:
        how = ""
    lines = [Content(how)] if how else []
    if plan.launch_acks:
        revoked = " — revoked for this retry" if plan.revoked else ""
        lines.append(Content.styled(shown(acks_line(plan.launch_acks) + revoked), "$warning"))
    lines += checkpoint_lines(plan)
    unfinished = [c.name for c in plan.cells if c.status != DONE]
    if plan.checkpoints_looked and unfinished and not plan.checkpoints:
        # "Resume goes on from where it stopped" read as a promise with nothing to go on
        # from (the review of s43): said when the box's {out} holds no checkpoint.
        lines.append(
            Content.styled(
                "No checkpoint in its {out} on the box now: Resume would run it from its "
                "start (its {out} kept as it is), as Retry does (which sets {out} aside).",
                MUTED,
            )
        )
    launch = plan.launch
    warnings = [*plan.warnings, *(launch.warnings if launch else ())]
    lines += [
        # Each line made printable on its own, as the refusals are: a sent line edited
        # here is shown as on the box and locally, one line each.
        Content.styled(shown(f"⚠ {w}", lines=True), "$warning")
        for w in warnings
        if not is_preflight_problem(w)
    ]
    return Content("\n").join(lines)


def retry_problems(plan: RetryPlan) -> tuple[str, ...]:
    """Everything that refuses the retry: its own problems and its launch's."""
    return (*plan.problems, *(plan.launch.problems if plan.launch else ()))


class RetryConfirmScreen(ReplanScreen[str | None]):
    """The retry of one cell, planned and shown; Retry does it, Cancel (or Escape) leaves
    the box alone. Dismisses with "retry" once it is done, else None."""

    DEFAULT_CSS = """
    RetryConfirmScreen > #retry-box { width: 100; }
    RetryConfirmScreen #retry-refused { margin: 0 0 1 0; }
    RetryConfirmScreen #retry-preflight { margin: 1 0 0 0; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close; nothing is retried")]

    class Planned(Message):
        """A retry plan was built (or could not be)."""

        def __init__(self, plan: RetryPlan | None, error: str = "") -> None:
            super().__init__()
            self.plan = plan
            self.error = error

    def __init__(
        self, fleet: Fleet, host: HostConfig, cell: CellView, connections: FleetConnections
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.host = host
        self.cell = cell
        self.connections = connections
        self.plan: RetryPlan | None = None
        self.acks: tuple[str, ...] = ()  # acknowledged in this dialog, by name
        self.use_launch_acks = True  # False: the launch's acknowledgements revoked
        # The plan and the retry, with the fleet file as applied when each plan is made.
        self.control = LaunchControl(fleet, host, connections, lambda: self.app.fleet)
        self.retrying = False  # Retry was pressed and its worker runs
        # Marked for a retry before the queue stopped: a launch runs it as it was marked
        # (its {out} set aside then, or not), whichever button is pressed now (s44 note:
        # Retry and Resume both offered, each doing what the first mark did).
        self.waiting = cell.status == RETRY
        # Why the plan on its way was made again (the queue ended or started while the
        # dialog was open): said above its status when it comes.
        self._note = ""
        self._runner_seen: bool | None = None  # the last read's runner_alive
        # A done cell has nothing to resume: only Retry (its outputs made again).
        self.resumable = cell.status not in (DONE, RETRY)

    def compose(self) -> ComposeResult:
        cell = self.cell
        about = [
            Content.assemble(
                "It is ", (shown(cell.label), "bold"), f"; it runs again as {shown(cell.name)}."
            ),
            Content.assemble(
                ("Retry starts it over: ", "bold"),
                "its {out} folder, if the run made one, is renamed to "
                "<out>.before-retry-<time> (kept, not deleted), so the run finds no "
                "checkpoint there to resume from.",
            ),
        ]
        if self.waiting:
            about[1:] = [self._as_marked()]
        if self.resumable:
            about.append(
                Content.assemble(
                    ("Resume goes on from where it stopped: ", "bold"),
                    "its {out} is kept as it is, so a run that loads its latest checkpoint "
                    "goes on from it; no done cell runs again.",
                )
            )
        # A done cell: the plan's own warning says its outputs are set aside and made
        # again (said here too, it read three times with the launch's: a user's hour).
        with Vertical(id="retry-box", classes="dialog-box -warning"):
            yield Static(
                Content.styled(
                    shown(
                        f"{'Retry or resume' if self.resumable else 'Retry'} cell {cell.name} "
                        f"on {self.host.name}?"
                    ),
                    "bold $warning",
                ),
                id="retry-title",
            )
            yield Static(Content.styled("planning…", MUTED), id="retry-status")
            with DialogBody(id="retry-body"):
                refused = Static(id="retry-refused")  # why not, first (launch_confirm's)
                refused.display = False
                yield refused
                yield Static(Content("\n").join(about), id="retry-about")
                yield Static(id="retry-notes")
                yield Static(id="retry-preflight")
            with Horizontal(id="retry-buttons", classes="dialog-buttons"):
                for ident, caption, variant in (
                    ("retry-ack", "Acknowledge", "warning"),
                    ("retry-revoke", "Revoke launch acks", "default"),
                ):
                    button = DialogButton(caption, does="", id=ident, variant=variant)  # type: ignore[arg-type]
                    button.display = False
                    yield button
                yield DialogButton(
                    "Launch" if self.waiting else "Retry",
                    does="run it as marked" if self.waiting else "start it over",
                    id="retry-go",
                    variant="warning",
                    disabled=True,
                )
                resume = DialogButton(
                    "Resume",
                    does="resume it, {out} kept",
                    id="retry-resume",
                    variant="warning",
                    disabled=True,
                )
                resume.display = self.resumable
                yield resume
                yield DialogButton("Cancel", does="cancel", id="retry-cancel", variant="primary")
            yield KeyHint(id="retry-hint")

    def _as_marked(self) -> Content:
        """How a cell waiting for its retry runs: as its mark left its ``{out}``."""
        cell = self.cell
        if cell.set_aside and not cell.note:
            then = (
                f"its {{out}} was set aside then (to {shown(cell.set_aside)}), so it starts over."
            )
        else:
            then = "nothing was set aside then: it runs with its {out} as it is."
        return Content.assemble(
            ("Marked for a retry before the queue stopped: ", "bold"),
            f"a launch runs it as it was marked — {then}",
        )

    def cut_by_quit(self) -> str | None:
        """What quitting now cuts short (the app's quit question lists it), if anything."""
        if not self.retrying:
            return None
        return (
            f"{self.host.name}: the retry is cut off where it stands; "
            f"rgt-tui queue show {self.host.name} says what was marked"
        )

    def on_mount(self) -> None:
        self.replan()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.show_hint()

    def show_hint(self) -> None:
        if self.retrying:  # "Esc: cancel, nothing retried" would be false now
            self.query_one("#retry-hint", KeyHint).show_keys(None, lead="retrying…")
            self.call_after_refresh(self.fit_body)
            return
        # While planning every button is disabled: Tab reaches none (h481 #8: a Shift+Tab
        # to Resume, offered here, was dropped, and the Enter after it cancelled).
        tab = () if self.replanning else (("Tab", "next button"),)
        self.query_one("#retry-hint", KeyHint).show_keys(
            enter_does(self.focused), *tab, *self.scroll_keys(),
            ("Esc", "cancel, nothing retried"), lead=self.hint_lead(),
        )  # fmt: skip
        self.call_after_refresh(self.fit_body)

    # -- planning ------------------------------------------------------------------------

    def replan(self) -> None:
        """Plan the retry in a worker; Enter waits for it (``begin_replan``). Not while
        the retry runs: a new plan enabled Retry again, and a second retry (the same
        worker group) cancelled the first (a user's hour, s21b #1)."""
        if self.retrying:
            return
        self.begin_replan()
        for ident in ("#retry-go", "#retry-resume", "#retry-ack", "#retry-revoke"):
            self.query_one(ident, Button).disabled = True
        self.show_hint()
        run_host_worker(self, self._plan(), "queue-retry-plan", self.host.name)

    async def _plan(self) -> None:
        plan, error = await self.control.plan_retry(self.cell, self.acks, self.use_launch_acks)
        self.post_message(self.Planned(plan, error))

    def queue_viewed(self, view: QueueView) -> None:
        """A new read of the host's queue (the app's poll): a plan made while the queue ran
        that it no longer runs (or the reverse) is made again. "The running queue runs it
        before its next cell" stood after the queue ended, and Retry then marked a cell
        nothing would run (h611 #2)."""
        # A change between two reads, not the plan against a read: a Slurm host's view
        # reads a pending array as a runner alive and its plan never does, and a group's
        # counts any rank's runner (review h620 #1: a plan again at every poll). A Slurm
        # retry submits an array of its own whatever runs.
        was, self._runner_seen = self._runner_seen, view.runner_alive
        plan = self.plan
        if plan is None or plan.submits or self.retrying or self.replanning:
            return
        if was is None or was == view.runner_alive:
            return
        self._note = (
            "the queue ended while this was open: planned again"
            if was
            else "the queue started while this was open: planned again"
        )
        self.replan()

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        status = self.query_one("#retry-status", Static)
        cancel = self.query_one("#retry-cancel", Button)
        plan = self.plan = message.plan
        note, self._note = self._note, ""
        if plan is not None and self._runner_seen is None:
            self._runner_seen = plan.running  # what the box said as the plan was made
        if plan is None:
            status.update(
                noted(
                    note,
                    Content.styled(shown(f"Could not plan: {message.error}", lines=True), "$error"),
                )
            )
            show_refusal(self.query_one("#retry-refused", Static), ())
            self.end_replan(cancel)
            self.show_hint()
            return
        problems = retry_problems(plan)
        waiting = plan.launch.unacknowledged if plan.launch is not None else ()
        # Failed preflight checks alone can be acknowledged; any other refusal stands.
        acknowledgeable = bool(waiting) and all(is_preflight_problem(p) for p in problems)
        show_refusal(self.query_one("#retry-refused", Static), problems)
        self.query_one("#retry-notes", Static).update(retry_notes(plan))
        preflight = self.query_one("#retry-preflight", Static)
        preflight.display = plan.launch is not None
        if plan.launch is not None:
            preflight.update(preflight_notes(plan.launch))
        ack = self.query_one("#retry-ack", DialogButton)
        if plan.launch is not None:
            show_ack_button(ack, plan.launch, refused=not plan.ok and not acknowledgeable)
        else:
            ack.display = False
        # A refusal no acknowledgement lifts stands alone: what Retry and Resume would do,
        # and the launch acks' toggle, are for a retry that can run (h525 #1).
        open_ = plan.ok or acknowledgeable
        self.query_one("#retry-about", Static).display = open_
        self.query_one("#retry-notes", Static).display = open_
        revoke = self.query_one("#retry-revoke", DialogButton)
        revoke.display = bool(plan.launch_acks) and open_
        revoke.disabled = not plan.launch_acks
        if plan.revoked:
            revoke.set_caption("Use launch acks", does="go ahead on what the launch acknowledged")
        else:
            revoke.set_caption("Revoke launch acks", does="retry without the launch's acks")
        go, resume = self.query_one("#retry-go", Button), self.query_one("#retry-resume", Button)
        go.disabled = not plan.ok
        resume.disabled = not (plan.ok and self.resumable)
        # A refusal no acknowledgement lifts shows no Retry or Resume, as the launch dialog
        # shows no Launch (h522 #5: both sat below a refusal, explained as if offered).
        go.display = plan.ok or acknowledgeable
        resume.display = self.resumable and (plan.ok or acknowledgeable)
        # Cancel even when nothing refuses: the retry renames {out} aside (a done cell's
        # results, an unfinished one's checkpoint), so only a chosen Retry does it.
        self.end_replan(cancel)
        self.show_hint()
        if plan.ok:
            if self.waiting:
                words = "Launch runs it as marked; Cancel leaves the box alone"
            elif self.resumable:
                words = (
                    "Retry starts it over, Resume goes on from its {out}; Cancel leaves the "
                    "box alone"
                )
            else:
                words = "Retry runs it; Cancel leaves the box alone"
            said = Content.styled(words, MUTED)
        elif acknowledgeable:
            said = Content.styled(
                "Preflight failed: fix the box, or acknowledge each failed check", "bold $error"
            )
        else:
            said = Content.styled("Refused: this cell cannot be retried now", "bold $error")
        status.update(noted(note, said))

    @on(Button.Pressed, "#retry-ack")
    def _acknowledge(self) -> None:
        plan = self.plan
        if plan is None or plan.launch is None or not plan.launch.unacknowledged:
            return
        name = plan.launch.unacknowledged[0]
        if name not in self.acks:
            self.acks = (*self.acks, name)
        self.replan()

    @on(Button.Pressed, "#retry-revoke")
    def _revoke(self) -> None:
        self.use_launch_acks = not self.use_launch_acks
        self.replan()

    # -- retrying ------------------------------------------------------------------------

    @on(Button.Pressed, "#retry-go")
    def _retry_pressed(self) -> None:
        self._go(resume=False)

    @on(Button.Pressed, "#retry-resume")
    def _resume_pressed(self) -> None:
        self._go(resume=True)

    def _go(self, *, resume: bool) -> None:
        plan = self.plan
        if plan is None or not plan.ok or self.retrying or (resume and not self.resumable):
            return
        plan = replace(plan, resume=resume)
        if self.control.stale():  # the fleet file changed under the plan shown: plan again
            self.replan()
            self.query_one("#retry-status", Static).update(
                Content.styled(STALE_PLAN.replace("launch again", "retry again"), "$warning")
            )
            return
        # Every button, Cancel too, as in the move dialog: a focused Cancel that did
        # nothing drew Enter after Enter, and one landing as the dialog closed went to
        # the Queue tab beneath. Escape still answers: it waits for the retry.
        for button in self.query(Button):
            button.disabled = True
        self.query_one("#retry-status", Static).update(
            Content.styled(
                f"{'resuming' if resume else 'retrying'}… (it cannot be cut short: the dialog "
                "closes when it ends)",
                "$accent",
            )
        )
        self.retrying = True  # the screen's worker: closing it would cut the retry short
        self.show_hint()
        run_host_worker(self, self._retry(plan), "queue-control", self.host.name)

    async def _retry(self, plan: RetryPlan) -> None:
        app: Any = self.app
        verb = "resume" if plan.resume else "retry"  # the toast said "retry" after Resume
        title = f"{self.host.name}: {verb}"
        try:
            done = await self.control.retry(plan, self.cell.name)
        finally:
            self.retrying = False
            self.show_hint()
        if done.error:  # refused on the box, or unreachable: shown, the modal stays
            cancel = self.query_one("#retry-cancel", Button)
            cancel.disabled = False
            cancel.focus()
            self.query_one("#retry-status", Static).update(
                Content.styled(
                    shown(
                        f"Not {'resumed' if plan.resume else 'retried'}: {done.error}", lines=True
                    ),
                    "$error",
                )
            )
            app.notify(
                shown(done.error, lines=True), title=title, severity="error", timeout=20,
                markup=False,
            )  # fmt: skip
            return
        app.notify(done.message, title=title, timeout=10)
        self.retrying = False  # done: the quit question no longer names it (h595 #2)
        self.close_with("retry")

    @on(Button.Pressed, "#retry-cancel")
    def action_cancel(self) -> None:
        if self.retrying:
            return  # outputs set aside and no launch yet: it answers, then it closes
        self.dismiss(None)
