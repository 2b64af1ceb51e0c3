"""The Textual App: screens, keys and the routing between them. No fleet state: the
``FleetRuntime`` (services/runtime) owns it, and the App routes its news to the screens
(``_route``). Tests pass their own ``monitors`` (memray's pattern) or none
(``start_monitors=False``) and post ``HostUpdated`` messages, which the runtime applies.

A little over 450 lines: each key's action is a few lines handing off to a controller
(controllers/), and ``notify`` is here because every toast must pass through the App's.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from textual import events, on
from textual.binding import Binding
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.widgets import Input
from textual.worker import Worker

from rgt_tui.app_themes import ThemedApp
from rgt_tui.controllers.box_watch import BoxWatch
from rgt_tui.controllers.fleet_view import FleetView
from rgt_tui.controllers.host_keys import HostKeys
from rgt_tui.controllers.jobs import JobRunner
from rgt_tui.controllers.notices import note_connection, notices_of, short_names, toasts_of
from rgt_tui.controllers.queue_actions import QueueController
from rgt_tui.controllers.spot import SpotWatch
from rgt_tui.controllers.type_ahead import TypeAhead
from rgt_tui.controllers.watch_notify import TuiNotify
from rgt_tui.controllers.workers import run_work
from rgt_tui.domain.config import ConfigError, Fleet, HostConfig
from rgt_tui.domain.errors import HostKeyError
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.queue_state import FINISHED, GROUP_STOPPED, Q_RUNNING, STOPPED, QueueView
from rgt_tui.heap import settle_heap
from rgt_tui.messages import HostUpdated, OpenHostRequested, ReconnectRequested
from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.screens.diagnosis import DiagnosisScreen
from rgt_tui.screens.dialog import ReplanScreen
from rgt_tui.screens.disk_usage import DiskUsageRequested, DiskUsageScreen
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.fleet_news import show_fleet_news
from rgt_tui.screens.help import HelpScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.host_key import HostKeyReviewRequested, HostKeyScreen
from rgt_tui.screens.job_keys import JobRequested, JobsChanged
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen
from rgt_tui.screens.notices import NoticesScreen
from rgt_tui.screens.palette import RgtCommands, help_screen
from rgt_tui.screens.queue_keys import QueueActionRequested, QueueViewed
from rgt_tui.screens.queue_move_dialog import QueueMoveScreen
from rgt_tui.screens.quit_confirm import QuitConfirmScreen, busy_line
from rgt_tui.screens.retry_confirm import RetryConfirmScreen
from rgt_tui.screens.shell_keys import ShellRequested, open_shell
from rgt_tui.screens.tabs.logs_recall import LogRecall
from rgt_tui.screens.type_ahead import drop_typed, take_key, typing_ahead
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.records_watch import WATCH_EVERY_S
from rgt_tui.services.runtime.events import (
    ClocksDue,
    FleetFileRejected,
    FleetReloaded,
    HostSampled,
    QueueRead,
    RuntimeEvent,
    TelemetryEnded,
    Told,
)
from rgt_tui.services.runtime.monitors import MonitorLike, health_thresholds
from rgt_tui.services.runtime.runtime import FleetRuntime
from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.services.watch.events import HostState, WatchEvent
from rgt_tui.services.watch.tracker import queue_end_words, queue_gone_words, runs_twice_news
from rgt_tui.terminal_check import NoTerminal, terminal_problem

# The app's actions on printable keys (+, ?, q): text, not actions, while a text box has focus.
TEXT_KEY_ACTIONS = frozenset({"add_host", "help", "quit_key"})


class QuitAsked(Message):
    """q or Ctrl+C: the quit question is decided when this reaches the App's queue."""


class RgtApp(ThemedApp):
    """rgt-tui: the fleet grid, host details, help, themes."""

    CSS_PATH = "app.tcss"
    TITLE = "rgt-tui"
    COMMANDS = {RgtCommands}
    FLEET_FILE_EVERY_S = 2.0  # how often the fleet file is looked at (tests: less)
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?", tooltip="List every key"),
        # q has its own action so it can be text in a text box while Ctrl+C still quits.
        Binding(
            "q", "quit_key", "Quit", tooltip="Quit (runs on boxes keep going; the demo's boxes go)"
        ),
        Binding(
            "plus",
            "add_host",
            "Add box",
            key_display="+",
            tooltip="Paste a box's SSH command: add it to the fleet file and watch it",
        ),
        Binding(
            "n",
            "notices",
            "Notices",
            show=False,  # the footer is full; ? lists it
            tooltip="Recent notices, newest first: every toast, and periodic pulls' news",
        ),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, tooltip="Quit"),
    ]

    def __init__(
        self,
        fleet: Fleet,
        *,
        monitors: dict[str, MonitorLike] | None = None,
        start_monitors: bool = True,
        connections: FleetConnections | None = None,
        theme: str | None = None,
        clock: Callable[[], float] = time.time,
        config_dir: Path | None = None,
        theme_dirs: Iterable[Path] | None = None,
        quit_removes: str | None = None,
    ) -> None:
        """``quit_removes``: what quitting also deletes, said when the quit question is
        asked (the demo's boxes and what was pulled from them); None: nothing."""
        super().__init__()
        self.fleet = fleet
        self.quit_removes = quit_removes
        # q was pressed and its question is not up yet: keys typed after it do nothing
        # (``qus`` in one burst opened the disk dialog and a shell on a billing box before
        # the question, which was then left under them: hour s45c #1).
        self.quit_pending = False
        self.clock = clock
        self.config_dir = config_dir
        self.thresholds = health_thresholds(fleet)
        self.start_monitors = start_monitors
        self.host_keys = HostKeys(
            self,
            partial(self.reconnect, said=True),  # its toast says "reconnecting…"
            show=self._show_key_refusal,
            ask=lambda error, answered: self.push_screen(HostKeyScreen(error), answered),
        )
        self.type_ahead = TypeAhead(self)  # keys typed after t, for the confirmation box
        # Each host's one SSH connection, shared by every screen and job (DESIGN step 2).
        self.connections = connections or FleetConnections(fleet.hosts)
        self.log_recall = LogRecall()  # what the Logs tabs drew, for the next one (ux-g 6)
        self._queue_states: dict[str, str] = {}  # each host's queue state, last read
        self._twice_told: set[str] = set()  # the runs-twice toasts shown (their keys)
        # Hosts whose queue this TUI launched, with the launch the last view held then:
        # that new launch's end is told even if no poll saw it run (``_launched_here``).
        self._ends_awaited: dict[str, tuple[int, int] | None] = {}
        # watch's notifications from the TUI too, only when the fleet asks (tui_notify).
        notify = self.tui_notify = TuiNotify.for_fleet(fleet)
        self.runtime: FleetRuntime[HostState, WatchEvent] = FleetRuntime(
            fleet,
            self.connections,
            on_event=self._route,
            monitors=monitors if monitors is not None or start_monitors else {},
            clock=clock,
            derive=notify.events if notify is not None else None,
            # A replaceable message: a slow screen drops stale samples (on_host_updated).
            defer=lambda update: self.post_message(HostUpdated(update)),
            is_torn_down=lambda host: self.jobs.state(host).shown_torn_down_at is not None,
            still_answers=lambda host: self.box_watch.alert(host),  # GEN1, on the pane
            is_watched=self._queue_tab_shown,
            report=notify.report if notify is not None else lambda line: None,
            start_added=start_monitors,
        )
        self._records_look: Worker[None] | None = None  # the look at the records in flight
        self.load_themes(theme, theme_dirs)
        self.fleet_screen = FleetScreen(
            fleet,
            thresholds=self.thresholds,
            clock=clock,
            stopped=lambda: self.runtime.stopped,
        )
        changed = lambda state: self.post_message(JobsChanged(state))  # noqa: E731
        self.jobs = JobRunner(
            self, fleet, self.connections, locks=self.runtime.locks, on_change=changed,
            clock=clock, watching=self._watching, answering=self.box_answers,
            fleet_mistake=self.runtime.fleet_mistake,
        )  # fmt: skip
        self.box_watch = BoxWatch(
            self,
            self.jobs,
            latest=self.runtime.latest.get,
            host_key=self.runtime.host_key_of,
            stop=self.runtime.retire,  # a torn-down box is done: monitor, polls, connection
            is_stopped=self.runtime.stopped.__contains__,
            reconnect=self.runtime.reconnect,
        )
        self.queues = QueueController(
            self, self.connections, fleet=lambda: self.fleet, open_screen=self._open_queue_screen
        )
        # Preemptions named (panes, notices, on_preempt), running cells' checkpoints.
        self.spot = SpotWatch(self, self.runtime, self._fleet_views, notify)

    # The runtime's state, read by screens' callers and tests under the App's names.
    @property
    def latest(self) -> dict[str, HostUpdate]:
        """Each host's latest update, as shown."""
        return self.runtime.latest

    @property
    def histories(self) -> dict[str, HostHistory]:
        """Each host's history of samples."""
        return self.runtime.histories

    def get_default_screen(self) -> FleetScreen:
        return self.fleet_screen

    def on_mount(self) -> None:
        self.show_theme_errors()
        self.runtime.start(polls=self.start_monitors)
        self.jobs.load_journals()
        # Another process (the command line) records teardowns, pulls and verifications
        # too: its records reach this window within a few seconds.
        self.set_interval(WATCH_EVERY_S, self._look_at_records)
        self.runtime.watch_fleet_file(self.FLEET_FILE_EVERY_S)  # hosts.toml is live
        settle_heap()  # what exists now lives as long as the app (heap.py)
        if self.start_monitors:
            # Results leave boxes on their cadence (pull_every, a spot profile's default)
            # while the app is open, as under `rgt-tui watch`.
            # Only hosts with pull folders whose queue view shows results (no SSH of its own).
            pulls = self.jobs.periodic_pulls(queue_view=self.runtime.queues.views.get)
            run_work(self, pulls.run(), "periodic-pulls", group="pulls")

    async def on_unmount(self) -> None:
        gc.unfreeze()  # another app in this process (tests) starts from a clean slate
        await self.runtime.close()  # each monitor closes its channel: the agents go too
        if self.tui_notify is not None:
            await self.tui_notify.aclose()  # sends cut short stay owed, resumed next start
        await self.connections.close_all()

    def _look_at_records(self) -> None:
        # One look at a time: on a slow disk they must not pile up.
        if self._records_look is not None and not self._records_look.is_finished:
            return
        self._records_look = run_work(
            self, self.jobs.take_outside_changes(), "records-watch", exclusive=False
        )

    # -- the runtime's news ----------------------------------------------------------------

    def _route(self, event: RuntimeEvent) -> Awaitable[None] | None:
        """The fleet runtime's news, to the screens (and the notifier)."""
        self.spot.route(event)  # issue 40: HostPreempted, and after each sample
        if isinstance(event, HostSampled):
            self._host_sampled(event.update, event.history)
        elif isinstance(event, QueueRead):
            self.post_message(QueueViewed(event.host, event.view))
        elif isinstance(event, Told) and self.tui_notify is not None:
            return self.tui_notify.on_event(event.event)
        elif isinstance(event, FleetReloaded | FleetFileRejected):
            show_fleet_news(self, event)
        elif isinstance(event, ClocksDue):
            # One line in the fleet header, not a toast over half the panes (issue 27).
            self.fleet_screen.show_notice(f"{event.who}: danger clocks", "; ".join(event.lines))
        elif isinstance(event, TelemetryEnded):
            self.notify(
                f"Telemetry for {event.host} stopped: {event.error}. Press r on it to retry.",
                title=event.host,
                severity="error",
                timeout=15,
                markup=False,  # the error can quote the box
            )
        return None

    def on_host_updated(self, message: HostUpdated) -> None:
        # Applied by the runtime (unless a newer one of the host is queued): it comes
        # back through _route as HostSampled.
        self.runtime.apply(message.update)

    def _host_sampled(self, update: HostUpdate, history: HostHistory) -> None:
        self.host_keys.host_updated(update.host, update.connection)
        with self.batch_update():
            for screen in self._fleet_views():
                screen.host_updated(update, history)
        self.box_watch.host_updated(update)
        # A drop and a return, in the notices (n); a spot box's drop as "preempted?".
        host = self.fleet.find(update.host)
        spot = host is not None and host.watch.interruptible
        note_connection(self, update, interruptible=spot)

    def _queue_tab_shown(self, host: str) -> bool:
        """Whether ``host``'s Queue tab is on screen (its queue is polled faster then)."""
        screen = self.screen_stack[-1] if self.screen_stack else None  # none while closing
        return (
            isinstance(screen, HostDetailScreen)
            and screen.host.name == host
            and screen.active_tab == "queue"
        )

    def _fleet_views(self) -> list[FleetView]:
        """The screens in the stack that show hosts (they take the fleet's news)."""
        return [s for s in self.screen_stack if isinstance(s, FleetView)]

    def _show_key_refusal(self, host: str, error: HostKeyError | None) -> None:
        """A host's key was refused (None: it connected again): every screen shows it."""
        for screen in self._fleet_views():
            screen.host_key_refused(host, error)

    # -- pulls, verification, teardown ---------------------------------------------------

    @on(JobRequested)
    def _job_requested(self, message: JobRequested) -> None:
        if message.show_tab:
            self.open_host(message.host, tab=message.show_tab)
        self.jobs.request(message.host, message.job, message.arg)

    @on(JobsChanged)
    def _jobs_changed(self, message: JobsChanged) -> None:
        state = message.state
        for screen in self._fleet_views():
            screen.jobs_changed(state)
        top = self.screen_stack[-1] if self.screen_stack else None  # none while closing
        if isinstance(top, QuitConfirmScreen):  # it lists what quitting stops now
            top.jobs_now(self._quit_stops())
        # Just recorded torn down (here or by the command line): a lost connection
        # already shown is now the box being gone, not GEN8.
        shown = self.runtime.refresh_torn_down(state.host) if state.shown_torn_down_at else None
        if shown is not None:
            for screen in self._fleet_views():
                screen.host_updated(shown.update, shown.history)
        # A torn-down host: its one attempt decides (box_watch) whether polling stops.
        self.box_watch.jobs_changed(state)

    # -- keys ----------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        # A printable key no binding took: typed before the cursor reached a box (t).
        if take_key(self, event):
            event.stop()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Between t and the confirmation box having the cursor, keys are text, not actions.
        if self.type_ahead.active:
            return False
        if self.quit_pending and action not in ("quit", "quit_key"):
            return False
        # In a text box +, ? and q are text: the footer must not offer them there (a
        # user's hour read "+ Add box" beside the box they were typing a name into).
        return not (action in TEXT_KEY_ACTIONS and isinstance(self.focused, Input))

    # -- actions -----------------------------------------------------------------------

    def reconnect(self, host: str, *, said: bool = False) -> None:
        """Drop and retry ``host``'s connection now; ``said``: the caller's own toast
        says it already (a trusted key's: two toasts said one thing)."""
        if host not in self.runtime.monitors:
            self.notify(f"{host} is not being monitored", severity="warning")
            return
        if not self.runtime.running(host) and host in self.runtime.stopped:
            # Stopped for a teardown: pressing r starts it again, for one attempt.
            self.box_watch.retry(host)
        self.runtime.reconnect(host)  # the monitor died or stopped: started again
        # r pressed again while the toast shows: the toast keeps its own timeout.
        if not said:
            self.notify(f"Reconnecting {host}…", title=host)

    @on(ReconnectRequested)
    def _reconnect(self, message: ReconnectRequested) -> None:
        self.reconnect(message.host)

    @on(HostKeyReviewRequested)
    def _review_host_key(self, message: HostKeyReviewRequested) -> None:
        top = self.screen
        self.host_keys.review(message.host)
        self._nothing_opened(top)

    def open_host(self, host: str, tab: str | None = None) -> None:
        """Show ``host``'s detail screen (over the fleet grid), on ``tab`` if given."""
        screen = self.screen
        if not (isinstance(screen, HostDetailScreen) and screen.host.name == host):
            self.back_to_fleet()
            screen = HostDetailScreen(
                self.fleet.host(host),
                update=self.runtime.latest.get(host),
                history=self.runtime.histories.get(host),
                thresholds=self.thresholds,
                clock=self.clock,
                connections=self.connections,
                queue_view=self.runtime.queues.views.get(host),
                verified=self.spot.found.get(host),  # the pane's, not none until a change
                fleet_problem=self.fleet_screen.problem,  # a mistake in the file, if any
                log_recall=self.log_recall,
                preemption=self.runtime.preemptions.current.get(host),
            )
            screen.key_refusal = self.host_keys.refusals.get(host)
            self.push_screen(screen)
        detail = screen
        # The host's state as it is when the screen is up, not now: a job that ends
        # meanwhile (a gate on this machine, in milliseconds) must not be drawn over.
        self.call_after_refresh(lambda: detail.jobs_changed(self.jobs.state(host)))
        if tab is not None:
            # At once, not after a refresh: a tab key typed right after p (7, say) must
            # act after the tab p asked for, not be undone by it (h542 #5). A screen
            # still composing keeps the tab, and a later key's, for when it can show it.
            detail.show_job_tab(tab)

    @on(QueueActionRequested)
    def _queue_action(self, message: QueueActionRequested) -> None:
        top = self.screen
        self.queues.request(message.host, message.action)
        self._nothing_opened(top)

    def _nothing_opened(self, top: Screen[Any]) -> None:
        """A key that holds what is typed after it for its dialog (L, d, m, K) opened
        none (refused: no queue file, a dialog already up): the held keys are let go,
        said, not swallowed for seconds with every binding held (review h620 #2)."""
        if self.screen is top and typing_ahead(top):
            drop_typed(top, "right after a key that opened nothing")

    @on(DiskUsageRequested)
    def _disk_usage(self, message: DiskUsageRequested) -> None:
        host = self.fleet.host(message.host)
        # Recorded as torn down: a box that does not answer is said as such, not "check
        # the port" (h471 #3); it is asked all the same (one that answers is read).
        torn = self.jobs.state(host.name).torn_down_at
        self.push_screen(
            DiskUsageScreen(host, self.connections, self.fleet.results_dir, torn_down_at=torn)
        )

    @on(ShellRequested)
    def _shell(self, message: ShellRequested) -> None:
        # One shell at a time: the terminal is the shell's until it ends.
        self.run_worker(
            open_shell(
                self, self.fleet, message, torn_down_at=self.jobs.state(message.host).torn_down_at
            ),
            group="shell",
            exclusive=True,
            exit_on_error=False,
        )

    def box_answers(self, host: str) -> bool:
        """Whether ``host``'s telemetry is connected now."""
        latest = self.runtime.latest.get(host)
        return latest is not None and latest.connection.status == "connected"

    def _watching(self, host: str, tab: str) -> bool:
        """Whether ``host``'s detail screen is on top with ``tab`` shown."""
        screen = self.screen_stack[-1] if self.screen_stack else None  # none while closing
        return (
            isinstance(screen, HostDetailScreen)
            and screen.host.name == host
            and screen.active_tab == tab
        )

    def _open_queue_screen(self, action: str, host: HostConfig) -> None:
        """A queue key's screen (``QueueController`` decided): the launch plan, the
        diagnosis, or the host's Logs tab. Not over a dialog: a key pressed twice quickly
        reached the screen beneath before the first dialog was up, and L L stacked two
        launch plans, each with its own preflight (s43 hour)."""
        if isinstance(self.screen, ModalScreen):
            return
        if action == "launch":
            view = self.runtime.queues.views.get(host.name)
            last = view.launch if view is not None else None
            was = (last.ts, last.pid) if last is not None else None
            self.push_screen(
                LaunchConfirmScreen(self.fleet, host, self.connections),
                partial(self._launch_answered, host.name, was),
            )
        elif action == "diagnose":
            self.push_screen(DiagnosisScreen(host, self.connections))
        elif action == "move":
            view = self.runtime.queues.views.get(host.name)
            latest = self.runtime.latest.get(host.name)
            answering = latest is None or latest.connection.status == "connected"
            self.push_screen(
                QueueMoveScreen(self.fleet, host, self.connections, view, answering=answering)
            )
        elif action == "logs":
            self.open_host(host.name)
            self.call_after_refresh(self._show_logs_tab, host.name)

    def _launch_answered(self, host: str, was: tuple[int, int] | None, result: object) -> None:
        if result is not None:  # launched (None: cancelled)
            self._ends_awaited[host] = was

    def _launched_here(self, host: str, view: QueueView) -> bool:
        """The view holds the launch this TUI made (not the one before it), first seen
        now: its end is told whatever the last poll saw. A cell that failed in its first
        second ended the queue between two polls, and nothing said so."""
        if host not in self._ends_awaited or view.launch is None:
            return False
        if (view.launch.ts, view.launch.pid) == self._ends_awaited[host]:
            return False  # the box has not yet written the new launch's record
        del self._ends_awaited[host]
        return True

    def _tell_runs_twice(self, host: str, view: QueueView) -> None:
        """A cell moved away that runs (or finished) here too: a toast, once per attempt,
        as watch sends it; only the source's Queue tab said it (h592 #2)."""
        for key, (title, note) in runs_twice_news(host, view).items():
            if key not in self._twice_told:
                self._twice_told.add(key)
                self.notify(note, title=title, severity="warning", timeout=30)

    def _show_logs_tab(self, host_name: str) -> None:
        screen = self.screen
        if isinstance(screen, HostDetailScreen) and screen.host.name == host_name:
            screen.action_show_tab("logs")

    @on(QueueViewed)
    def _queue_viewed(self, message: QueueViewed) -> None:
        for screen in self._fleet_views():
            screen.queue_viewed(message.host, message.view)
        for screen in self.screen_stack:  # an open retry plan follows the queue it plans on
            if isinstance(screen, RetryConfirmScreen) and screen.host.name == message.host:
                screen.queue_viewed(message.view)
        # A runner seen running, now gone without its done record (killed from outside,
        # the box's OOM killer): told once, as watch tells it, not only a pane line under
        # "✓ no alerts" (a user's hour).
        self._tell_runs_twice(message.host, message.view)
        before = self._queue_states.get(message.host)
        self._queue_states[message.host] = message.view.state
        if before is not None and before != Q_RUNNING and message.view.state == Q_RUNNING:
            self.jobs.queue_started(message.host, self.clock())
        try:
            host = self.fleet.host(message.host)
        except KeyError:  # a host the fleet file no longer holds: nothing to tell
            return
        view, launch = message.view, message.view.launch
        if before != Q_RUNNING and not self._launched_here(message.host, view):
            return  # an end no poll saw coming: an old one, told when it happened
        if view.told_by_group(host.group is not None):
            return  # a box's records of a group's job: the group's own view tells it
        if view.state == STOPPED:
            title, body = queue_gone_words(host.name, view, interruptible=host.watch.interruptible)
            self.notify(body, title=title, severity="warning", timeout=15)
        elif (
            view.state in (FINISHED, GROUP_STOPPED)  # a group's own stop is no user's: told
            and launch is not None
            and launch.done is not None
        ):
            # Its done record, as watch tells it: a box whose queue ended idles and bills
            # on, and nothing in the TUI said so (hour s24b #5).
            title, body = queue_end_words(
                host.name, view, launch, host.cost_per_hour,
                interruptible=host.watch.interruptible,
            )  # fmt: skip
            severity = "warning" if launch.done.n_failed else "information"
            self.notify(body, title=title, severity=severity, timeout=15)

    @on(OpenHostRequested)
    def _open_host(self, message: OpenHostRequested) -> None:
        self.open_host(message.host)

    def back_to_fleet(self) -> None:
        """Close every screen over the fleet grid."""
        while len(self.screen_stack) > 1 and self.screen is not self.fleet_screen:
            self.pop_screen()

    def action_add_host(self) -> None:
        """Paste a box's SSH command: the add screen appends it to the fleet file (after
        its host key is trusted), and its pane, connection and telemetry start at once."""
        if isinstance(self.screen, AddHostScreen):
            return
        # None: no fleet file yet, ./hosts.toml
        screen = AddHostScreen(self.fleet.path, fleet_code=self.fleet.ready.code)
        self.push_screen(screen, partial(self._host_added, screen))

    def _host_added(self, screen: AddHostScreen, host: HostConfig | None) -> None:
        if host is None:
            return
        fleet_file = screen.fleet_file
        if host.name not in self.runtime.hosts:  # else the file's new reading took it first
            # The stand-in "local" of a fleet with no file goes with the first box added:
            # kept, it read "2 hosts", and the next edit of the file told it "removed …
            # still bills" (h604 #3).
            if self.fleet.is_default:
                # The file as written now: another process (rgt-tui add) may have added
                # boxes and settings to it since this one started (h606 #2).
                try:
                    self.runtime.adopt(load_fleet(fleet_file))
                except ConfigError:
                    hosts = (host,)
                    fleet = replace(self.fleet, hosts=hosts, path=fleet_file, is_default=False)
                    self.runtime.adopt(fleet)
            else:
                hosts = (*self.fleet.hosts, host)
                self.runtime.adopt(
                    replace(self.fleet, hosts=hosts, path=fleet_file, is_default=False)
                )
        self.fleet_screen.select_added(host.name)
        note = f"; {screen.added_note}" if screen.added_note else ""  # "created queues/…"
        self.notify(f"added {host.name} to {fleet_file}{note}", title=host.name)

    def action_filter(self) -> None:
        self.back_to_fleet()
        self.fleet_screen.action_filter()

    async def action_quit_key(self) -> None:
        await self.action_quit()

    def _quit_stops(self) -> list[str]:
        """What quitting now stops, a line each: the pulls and teardowns in flight, and a
        dialog's launch, retry or move under way (its screen's worker)."""
        kept = self.quit_removes is None
        jobs = [busy_line(s.host, s.running, s.progress, kept=kept) for s in self.jobs.busy()]
        acts = [s.cut_by_quit() for s in self.screen_stack if isinstance(s, ReplanScreen)]
        return [*jobs, *(line for line in acts if line)]

    async def action_quit(self) -> None:
        """Quit; while a pull or a teardown runs, first say what stops (and keep it on
        Escape); the demo asks every time, since quitting it deletes its boxes with
        their running queues, what was pulled from them and the files a user edited in
        its folder (users' hours lost each). Ctrl+C (a priority binding) at that question
        quits.

        Decided behind the messages already queued, not at the key: ``p q`` typed in one
        burst queues p's JobRequested behind the q key, and a quit decided at once saw no
        pull and asked nothing (a user's hour)."""
        self.quit_pending = True
        self.post_message(QuitAsked())

    @on(QuitAsked)
    def _quit_asked(self, message: QuitAsked) -> None:
        self.quit_pending = False
        lines = self._quit_stops()
        removes = self.quit_removes
        if (not lines and not removes) or isinstance(self.screen, QuitConfirmScreen):
            self.exit()
            return

        def answered(choice: str | None) -> None:  # "leave", or None for stay (Escape)
            if choice == "leave":
                self.exit()

        self.push_screen(QuitConfirmScreen(lines, removes=removes), answered)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast of the app, whoever posts it (a screen's ``notify`` comes here too):
        plain text whatever ``markup`` says, since a toast may quote a box, a queue or fleet
        file or an error, and ``[epochs]`` or ``[link=…]`` in it must show as written;
        listed under ``n``, and only listed while that list is open; not posted again
        while the same one shows (``Toasts``)."""
        # An error's toast says what failed and its fix: 5 s was too short to read one
        # of 40 words (hour s24b #9); n lists every toast whatever its time.
        longer = {"error": 3.0, "warning": 2.0}.get(str(severity), 1.0)
        seconds = self.NOTIFICATION_TIMEOUT * longer if timeout is None else timeout
        told = toasts_of(self).admit(message, title, str(severity), seconds)
        # With the notices list open, the list shows it (newest first, within a second):
        # a toast drew over the list being read (session 29's hour).
        if told is not None and not isinstance(self.screen, NoticesScreen):
            names = [h.name for h in self.fleet.hosts]
            text, title = (short_names(part, names) for part in told)
            super().notify(text, title=title, severity=severity, timeout=seconds, markup=False)

    def action_notices(self) -> None:
        """The session's notices, newest first (``controllers.notices.NoticeList``)."""
        if not isinstance(self.screen, NoticesScreen):
            self.push_screen(NoticesScreen(notices_of(self)))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(help_screen(self.BINDINGS))


def run_app(fleet: Fleet, *, theme: str | None = None) -> int:
    """Run the TUI on ``fleet`` until the user quits; the exit status for the CLI.
    NoTerminal, before anything starts, when there is no terminal to draw on."""
    problem = terminal_problem("rgt-tui")
    if problem is not None:
        raise NoTerminal(problem)
    app = RgtApp(fleet, theme=theme)
    app.run()
    return app.return_code or 0
