"""QueueMoveScreen: "Move cells…" of one host's queue to another host (``queue move``).

Minimal on purpose: type the cells' names and the destination host, Plan shows what
happens to each line (``services.queue.move.plan_lines``) and every refusal; Move does
it. When the source box holds a cell, the Move button names the cells the box will skip,
so pressing it is the confirmation. The plan and the move run in workers over the host's
shared connection; while a plan is made Enter does nothing and the line says
"re-planning…" (``dialog.ReplanScreen``). Escape leaves everything as it was.
"""

from __future__ import annotations

from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static

from rgt_tui.content.box_text import shown
from rgt_tui.controllers.queue_actions import error_text
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.screens.dialog import DialogButton, KeyHint, ReplanScreen, enter_does
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue.move import MovePlan, MoveResult, plan_lines


class QueueMoveScreen(ReplanScreen[MoveResult | None]):
    """Cells and destination typed, planned, then moved (or cancelled)."""

    DEFAULT_CSS = """
    QueueMoveScreen > #move-box { width: 100; }
    QueueMoveScreen #move-notes { height: auto; max-height: 50vh; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close without moving")]

    class Planned(Message):
        """A move plan was built (or could not be)."""

        def __init__(
            self, asked: tuple[list[str], str], plan: MovePlan | None, error: str = ""
        ) -> None:
            super().__init__()
            self.asked = asked  # the (cells, host) typed when it was asked for
            self.plan = plan
            self.error = error

    def __init__(self, fleet: Fleet, host: HostConfig, connections: FleetConnections) -> None:
        super().__init__()
        self.fleet = fleet
        self.host = host
        self.connections = connections
        self.plan: MovePlan | None = None

    def compose(self) -> ComposeResult:
        others = [h.name for h in self.fleet.hosts if h.queue and h.name != self.host.name]
        with Vertical(id="move-box", classes="dialog-box"):
            yield Static(
                Content.assemble(("Move cells from ", "bold"), (self.host.name, "bold $accent")),
                id="move-title",
            )
            yield Input(placeholder="cells to move: names, space-separated", id="move-cells")
            yield Input(
                placeholder="to host: " + (", ".join(others) or "no other host has a queue"),
                id="move-to",
            )
            yield Static(
                Content.styled(
                    "Cells without verified results move to the end of the other host's queue "
                    "file, names unchanged; the old host's outputs stay.",
                    "$foreground-muted",
                ),
                id="move-notes",
            )
            with Horizontal(id="move-buttons", classes="dialog-buttons"):
                yield DialogButton("Plan", does="show what the move does", id="move-plan")
                yield DialogButton(
                    "Move", does="move", id="move-go", variant="primary", disabled=True
                )
                yield DialogButton("Cancel", does="cancel", id="move-cancel")
            yield KeyHint(id="move-hint")

    def on_mount(self) -> None:
        self.set_focus(self.query_one("#move-cells", Input))
        self._hint()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._hint()

    def _hint(self) -> None:
        enter = enter_does(self.focused, {"move-cells": "next", "move-to": "plan the move"})
        self.query_one("#move-hint", KeyHint).show_keys(
            enter, ("Tab", "next"), ("Esc", "cancel, nothing moved"), lead=self.hint_lead()
        )

    def _typed(self) -> tuple[list[str], str]:
        cells = self.query_one("#move-cells", Input).value.split()
        return cells, self.query_one("#move-to", Input).value.strip()

    @on(Input.Changed)
    def _changed(self) -> None:
        self.plan = None  # a plan is for what was typed when it was made
        self.query_one("#move-go", Button).disabled = True

    @on(Input.Submitted, "#move-cells")
    def _next(self) -> None:
        self.set_focus(self.query_one("#move-to", Input))

    @on(Input.Submitted, "#move-to")
    @on(Button.Pressed, "#move-plan")
    def _replan(self) -> None:
        cells, dest = self._typed()
        if not cells or not dest:
            self._show(
                Content.styled("type the cells' names and the host to move them to", "$warning")
            )
            return
        self._show(Content.styled("planning…", "$foreground-muted"))
        # Move moves what the plan on screen says: not while another one is being made.
        self.query_one("#move-go", Button).disabled = True
        self.begin_replan()
        self._hint()
        run_host_worker(self, self._plan(cells, dest), "queue-move-plan", self.host.name)

    async def _plan(self, cells: list[str], dest: str) -> None:
        from rgt_tui.services.queue.move import plan_move

        try:
            plan = await self.connections.use(
                self.host.name, lambda t: plan_move(self.fleet, self.host, cells, dest, t)
            )
        except Exception as exc:  # the plan reports an unreachable box itself; anything else shown
            self.post_message(self.Planned((cells, dest), None, error_text(exc)))
            return
        self.post_message(self.Planned((cells, dest), plan))

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        if message.plan is None and message.asked == self._typed():
            self._show(
                Content.styled(shown(f"Could not plan: {message.error}", lines=True), "$error")
            )
            self.end_replan(None if self.focused else self.query_one("#move-cancel", Button))
            self._hint()
            return
        plan = message.plan
        if plan is None or message.asked != self._typed():
            # Made for what was typed before: nothing to show, and nothing to hold Enter
            # for (Move stays disabled until a plan for the new text is asked for).
            self.end_replan(None)
            self._hint()
            return
        self.plan = plan
        lines = [
            Content.styled(shown(line), "$error" if line.startswith("REFUSED") else "")
            for line in plan_lines(plan)
        ]
        self._show(Content("\n").join(lines))
        go = self.query_one("#move-go", DialogButton)
        go.disabled = not plan.ok
        if plan.on_box:  # pressing it is the confirmation: it says the box will skip cells
            # Names go on the hint line, which wraps: a caption with them was cut ("▶ Move (box1").
            names = shown(", ".join(c.name for c in plan.on_box))
            go.set_caption(
                f"Move, {len(plan.on_box)} skipped", does=f"move; {plan.source} skips {names}"
            )
        else:
            go.set_caption("Move", does="move")
        # Enter in "to host" asked for this plan: a ready one takes the focus from there.
        self.end_replan(None)
        if plan.ok:
            self.set_focus(go)
        elif self.focused is None:  # the Plan button gave it up while planning
            self.set_focus(self.query_one("#move-cancel", Button))
        self._hint()

    def _show(self, text: Content) -> None:
        self.query_one("#move-notes", Static).update(text)

    @on(Button.Pressed, "#move-go")
    def _go(self) -> None:
        plan = self.plan
        if plan is None or not plan.ok:
            return
        self.query_one("#move-go", Button).disabled = True
        self._show(Content.styled("moving…", "$accent"))
        run_host_worker(self, self._move(plan), "queue-move", self.host.name)

    async def _move(self, plan: MovePlan) -> None:
        from rgt_tui.services.queue.move import apply_move

        app: Any = self.app
        try:
            result = await self.connections.use(
                self.host.name, lambda t: apply_move(plan, self.host, t)
            )
        except Exception as exc:  # MoveError / TransportError: shown, the modal stays
            self._show(Content.styled(shown(f"Not moved: {error_text(exc)}", lines=True), "$error"))
            return
        names = ", ".join(c.name for c in plan.cells)
        skipped = (
            f"\n{plan.source}'s box skips {', '.join(result.skipped)}" if result.skipped else ""
        )
        app.notify(
            shown(
                f"moved {names} to {plan.dest}{skipped}\nsend them: a (append) on {plan.dest}",
                lines=True,
            ),
            title=f"{plan.source}: cells moved",
            timeout=10,
            markup=False,
        )
        self.dismiss(result)

    @on(Button.Pressed, "#move-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
