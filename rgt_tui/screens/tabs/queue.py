"""Queue tab: every cell's state from the box's records, as the queue poller reads them.

The tab reads nothing itself: the app's queue poller is the one reader per host (one kept
connection), and it polls every few seconds while this tab is on screen. The tab shows
the latest view it was handed.

A group (issue 41) has a rank picker: the whole group's cells as one job (the default),
or one rank's own records, as the group's last poll read them (no read of its own).
``g`` focuses and opens it (host_detail.py), and the body's first line says so.

Just past 450 lines: the rank picker and the body share the view they draw; the words
themselves live in ``content/queue_text.py``.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Select, Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.queue_text import cell_line, not_sent_lines, queue_lines, running_risk_lines
from rgt_tui.content.ready_text import ready_lines
from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.controllers.notices import NOT_ANSWERING
from rgt_tui.controllers.queue_control import QueueControl
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.group_run import RankView
from rgt_tui.domain.preemption import Preemption, hhmm
from rgt_tui.domain.queue_state import (
    DONE,
    PENDING,
    RUNNING,
    QueueView,
    queue_is,
)
from rgt_tui.domain.rank_control import rank_control_refusal
from rgt_tui.domain.units import local_time, plural
from rgt_tui.screens.dialog import ConfirmScreen
from rgt_tui.screens.queue_control import CellPickScreen, control_question
from rgt_tui.screens.retry_confirm import RetryConfirmScreen
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.queue.launch_preflight import preflight_acks
from rgt_tui.widgets.hanging import Hanging

MUTED = "$foreground-muted"
WHOLE_GROUP = -1  # the rank picker's value for the group's combined view
RANK_HINT = "g picks a rank: the whole group as one job, or one box's records alone"


class QueueTab(DetailTab):
    """Cells pending / running / done / failed (exit code) / interrupted, and the resume index."""

    TAB_ID = "queue"
    TITLE = "Queue"

    DEFAULT_CSS = """
    QueueTab #queue-rank { width: 32; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.host: HostConfig | None = None
        # The screen's host from the start (``bind_host``): the preflight's acknowledged
        # checks are its settings, and an outcome can come before the first ``show``
        # (hour s34 TUI #5: opened from the palette, they read as failures).
        self.bound: HostConfig | None = None
        self.view: QueueView | None = None
        self.connections: FleetConnections | None = None
        self.shown: HostView | None = None  # the last drawn: its sample, its verified ckpt
        self.rank = WHOLE_GROUP  # a group's rank whose own records are shown
        # The body says the box does not answer (no view yet): "reading the queue…" again
        # once it answers. Only then: writing the same placeholder at every show raced a
        # view drawn just after it on a loaded machine (the body kept one line's height).
        self._said_down = False

    def compose(self) -> ComposeResult:
        # A group's ranks (issue 41); hidden on any other host, from the start (not by a
        # query in on_mount: a tab torn down as it mounts has no child to find).
        ranks = Select([("whole group", WHOLE_GROUP)], value=WHOLE_GROUP, allow_blank=False,
                       id="queue-rank")  # fmt: skip
        ranks.display = False
        yield ranks
        # Hanging: a cell row's code and notes wrap under the row's name, not at column 0.
        yield Hanging(
            Content.styled("reading the queue…", "$foreground-muted"), classes="queue-body"
        )
        # y (sync) and P (preflight): their progress and outcome, once one ran.
        ready = Hanging(classes="ready-body")
        ready.display = False
        yield ready

    def bind_host(self, host: HostConfig) -> None:
        self.bound = host

    def show_jobs(self, state: HostJobs) -> None:
        """The host's sync or preflight moved on: show its progress or outcome."""
        host = self.host or self.bound
        acked = preflight_acks(host) if host is not None else ()
        lines = ready_lines(state, acked)
        for body in self.query(".ready-body").results(Static):
            body.display = bool(lines)
            body.update(Content("\n").join(lines))

    def _lines(self, queue: QueueView) -> list[Content]:
        """The queue's lines, then its running cell's work at risk (issue 40), as the pane."""
        update = self.shown.update if self.shown else None
        snap = update.snapshot if update is not None else None
        # A box not answering: its last read, said as such (ux-e #4).
        answering = update is None or update.connection.status == "connected"
        current = queue.current
        risk = (
            running_risk_lines(
                self.shown.host,
                snap,
                self.shown.verified,
                answering=answering,
                running=current.name if current is not None else None,
            )
            if self.shown
            else []
        )
        torn = self._torn_down_at(self.shown.host) if self.shown else None
        lines = [
            *queue_lines(queue, answering=answering, torn_down_at=torn),
            *risk,
            *not_sent_lines(queue, torn_down=torn is not None),
        ]
        preempted = self._preempted() if not answering else None
        if preempted is not None:
            # The last read still says "running" and offers S and X; the box is gone (a
            # user's hour read the cell as running after it had moved: s21a #8).
            gone = f"preempted at ~{hhmm(preempted.at)}: the box is gone, so nothing here runs now"
            if preempted.cell is not None and preempted.moved_to:
                # Moved already: "m moves the interrupted cell" sent the user to move it
                # again (s43 spot hour #3); the rows below are the box's last read.
                said = (
                    f"{gone} — its cell {shown(preempted.cell)} was moved to "
                    f"{shown(preempted.moved_to)} (the rows below are the box's last read)"
                )
                waiting = [c for c in queue.cells if c.status == PENDING]
                if waiting:
                    # Left behind, said (s44 spot hour #6): they never ran, so a move
                    # of each is From scratch, and nothing is lost by it.
                    said += (
                        f"; {plural(len(waiting), 'cell')} not run yet "
                        f"{'stays' if len(waiting) == 1 else 'stay'} here — m moves "
                        "one at a time (From scratch: it never ran)"
                    )
            elif preempted.cell is None:
                # No cell ran at the preemption: none was "interrupted", and one moved by
                # hand since is said by its row (h502 #3: the line still offered m, long
                # after the cell had moved).
                said = (
                    f"{gone} — no cell was running then (the rows below are the box's last "
                    "read): m moves a cell it did not finish to another box"
                )
            else:
                said = (
                    f"{gone} — m moves the interrupted cell (it resumes elsewhere from its "
                    "verified checkpoint)"
                )
            lines.insert(0, Content.styled(said, "bold $warning"))
        return lines

    def _preempted(self) -> Preemption | None:
        """The host's named preemption, as the runtime holds it (None: none, or a bare app)."""
        runtime = getattr(self.app, "runtime", None)
        if runtime is None or self.host is None:
            return None
        found = runtime.preemptions.current.get(self.host.name)
        return found if found is not None and found.named else None

    def show(self, view: HostView) -> None:
        first = self.host is None
        self.host, self.connections, self.shown = view.host, view.connections, view
        if first:
            self._show_ranks(view.host)
        if self.view is None:  # the poller's last view, until its next read arrives
            self.view = view.queue
        body = self.query_one(".queue-body", Static)
        if not view.host.queue and (self.view is None or self.view.launch is None):
            body.update(
                Content.styled(
                    f"{view.host.name} has no queue: set `queue` and `run` in its "
                    f"{'[[groups]]' if view.host.group is not None else '[[hosts]]'} entry",
                    "$foreground-muted",
                )
            )
        elif self.view is not None:
            self._draw()
        elif (torn := self._torn_down_at(view.host)) is not None:
            # Nothing polls a torn-down box: "reading the queue…" would wait forever.
            body.update(
                Content.styled(
                    f"{view.host.name} was torn down at {local_time(torn)}: its queue is "
                    "no longer read (r reads the box again if it is back)",
                    MUTED,
                )
            )
        elif view.update is not None and view.update.connection.status in NOT_ANSWERING:
            # Nothing polls a box that does not answer: "reading the queue…" waited for
            # good on a box down since the app started (h614 #6).
            self._said_down = True
            error = view.update.connection.error
            why = f" ({shown(error)})" if error else ""
            body.update(
                Content.styled(
                    f"{view.host.name} does not answer{why}: its queue is read once it does "
                    f"(r tries now); its queue file here: {view.host.queue}",
                    "$warning",
                )
            )
        elif self._said_down:  # it answers again: its queue is read at the next poll
            self._said_down = False
            body.update(Content.styled("reading the queue…", MUTED))

    def _group_rank(self, host: HostConfig) -> tuple[str, int] | None:
        """(group, rank) when ``host`` has no queue of its own and is a rank of a group:
        its records are the group's cells (None otherwise, or in a bare app)."""
        fleet = getattr(self.app, "fleet", None)
        if host.queue or fleet is None:
            return None
        return fleet.rank_of(host.name)

    def _torn_down_at(self, host: HostConfig) -> float | None:
        """When the host's box was recorded torn down (None: not, or a bare app)."""
        jobs = getattr(self.app, "jobs", None)  # RgtApp's (none in a bare app)
        return jobs.state(host.name).shown_torn_down_at if jobs is not None else None

    def show_queue(self, view: QueueView) -> None:
        """Take a freshly polled view of this host's queue."""
        self.view = view
        if self.host is not None and not self.host.queue and view.launch is None:
            return  # nothing launched there either: "has no queue" stands
        self._draw()

    def _draw(self) -> None:
        """The kept view (or the chosen rank's own) in the body."""
        lines: list[Content] = []
        rank = self._rank_view()
        if rank is not None and rank.view is None:
            why = f"rank {rank.rank} ({shown(rank.box)}) was not read: {shown(rank.error)}"
            lines = [Content.styled(why, "$error")]
        elif rank is not None and rank.view is not None:
            lines = [
                Content.styled(f"rank {rank.rank} ({shown(rank.box)})'s own records", MUTED),
                *self._lines(rank.view),
            ]
        elif self.view is not None:
            lines = self._lines(self.view)
            if self.view.sent_changed:  # `queue show`'s note: the box runs its copy
                lines.append(Content.styled(shown(self.view.sent_changed, lines=True), "$warning"))
            if self.view.code_note:  # `queue show`'s too: the box runs its own code
                note = f"{self.view.code_note} (S, then y, then L)"
                lines.append(Content.styled(shown(note, lines=True), "$warning"))
        if not lines:
            return
        if self.host is not None and self.host.group is not None:
            lines = [Content.styled(RANK_HINT, MUTED), *lines]
        rank = self._group_rank(self.host) if self.host is not None else None
        if rank is not None:
            group, index = rank
            note = (
                f"{self.host.name} is rank {index} of group {group}: these are {group}'s "
                f"cells — S, X and R act on {group}, from its Queue tab"
            )
            lines = [Content.styled(note, MUTED), *lines]
        elif self.host is not None and not self.host.queue:
            # Launched from another checkout, or its `queue` line since removed: the
            # box's own records, not "has no queue" while a cell runs (hour s19b #3).
            note = (
                f"{self.host.name}'s entry names no queue file: these are the box's own "
                "records (a queue launched from elsewhere); S and X act on it"
            )
            lines = [Content.styled(note, MUTED), *lines]
        # A view can arrive while the tab is mounted but its body is not yet (or no
        # longer) there; show() draws the kept view once the tab is up.
        for body in self.query(".queue-body").results(Static):
            body.update(Content("\n").join(lines))

    # --- a group's rank picker (issue 41) ---

    def _rank_view(self) -> RankView | None:
        """The chosen rank's view at the group's last poll; None: the whole group's."""
        host = self.host
        if host is None or host.group is None or self.rank == WHOLE_GROUP:
            return None
        runtime = getattr(self.app, "runtime", None)  # RgtApp's (none in a bare app)
        ranks = runtime.queues.ranks.get(host.name, ()) if runtime is not None else ()
        got = next((r for r in ranks if r.rank == self.rank), None)
        if got is None:  # not polled yet: say so rather than show the group's as the rank's
            box = host.group.hosts[self.rank] if self.rank < host.group.nnodes else "?"
            return RankView(self.rank, box, None, "the group's queue was not polled yet")
        return got

    def _show_ranks(self, host: HostConfig) -> None:
        """A group's ranks in the picker, shown; any other host hides it."""
        for select in self.query("#queue-rank").results(Select):
            group = host.group
            select.display = group is not None
            if group is None:
                continue
            with select.prevent(Select.Changed):
                # A box's name from the fleet file, as Content: never read as markup.
                options = [(Content(f"rank {k} ({b})"), k) for k, b in enumerate(group.hosts)]
                select.set_options([(Content("whole group"), WHOLE_GROUP), *options])
                select.value = WHOLE_GROUP

    @on(Select.Changed, "#queue-rank")
    def _rank_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, int):
            self.rank = event.value
            self._draw()

    # --- S / X / R: queue control (screens/queue_control.py), asked first, run here ---

    def open_control(
        self,
        action: str,
        host: HostConfig,
        view: QueueView | None,
        connections: FleetConnections | None,
    ) -> None:
        """``S`` stop, ``X`` kill, ``R`` retry on ``host`` (its screen's latest ``view``):
        the dialog naming the cell, then the action over ``connections``."""
        self.host, self.connections = host, connections
        view = view or self.view
        if view is None or connections is None:
            self.app.notify("the queue has not been read yet", title=host.name, severity="warning")
            return
        fleet = getattr(self.app, "fleet", None)  # RgtApp's (none in a bare app)
        refused = rank_control_refusal(fleet, host, action) if fleet is not None else None
        if refused is not None:
            message, fix = refused
            self.app.notify(f"{message} — {fix}", title=host.name, severity="warning")
            return
        if action == "stop":
            self._ask_stop(host, view)
        elif action == "kill":
            self._ask_kill(host, view)
        elif action == "retry":
            # Slurm: OOM, TIMEOUT, …; a cell waiting for its retry too: on a stopped queue
            # its retry runs it alone, and R hid it while the tab named it (hour s21b #3).
            cells = list(view.retry_pickable)
            running = [c for c in view.cells if c.status == RUNNING]
            busy = ""
            if running:  # not listed: a user hunted for it (hour s20b #15)
                named = ", ".join(f"{c.index} ({c.name})" for c in running[:3])
                busy = f"Running, so not listed: cell {named} — to retry it, kill it first (X)."
            if not cells:
                self.app.notify(
                    "no failed, killed or finished cell to retry"
                    + (f"; {busy[0].lower()}{busy[1:]}" if busy else ""),
                    title=f"{host.name}: retry",  # the action, as its outcome's title is
                )
                return
            self.app.push_screen(
                CellPickScreen(
                    f"Retry or resume which cell on {host.name}?",
                    [(c.name, cell_line(c, view.now)) for c in cells],
                    # The first that did not finish, not a done one above it.
                    first=next((c.name for c in cells if c.status != DONE), None),
                    note=busy,
                ),
                lambda name: self._ask_retry(host, view, name),
            )

    def _ask_stop(self, host: HostConfig, view: QueueView) -> None:
        if not view.runner_alive:
            self.app.notify(f"{queue_is(view.state)}: nothing to stop", title=f"{host.name}: stop")
            return
        if view.stop_requested:  # one request per launch: a second asks nothing new
            self.app.notify(f"{view.stop_text()} (asked already)", title=f"{host.name}: stop")
            return
        cur = view.current
        what = view.running_text()
        later = (
            "Later, the pending tasks stay held: release them (the notice after the stop "
            "names them)."
            if host.is_login_node
            else "Later, a launch (L) goes on from where it stopped."
        )
        body = [
            Content(
                f"The queue stops after {what} {'finish' if what.startswith('cells') else 'finishes'}: "
                f"{view.stop_effect()}."
            ),
            Content.styled(later, MUTED),
        ]
        choice = ("stop", "Stop after this cell", "stop the queue after it", "warning")
        self.app.push_screen(
            ConfirmScreen(
                control_question(f"Stop the queue on {host.name} after {what}?", body), [choice]
            ),
            lambda chosen: self._run(host, "stop", cur.name if cur else None, chosen),
        )

    def _ask_kill(self, host: HostConfig, view: QueueView) -> None:
        cur = view.current
        if cur is None:
            self.app.notify("no cell is running: nothing to kill", title=f"{host.name}: kill")
            return
        running = [c for c in view.cells if c.status == RUNNING]
        if len(running) > 1:
            # A Slurm array runs several at once: X killed the first, and the one the user
            # meant could be named only on the command line (s35 Slurm hour #10). Which
            # one first, as R asks which cell to retry.
            self.app.push_screen(
                CellPickScreen(
                    f"Kill which cell on {host.name}? ({len(running)} run now)",
                    [(c.name, cell_line(c, view.now)) for c in running],
                    first=cur.name,
                ),
                lambda name: self._confirm_kill(host, view, name) if name else None,
            )
            return
        self._confirm_kill(host, view, cur.name)

    def _confirm_kill(self, host: HostConfig, view: QueueView, name: str) -> None:
        """The kill's question for running cell ``name``: what then, or cancel."""
        cur = next((c for c in view.cells if c.name == name), None)
        if cur is None:
            return
        from rgt_tui.services.queue.backends import backend_for
        from rgt_tui.services.queue.scheduler import Killable

        backend = backend_for(host)  # it says what its kill really does (Slurm: scancel)
        how = backend.kill_how if isinstance(backend, Killable) else ""
        body = [
            Content(f"Cell {cur.index} ({shown(cur.name)}) has run for {cur.ran(view.now)}."),
            Content.styled(how, MUTED),
        ]
        others = [c for c in view.cells if c.status == RUNNING and c.name != cur.name]
        if others:  # a Slurm array runs several: the kill takes this one alone
            named = ", ".join(f"{c.index} ({shown(c.name)})" for c in others[:3])
            more = f" and {len(others) - 3} more" if len(others) > 3 else ""
            body.append(Content.styled(f"Also running, and left to run: cell {named}{more}", MUTED))
        following = view.next_cell
        # With a stop asked for, or no cell after it, the queue ends after the kill either
        # way: one button, "Kill" (a user's hour read "Kill, go on" beside "Enter: kill it;
        # the queue then stops, as asked").
        if view.stop_requested:  # the runner stops after this cell whatever is chosen
            choices = [("stop", "Kill", "kill it; the queue then stops, as asked", "error")]
        elif following is None:
            # A stop that ends it ("end": a cell appended meanwhile waits), not told back as
            # "stopped, as asked" (h493 #3; "next" would run one: review h494 #5).
            choices = [("end", "Kill", "kill it; no cell follows, so the queue ends", "error")]
        else:
            go_on = f"kill it, then run cell {following.index} ({shown(following.name)})"
            # In the body too: the button's own words show only once it has the focus,
            # which starts on Cancel (s36 acts hour #9).
            body.append(
                Content.styled(
                    f"Next in the queue: cell {following.index} ({shown(following.name)}) — "
                    "Kill, go on runs it; Kill and stop leaves it pending",
                    MUTED,
                )
            )
            choices = [
                ("next", "Kill, go on", go_on, "error"),
                ("stop", "Kill and stop", "kill it and stop the queue", "error"),
            ]
        self.app.push_screen(
            ConfirmScreen(
                control_question(f"Kill cell {shown(cur.name)} on {host.name} now?", body), choices
            ),
            lambda chosen: self._run(host, "kill", cur.name, chosen),
        )

    def _ask_retry(self, host: HostConfig, view: QueueView, name: str | None) -> None:
        cell = next((c for c in view.cells if c.name == name), None)
        if cell is None or self.connections is None:
            return
        # The retry's own dialog plans it (preflight, the launch's acknowledgements) and
        # runs it (screens/retry_confirm.py).
        fleet = self.app.fleet  # type: ignore[attr-defined]
        self.app.push_screen(RetryConfirmScreen(fleet, host, cell, self.connections))

    def _run(self, host: HostConfig, action: str, cell: str | None, chosen: str | None) -> None:
        """The dialog's answer: the queue-control controller stops or kills (None: cancel)."""
        if chosen is None or self.connections is None:
            return
        QueueControl(self.app, self.connections).request(host, action, cell, chosen)
