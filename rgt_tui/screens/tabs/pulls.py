"""Pulls tab: the running pull's progress bars, the last pull's and verification's outcome.

``p`` pulls and ``v`` verifies (the detail screen's keys); the App runs the jobs and hands
each new state down through ``show_jobs``.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from rgt_tui.content.pull_view import (
    MUTED,
    join,
    progress_lines,
    pull_error_lines,
    pull_result_lines,
    verify_lines,
)
from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.screens.tabs.base import DetailTab, HostView

HINT = "p pull (resumable, hash-checked) · v verify (hash, load, roster)"


class PullsTab(DetailTab):
    """The pull and the verification of this host's results."""

    TAB_ID = "pulls"
    TITLE = "Pulls"

    def __init__(self) -> None:
        super().__init__()
        self.jobs: HostJobs | None = None

    def compose(self) -> ComposeResult:
        yield Static(Content.styled(HINT, MUTED), classes="pulls-hint")
        yield Static("Pull", classes="section-title")
        yield Static(Content.styled("not pulled in this session", MUTED), classes="pull-body")
        yield Static("Verification", classes="section-title")
        yield Static(Content.styled("not verified in this session", MUTED), classes="verify-body")

    def show(self, view: HostView) -> None:
        self._draw()

    def show_jobs(self, jobs: HostJobs) -> None:
        """Take the host's new job state and draw it."""
        self.jobs = jobs
        self._draw()

    def _draw(self) -> None:
        jobs = self.jobs
        if jobs is None or not self.is_mounted:
            return
        width = max(30, (self.content_size.width or 80) - 2)
        pull: list[Content] = []
        if jobs.running == "pull":
            pull.append(Content.styled("pulling…", "bold $accent"))
        if jobs.progress is not None:
            pull += progress_lines(jobs.progress, width)
        if jobs.pull_error is not None:
            pull += pull_error_lines(*jobs.pull_error)
        if jobs.pull_result is not None:
            pull += pull_result_lines(jobs.pull_result)
        if pull:
            self.query_one(".pull-body", Static).update(join(pull))
        verify: list[Content] = []
        if jobs.running == "verify":
            verify.append(Content.styled("verifying…", "bold $accent"))
        if jobs.verify_error is not None:
            verify.append(Content.assemble(("✖ verify failed: ", "bold $error"), jobs.verify_error))
        if jobs.verify_report is not None:
            verify += verify_lines(jobs.verify_report)
        if verify:
            self.query_one(".verify-body", Static).update(join(verify))
