"""QuitConfirmScreen: asked before quitting while a pull or a teardown is in flight.

Quitting cancels them. A pull loses nothing (its parts stay and ``p`` resumes), but a user
who pressed q out of habit would find the pull stopped only when they next look; a
teardown's command may be half-way. So the modal says what stops and what is kept;
Escape and Enter (on the focused "Keep running") stay, q again or the Quit button
leaves; the line under the buttons says so.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from rgt_tui.domain.units import fmt_bytes
from rgt_tui.screens.dialog import DialogButton, KeyHint, enter_does
from rgt_tui.services.pull.progress import PullProgress


def busy_line(host: str, job: str, progress: PullProgress | None) -> str:
    """What quitting does to ``host``'s job in flight, in one line."""
    if job == "pull":
        done = ""
        if progress is not None:
            done = f" ({fmt_bytes(progress.bytes_done)} of {fmt_bytes(progress.bytes_total)})"
        return f"{host}: pull{done} stops; what arrived is kept, and p resumes it"
    return f"{host}: {job} is cut off where it stands; open the host's Teardown tab when back"


class QuitConfirmScreen(ModalScreen[bool]):
    """Lists the jobs quitting would stop; dismisses with True to quit."""

    DEFAULT_CSS = """
    QuitConfirmScreen { align: center middle; }
    QuitConfirmScreen > #quit-box {
        width: 90; max-width: 96%; height: auto;
        border: round $warning; background: $surface; padding: 0 1;
    }
    QuitConfirmScreen #quit-buttons { height: auto; align-horizontal: right; }
    QuitConfirmScreen Button { margin-left: 1; }
    """

    BINDINGS = [
        Binding("escape", "stay", "Stay", tooltip="Keep rgt-tui and its jobs running"),
        Binding("q", "leave", "Quit anyway", tooltip="Quit; the jobs listed stop"),
    ]

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box"):
            yield Label("[b]Quit while these run?[/b]")
            yield Static("\n".join(self.lines), id="quit-jobs", markup=False)
            with Horizontal(id="quit-buttons"):
                yield DialogButton(
                    "Keep running", does="keep running", id="quit-stay", variant="primary"
                )
                yield DialogButton("Quit", does="quit anyway", id="quit-leave", variant="warning")
            yield KeyHint(id="quit-hint")

    def on_mount(self) -> None:
        self.set_focus(self.query_one("#quit-stay", Button))
        self._hint()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._hint()

    def _hint(self) -> None:
        self.query_one("#quit-hint", KeyHint).show_keys(
            enter_does(self.focused), ("q", "quit anyway"), ("Esc", "keep running")
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "quit-leave")

    def action_stay(self) -> None:
        self.dismiss(False)

    def action_leave(self) -> None:
        self.dismiss(True)
