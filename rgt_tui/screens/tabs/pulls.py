"""Pulls tab: the running pull's progress bars, the last pull's and verification's outcome.

``p`` pulls and ``v`` verifies (the detail screen's keys); the App runs the jobs and hands
each new state down through ``show_jobs``. Where this process ran no pull or verify
since the records last changed, the tab shows the last ones their records hold
(``HostJobs.recorded``): one run from the command line or another TUI is shown too.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.host_text import clock_hhmm
from rgt_tui.content.pull_view import (
    MUTED,
    join,
    progress_lines,
    pull_error_lines,
    pull_result_lines,
    verify_lines,
)
from rgt_tui.content.recorded_view import (
    as_older,
    recorded_pull_lines,
    recorded_verify_lines,
)
from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.domain.teardown_gate import CHANGED_SINCE
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.widgets.hanging import Hanging

HINT = "p pull (resumable, hash-checked) · v verify (hash, load, roster)"
NO_PULL = "not pulled yet (no pull recorded for this host)"
NO_VERIFY = "not verified yet (no verification recorded for this host)"


def written_since_line(jobs: HostJobs) -> Content | None:
    """The gate's last check found the box written since the pull shown: its "✓ pull
    complete" stays true of that pull, but no longer of the box (h471 #7: it read as the
    all clear while the Teardown tab said new files were there). None when there is no
    such check, or a pull came after it, this process's or another's: the records say
    (not ``gate_outdated``, which a verify sets too, and the line then went while nothing
    new was pulled: review h482 #9)."""
    gate, at = jobs.gate, jobs.gate_at
    if gate is None or gate.state is None or at is None:
        return None
    why = gate.state.invalidated_by or ""
    if gate.state.manifest is not None or not why.startswith(CHANGED_SINCE):
        return None
    recorded = jobs.recorded
    if recorded is not None and recorded.pull is not None and recorded.pull.at > at:
        return None
    return Content.styled(
        # "changed", not "wrote": a file removed there is a change too, and "pull it"
        # read as bringing a removed file (h481 #9).
        shown(f"⚠ the box changed since this pull (the check at {clock_hhmm(at)}: "
              f"{why.removeprefix(CHANGED_SINCE)}) — p pulls it as it is now"),
        "bold $warning",
    )  # fmt: skip


class PullsTab(DetailTab):
    """The pull and the verification of this host's results."""

    TAB_ID = "pulls"
    TITLE = "Pulls"

    def __init__(self) -> None:
        super().__init__()
        self.jobs: HostJobs | None = None
        self.now = 0.0  # the detail screen's clock, for "… ago"
        self._verdict_of: object = None  # the verify report last brought into view

    def compose(self) -> ComposeResult:
        yield Static(Content.styled(HINT, MUTED), classes="pulls-hint")
        yield Static("Pull", classes="section-title")
        yield Hanging(Content.styled(NO_PULL, MUTED), classes="pull-body")
        yield Static("Verification", classes="section-title")
        yield Hanging(Content.styled(NO_VERIFY, MUTED), classes="verify-body")

    def show(self, view: HostView) -> None:
        self.now = view.now
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
        # The progress while the pull runs; once it ended, its outcome alone (the progress's
        # last phase, plan line and failure would say the outcome's lines a second time).
        # A new pull clears the outcome (controllers/jobs.py) before its first progress.
        ended = jobs.pull_error is not None or jobs.pull_result is not None
        if jobs.progress is not None and not ended:
            pull += progress_lines(jobs.progress, width)
        elif jobs.running == "pull" and not ended:  # before its first progress: a stand-in
            pull.append(Content.styled("pulling…", "bold $accent"))
        if jobs.pull_error is not None:
            pull += pull_error_lines(*jobs.pull_error)
        recorded = jobs.recorded
        # A verify of this pull on record (of the manifest kept now, not an older pull's):
        # "next: v to verify" is done (a user's hour read it under a verify's verdict).
        verified = recorded is not None and recorded.verify is not None and recorded.verify.current
        if jobs.pull_result is not None:
            pull += pull_result_lines(jobs.pull_result, verified=verified)
        if not pull and recorded is not None and recorded.pull is not None:
            pull = recorded_pull_lines(recorded.pull, self.now, verified=verified)
        written = written_since_line(jobs)
        if pull and written is not None:
            pull.append(written)
        if recorded is not None and recorded.problem is not None:
            pull.append(Content.styled(shown(f"record unreadable: {recorded.problem}"), "$error"))
        self.query_one(".pull-body", Static).update(
            join(pull) if pull else Content.styled(NO_PULL, MUTED)
        )
        verify: list[Content] = []
        if jobs.running == "verify":
            verify.append(Content.styled("verifying…", "bold $accent"))
        if jobs.verify_error is not None:
            verify.append(Content.assemble(("✖ verify failed: ", "bold $error"), jobs.verify_error))
        if jobs.verify_report is not None:
            verify += verify_lines(jobs.verify_report)
            if recorded is not None and recorded.verify is not None and not recorded.verify.current:
                # This process's verify, of the pull before the one just made: said as the
                # recorded one is (a user's hour read its verdict as the new pull's).
                verify = as_older(verify)
        if not verify and recorded is not None and recorded.verify is not None:
            verify = recorded_verify_lines(recorded.verify, self.now)
        self.query_one(".verify-body", Static).update(
            join(verify) if verify else Content.styled(NO_VERIFY, MUTED)
        )
        if jobs.verify_report is not None and jobs.verify_report is not self._verdict_of:
            # A verify just ended: its verdict is the tab's last line, below the fold on a
            # small terminal (80x24), where v would seem to have done nothing.
            self._verdict_of = jobs.verify_report
            self.call_after_refresh(self.scroll_end, animate=False)
