"""The usage key (``u``): what fills a host's disk, in a modal, and the typed delete.

Screens bind ``DISK_BINDING`` and post ``DiskUsageRequested``; the App pushes
``DiskUsageScreen``, which audits the box in a worker (``controllers.disk`` runs
``services.disk.audit``) and shows the largest folders (bytes and inodes), the Hugging
Face cache by model and the superseded checkpoints, each not offered for deletion marked
with why (``services.disk.offer``), and which are offered. Typing an offered entry as it
is listed (a folder's full path, a model's ORG/NAME, a checkpoint's CELL/FILE) and Enter
is the confirmation (a name not offered runs nothing; for a folder's last name alone,
the status names the full path to type):
the delete is checked (``services.disk.reclaim``: nothing not pulled and verified under
a pull root) and refused with what would be lost, or done, and the audit taken again.
While the input has focus no single-key binding fires; Escape closes.

The box is as tall as what it holds, up to a dialog's share of the screen: a failed
audit's one line has its reason right below it, not under rows of blank (a keyboard
audit). A long audit scrolls (↑↓, PgUp/PgDn: ``dialog.DialogBody``, its keys from
``dialog.ReplanScreen``) in what the status, the input and the key line leave
(``BodyScreen.fit_body``): they stay on screen at any terminal size (an 80x24 terminal
hid them below the fold: ux-d #12).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.disk_text import audit_lines, listed, not_listed, offer_line
from rgt_tui.content.key_words import in_keys
from rgt_tui.controllers.disk import DiskControl
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.screens.dialog import DialogBody, KeyHint, ReplanScreen
from rgt_tui.screens.type_ahead import InOrderInput, typed_into
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.disk.audit import DiskAudit
from rgt_tui.services.disk.offer import not_offered, offered

DISK_BINDING = Binding(
    "u",
    "disk_usage",
    "Usage",
    tooltip="What fills the disk: largest folders, HF cache, old checkpoints",
)


class DiskUsageRequested(Message):
    """The user asked for a host's disk audit."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host


def disk_commands(
    fleet: Fleet, post: Callable[[Message], Any]
) -> list[tuple[str, str, Callable[[], Any]]]:
    """Command-palette entries: the disk audit of every host."""
    return [
        (
            f"Disk usage: {host.name}",
            "Largest folders (bytes, inodes), HF cache by model, superseded checkpoints",
            partial(post, DiskUsageRequested(host.name)),
        )
        for host in fleet.hosts
    ]


class DiskUsageScreen(ReplanScreen[None]):
    """The audit of one host's disk; type an entry's name to delete it; Escape closes."""

    DEFAULT_CSS = """
    /* As tall as what it holds (a dialog's height: auto, at most BOX_SHARE): a fixed 90%
       with the audit at 1fr put ~40 blank rows between a failed audit's line and its
       reason (a keyboard audit). A row's reason is long: 150 keeps most on one line. */
    DiskUsageScreen > #disk-box { width: 150; }
    /* A refusal names up to 20 files: it scrolls on its own past a few lines, so the
       input below it stays on screen. */
    DiskUsageScreen #disk-status { height: auto; max-height: 6; overflow-y: auto; }
    """

    BINDINGS = [Binding("escape", "close", "Close", tooltip="Close the disk audit")]

    class Audited(Message):
        """An audit came back (or failed), with what the last delete did."""

        def __init__(self, audit: DiskAudit | None, status: Content) -> None:
            super().__init__()
            self.audit = audit
            self.status = status

    def __init__(
        self,
        host: HostConfig,
        connections: FleetConnections,
        results_dir: Path,
        *,
        torn_down_at: float | None = None,
    ) -> None:
        super().__init__()
        self.host = host
        self.torn_down_at = torn_down_at  # its recorded teardown: a refusal said against it
        self.connections = connections
        self.results_dir = results_dir
        self.audit: DiskAudit | None = None
        self.deleting = False  # a typed delete runs (the screen's worker: Escape waits)
        self.auditing = True  # the first audit is under way (its answer may be a failure)

    def compose(self) -> ComposeResult:
        with Vertical(id="disk-box", classes="dialog-box"):
            yield Static(
                Content.assemble(("Disk usage of ", "bold"), (self.host.name, "bold $accent")),
            )
            with DialogBody(id="disk-scroll"):
                yield Static(
                    Content.styled("auditing… (du on the box)", "$foreground-muted"),
                    id="disk-body",
                )
            yield Static("", id="disk-status")
            # Invites nothing until the audit says what is offered (``_audited``); focused
            # from the start all the same, so that no typed key is read as a command.
            yield InOrderInput(placeholder="auditing…", id="disk-input")
            yield KeyHint(id="disk-hint")

    def on_mount(self) -> None:
        self.show_hint()
        box = self.query_one("#disk-input", Input)
        box.focus()
        # Once it has the cursor (focus() is a call_later of the app): the keys typed
        # with u, kept meanwhile (``expect_typing``), go in; an Enter among them deletes
        # nothing (a delete waits for an Enter pressed with the audit in sight).
        self.app.call_later(typed_into, self, box)
        run_host_worker(self, self._work(None), "disk-audit", self.host.name)

    def show_hint(self) -> None:
        """Enter deletes what is typed (checked first); the scroll keys while the audit
        holds more than it shows; Escape closes. Then the audit fits what is left."""
        audit = self.audit
        shown = {e.path for e in listed(audit)} if audit is not None else set()
        none = audit is not None and not any(e.path in shown for e in offered(audit))
        self.query_one("#disk-hint", KeyHint).show_keys(
            # Not "delete what is typed" when nothing is offered (hour s24b #13), nor
            # when the box was not read at all (h471 #3).
            "nothing: the box's disk was not read"
            if audit is None and not self.auditing
            # Nor before the audit came: Enter then only says it is still being read.
            else "nothing yet: the box's disk is still being read"
            if audit is None
            else "nothing: no entry is offered for deletion"
            if none
            # Not "pulled and verified" alone: a model is checked for a process holding it
            # (s38 disk hour #4 read the old words as true of a model too).
            else "delete what is typed (checked first: results pulled and verified, "
            "nothing holding it open)",
            *self.scroll_keys(),
            ("Esc", "close"),
        )
        self.call_after_refresh(self.fit_body)  # the key line may wrap to more rows

    def _say(self, status: Content) -> None:
        """Write the status line under the audit; the audit fits what it leaves (a
        refusal runs to several rows)."""
        self.query_one("#disk-status", Static).update(status)
        self.call_after_refresh(self.fit_body)

    async def _work(self, typed: str | None) -> None:
        disk = DiskControl(
            self.connections, self.host, self.results_dir, torn_down_at=self.torn_down_at
        )
        if typed is not None and self.audit is not None:
            try:  # ``deleting`` was set when it was asked for (``_typed``)
                outcome = await disk.delete(self.audit, typed)
            finally:
                self.deleting = False
        else:
            outcome = await disk.audit()
        said = in_keys(outcome.status, self.host.name, in_dialog=True)
        status = Content.styled(said, f"${outcome.kind}") if outcome.kind else Content("")
        self.post_message(self.Audited(outcome.audit or self.audit, status))

    @on(Audited)
    def _audited(self, message: Audited) -> None:
        self.audit = message.audit
        self.auditing = False
        if message.audit is not None:
            self.query_one("#disk-body", Static).update(
                # In the host screen's keys behind this dialog: "press Esc, then p (pull)",
                # not "run `rgt-tui pull box1`" (p does nothing in the dialog itself).
                Content(
                    "\n".join(
                        in_keys(line, self.host.name, in_dialog=True)
                        for line in audit_lines(message.audit)
                    )
                )
            )
            self._invite(message.audit)
        elif self.audit is None:
            # The first audit failed: no "auditing…" left behind, nor an Enter that
            # promises a delete (h471 #3). The status below says why.
            self.query_one("#disk-body", Static).update(
                Content.styled("the box's disk was not read (below: why)", "$foreground-muted")
            )
            self.query_one(
                "#disk-input", Input
            ).placeholder = "nothing to delete: the box was not read — Esc, then u tries again"
            self.show_hint()
        self._say(message.status)

    def _invite(self, audit: DiskAudit) -> None:
        """The input invites only what a delete may accept: an offered entry's name, or
        with none offered, why (the audit's last line names the offered ones)."""
        shown = {e.path for e in listed(audit)}
        self.query_one("#disk-input", Input).placeholder = (
            # Short enough for an 80-column box (it was cut at "…its full path),").
            "an offered entry (a folder: its full path); Enter deletes it"
            if any(e.path in shown for e in offered(audit))
            else offer_line(audit)
        )
        self.show_hint()

    @on(Input.Submitted, "#disk-input")
    def _typed(self, event: Input.Submitted) -> None:
        typed = event.value.strip()
        if typed and self.audit is None and self.auditing:
            # Only while it is read: an audit that failed keeps its own words (review s38).
            # Said, not dropped: the Enter did nothing, and the path stays typed for the
            # next one (s38 disk hour #8 met the silence, a delete one Enter away).
            self._say(
                Content.styled(
                    "the box's disk is still being read: nothing is deleted until it is "
                    "listed — press Enter again once it is",
                    "$warning",
                )
            )
            return
        if typed and self.audit is None:  # the audit failed: said, not a silent Enter
            self._say(
                Content.styled(
                    "nothing is deleted: the box's disk was not read — Esc, then u tries again",
                    "$warning",
                )
            )
            return
        if not typed or self.audit is None:
            return
        if self.deleting:
            # A second delete (the same worker group) cancelled the one running halfway
            # (a user's hour, s21b #2): one at a time.
            self._say(
                Content.styled(
                    "a delete runs: it cannot be cut short — type the next once it has ended",
                    "$warning",
                )
            )
            return
        entry = self.audit.find(typed)
        why = None if entry is None else not_offered(self.audit, entry)
        if entry is None or entry.path not in {e.path for e in listed(self.audit)}:
            why = not_listed(self.audit, typed)
        elif why is not None:
            why = f"is not offered: {why}"
        if why is not None:  # a typo or a refusal known now is not a request: nothing runs
            self._say(Content.styled(f"{shown(typed)} {why}", "$warning"))
            return
        event.input.value = ""
        self._say(
            Content.styled(
                f"checking and deleting {shown(typed)}… (it cannot be cut short)",
                "$foreground-muted",
            )
        )
        self.deleting = True  # the screen's worker: Escape now would cut it short
        run_host_worker(self, self._work(typed), "disk-audit", self.host.name)

    def action_close(self) -> None:
        if self.deleting:  # a delete cut halfway: some files gone, the record not written
            self._say(
                Content.styled(
                    "deleting… it cannot be cut short: Esc closes this once it has ended",
                    "$warning",
                )
            )
            return
        self.dismiss()
