"""The job keys (p pull, v verify, y sync, P preflight, t teardown), their messages and
palette entries.

Screens post ``JobRequested`` (messages up); the App hands it to its
``controllers.jobs.JobRunner`` and routes each ``JobsChanged`` back down to the screens.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.message import Message

from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.domain.config import Fleet

# The keys that start a job on the selected host, on the fleet and the detail screen.
JOB_BINDINGS = [
    Binding(
        "p",
        "host_job('pull', 'pulls')",
        "Pull",
        tooltip="Pull the host's results (resumable, hash-checked)",
    ),
    Binding(
        "v",
        "host_job('verify', 'pulls')",
        "Verify",
        tooltip="Verify the pulled copy: hashes, loads, roster",
    ),
    Binding(
        "y",
        "host_job('sync', 'queue')",
        "Sync",
        tooltip="Push the host's code to the box, checked by hash",
    ),
    # P, not c: c already opens the detail screen's log picker, and one key should do
    # the same thing on both screens.
    Binding(
        "P",
        "host_job('preflight', 'queue')",
        "Preflight",
        key_display="P",
        tooltip="Check the box: torch, GPU, driver, disk, code",
    ),
    Binding(
        "t",
        "host_job('gate', 'teardown')",
        "Teardown",
        tooltip="The teardown checklist (tears down only after you type the name)",
    ),
]


class JobsChanged(Message):
    """A host's jobs moved on (progress, an outcome, a teardown)."""

    def __init__(self, state: HostJobs) -> None:
        super().__init__()
        self.state = state

    def can_replace(self, message: Message) -> bool:
        # Progress arrives often: a newer state of the same host supersedes a queued one.
        return isinstance(message, JobsChanged) and message.state.host == self.state.host


class JobRequested(Message):
    """The user asked for a job on a host (``arg``: a cell name, the typed host name)."""

    def __init__(self, host: str, job: str, arg: str = "", *, show_tab: str | None = None):
        super().__init__()
        self.host = host
        self.job = job
        self.arg = arg
        self.show_tab = show_tab


def job_commands(app: App[Any]) -> list[tuple[str, str, Callable[[], Any]]]:
    """Command-palette entries: pull, verify, sync, preflight and the teardown checklist
    of every host."""
    entries = (
        ("Pull results", "pull", "pulls", "Resumable, hash-checked copy into results_dir"),
        ("Verify results", "verify", "pulls", "Hash, load and reconcile the pulled copy"),
        ("Sync code", "sync", "queue", "Push the host's code to its workdir, checked by hash"),
        (
            "Preflight",
            "preflight",
            "queue",
            "Torch, GPU, driver, disk, durable dir, code (Slurm: disk, durable, code)",
        ),
        ("Teardown checklist", "gate", "teardown", "Check the gate; type the name to tear down"),
    )
    fleet: Fleet = app.fleet  # type: ignore[attr-defined]
    return [
        (
            f"{title}: {host.name}",
            help_text,
            partial(_post_job, app, host.name, job, tab),
        )
        for host in fleet.hosts
        for title, job, tab, help_text in entries
    ]


def _post_job(app: App[Any], host: str, job: str, tab: str) -> None:
    app.post_message(JobRequested(host, job, show_tab=tab))
