"""QuitConfirmScreen: asked before quitting while a pull or a teardown is in flight, and
always in the demo (quitting it deletes its boxes, their queues and files, and its pulls).

Quitting cancels them. A pull loses nothing (its parts stay and ``p`` resumes), but a user
who pressed q out of habit would find the pull stopped only when they next look; a
teardown's command may be half-way. So the modal says what stops and what is kept;
Escape and Enter (on the focused "Keep running") stay, q again or the Quit button
leaves; the line under the buttons says so.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.content import Content
from textual.widgets import Static

from rgt_tui.domain.units import fmt_bytes
from rgt_tui.screens.dialog import ConfirmScreen
from rgt_tui.services.pull.progress import PullProgress

STAY = ("stay", "Keep running", "keep running", "primary")
LEAVE = ("leave", "Quit", "quit anyway", "warning")


def busy_line(host: str, job: str, progress: PullProgress | None, *, kept: bool = True) -> str:
    """What quitting does to ``host``'s job in flight, in one line. ``kept``: what a pull
    brought stays here (not in the demo, whose folders go when it quits)."""
    if job == "pull":
        done = ""
        if progress is not None:
            # Of the whole manifest, files already here included: "here" says so (a user
            # read "212M of 3.3G" as pulled of what was left to move).
            here, total = fmt_bytes(progress.bytes_done), fmt_bytes(progress.bytes_total)
            done = f" ({here} of {total} here)"
        if not kept:
            return f"{host}: pull{done} stops"
        return f"{host}: pull{done} stops; what arrived is kept, and p resumes it"
    return f"{host}: {job} is cut off where it stands; open the host's Teardown tab when back"


class QuitConfirmScreen(ConfirmScreen):
    """The quit question (the one ConfirmScreen): lists the jobs quitting would stop;
    dismisses with "leave" to quit, else None. ``q`` again quits."""

    BINDINGS = [
        Binding("escape", "answer_safe", "Stay", tooltip="Keep rgt-tui and its jobs running"),
        Binding("q", "answer('leave')", "Quit anyway", tooltip="Quit; the jobs listed stop"),
    ]

    def __init__(self, lines: list[str], *, removes: str | None = None) -> None:
        """``removes``: what quitting also deletes (the demo's boxes and pulls), said
        whatever runs."""
        super().__init__(_question(lines, removes), [LEAVE], safe=STAY, safe_first=True)
        self.lines = lines
        self.removes = removes

    def jobs_now(self, lines: list[str]) -> None:
        """The jobs in flight changed while the question is open (a pull ended): it
        lists what quitting would stop now, not what it would have (a user's hour read
        three finished pulls "stop" for minutes)."""
        if lines != self.lines and self.query("#confirm-body"):
            self.lines = lines
            self.query_one("#confirm-body", Static).update(_question(lines, self.removes))


def _question(lines: list[str], removes: str | None) -> Content:
    """The question and its lines (host names and jobs as Content: plain text, never
    markup); with none left, that quitting stops nothing now; then what quitting deletes
    (the demo)."""
    if lines:
        said = [Content.styled("Quit while these run?", "bold"), *lines]
    elif removes:
        said = [Content.styled("Quit the demo?", "bold")]
    else:
        said = [Content.styled("Nothing runs any more: quitting stops nothing.", "bold")]
    return Content("\n").join([*said, *([removes] if removes else [])])
