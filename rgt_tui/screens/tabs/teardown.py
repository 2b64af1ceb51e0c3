"""Teardown tab: the gate's checklist, the profile's facts, and the typed confirmation.

Every condition is shown with its evidence; a missing or running cell can be
acknowledged by name (a name not in the host's queue is refused with the list); the last
step is an input where the host's name is typed. ``t`` puts the cursor there, and a
wrong name leaves it there, so what the user types never reaches a single-key binding;
so does the first confirmation when no teardown command is configured, since the name is
typed there a second time. Each locked line names the key that settles it.
Only an exact match starts the teardown job, which re-scans the box right then. Without
a teardown command the tab shows what to destroy by hand and asks for the name a second
time, once the box is destroyed; only that second name records the teardown.
"""

from __future__ import annotations

import time

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Button, Input, Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.pull_view import (
    MUTED,
    checklist_lines,
    join,
    outcome_lines,
    profile_lines,
)
from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.screens.job_keys import JobRequested
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.services.journal import BoxHistory

CONFIRM_PLACEHOLDER = "type the host's name to tear it down"
MANUAL_PLACEHOLDER = "type the host's name again once you destroyed the box"


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


def history_lines(history: tuple[BoxHistory, ...]) -> list[Content]:
    """Earlier boxes under this host's name (the journal's ``BoxHistory``): shown as
    history, never counted for the box there now."""
    if not history:
        return []
    lines = [
        Content.styled(
            "History: earlier boxes under this name (they count for nothing now)", "bold"
        )
    ]
    for old in history:
        box = old.box
        name = f"box {box.short()}" if box is not None else "an unidentified box"
        at = old.torn_down_at
        fate = f"torn down {_when(at)}" if at is not None else "never recorded as torn down"
        lines.append(
            Content.assemble(
                ("• ", MUTED), (name, "bold"), f": {fate}; replaced {_when(old.retired_at)}",
                (f" ({shown(old.why)})" if old.why else "", MUTED),
            )
        )  # fmt: skip
    return lines


class TeardownTab(DetailTab):
    """The teardown checklist of this host and its confirmation."""

    TAB_ID = "teardown"
    TITLE = "Teardown"

    def __init__(self) -> None:
        super().__init__()
        self.jobs: HostJobs | None = None
        self.host_name = ""
        self.has_command: bool | None = None  # a teardown command is configured (None: unknown)

    def compose(self) -> ComposeResult:
        yield Static("Checklist", classes="section-title")
        yield Static(Content.styled("press t to check the gate", MUTED), id="teardown-checklist")
        # Under the checklist it re-checks, on a row of its own: seen at 80 columns.
        yield Button("Re-check", id="recheck", variant="primary", tooltip="Re-scan the box")
        yield Static("Platform", classes="section-title")
        yield Static(id="teardown-profile")
        yield Static("Acknowledge a cell by name", classes="section-title")
        with Horizontal(classes="teardown-row"):
            yield Input(placeholder="cell name", id="ack-cell")
            yield Button(
                "Missing: accept",
                id="ack-missing",
                tooltip="The typed cell is missing: accept that it left no results",
            )
            yield Button(
                "Running: accept",
                id="ack-running",
                tooltip="The typed cell is still running: accept tearing it down running",
            )
        yield Static(id="ack-note")
        yield Static("Confirm", classes="section-title")
        yield Input(placeholder=CONFIRM_PLACEHOLDER, id="confirm-name")
        yield Static(id="teardown-outcome")
        yield Static(id="teardown-history")

    def show(self, view: HostView) -> None:
        self.host_name = view.host.name
        self.has_command = bool(view.host.teardown)
        self._draw()

    def show_jobs(self, jobs: HostJobs) -> None:
        """Take the host's new job state and draw it."""
        self.jobs = jobs
        self.host_name = jobs.host
        self._draw()

    def take_focus(self) -> Input | None:
        """Put the cursor in the confirmation box: the name typed next lands there."""
        if not self.query("#confirm-name"):
            return None  # not composed yet, or removed: nothing to type into
        box = self.query_one("#confirm-name", Input)
        # The screen's set_focus acts now (Widget.focus waits a turn): keys already on
        # their way must find the box focused, not the screen's single-key bindings.
        self.screen.set_focus(box)
        return box

    def on_mount(self) -> None:
        # State that arrived while the tab was still composing is drawn now.
        self.call_after_refresh(self._draw)

    def _draw(self) -> None:
        jobs = self.jobs
        if jobs is None or not self.is_mounted or not self.query("#teardown-outcome"):
            return  # not composed yet: on_mount draws it
        checklist: list[Content] = []
        if jobs.running in ("gate", "acknowledge", "teardown"):
            checklist.append(
                Content.styled(f"{jobs.running}: re-scanning the box…", "bold $accent")
            )
        if jobs.gate_error:
            checklist.append(
                Content.assemble(
                    ("✖ cannot check: ", "bold $error"), shown(jobs.gate_error, lines=True)
                )
            )
        if jobs.gate is not None:
            checklist += checklist_lines(jobs.gate, torn_down=jobs.torn_down_at is not None)
            self.query_one("#teardown-profile", Static).update(join(profile_lines(jobs.gate)))
        if checklist or jobs.gate is None:
            self.query_one("#teardown-checklist", Static).update(
                join(checklist) if checklist else Content.styled("press t to check the gate", MUTED)
            )
        note = Content.styled(shown(jobs.ack_refusal), "bold $warning") if jobs.ack_refusal else ""
        self.query_one("#ack-note", Static).update(note)
        outcome: list[Content] = []
        if jobs.refusal:
            outcome.append(Content.styled(shown(jobs.refusal, lines=True), "bold $warning"))
        if jobs.teardown is not None:
            outcome += outcome_lines(jobs.teardown, jobs.torn_down_at is not None, jobs.host)
        elif jobs.shown_torn_down_at is not None:
            outcome.append(Content.styled("recorded as torn down", "bold $success"))
        elif jobs.refused_key is not None and jobs.torn_down_at is not None:
            outcome.append(
                Content.styled(
                    f"another box answers (host key {jobs.refused_key}, refused): not the "
                    "torn-down box; check its key (K) to see which box it is",
                    "bold $warning",
                )
            )
        self.query_one("#teardown-outcome", Static).update(join(outcome))
        self.query_one("#teardown-history", Static).update(join(history_lines(jobs.history)))
        box = self.query_one("#confirm-name", Input)
        box.placeholder = MANUAL_PLACEHOLDER if jobs.awaiting_manual else CONFIRM_PLACEHOLDER

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
        manual = self.jobs is not None and self.jobs.awaiting_manual
        # Without a teardown command the first confirmation asks for the name again
        # ("type it again below"): the cursor stays here for it, as it does after a wrong
        # name, so the next keys are typed, never run as actions ("2" switching tabs).
        if typed == self.host_name and (manual or self._has_command()):
            self.screen.set_focus(None)  # the keys (t, p, v, Esc) act on the screen again
        self._request("manual-teardown" if manual else "teardown", typed)

    def _has_command(self) -> bool:
        """Whether the host has a teardown command (from the drawn view, else the screen's
        host); unknown counts as none, which keeps the cursor in the box."""
        if self.has_command is not None:
            return self.has_command
        host = getattr(self.screen, "host", None)
        return bool(getattr(host, "teardown", None))
