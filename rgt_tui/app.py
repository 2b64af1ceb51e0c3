"""The Textual App: wires monitors to screens, owns keys, themes and the command palette.

No domain logic lives here. The data source comes in through the constructor (memray's
pattern): ``RgtApp(fleet)`` builds one ``HostMonitor`` per host, tests pass their own
``monitors`` or none at all (``start_monitors=False``) and post ``HostUpdated`` messages.
Each monitor runs in its own worker (a group per host); every update it emits becomes a
replaceable ``HostUpdated`` message, so a slow screen drops stale samples.

Over 400 lines on purpose: the App is the one place screens open (``push_screen``) and
the hosts' monitor workers start and stop, and its key bindings, command palette and
message handlers route between those screens; split, the bindings would sit apart from
the actions and the screens they open.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from textual import events, on, work
from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.worker import Worker, WorkerState

from rgt_tui import themes
from rgt_tui.controllers.box_watch import BoxWatch, as_torn_down
from rgt_tui.controllers.fleet_view import FleetView
from rgt_tui.controllers.host_keys import HostKeys
from rgt_tui.controllers.jobs import HostJobs, JobRunner
from rgt_tui.controllers.queue_actions import QueueController, queue_commands
from rgt_tui.controllers.queue_poller import QueuePoller
from rgt_tui.controllers.type_ahead import TypeAhead
from rgt_tui.controllers.watch_notify import TuiNotify
from rgt_tui.controllers.workers import run_work
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import HostKeyError
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.history import HostHistory
from rgt_tui.messages import HostUpdated, OpenHostRequested, ReconnectRequested
from rgt_tui.profiles import profile as load_profile
from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.screens.diagnosis import DiagnosisScreen
from rgt_tui.screens.disk_usage import DiskUsageRequested, DiskUsageScreen, disk_commands
from rgt_tui.screens.fleet import FilterInput, FleetScreen
from rgt_tui.screens.help import HelpScreen
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.host_key import HostKeyReviewRequested, HostKeyScreen
from rgt_tui.screens.job_keys import JobRequested, JobsChanged, job_commands
from rgt_tui.screens.launch_confirm import LaunchConfirmScreen
from rgt_tui.screens.queue_control import queue_control_commands
from rgt_tui.screens.queue_keys import QueueActionRequested, QueueViewed
from rgt_tui.screens.queue_move_dialog import QueueMoveScreen
from rgt_tui.screens.quit_confirm import QuitConfirmScreen, busy_line
from rgt_tui.screens.shell_keys import ShellRequested, open_shell, shell_commands
from rgt_tui.screens.type_ahead import take_key
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.records_watch import WATCH_EVERY_S
from rgt_tui.services.telemetry import HostUpdate


class MonitorLike(Protocol):
    """What the App needs from a host's telemetry source (``HostMonitor`` or a fake)."""

    async def run(self, emit: Callable[[HostUpdate], None]) -> None: ...

    def request_reconnect(self) -> None: ...

    @property
    def host_key_fingerprint(self) -> str | None:
        """``SHA256:...`` of the host key its connection saw last; None before one, or
        where there is none (this machine, a fake)."""
        ...


def health_thresholds(fleet: Fleet) -> Thresholds:
    """The health rules' thresholds with the fleet file's overrides applied."""
    return Thresholds(**asdict(fleet.thresholds))


def build_monitors(
    fleet: Fleet,
    connections: FleetConnections,
    clock: Callable[[], float] = time.time,
    hosts: Iterable[HostConfig] | None = None,
) -> dict[str, MonitorLike]:
    """One live ``HostMonitor`` per host of the fleet (or of ``hosts``), over the host's
    shared connection."""
    from rgt_tui.services.telemetry import HostMonitor, default_last_seen

    thresholds = health_thresholds(fleet)
    last_seen = default_last_seen(fleet)  # the fleet's own journal
    return {
        h.name: HostMonitor(
            h,
            connections.transport(h.name),
            interval=fleet.poll_seconds,
            thresholds=thresholds,
            clock=clock,
            backoff=connections.backoff,
            connections=connections,  # its waits end on connections.wake (the user's r)
            last_seen=last_seen,  # the release clock counts across restarts (journal)
        )
        for h in (fleet.hosts if hosts is None else hosts)
    }


class RgtCommands(Provider):
    """The command palette: every action of the app, per host and per theme."""

    def _commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        app = self.app
        assert isinstance(app, RgtApp)
        commands: list[tuple[str, str, Callable[[], Any]]] = []
        for host in app.fleet.hosts:
            commands.append(
                (
                    f"Open detail: {host.name}",
                    "Show the host's detail screen",
                    partial(app.open_host, host.name),
                )
            )
            commands.append(
                (
                    f"Reconnect host: {host.name}",
                    "Drop and retry the connection now",
                    partial(app.reconnect, host.name),
                )
            )
            commands.append(
                (
                    f"Reclaim VRAM: {host.name}",
                    "GPU tab: who holds the VRAM; x kills a holder, its PID typed (U11)",
                    partial(app.open_host, host.name, "gpus"),
                )
            )
        for name in app.theme_names():
            commands.append(
                (
                    f"Switch theme to: {name}",
                    "Change the colours (remembered)",
                    partial(app.switch_theme, name),
                )
            )
        commands += queue_commands(app.fleet, app.queues.request)
        commands += queue_control_commands(app)  # S X R: stop, kill, retry (asks first)
        commands += job_commands(app)
        commands += shell_commands(app.fleet, app.post_message)
        commands += disk_commands(app.fleet, app.post_message)
        commands += [
            ("Filter hosts", "Show only hosts whose name matches", app.action_filter),
            ("Help: keys", "List every key", app.action_help),
            ("Quit", "Leave rgt-tui (remote runs keep running)", app.action_quit),
        ]
        return commands

    async def discover(self) -> Hits:
        for text, help_text, callback in self._commands():
            yield DiscoveryHit(text, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, callback in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback, help=help_text)


class RgtApp(App[int]):
    """rgt-tui: the fleet grid, host details, help, themes."""

    CSS_PATH = "app.tcss"
    TITLE = "rgt-tui"
    COMMANDS = {RgtCommands}
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?", tooltip="List every key"),
        Binding("q", "quit", "Quit", tooltip="Quit (runs on the boxes keep going)"),
        Binding(
            "plus",
            "add_host",
            "Add box",
            key_display="+",
            tooltip="Paste a box's SSH command: add it to the fleet file and watch it",
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
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self._hosts = {h.name: h for h in fleet.hosts}
        self.clock = clock
        self.config_dir = config_dir
        self.thresholds = health_thresholds(fleet)
        self.start_monitors = start_monitors
        self.host_keys = HostKeys(
            self,
            self.reconnect,
            show=self._show_key_refusal,
            ask=lambda error, answered: self.push_screen(HostKeyScreen(error), answered),
        )
        self.type_ahead = TypeAhead(self)  # keys typed after t, for the confirmation box
        # Each host's one SSH connection, shared by every screen and job (DESIGN step 2).
        self.connections = connections or FleetConnections(fleet.hosts)
        if monitors is None and start_monitors:
            monitors = build_monitors(fleet, self.connections, clock)
        self.monitors: dict[str, MonitorLike] = monitors or {}
        self.latest: dict[str, HostUpdate] = {}
        self.histories: dict[str, HostHistory] = {h.name: HostHistory() for h in fleet.hosts}
        self._posted: dict[str, HostUpdate] = {}
        self._monitor_workers: dict[str, Worker[None]] = {}
        self._records_look: Worker[None] | None = None  # the look at the records in flight
        # Hosts whose telemetry is stopped: their last sample says nothing about now (the
        # header leaves them out, the queue poller leaves them alone).
        self.telemetry_stopped: set[str] = set()
        dirs = (
            list(theme_dirs)
            if theme_dirs is not None
            else [
                themes.bundled_themes_dir(),
                themes.user_themes_dir(config_dir),
            ]
        )
        loaded, self.theme_errors = themes.load_themes(dirs)
        self.own_theme_names = [t.name for t in loaded]
        for t in loaded:
            self.register_theme(t)
        self.theme = self._initial_theme(theme)
        self.fleet_screen = FleetScreen(
            fleet,
            thresholds=self.thresholds,
            clock=clock,
            stopped=lambda: self.telemetry_stopped,
        )
        self.jobs = JobRunner(
            self,
            fleet,
            self.connections,
            on_change=lambda state: self.post_message(JobsChanged(state)),
            clock=clock,
        )
        self.box_watch = BoxWatch(
            self,
            self.jobs,
            latest=self.latest.get,
            host_key=self._host_key_of,
            stop=self._stop_telemetry,
            is_stopped=self.telemetry_stopped.__contains__,
        )
        self._seen_connected: set[str] = set()  # danger clocks: once per host per session
        self._clocks_shown: set[str] = set()  # ... and once per profile
        self.queues = QueueController(
            self, self.connections, fleet=lambda: self.fleet, open_screen=self._open_queue_screen
        )
        # watch's notifications from the TUI too, only when the fleet asks (tui_notify).
        self.tui_notify = TuiNotify.for_fleet(self, fleet, clock=clock)
        self.queue_poller = QueuePoller(
            fleet,
            self.connections,
            on_view=lambda host, view: self.post_message(QueueViewed(host, view)),
            is_live=self._sampled_and_connected,
            is_watched=self._queue_tab_shown,
        )

    def _initial_theme(self, requested: str | None) -> str:
        if requested:
            if requested in self.available_themes:
                return requested
            # The command line refuses this before the app starts; an app built directly
            # says the same, rgt-tui's themes apart from Textual's.
            own = [("rgt-tui's own (bundled and yours)", self.own_theme_names)]
            builtin = themes.builtin_theme_names(self.own_theme_names)
            message, fix = themes.unknown_theme_message(requested, own, builtin)
            self.theme_errors.append(f"{message}\n  {fix}")
        saved = themes.saved_theme(self.config_dir)
        for name in (saved, themes.DEFAULT_THEME, "textual-dark"):
            if name and name in self.available_themes:
                return name
        return self.theme

    def theme_names(self) -> list[str]:
        """rgt-tui's themes (bundled and the user's) first, then Textual's built-in ones."""
        rest = sorted(n for n in self.available_themes if n not in self.own_theme_names)
        return [*self.own_theme_names, *rest]

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # A theme without rgt-tui's variables (Textual's own, a user's) still gets gauges,
        # drawn in its own status colours.
        theme = self.current_theme
        colors = theme.to_color_system().generate()
        shade = "panel-lighten-2" if theme.dark else "panel-darken-2"
        fallback = colors.get("foreground", "ansi_default")
        return {
            "gauge-ok": colors.get("success", fallback),
            "gauge-warn": colors.get("warning", fallback),
            "gauge-crit": colors.get("error", fallback),
            "gauge-empty": colors.get(shade, colors.get("panel", fallback)),
        }

    def get_default_screen(self) -> FleetScreen:
        return self.fleet_screen

    def on_mount(self) -> None:
        if self.theme_errors:
            self.notify(
                "\n".join(self.theme_errors),
                title="Theme files skipped",
                severity="warning",
                timeout=15,
            )
        for name, monitor in self.monitors.items():
            self.start_monitor(name, monitor)
        self.jobs.load_journals()
        # Another process (the command line) records teardowns, pulls and verifications
        # too: its records reach this window within a few seconds.
        self.set_interval(WATCH_EVERY_S, self._look_at_records)
        # Everything built so far (Textual, the panes, the fleet) lives as long as the app:
        # leave it out of the collector's full passes, which otherwise stall a keypress
        # by ~50 ms a few times a minute at 100 hosts (scripts/bench_tui.py, gc stats).
        gc.freeze()
        if self.start_monitors:
            self.queue_poller.start(self)
            # Results leave boxes on their cadence (pull_every, a spot profile's default)
            # while the app is open, as under `rgt-tui watch`.
            run_work(self, self.jobs.periodic_pulls().run(), "periodic-pulls", group="pulls")

    async def on_unmount(self) -> None:
        gc.unfreeze()  # another app in this process (tests) starts from a clean slate
        # Textual cancels workers at exit without waiting; wait here (briefly) so every
        # monitor closes its channel and the agent processes go with it.
        running = [w for w in self._monitor_workers.values() if not w.is_finished]
        for worker in running:
            worker.cancel()
        if running:
            await asyncio.wait([asyncio.ensure_future(_settled(w)) for w in running], timeout=3)
            await asyncio.sleep(0.1)  # let cancelled streams' finalizers run
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

    # -- telemetry ---------------------------------------------------------------------

    def start_monitor(self, host: str, monitor: MonitorLike) -> Worker[None]:
        """Run ``monitor`` in the host's worker group (replacing any running one)."""
        worker = run_work(
            self,
            self._pump(host, monitor),
            f"monitor:{host}",
            group=f"host:{host}",
            description=f"telemetry of {host}",
        )
        self._monitor_workers[host] = worker
        self.telemetry_stopped.discard(host)
        return worker

    async def _pump(self, host: str, monitor: MonitorLike) -> None:
        def emit(update: HostUpdate) -> None:
            self._posted[update.host] = update
            self.post_message(HostUpdated(update))

        # The monitor borrows the host's shared connection: it stays open for the other
        # borrowers when telemetry stops, and the app closes it on the way out.
        await monitor.run(emit)

    def on_host_updated(self, message: HostUpdated) -> None:
        update = message.update
        if self._posted.get(update.host, update) is not update:
            return  # a newer sample of this host is already queued
        if self.jobs.state(update.host).shown_torn_down_at is not None:
            update = as_torn_down(update)  # gone, as it should be: never GEN8
        host = self._hosts.get(update.host)
        if host is not None:
            # Its alerts, cost rules included, come with it (the monitor's, as status's).
            self._first_connection(update, host)
        history = self.histories.setdefault(update.host, HostHistory())
        history.add(update.snapshot)
        self.latest[update.host] = update
        self.host_keys.host_updated(update.host, update.connection)
        with self.batch_update():
            for screen in self._fleet_views():
                screen.host_updated(update, history)
        self.box_watch.host_updated(update)
        if self.tui_notify is not None:
            self.tui_notify.host_updated(update)

    def _sampled_and_connected(self, host: str) -> bool:
        """Connected at the last sample, and still sampled (not a torn-down box whose
        telemetry stopped while it was up): the queue poller reads only such hosts."""
        update = self.latest.get(host)
        return (
            host not in self.telemetry_stopped
            and update is not None
            and update.connection.status == "connected"
        )

    def _queue_tab_shown(self, host: str) -> bool:
        """Whether ``host``'s Queue tab is on screen (its queue is polled faster then)."""
        screen = self.screen
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

    def _host_key_of(self, host: str) -> str | None:
        """The host key the host's monitor connection saw (None: none, or local)."""
        monitor = self.monitors.get(host)
        return monitor.host_key_fingerprint if monitor is not None else None

    def _first_connection(self, update: HostUpdate, host: HostConfig) -> None:
        # Principle 10: a host's danger clocks are shown once, when it first connects.
        if update.connection.status != "connected" or update.host in self._seen_connected:
            return
        self._seen_connected.add(update.host)
        # This machine is no rented box: no platform clock runs on it, and nothing bills.
        if host.is_local or self.fleet.is_default:
            return
        # The clocks are the profile's: one note per profile, not one per host, so a
        # fleet of 30 identical boxes does not bury the screen in identical toasts.
        if host.profile in self._clocks_shown:
            return
        self._clocks_shown.add(host.profile)
        clocks = load_profile(host.profile).clock_lines
        if clocks:
            same = [h.name for h in self.fleet.hosts if h.profile == host.profile]
            who = update.host if len(same) == 1 else f"{host.profile} ({len(same)} hosts)"
            # One line in the fleet header, not a toast over half the panes (issue 27).
            self.fleet_screen.show_notice(f"{who}: danger clocks", "; ".join(clocks))

    # -- pulls, verification, teardown ---------------------------------------------------

    @on(JobRequested)
    def _job_requested(self, message: JobRequested) -> None:
        if message.show_tab:
            self.open_host(message.host, tab=message.show_tab)
        self.jobs.request(message.host, message.job, message.arg)

    @on(JobsChanged)
    def _jobs_changed(self, message: JobsChanged) -> None:
        for screen in self._fleet_views():
            screen.jobs_changed(message.state)
        self._show_torn_down(message.state)
        # A torn-down host: its one attempt decides (box_watch) whether polling stops.
        self.box_watch.jobs_changed(message.state)

    def _show_torn_down(self, state: HostJobs) -> None:
        """A host just recorded torn down (here or by the command line): a lost
        connection already shown is now the box being gone, not GEN8."""
        latest = self.latest.get(state.host)
        if state.shown_torn_down_at is None or latest is None:
            return
        shown = as_torn_down(latest)
        if shown is not latest:
            self.latest[state.host] = shown
            history = self.histories.setdefault(state.host, HostHistory())
            for screen in self._fleet_views():
                screen.host_updated(shown, history)

    def _stop_telemetry(self, host: str, torn_down_at: float) -> None:
        """A torn-down box is gone: stop polling it rather than show it unreachable
        forever (its pane keeps the last sample, greyed out). ``r`` gives it one more
        attempt, for a box that is back or a new box under the name."""
        self.telemetry_stopped.add(host)
        worker = self._monitor_workers.get(host)
        if worker is not None and not worker.is_finished:
            worker.cancel()
            self.notify(
                f"{host} was torn down: telemetry stopped. Press r on it if the box is back.",
                title=host,
                timeout=8,
            )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.ERROR and (worker.group or "").startswith("host:"):
            host = worker.group.removeprefix("host:")
            self.notify(
                f"Telemetry for {host} stopped: {worker.error}. Press r on it to retry.",
                title=host,
                severity="error",
                timeout=15,
            )

    # -- keys ----------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        # A printable key no binding took: typed before the cursor reached a box (t).
        if take_key(self, event):
            event.stop()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Between t and the confirmation box having the cursor, keys are text, not actions.
        return not self.type_ahead.active

    # -- actions -----------------------------------------------------------------------

    def reconnect(self, host: str) -> None:
        """Drop and retry ``host``'s connection now."""
        from rgt_tui.controllers.notices import notify_once

        monitor = self.monitors.get(host)
        if monitor is None:
            self.notify(f"{host} is not being monitored", severity="warning")
            return
        worker = self._monitor_workers.get(host)
        if worker is not None and worker.is_finished:
            # The monitor died (reported when it happened) or was stopped for a teardown:
            # pressing r starts it again (a torn-down host: for one attempt).
            if host in self.telemetry_stopped:
                self.box_watch.retry(host)
            self.start_monitor(host, monitor)
        else:
            monitor.request_reconnect()  # drops the connection
        # The one wake: telemetry, a pull and a log follower in backoff all try at once.
        self.connections.wake(host)
        # r pressed again while the toast shows: the toast keeps its own timeout.
        notify_once(self, f"Reconnecting {host}…", title=host)

    @on(ReconnectRequested)
    def _reconnect(self, message: ReconnectRequested) -> None:
        self.reconnect(message.host)

    @on(HostKeyReviewRequested)
    def _review_host_key(self, message: HostKeyReviewRequested) -> None:
        self.host_keys.review(message.host)

    def open_host(self, host: str, tab: str | None = None) -> None:
        """Show ``host``'s detail screen (over the fleet grid), on ``tab`` if given."""
        screen = self.screen
        if not (isinstance(screen, HostDetailScreen) and screen.host.name == host):
            self._back_to_fleet()
            screen = HostDetailScreen(
                self.fleet.host(host),
                update=self.latest.get(host),
                history=self.histories.get(host),
                thresholds=self.thresholds,
                clock=self.clock,
                connections=self.connections,
                queue_view=self.queue_poller.views.get(host),
            )
            screen.key_refusal = self.host_keys.refusals.get(host)
            self.push_screen(screen)
        detail = screen
        # The host's state as it is when the screen is up, not now: a job that ends
        # meanwhile (a gate on this machine, in milliseconds) must not be drawn over.
        self.call_after_refresh(lambda: detail.jobs_changed(self.jobs.state(host)))
        if tab is not None:
            self.call_after_refresh(detail.show_job_tab, tab)

    @on(QueueActionRequested)
    def _queue_action(self, message: QueueActionRequested) -> None:
        self.queues.request(message.host, message.action)

    @on(DiskUsageRequested)
    def _disk_usage(self, message: DiskUsageRequested) -> None:
        host = self.fleet.host(message.host)
        self.push_screen(DiskUsageScreen(host, self.connections, self.fleet.results_dir))

    @on(ShellRequested)
    def _shell(self, message: ShellRequested) -> None:
        # One shell at a time: the terminal is the shell's until it ends.
        self.run_worker(
            open_shell(self, self.fleet, message.host),
            group="shell",
            exclusive=True,
            exit_on_error=False,
        )

    def _open_queue_screen(self, action: str, host: HostConfig) -> None:
        """A queue key's screen (``QueueController`` decided): the launch plan, the
        diagnosis, or the host's Logs tab."""
        if action == "launch":
            self.push_screen(LaunchConfirmScreen(self.fleet, host, self.connections))
        elif action == "diagnose":
            self.push_screen(DiagnosisScreen(host, self.connections))
        elif action == "move":
            self.push_screen(QueueMoveScreen(self.fleet, host, self.connections))
        elif action == "logs":
            self.open_host(host.name)
            self.call_after_refresh(self._show_logs_tab, host.name)

    def _show_logs_tab(self, host_name: str) -> None:
        screen = self.screen
        if isinstance(screen, HostDetailScreen) and screen.host.name == host_name:
            screen.action_show_tab("logs")

    @on(QueueViewed)
    def _queue_viewed(self, message: QueueViewed) -> None:
        for screen in self._fleet_views():
            screen.queue_viewed(message.host, message.view)
        if self.tui_notify is not None:
            self.tui_notify.queue_viewed(message.host, message.view)

    @on(OpenHostRequested)
    def _open_host(self, message: OpenHostRequested) -> None:
        self.open_host(message.host)

    def _back_to_fleet(self) -> None:
        while len(self.screen_stack) > 1 and self.screen is not self.fleet_screen:
            self.pop_screen()

    def switch_theme(self, name: str) -> None:
        """Apply theme ``name`` and remember it for the next start."""
        if name not in self.available_themes:
            self.notify(f"No theme named {name!r}", severity="error")
            return
        self.theme = name
        self._save_theme(name)

    @work(thread=True, exclusive=True, group="settings", exit_on_error=False)
    def _save_theme(self, name: str) -> None:
        # A thread: the event loop never waits on the disk.
        try:
            themes.save_theme(name, self.config_dir)
        except OSError as exc:
            self.call_from_thread(
                self.notify, f"Could not save the theme choice: {exc}", severity="warning"
            )

    def action_add_host(self) -> None:
        """Paste a box's SSH command: the add screen appends it to the fleet file (after
        its host key is trusted), and its pane, connection and telemetry start at once."""
        if isinstance(self.screen, AddHostScreen):
            return
        screen = AddHostScreen(self.fleet.path)  # None: no fleet file yet, ./hosts.toml
        self.push_screen(screen, partial(self._host_added, screen.fleet_file))

    def _host_added(self, fleet_file: Path, host: HostConfig | None) -> None:
        if host is None:
            return
        hosts = (*self.fleet.hosts, host)
        # Local stays shown until the next start, which reads the new fleet file.
        fleet = self.fleet = replace(self.fleet, hosts=hosts, path=fleet_file, is_default=False)
        self._hosts[host.name] = host
        self.histories[host.name] = HostHistory()
        self.connections.add(host)
        self.jobs.fleet = self.queue_poller.fleet = fleet
        self.fleet_screen.add_host(fleet, host)
        if self.start_monitors:
            monitor = build_monitors(fleet, self.connections, self.clock, hosts=[host])
            self.monitors.update(monitor)
            self.start_monitor(host.name, monitor[host.name])
            self.queue_poller.start_host(host, self)
        self.notify(f"added {host.name} to {fleet_file}", title=host.name)

    def action_filter(self) -> None:
        self._back_to_fleet()
        self.fleet_screen.action_filter()

    async def action_quit(self) -> None:
        """Quit; while a pull or a teardown runs, first say what stops (and keep it on
        Escape). Ctrl+C (a priority binding) at that question quits."""
        busy = self.jobs.busy()
        if not busy or isinstance(self.screen, QuitConfirmScreen):
            self.exit()
            return
        lines = [busy_line(s.host, s.running, s.progress) for s in busy]

        def answered(leave: bool | None) -> None:
            if leave:
                self.exit()

        self.push_screen(QuitConfirmScreen(lines), answered)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        palette = Binding(
            "ctrl+p", "command_palette", "Commands", tooltip="Command palette: every action"
        )
        self.push_screen(
            HelpScreen(
                [
                    ("Everywhere", [*self.BINDINGS, palette]),
                    ("Fleet", FleetScreen.BINDINGS),
                    (
                        "Filter box",
                        [
                            *FilterInput.BINDINGS,
                            Binding("enter", "keep", "Keep the filter, back to the grid"),
                        ],
                    ),
                    ("Host detail", HostDetailScreen.BINDINGS),
                ]
            )
        )


async def _settled(worker: Worker[None]) -> None:
    """Wait for a worker to finish, however it finishes."""
    try:
        await worker.wait()
    except Exception:  # WorkerCancelled / WorkerFailed: finished is all that matters here
        pass


def run_app(fleet: Fleet, *, theme: str | None = None) -> int:
    """Run the TUI on ``fleet`` until the user quits; the exit status for the CLI."""
    app = RgtApp(fleet, theme=theme)
    app.run()
    return app.return_code or 0
