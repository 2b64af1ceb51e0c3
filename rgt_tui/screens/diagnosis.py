"""DiagnosisScreen: why a host's latest cell vanished — the cause, the evidence for each
of the four causes (reboot, OOM kill, SSH hang-up, manual kill: U3) and the next step.

The box is read in a worker; the modal says "diagnosing…" until the answer arrives. It
has no buttons: Enter, Escape, q and d all close it, and its last line says so.
"""

from __future__ import annotations

import asyncio

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from rgt_tui.content.box_text import shown
from rgt_tui.controllers.queue_actions import error_text
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_state import DONE, QueueView
from rgt_tui.domain.vanished import Diagnosis, Evidence, with_preemption
from rgt_tui.screens.dialog import DialogScreen, KeyHint
from rgt_tui.screens.type_ahead import drop_typed
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.runtime.preemption import named_preemption, with_unreachable_fix

VERDICT_STYLE = {
    "yes": "bold $error",
    "likely": "bold $warning",
    "no": "$success",
    "unknown": "$foreground-muted",
}


def evidence_line(ev: Evidence, width: int = 0) -> Content:
    """``  reboot       yes      boot id changed …``; ``width``: the widest cause's, so
    a long one ("manual kill") never runs into its verdict."""
    return Content.assemble(
        (f"  {ev.cause:<{max(width, len(ev.cause))}}  ", "bold"),
        (f"{ev.verdict:<8}", VERDICT_STYLE.get(ev.verdict, "")),
        shown(ev.detail),
    )


def diagnosis_body(view: QueueView, diag: Diagnosis) -> Content:
    """The whole report: queue summary, cause, evidence per cause, next step."""
    muted = "$foreground-muted"
    lines = [
        Content.assemble(("queue  ", muted), shown(view.summary())),
        Content(""),
    ]
    if diag.cause is None:
        lines.append(Content.styled(shown(diag.summary or "nothing vanished"), "$success"))
    else:
        lines.append(
            Content.assemble(
                ("cause  ", muted),
                (diag.cause, "bold $error"),
                (f"  ({shown(diag.subject)})" if diag.subject else "", muted),
            )
        )
        if diag.summary:
            lines.append(Content(shown(diag.summary)))
    if diag.evidence:
        lines += [Content(""), Content.styled("evidence", "bold")]
        width = max(len(ev.cause) for ev in diag.evidence)
        lines += [evidence_line(ev, width) for ev in diag.evidence]
    if diag.next_step:
        lines += [
            Content(""),
            Content.assemble(("next step  ", "bold $accent"), shown(diag.next_step)),
        ]
    if diag.resume_index is not None:
        lines.append(Content.styled(resume_keys(view, diag.resume_index), muted))
    return Content("\n").join(lines)


def resume_keys(view: QueueView, index: int) -> str:
    """How to resume from cell ``index`` by keys, as the command line's ``resume_line``
    says it by commands: L's plan starts where its own rule says (the first cell not done
    after the last done one), which may not be ``index``, so the index to type is named,
    and the done cells after it that such a launch runs again, with R for the cell alone
    (h612 #4: "the launch plan starts at cell 1" while L opened at 4)."""
    name = next((c.name for c in view.cells if c.index == index), "")
    cell = f"cell {index}" + (f" ({shown(name)})" if name else "")
    done = [c.index for c in view.cells if c.index > index and c.status == DONE]
    launch = f"L, then type {index} in its start box (it may offer another)"
    if not done:
        return f"to resume from {cell}: Escape, then {launch}"
    again = ", ".join(map(str, done[:5])) + (" …" if len(done) > 5 else "")
    return (
        f"to resume {cell}: Escape, then R on the Queue tab resumes it alone from its "
        f"checkpoint if it wrote one; or {launch}, which runs done "
        f"cell{'s' if len(done) > 1 else ''} "
        f"{again} again too"
    )


class DiagnosisScreen(DialogScreen[None]):
    """A modal diagnosis of the host's queue; Escape closes it."""

    DEFAULT_CSS = """
    DiagnosisScreen > #diagnosis-box { width: 110; }
    """

    BINDINGS = [Binding("enter,escape,q,d", "close", "Close", tooltip="Close the diagnosis")]

    class Diagnosed(Message):
        """The diagnosis came back (or the box could not be read)."""

        def __init__(self, result: tuple[QueueView, Diagnosis] | None, error: str = "") -> None:
            super().__init__()
            self.result = result
            self.error = error

    def __init__(self, host: HostConfig, connections: FleetConnections) -> None:
        super().__init__()
        self.host = host
        self.connections = connections
        self.diagnosis: Diagnosis | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="diagnosis-box", classes="dialog-box"):
            yield Static(
                Content.assemble(("Diagnosis of ", "bold"), (self.host.name, "bold $accent")),
                id="diagnosis-title",
            )
            yield Static(Content.styled("diagnosing…", "$foreground-muted"), id="diagnosis-body")
            yield KeyHint(id="diagnosis-hint")

    def on_mount(self) -> None:
        drop_typed(self, "while the diagnosis opened")
        self.query_one("#diagnosis-hint", KeyHint).show_keys("close", ("Esc, q or d", "close"))
        run_host_worker(self, self._diagnose(), "queue-diagnose", self.host.name)

    async def _diagnose(self) -> None:
        from rgt_tui.services.queue.view import diagnose_queue

        fleet = getattr(self.app, "fleet", None)  # RgtApp's (none in a bare app)
        try:
            view, diag = await self.connections.use(
                self.host.name, lambda t: diagnose_queue(self.host, t)
            )
        except Exception as exc:  # unreachable box and the like: shown in the modal
            if isinstance(exc, TransportError) and fleet is not None:
                # A spot box gone: what to do about its cell, as `rgt-tui diagnose` says.
                exc = await asyncio.to_thread(with_unreachable_fix, fleet, self.host, exc)
            self.post_message(self.Diagnosed(None, error_text(exc)))
            return
        # A vanished run of a box named preempted is the preemption's, not a manual
        # kill: the same weighing as `rgt-tui diagnose`.
        if fleet is not None:
            named = await asyncio.to_thread(named_preemption, fleet, self.host.name)
            diag = with_preemption(diag, named, self.host.watch.spare)
        self.post_message(self.Diagnosed((view, diag)))

    @on(Diagnosed)
    def _diagnosed(self, message: Diagnosed) -> None:
        body = self.query_one("#diagnosis-body", Static)
        if message.result is None:
            body.update(
                Content.styled(shown(f"Could not diagnose: {message.error}", lines=True), "$error")
            )
            return
        view, diag = message.result
        self.diagnosis = diag
        body.update(diagnosis_body(view, diag))

    def action_close(self) -> None:
        self.dismiss()
