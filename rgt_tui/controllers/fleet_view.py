"""The one typed way the App hands the fleet's state down to its screens.

A screen that shows hosts subclasses ``FleetView`` (before ``Screen``) and overrides what
it shows; the App calls these on every such screen in its stack. The defaults ignore the
news, so a screen takes only what it draws, and the App never probes a screen with
``getattr``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rgt_tui.controllers.jobs import HostJobs
    from rgt_tui.domain.errors import HostKeyError
    from rgt_tui.domain.history import HostHistory
    from rgt_tui.domain.preemption import Checkpoint, Preemption
    from rgt_tui.domain.queue_state import QueueView
    from rgt_tui.services.telemetry import HostUpdate


class FleetView:
    """Receives the App's news about hosts; every method defaults to doing nothing."""

    def host_updated(self, update: HostUpdate, history: HostHistory | None) -> None:
        """A host's new sample or connection state, with its history."""

    def jobs_changed(self, state: HostJobs) -> None:
        """A host's pull / verify / teardown moved on."""

    def queue_viewed(self, host: str, view: QueueView) -> None:
        """The poller read a host's queue."""

    def host_key_refused(self, host: str, error: HostKeyError | None) -> None:
        """A host's key was refused (None: it connected again)."""

    def host_preempted(self, host: str, preemption: Preemption | None) -> None:
        """The runtime's named preemption of an interruptible host (None: none now)."""

    def checkpoint_verified(self, host: str, cell: str, checkpoint: Checkpoint | None) -> None:
        """The running ``cell``'s newest pulled-and-verified checkpoint (None: none)."""
