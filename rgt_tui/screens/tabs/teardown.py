"""Teardown tab: the gate's checklist, the profile's facts, and the typed confirmation.

Every condition is shown with its evidence; a missing or running cell can be
acknowledged by name; the last step is an input where the host's name is typed. Only an
exact match starts the teardown job, which re-checks the gate before it runs anything.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Button, Input, Static

from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.widgets.pull_jobs import HostJobs, JobRequested
from rgt_tui.widgets.pull_view import (
    MUTED,
    checklist_lines,
    join,
    outcome_lines,
    profile_lines,
)


class TeardownTab(DetailTab):
    """The teardown checklist of this host and its confirmation."""

    TAB_ID = "teardown"
    TITLE = "Teardown"

    def __init__(self) -> None:
        super().__init__()
        self.jobs: HostJobs | None = None
        self.host_name = ""

    def compose(self) -> ComposeResult:
        yield Static("Checklist", classes="section-title")
        yield Static(Content.styled("press t to check the gate", MUTED), id="teardown-checklist")
        yield Static("Platform", classes="section-title")
        yield Static(id="teardown-profile")
        yield Static("Acknowledge a cell by name", classes="section-title")
        with Horizontal(classes="teardown-row"):
            yield Input(placeholder="cell name", id="ack-cell")
            yield Button("Missing: accept no results", id="ack-missing")
            yield Button("Running: accept it running", id="ack-running")
            yield Button("Re-check", id="recheck", variant="primary")
        yield Static("Confirm", classes="section-title")
        yield Input(placeholder="type the host's name to tear it down", id="confirm-name")
        yield Static(id="teardown-outcome")

    def show(self, view: HostView) -> None:
        self.host_name = view.host.name
        self._draw()

    def show_jobs(self, jobs: HostJobs) -> None:
        """Take the host's new job state and draw it."""
        self.jobs = jobs
        self.host_name = jobs.host
        self._draw()

    def _draw(self) -> None:
        jobs = self.jobs
        if jobs is None or not self.is_mounted:
            return
        checklist: list[Content] = []
        if jobs.running in ("gate", "acknowledge", "teardown"):
            checklist.append(
                Content.styled(f"{jobs.running}: re-scanning the box…", "bold $accent")
            )
        if jobs.gate_error:
            checklist.append(Content.assemble(("✖ cannot check: ", "bold $error"), jobs.gate_error))
        if jobs.gate is not None:
            checklist += checklist_lines(jobs.gate)
            self.query_one("#teardown-profile", Static).update(join(profile_lines(jobs.gate)))
        if checklist:
            self.query_one("#teardown-checklist", Static).update(join(checklist))
        outcome: list[Content] = []
        if jobs.refusal:
            outcome.append(Content.styled(jobs.refusal, "bold $warning"))
        if jobs.teardown is not None:
            outcome += outcome_lines(jobs.teardown, jobs.torn_down_at is not None)
        elif jobs.torn_down_at is not None:
            outcome.append(Content.styled("recorded as torn down", "bold $success"))
        self.query_one("#teardown-outcome", Static).update(join(outcome))

    def _request(self, job: str, arg: str = "") -> None:
        if self.host_name:
            self.post_message(JobRequested(self.host_name, job, arg))

    @on(Button.Pressed, "#ack-missing, #ack-running")
    def _acknowledge(self, event: Button.Pressed) -> None:
        event.stop()
        box = self.query_one("#ack-cell", Input)
        cell = box.value.strip()
        if not cell:
            self.notify("Type the cell's name first", severity="warning")
            return
        self._request(f"acknowledge-{(event.button.id or '').removeprefix('ack-')}", cell)
        box.value = ""

    @on(Button.Pressed, "#recheck")
    def _recheck(self, event: Button.Pressed) -> None:
        event.stop()
        self._request("gate")

    @on(Input.Submitted, "#confirm-name")
    def _confirm(self, event: Input.Submitted) -> None:
        event.stop()
        typed = event.value.strip()
        event.input.value = ""
        self.screen.set_focus(None)  # the keys (t, p, v, Esc) act on the screen again
        self._request("teardown", typed)
