"""HostDetailScreen: one host in depth, as tabs built from ``DETAIL_TABS``. Past 450
lines on purpose: its keys, its live updates and its life-cycle guards act on the same
tabs, and each tab's own content lives in ``screens/tabs/``.

It keeps updating live: the App passes every update on, and the screen redraws the
active tab only (the others catch up when they are shown). Number keys jump to tabs, in
the registry's order, so a new tab gets its key without touching this module.

Updates arrive at any moment of the screen's life: before its tabs are composed, after a
pop, while the app closes and removes its widgets. Nothing here touches a widget unless
``_drawable``; what arrived meanwhile is kept and drawn when the screen is shown
(``_catch_up``), so no sample is lost and no handler raises ``NoMatches``.

A mistake in the fleet file is shown under the title too (``show_fleet_problem``), not
only on the fleet screen: this screen, ``y`` and ``P`` run on the last good settings
until the file is fixed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Input, Select, Static, TabbedContent, TabPane

from rgt_tui.controllers.fleet_view import FleetView
from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.controllers.notices import short_names
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import HostKeyError
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.preemption import Checkpoint, Preemption
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.messages import ReconnectRequested
from rgt_tui.screens.disk_usage import DISK_BINDING, DiskUsageRequested
from rgt_tui.screens.host_key import HOST_KEY_BINDING, HostKeyReviewRequested
from rgt_tui.screens.job_keys import JOB_BINDINGS, JobRequested
from rgt_tui.screens.queue_control import (
    QUEUE_CONTROL_BINDINGS,
    QUEUE_CONTROL_ELSEWHERE_BINDINGS,
    QUEUE_CONTROL_IDLE_BINDINGS,
)
from rgt_tui.screens.queue_keys import DIALOG_ACTIONS, QUEUE_BINDINGS, QueueActionRequested
from rgt_tui.screens.shell_keys import SHELL_BINDING, request_shell
from rgt_tui.screens.tabs import DETAIL_TABS, DetailTab, HostView
from rgt_tui.screens.tabs.base import TabbedScreen
from rgt_tui.screens.tabs.logs_recall import LogRecall
from rgt_tui.screens.tunnel_keys import TUNNEL_BINDING, TunnelLine, toggle_tunnel
from rgt_tui.screens.type_ahead import expect_typing, typed_into, typing_ahead
from rgt_tui.screens.vram_kill import VRAM_BINDING
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.widgets.host_pane import screen_on_top
from rgt_tui.widgets.key_footer import KeyFooter

PICK_CELL = "The Logs tab's picker: the queue log or a cell's log"


def _tab_bindings() -> list[Binding]:
    return [
        Binding(str(n), f"show_tab('{tab.TAB_ID}')", tab.TITLE, show=False)
        for n, tab in enumerate(DETAIL_TABS[:9], start=1)
    ]


def tab_label(number: int, title: str) -> str:
    """A tab's title with its number key in front (keys 1–9), so the keys can be read."""
    return f"{number} {title}" if number <= 9 else title


# Where nothing focused takes these keys (a button, the tab bar, nothing), they scroll
# the tab on screen: at 80×24 most tabs are taller than the screen.
SCROLL_BINDINGS = [
    Binding("pageup", "scroll_tab('page_up')", "Page up", show=False),
    Binding("pagedown", "scroll_tab('page_down')", "Page down", show=False),
    Binding("home", "scroll_tab('home')", "Top", show=False),
    Binding("end", "scroll_tab('end')", "Bottom", show=False),
    # vim's keys: j/k scroll a line, h/l step through the tabs (as ←/→ on the tab bar).
    Binding("j", "scroll_tab('down')", "Down", show=False, tooltip="Scroll the tab down"),
    Binding("k", "scroll_tab('up')", "Up", show=False, tooltip="Scroll the tab up"),
    Binding("h", "step_tab(-1)", "Previous tab", show=False, tooltip="The tab to the left"),
    Binding("l", "step_tab(1)", "Next tab", show=False, tooltip="The tab to the right"),
]


class HostDetailScreen(FleetView, TabbedScreen, Screen[None]):
    """Tabs of one host's figures; Escape goes back to the fleet."""

    DEFAULT_CSS = """
    HostDetailScreen #detail-fleet-problem { height: auto; padding: 0 1; }
    """

    BINDINGS = [
        Binding("escape,backspace", "back", "Back", tooltip="Back to the fleet"),
        Binding("r", "reconnect", "Reconnect", tooltip="Reconnect this host now"),
        *JOB_BINDINGS,
        SHELL_BINDING,
        DISK_BINDING,
        *QUEUE_BINDINGS,
        *QUEUE_CONTROL_BINDINGS,
        *QUEUE_CONTROL_IDLE_BINDINGS,
        *QUEUE_CONTROL_ELSEWHERE_BINDINGS,
        HOST_KEY_BINDING,
        VRAM_BINDING,
        # x on another tab, unlisted, as S X R are: the GPU tab and its dialog (h542 #9:
        # the help listed x, and on the Overview it did nothing and said nothing).
        Binding("x", "kill_vram_holder_elsewhere", show=False),
        TUNNEL_BINDING,
        *_tab_bindings(),
        # c: in the Logs tab's footer (where its picker is; a user's hour found it in
        # no footer), and from any other tab unlisted, as S X R are.
        Binding("c", "pick_cell", "Cells", tooltip=PICK_CELL),
        Binding("c", "pick_cell_elsewhere", show=False, tooltip=PICK_CELL),
        # A group's rank picker (issue 41), as c opens the log picker: the Logs tab's when
        # it is on screen, else the Queue tab's. Only on a group.
        Binding(
            "g",
            "pick_rank",
            "Rank",
            tooltip="A group's rank picker: the whole group, or one box's own records or logs",
        ),
        Binding("g", "no_ranks", show=False),  # g on a host of its own: said why (h542 #9)
        *SCROLL_BINDINGS,
        # t re-checks too, but in a text box t is a letter ("tpu1"): Ctrl+R is typed
        # nowhere, so it re-checks from inside the Teardown tab's name box as well.
        Binding(
            "ctrl+r",
            "host_job('gate', 'teardown')",
            "Re-check",
            show=False,
            tooltip="Re-check the teardown gate (also while typing the name)",
        ),
    ]

    def __init__(
        self,
        host: HostConfig,
        *,
        update: HostUpdate | None = None,
        history: HostHistory | None = None,
        thresholds: Thresholds | None = None,
        clock: Callable[[], float] = time.time,
        tabs: list[type[DetailTab]] | None = None,
        connections: FleetConnections | None = None,
        queue_view: QueueView | None = None,
        verified: tuple[str, Checkpoint | None] | None = None,
        fleet_problem: str = "",
        log_recall: LogRecall | None = None,
        preemption: Preemption | None = None,
    ) -> None:
        super().__init__()
        self.host = host
        self.log_recall = log_recall  # the app's memory of what its Logs tabs drew
        self.fleet_problem = fleet_problem  # the fleet file's mistake ("": none), as shown
        self.connections = connections
        self.queue_view = queue_view  # the poller's latest, for the Queue tab
        self.update = update
        self.history = history or HostHistory()
        self.thresholds = thresholds or Thresholds()
        self.clock = clock
        self.tab_classes = list(tabs if tabs is not None else DETAIL_TABS)
        self.tabs: dict[str, DetailTab] = {cls.TAB_ID: cls() for cls in self.tab_classes}
        for tab in self.tabs.values():
            tab.bind_host(host)
        self._stale: set[str] = set(self.tabs)
        self.jobs: HostJobs | None = None  # the host's latest job state, for the tabs
        # A tab asked for before compose, and whether it takes the cursor (a job key's
        # tab does; a tab key typed meanwhile does not).
        self._pending_tab: tuple[str, bool] | None = None
        self.key_refusal: HostKeyError | None = None  # the host's refused key (K shows it)
        # The running cell's newest verified checkpoint, as the pane has it (the spot
        # controller's last look): handed again only when the records change.
        self.verified = verified
        self.preemption = preemption  # the runtime's named preemption, as the pane has it

    def compose(self) -> ComposeResult:
        yield Static(self._title(), classes="detail-title")
        problem = Static(self._problem_line(), id="detail-fleet-problem")
        problem.display = bool(self.fleet_problem)
        yield problem
        yield TunnelLine(self.host.name)  # hidden until T opens a tunnel (U39)
        with TabbedContent():
            for number, cls in enumerate(self.tab_classes, start=1):
                with TabPane(tab_label(number, cls.TITLE), id=f"tab-{cls.TAB_ID}"):
                    yield self.tabs[cls.TAB_ID]
        yield KeyFooter()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def on_screen_resume(self) -> None:
        # Shown (pushed, or back from a screen that covered it): what came meanwhile.
        self.call_after_refresh(self._catch_up)

    def _drawable(self) -> bool:
        """Whether every widget of the screen is there to draw on.

        Not before compose and mount finished; not after a pop (a callback queued before
        it still runs after it); not while the app closes (it removes a screen's widgets,
        leaves first, while the screen is still in the stack and its timer still fires).
        """
        app = self.app
        return self.is_mounted and self.is_attached and app.is_running and self in app.screen_stack

    def _tabbed(self) -> TabbedContent | None:
        """The tabs, or None while the screen cannot be drawn on (``_drawable``)."""
        if not self._drawable():
            return None
        return next(iter(self.query_children(TabbedContent)), None)

    def _catch_up(self) -> None:
        """Draw what arrived while the screen could not: the job state, the queue view,
        a job key's tab, the latest sample."""
        if self._tabbed() is None:
            return
        for tab in self.tabs.values():
            if self.jobs is not None:
                tab.show_jobs(self.jobs)
            if self.queue_view is not None:
                tab.show_queue(self.queue_view)
            tab.catch_up()
        pending, self._pending_tab = self._pending_tab, None
        if pending is not None:
            tab_id, focus = pending
            if focus:
                self.show_job_tab(tab_id)
            else:
                self.action_show_tab(tab_id)
        self.draw()

    def _title(self) -> Content:
        count = min(len(self.tab_classes), 9)
        # With the cursor in a box (the Teardown tab's name and cell boxes) digits and r
        # are typed there: "1–8 tabs" read as a promise the keys did not keep (hour s30).
        keys = (
            "Esc back · keys type into the field"
            if isinstance(self.focused, Input)
            else f"Esc back · 1–{count} tabs · r reconnect"
        )
        return Content.assemble(
            # A 197-character name pushed the keys off the line at 80 columns (h611).
            (short_names(self.host.name, [self.host.name]), "bold $accent"),
            ("  ", ""),
            (self.host.profile, "$foreground-muted"),
            (f"   {keys}", "$foreground-muted"),
        )

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._retitle()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self._retitle()

    def _retitle(self) -> None:
        for title in self.query(".detail-title").results(Static):
            title.update(self._title())

    def _problem_line(self) -> Content:
        # The fleet screen's own line (what is wrong, file:line, that the last good
        # settings run): y and P here run on them too.
        return Content.assemble(("✖ ", "bold $error"), (self.fleet_problem, "$error"))

    def show_fleet_problem(self, text: str) -> None:
        """The fleet file's mistake as the fleet screen says it (``""`` once fixed): shown
        under the title until then."""
        self.fleet_problem = text
        # Before compose there is no line yet (compose shows it); between compose and
        # mount there is one, drawn with what was known then: updated here either way.
        for line in self.query("#detail-fleet-problem").results(Static):
            line.update(self._problem_line())
            line.display = bool(text)

    @property
    def active_tab(self) -> str:
        """The TAB_ID of the tab on screen ("" while the screen is not drawable)."""
        tabbed = self._tabbed()
        return tabbed.active.removeprefix("tab-") if tabbed is not None else ""

    def host_updated(self, update: HostUpdate, history: HostHistory | None) -> None:
        """Take a new update for this screen's host; others are ignored."""
        if update.host != self.host.name:
            return
        self.update = update
        if history is not None:
            self.history = history
        self._stale = set(self.tabs)
        if screen_on_top(self):
            self.draw()

    def queue_viewed(self, host: str, view: QueueView) -> None:
        """A polled view of this host's queue: the Queue tab shows it."""
        if host != self.host.name:
            return
        before = self.queue_view
        running = before is not None and before.current is not None
        pickable = bool(before.retry_pickable) if before is not None else False
        asked = before is not None and before.stop_requested
        self.queue_view = view
        if (
            running != (view.current is not None)
            or pickable != bool(view.retry_pickable)
            or asked != view.stop_requested
        ):
            # S and X come and go with the running cell, R with a cell it can take (h461
            # #4: a kill made one, and the footer kept R off until the next start or end),
            # S with a stop not asked yet (h471 #8).
            self.refresh_bindings()
        # Else _catch_up hands it on when the screen is shown or back on top (a redraw
        # under a dialog is written over the dialog's box: screen_on_top).
        if self._drawable() and screen_on_top(self):
            for tab in self.tabs.values():
                tab.show_queue(view)

    def host_preempted(self, host: str, preemption: Preemption | None) -> None:
        # The Overview says what the pane says (hour s24a #7: "the run may still be
        # alive" under a preempted box's ⚡ line on the pane).
        if host == self.host.name and self.preemption != preemption:
            self.preemption = preemption
            # The Queue tab's heading too: "m moves the interrupted cell" until it says
            # where the cell was moved (s43 spot hour #3).
            self._stale.update(("overview", "queue"))
            if screen_on_top(self):
                self.draw()

    def checkpoint_verified(self, host: str, cell: str, checkpoint: Checkpoint | None) -> None:
        """The running cell's newest verified checkpoint (issue 40): the Queue tab's ages."""
        if host == self.host.name and self.verified != (cell, checkpoint):
            self.verified = (cell, checkpoint)
            self._stale.add("queue")
            if screen_on_top(self):
                self.draw()

    def draw(self) -> None:
        """Redraw the active tab from the latest update."""
        tab_id = self.active_tab
        tab = self.tabs.get(tab_id)
        if tab is None or not tab.is_mounted:
            return  # not drawable: the tab stays stale, drawn once the screen is shown
        view = HostView(
            self.host,
            self.update,
            self.history,
            self.clock(),
            self.thresholds,
            self.connections,
            self.queue_view,
            self.verified,
            self.log_recall,
            self.preemption,
        )
        tab.show(view)
        self._stale.discard(tab_id)

    def _tick(self) -> None:
        # The connection countdown and the cost move even without new samples.
        if screen_on_top(self) and self.active_tab == "overview":
            self.draw()

    @on(TabbedContent.TabActivated)
    def _tab_shown(self) -> None:
        self.refresh_bindings()  # x (kill a VRAM holder) is the GPU tab's only
        if self.active_tab in self._stale:
            self.draw()

    def action_show_tab(self, tab_id: str) -> None:
        tabbed = self._tabbed()
        if tabbed is not None:
            tabbed.active = f"tab-{tab_id}"
            # Mounted, not yet caught up (``_catch_up`` runs after the first refresh): a
            # tab p kept from before the mount would go over this one, chosen later (a
            # keyboard audit: p then 7 within ~250 ms stayed on the Pulls tab).
            self._pending_tab = None
        elif not self.is_mounted:
            # A tab key typed while the screen composes (right after p): the last one
            # asked wins when it can be shown, the job key's included (h542 #5).
            self._pending_tab = (tab_id, False)

    def action_scroll_tab(self, how: str) -> None:
        """PageUp/PageDown/Home/End where nothing focused took them: scroll the tab."""
        tab = self.tabs.get(self.active_tab)
        if tab is None:
            return
        scroll = {
            "page_up": tab.scroll_page_up,
            "page_down": tab.scroll_page_down,
            "home": tab.scroll_home,
            "end": tab.scroll_end,
            "down": tab.scroll_down,
            "up": tab.scroll_up,
        }[how]
        scroll(animate=False)

    def action_step_tab(self, step: int) -> None:
        """h/l: the tab left or right of this one (wrapping, as the tab bar's arrows)."""
        ids = [cls.TAB_ID for cls in self.tab_classes]
        # From the tab a job key asked for and the screen has not shown yet: p then l is
        # the tab right of Pulls, not of the Overview still on screen.
        current = self._pending_tab[0] if self._pending_tab is not None else self.active_tab
        if current in ids:
            self.action_show_tab(ids[(ids.index(current) + step) % len(ids)])

    def action_shell(self) -> None:
        request_shell(self, self.host.name)

    def action_tunnel(self) -> None:
        """``T``: the box's TensorBoard here, over the host's connection (or close it)."""
        if self.connections is not None:
            toggle_tunnel(self.app, self.host, self.connections)

    def action_disk_usage(self) -> None:
        expect_typing(self)  # keys typed with u are the dialog's, as on the grid
        self.post_message(DiskUsageRequested(self.host.name))

    def action_pick_cell(self) -> None:
        """``c``: the Logs tab, its log picker focused and open."""
        self.action_show_tab("logs")
        picker = self.query("#logs-source").first(Select) if self.query("#logs-source") else None
        if picker is not None:
            picker.focus()
            picker.action_show_overlay()

    def action_pick_cell_elsewhere(self) -> None:
        """``c`` on another tab: the Logs tab and its picker, as on it."""
        self.action_pick_cell()

    def action_pick_rank(self) -> None:
        """``g`` on a group: the rank picker of the Logs tab when it is on screen, else of
        the Queue tab, focused and open."""
        tab = "logs" if self.active_tab == "logs" else "queue"
        self.action_show_tab(tab)
        found = self.query(f"#{tab}-rank")
        picker = found.first(Select) if found else None
        if picker is not None and picker.display:
            picker.focus()
            picker.action_show_overlay()

    def show_job_tab(self, tab_id: str) -> None:
        """Show the tab a job key opened; it takes the cursor if it has an entry for it
        (``t``: the Teardown tab's confirmation box)."""
        if self._tabbed() is None:
            if not self.is_mounted:  # still composing: _catch_up shows it
                self._pending_tab = (tab_id, True)
            return  # popped, or the app is closing: nothing to show it on
        self.action_show_tab(tab_id)
        tab = self.tabs.get(tab_id)
        box = tab.take_focus() if tab is not None and tab.is_mounted else None
        if box is not None:
            typed_into(self, box)

    def action_back(self) -> None:
        self.dismiss()

    def action_reconnect(self) -> None:
        self.post_message(ReconnectRequested(self.host.name))

    def action_queue(self, action: str) -> None:
        if action == "logs":
            self.action_show_tab("logs")
            return
        if action in DIALOG_ACTIONS:
            expect_typing(self)  # the dialog's, as on the grid
        self.post_message(QueueActionRequested(self.host.name, action))

    def action_host_job(self, job: str, tab: str) -> None:
        # The tab (and its entry's focus) change now, not after the App's round trip:
        # keys typed right after t must land in the confirmation box.
        if tab == "teardown":
            expect_typing(self)
        self.show_job_tab(tab)
        # To the App itself, not bubbled through this screen: a q typed right after
        # (``p q`` in one burst) must find the pull asked for (App.action_quit).
        self.app.post_message(JobRequested(self.host.name, job, show_tab=tab))

    def host_key_refused(self, host: str, error: HostKeyError | None) -> None:
        """This host's key was refused (or it connected again): K is offered meanwhile."""
        if host == self.host.name:
            self.key_refusal = error
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if typing_ahead(self) or getattr(self.app, "quit_pending", False):
            return False  # t was pressed (keys for the confirmation box), or q (its question)
        if action == "host_key":  # shown (and working) only while the key is refused
            return self.key_refusal is not None
        if action == "kill_vram_holder":  # x: the GPU tab's only
            return self.active_tab == "gpus"
        if action == "queue_control":  # S X R: the Queue tab's only
            if self.active_tab != "queue":
                return False
            # S and X only while a cell runs (a user's hour read "S Stop after cell" and
            # "X Kill cell" in the footer with nothing running); R always. Not polled yet:
            # offered, and the dialog says what it finds.
            view = self.queue_view
            if parameters and parameters[0] == "stop" and view is not None:
                # Not once a stop was asked: a second S only says so (h471 #8).
                return view.current is not None and not view.stop_requested
            if parameters and parameters[0] == "kill" and view is not None:
                return view.current is not None
            if parameters and parameters[0] == "retry" and view is not None:
                # R only with a cell to take, as the tab's line (hour s45c #3).
                return bool(view.retry_pickable)
            return True
        if action == "nothing_running":  # S X R when the above hides them: said why
            view = self.queue_view
            if self.active_tab != "queue" or view is None:
                return False
            if parameters and parameters[0] == "retry":
                return not view.retry_pickable
            if parameters and parameters[0] == "stop" and view.stop_requested:
                return True  # hidden from the footer; a press says it was asked already
            return view.current is None
        if action == "queue_control_elsewhere":  # S X R on every other tab, unlisted
            return self.active_tab not in ("queue", None)
        if action == "pick_cell":  # c: listed on the Logs tab
            return self.active_tab == "logs"
        if action == "pick_cell_elsewhere":
            return self.active_tab != "logs"
        if action == "pick_rank":  # g: a group's only
            return self.host.group is not None
        if action == "no_ranks":
            return self.host.group is None
        if action == "kill_vram_holder_elsewhere":
            return self.active_tab != "gpus"
        return True

    def action_kill_vram_holder(self) -> None:
        """``x`` on the GPU tab: the kill dialog, on evidence read from the box now."""
        from rgt_tui.screens.tabs.gpus import GpusTab

        self._on_tab("gpus", lambda tab: isinstance(tab, GpusTab) and tab.open_kill_dialog())

    def action_kill_vram_holder_elsewhere(self) -> None:
        """``x`` on another tab: the GPU tab and its kill dialog, as on it."""
        self.action_show_tab("gpus")
        self.action_kill_vram_holder()  # the tab reads, then opens, once it has the host

    def action_no_ranks(self) -> None:
        self.notify(
            f"g picks a rank of a group ([[groups]]): {self.host.name} is a host of its own",
            title=self.host.name,
        )

    def action_queue_control(self, action: str) -> None:
        """``S`` / ``X`` / ``R`` on the Queue tab: stop, kill or retry, asked first."""
        from rgt_tui.screens.tabs.queue import QueueTab

        def open_control(tab: DetailTab) -> None:
            if isinstance(tab, QueueTab):
                tab.open_control(action, self.host, self.queue_view, self.connections)

        self._on_tab("queue", open_control)

    def action_queue_control_elsewhere(self, action: str) -> None:
        """``S`` / ``X`` / ``R`` on another tab: the same dialog, asked first."""
        self.action_queue_control(action)

    def action_nothing_running(self, action: str) -> None:
        """``S`` / ``X`` with no cell running: the tab says there is nothing to do."""
        self.action_queue_control(action)

    def _on_tab(self, name: str, act: Callable[[DetailTab], object], tries: int = 50) -> None:
        """``act(tab)`` on tab ``name`` once it is mounted: a key pressed as the screen
        opens (its tabs mount a moment later, longer on a busy machine) is kept for the
        tab, never dropped."""
        tab = self.tabs.get(name)
        if tab is not None and tab.is_mounted:
            act(tab)
        elif tab is not None and tries > 0:
            self.app.call_after_refresh(self._on_tab, name, act, tries - 1)

    def action_host_key(self) -> None:
        self.post_message(HostKeyReviewRequested(self.host.name))

    def jobs_changed(self, state: HostJobs) -> None:
        """Hand this host's new pull/verify/teardown state to the tabs that show it."""
        if state.host != self.host.name:
            return
        self.jobs = state
        if self._drawable() and screen_on_top(self):  # else _catch_up hands it on
            for tab in self.tabs.values():
                tab.show_jobs(state)
