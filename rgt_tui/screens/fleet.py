"""FleetScreen: every host as a pane in a grid that fits the terminal.

The App hands it each update (``host_updated``); it forwards the update to the host's
pane, which draws only if it can be seen. The selection (shown as focus): arrows or vim's
hjkl move it grid-aware, ``/`` filters by name, Enter or a click opens the host.

Over 450 lines on purpose: one screen — its bindings and the actions they call, beside
the grid selection and scroll, the header's tally, the panes coming and going (a fleet
file's edit) and the routing of samples and queue views to panes, which those actions
work on. Its panes, header and layout live in widgets/, the filter's input in
fleet_filter.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Static

from rgt_tui.content.queue_text import queue_pane_line
from rgt_tui.controllers.fleet_view import FleetView
from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.controllers.notices import NoticeLine
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import HostKeyError
from rgt_tui.domain.group_run import RankView
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.preemption import Checkpoint, Preemption
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.messages import OpenHostRequested, ReconnectRequested
from rgt_tui.screens.disk_usage import DISK_BINDING, DiskUsageRequested
from rgt_tui.screens.fleet_filter import FilterInput
from rgt_tui.screens.host_key import HOST_KEY_BINDING, HostKeyReviewRequested
from rgt_tui.screens.job_keys import JOB_BINDINGS, JobRequested
from rgt_tui.screens.queue_keys import DIALOG_ACTIONS, QUEUE_BINDINGS, QueueActionRequested
from rgt_tui.screens.shell_keys import SHELL_BINDING, request_shell
from rgt_tui.screens.type_ahead import expect_typing, typed_into, typing_ahead
from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.widgets.fleet_header import (
    FleetHeader,
    FleetSummary,
    FleetTally,
    default_fleet_hint,
)
from rgt_tui.widgets.host_pane import HostPane, screen_on_top
from rgt_tui.widgets.key_footer import KeyFooter
from rgt_tui.widgets.pane_grid import PaneGrid, neighbour

BATCH_FROM = 16  # more hosts than this: panes draw on the screen's tick (HostPane.batched)


class FleetScreen(FleetView, Screen[None]):
    """The grid of host panes: the app's home screen."""

    BINDINGS = [
        Binding(
            "left,h",
            "move('left')",
            "Left",
            show=False,
            tooltip="Select the pane to the left (same row)",
        ),
        Binding(
            "right,l",
            "move('right')",
            "Right",
            show=False,
            tooltip="Select the pane to the right (same row)",
        ),
        Binding("up,k", "move('up')", "Up", show=False, tooltip="Select the pane a row up"),
        Binding("down,j", "move('down')", "Down", show=False, tooltip="Select the pane a row down"),
        Binding("enter", "open", "Open", tooltip="Open the selected host's detail screen"),
        Binding("r", "reconnect", "Reconnect", tooltip="Reconnect the selected host now"),
        Binding("slash", "filter", "Filter", key_display="/", tooltip="Filter hosts by name"),
        # The header counts alerts without naming the boxes; at 80x24 one pane shows
        # (h513 #6). Not in the footer, full at 80 columns; the help screen lists it.
        Binding(
            "exclamation_mark",
            "next_alert",
            "Next alert",
            key_display="!",
            show=False,
            tooltip="Select the next pane with an alert (critical ones first)",
        ),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        SHELL_BINDING,
        *QUEUE_BINDINGS,
        *JOB_BINDINGS,
        # The selected host's disk audit, as in its detail: `u` here did nothing, and a
        # path typed next started the name filter (hour s20c #13). Not in the footer,
        # which is full at 80 columns; the help screen lists it.
        replace(DISK_BINDING, show=False),
        HOST_KEY_BINDING,
    ]

    # Textual's Screen repaints itself whole whenever focus moves: with a screen of panes
    # that is every pane's every row, composited again, on each arrow key (the slowest
    # keys of scripts/bench_tui.py). The two panes whose focus style changes repaint
    # themselves; nothing else on this screen looks at where focus is.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    def __init__(
        self,
        fleet: Fleet,
        *,
        thresholds: Thresholds | None = None,
        clock: Callable[[], float] = time.time,
        stopped: Callable[[], set[str]] = set,
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.clock = clock
        self.thresholds = thresholds
        # Hosts whose telemetry is stopped (the App's; torn-down boxes).
        self._stopped = stopped
        self.panes: dict[str, HostPane] = {
            h.name: HostPane(h, thresholds=thresholds, clock=clock) for h in fleet.hosts
        }
        self.latest: dict[str, HostUpdate] = {}
        self._groups_of: tuple[Fleet, int] | None = None  # the fleet and pane count read
        self._groups: list[HostPane] = []  # the panes of [[groups]] entries
        # Each group's ranks' own views at its last queue poll (issue 41), by group.
        self.rank_views: dict[str, tuple[RankView, ...]] = {}
        self._selected: HostPane | None = None
        self._header = FleetHeader()
        self._filter = FilterInput(
            placeholder="filter hosts by name (Enter keeps, Escape clears)",
            id="filter",
            select_on_focus=False,  # the keys typed after / are in it by then (hour s22c #2)
            matches=self._shows_a_host,
        )
        self._grid = PaneGrid(id="grid")
        boxes = sum(1 for h in fleet.hosts if h.group is None)
        self._summary = FleetSummary(hosts=boxes, shown=boxes, groups=len(fleet.hosts) - boxes)
        # The header's figures, per host: a sample updates its host's share only. What
        # changes seldom (the filter, teardowns, stopped telemetry) is counted afresh.
        self._tally = FleetTally()
        self._tallied_stopped: frozenset[str] | None = None  # None: nothing counted yet
        self._shown = boxes
        self._cost_per_hour = 0.0
        self._unpriced = 0
        self._alert_walk: HostPane | None = None  # the pane ! chose last (action_next_alert)
        self._spent = 0.0  # the fleet's spend, summed once a second (``_refresh_summary``)
        self.notices = NoticeLine()  # shown in the header, above the grid (never over it)
        self.problem = ""  # the fleet file's mistake, shown above the notices until fixed
        self._select_when_added: set[str] = set()  # added by +, its pane not yet here

    def fleet_file_named(self) -> None:
        """The stand-in fleet gave way to a file's (its first box added): its banner goes."""
        if self._header.hint == default_fleet_hint(self.fleet.path):
            self._header.hint = ""

    def compose(self) -> ComposeResult:
        if self.fleet.is_default:
            self._header.hint = default_fleet_hint(self.fleet.path)
        elif self.app.sub_title:  # what the fleet is, when the app was told (the demo)
            self._header.hint = self.app.sub_title
        self._header.summary = self._summary
        yield self._header
        yield self._filter
        # A filter that matches no host left a blank grid (hour s19b #13): said instead.
        self._no_match = Static(id="no-match")
        self._no_match.display = False
        yield self._no_match
        with self._grid:
            yield from self.panes.values()
        yield KeyFooter()

    def _batch_draws(self) -> None:
        # A few panes draw each sample at once (the cost is small, the news immediate);
        # a big fleet's panes draw on the tick: one screen update a second, not one a
        # sample (scripts/bench_tui.py: about a quarter less CPU at 100 hosts).
        batched = len(self.panes) > BATCH_FROM
        for pane in self.panes.values():
            pane.batched = batched

    def on_mount(self) -> None:
        self._batch_draws()
        self._filter.display = False
        if self.panes:
            self.select(next(iter(self.panes)))
        # Countdowns and cost move with the clock even when no sample arrives.
        self.set_interval(1.0, self._tick)

    # -- data --------------------------------------------------------------------------

    def host_updated(self, update: HostUpdate, history: HostHistory | None) -> None:
        """Route one update to its pane (which draws only when visible)."""
        pane = self.panes.get(update.host)
        if pane is None:
            return
        self.latest[update.host] = update
        pane.show(update, history)
        self._show_members(update.host)
        if self._stopped_hosts() != self._tallied_stopped:
            self._refresh_summary()
            return
        self._tally.count(update.host, None if pane.host.group is not None else update)
        if self._tally.meter(update.host, pane.meter()):
            self._spent = self._tally.spent(self.clock())
        self._publish_summary()

    def _group_panes(self) -> list[HostPane]:
        """The panes of [[groups]] entries, read again only when the fleet changed (asked
        on every sample)."""
        seen = self._groups_of  # by identity: a Fleet's == compares every host
        if seen is None or seen[0] is not self.fleet or seen[1] != len(self.panes):
            self._groups_of = (self.fleet, len(self.panes))
            self._groups = [p for p in self.panes.values() if p.host.group is not None]
        return self._groups

    def _show_members(self, host: str) -> None:
        """Each group pane (issue 41) with ``host`` among its boxes (or ``host`` itself)
        shows every box's latest sample, one line each, side by side."""
        from rgt_tui.content.host_text import member_line, rank_line

        for pane in self._group_panes():
            group = pane.host.group
            if group is not None and (host == pane.host.name or host in group.hosts):
                # Under each box, its rank's last line (from the group's last queue poll).
                ranks = {r.rank: rank_line(r) for r in self.rank_views.get(pane.host.name, ())}
                lines = []
                for k, b in enumerate(group.hosts):
                    lines.append(member_line(k, b, self.latest.get(b)))
                    if k in ranks:
                        lines.append(ranks[k])
                pane.show_members(tuple(lines))

    def show_notice(self, title: str, text: str) -> None:
        """Show ``title: text`` on the header's notice line for a while (the danger
        clocks at a first connection): one line above the grid, hiding no pane."""
        self.notices.add(title, text)
        self._expire_notices()
        self.set_timer(self.notices.seconds + 0.1, self._expire_notices)

    def show_problem(self, text: str) -> None:
        """Show ``text`` (the fleet file's mistake; '' once fixed) on the notice line
        until it changes: one line, not a toast per reading."""
        self.problem = self._header.problem = text

    def _expire_notices(self) -> None:
        self._header.notice = self.notices.text()

    def _stopped_hosts(self) -> set[str]:
        # A stopped host's last sample (a torn-down box) says nothing about now: not up,
        # down or alerting.
        return self._stopped()

    def add_host(self, fleet: Fleet, host: HostConfig) -> None:
        """A host added while the app runs (``+``, or an edit of the fleet file): its pane
        joins the grid; selected only when ``+`` added it (``select_added``): an edit
        saved in another window must not move the selection under the user's keys."""
        self.fleet = fleet
        pane = HostPane(host, thresholds=self.thresholds, clock=self.clock)
        # In its place in the file, on screen and for the keys that move the selection
        # (hour s22c #7: a block put back went to the grid's end for the rest of the run).
        order = [h.name for h in fleet.hosts]
        after = order[order.index(host.name) + 1 :] if host.name in order else []
        following = next((self.panes[name] for name in after if name in self.panes), None)
        self.panes[host.name] = pane
        rank = {name: k for k, name in enumerate(order)}
        self.panes = dict(sorted(self.panes.items(), key=lambda kv: rank.get(kv[0], len(rank))))
        self._grid.mount(pane, before=following)
        # The filter holds for it too (hour s24b #1: a renamed pane showed under "1 of 4
        # hosts match /box3" though its name does not hold box3).
        needle = self._filter.value.strip().lower()
        pane.display = needle in host.name.lower()
        if needle:  # "no host name contains …" goes once it matches (review s24 #9)
            self.call_after_refresh(self.apply_filter, self._filter.value)
        self._batch_draws()
        self._refresh_summary()
        if host.name in self._select_when_added:
            self._select_when_added.discard(host.name)
            self.call_after_refresh(self.select, host.name)

    def select_added(self, host: str) -> None:
        """``+`` added ``host``: select its pane, now or once it joins the grid."""
        if host in self.panes:
            self.call_after_refresh(self.select, host)
        else:
            self._select_when_added.add(host)

    def remove_host(self, fleet: Fleet, host: str) -> None:
        """A host gone from the fleet file: its pane leaves the grid."""
        self.fleet = fleet
        shown = [p for p in self.panes.values() if p.display]  # in the grid's order
        pane = self.panes.pop(host, None)
        self.latest.pop(host, None)
        if pane is None:
            return
        if self._selected is pane or self.focused is pane:
            # The selection moves to a pane still shown: left to Textual, the focus went
            # to the next focusable widget, the filter box, and the next command keys
            # became filter text (hour s24b #1). Its neighbour, not the first pane: at
            # the grid's foot, box1 at its top scrolled the view away (h571 #4).
            at = shown.index(pane) if pane in shown else 0
            rest = [p for p in shown if p is not pane]
            near = rest[min(at, len(rest) - 1)] if rest else None
            self._selected = near  # at once: keys typed meanwhile act on it
            if near is None:
                self.set_focus(None)
            elif self.focused is not self._filter:  # typing in the filter: it stays there
                # The focus moved now, not by select's deferred focus(): still on the pane
                # as it goes, Textual moves it to the widget before, and the selection
                # followed it there.
                self.set_focus(near)
                self.select(near.host.name)
        pane.remove()
        self._batch_draws()
        self._refresh_summary()
        self.call_after_refresh(self._grid.refit)
        if self._filter.value:
            # "no host name contains …" when the last match left (hour s24c #11).
            self.call_after_refresh(self.apply_filter, self._filter.value)

    def replace_host(self, fleet: Fleet, host: HostConfig, thresholds: Thresholds) -> None:
        """A host's settings changed in the fleet file (or the fleet's thresholds): its
        pane draws with them from the next sample."""
        self.fleet, self.thresholds = fleet, thresholds
        pane = self.panes.get(host.name)
        if pane is not None:
            pane.host, pane.thresholds = host, thresholds
            pane.stale = True

    def _refresh_summary(self) -> None:
        """Count every host afresh: after a filter or a teardown, and once a second."""
        stopped = self._stopped_hosts()
        tally = FleetTally()
        for name, pane in self.panes.items():
            update = self.latest.get(name)
            # A group's sample is rank 0's, counted as that box: not a second time (its
            # alerts made "4 warnings" of 3 boxes' in a user's hour), as it bills nothing.
            counted = name not in stopped and pane.host.group is None
            tally.count(name, update if counted else None)
            tally.meter(name, pane.meter())
        self._tally = tally
        self._spent = tally.spent(self.clock())
        self._tallied_stopped = frozenset(stopped)
        self._shown = sum(1 for p in self.panes.values() if p.display and p.host.group is None)
        # What bills now: not a torn-down box, nor one watch's autostop stopped (the
        # header counted its rate on while its pane and /metrics said 0: hour s18a #6).
        self._cost_per_hour = sum(
            p.host.cost_per_hour or 0.0 for p in self.panes.values() if p.bills_now()
        )
        # Boxes with no rate: the $/h leaves them out, and says how many (h515 #1).
        self._unpriced = sum(
            1 for p in self.panes.values() if p.bills_now() and p.host.alert_rate is None
        )
        self._publish_summary()

    def _publish_summary(self) -> None:
        # Called on every sample (500 hosts: 500 a second): no pass over the panes here.
        connected, down, critical, warnings = self._tally.totals
        groups = len(self._group_panes())
        summary = FleetSummary(
            hosts=len(self.panes) - groups,
            shown=self._shown,
            groups=groups,
            connected=connected,
            down=down,
            critical=critical,
            warnings=warnings,
            cost_per_hour=self._cost_per_hour,
            unpriced=self._unpriced,
            cost_so_far=round(self._spent, 2),
            filter=self._filter.value,
        )
        if summary != self._summary:
            self._summary = summary
            self._header.summary = summary

    def _tick(self) -> None:
        if not screen_on_top(self):
            return
        for pane in self.panes.values():
            if pane.stale:
                pane.draw_if_stale()  # a big fleet's samples since the last tick, at once
            else:
                pane.tick()
        self._refresh_summary()  # the fleet's cost so far moves with the clock

    def on_screen_resume(self) -> None:
        # Panes skipped drawing while the detail screen or a dialog covered this one.
        self.call_after_refresh(self._draw_stale)

    @on(PaneGrid.Scrolled)
    def _scrolled(self) -> None:
        # Pane regions are known only after the next refresh lays the grid out again.
        self.call_after_refresh(self._draw_stale)

    def _draw_stale(self) -> None:
        for pane in self.panes.values():
            pane.draw_if_stale()

    # -- selection ---------------------------------------------------------------------

    @property
    def visible_panes(self) -> list[HostPane]:
        """The panes the filter leaves, in grid order."""
        return [p for p in self.panes.values() if p.display]

    @property
    def selected(self) -> HostPane | None:
        """The selected pane (None when the filter hides every pane)."""
        if self._selected is not None and self._selected.display:
            return self._selected
        panes = self.visible_panes
        return panes[0] if panes else None

    def on_descendant_focus(self) -> None:
        # A click focuses a pane directly: that is a selection too.
        if isinstance(self.focused, HostPane):
            self._selected = self.focused

    def select(self, host: str) -> None:
        """Move the selection to ``host`` (and scroll it into view).

        The selection is recorded at once: focus itself moves a moment later, and a
        burst of keys (held arrow, typed-ahead Enter) must act on where it is going.
        """
        pane = self.panes[host]
        self._selected = pane
        pane.focus()
        pane.scroll_visible(animate=False)
        # Again once the layout is current: panes that just took their first rows grow,
        # and a scroll measured on the old heights can leave the selection out of view
        # (seen on a loaded CI machine: the grid stopped six panes short).
        self.call_after_refresh(self._scroll_selected_visible, pane)

    def on_resize(self) -> None:
        # A smaller terminal reflows the grid: the selection (what p, t and L act on)
        # must stay in view (a user's hour: box3 selected, off screen at 80x24).
        if self._selected is not None:
            self.call_after_refresh(self._scroll_selected_visible, self._selected)

    def _scroll_selected_visible(self, pane: HostPane, tries: int = 5) -> None:
        """Scroll the selection into view, and look again after each of the next
        ``tries`` refreshes: panes taking their first rows, or a reflow, can move it after
        the scroll was measured (a loaded CI machine: the grid stopped six panes short,
        and the selection stayed out of view at 80x24)."""
        if self._selected is not pane or not pane.display:
            return
        if not _in_view(pane):
            pane.scroll_visible(animate=False)
        if tries:
            self.call_after_refresh(self._scroll_selected_visible, pane, tries - 1)

    def action_move(self, direction: str) -> None:
        panes = self.visible_panes
        if not panes:
            return
        current = self.selected
        index = panes.index(current) if current in panes else 0
        target = panes[neighbour(index, len(panes), self._grid.columns, direction)]
        self.select(target.host.name)

    def action_next_alert(self) -> None:
        """Select the next shown pane with an open alert: the panes with a critical one
        in grid order, then those with a warning, round again; said when none has one."""

        def rank(pane: HostPane) -> int:
            alerts = pane.update.alerts if pane.update is not None else ()
            severities = {a.severity for a in alerts}
            return 0 if "critical" in severities else 1 if "warning" in severities else 2

        ranked = [(rank(p), i, p) for i, p in enumerate(self.visible_panes)]
        ring = [p for r, _, p in sorted(ranked, key=lambda t: t[:2]) if r < 2]
        if not ring:
            hidden = sum(1 for p in self.panes.values() if not p.display and rank(p) < 2)
            self.notify(
                f"No pane shown has an alert; the filter hides {hidden} that do (Esc clears it)"
                if hidden
                else "No pane shows an alert",
                timeout=3,
            )
            return
        # A walk of the ring goes on from the pane the last ! chose; from any other
        # selection it starts at the first critical one (h515 #6: from a warning's pane,
        # chosen by hand, ! went on to the next warning).
        current = self.selected
        walking = current is not None and current is self._alert_walk and current in ring
        target = ring[(ring.index(current) + 1) % len(ring)] if walking else ring[0]
        self._alert_walk = target
        self.select(target.host.name)

    def _for_selected(self, message: Callable[[str], Message]) -> None:
        """Post ``message(host)`` for the selected pane's host (none selected: said)."""
        pane = self.selected
        if pane is None:
            self.notify("No host selected", severity="warning")
            return
        self.post_message(message(pane.host.name))

    def action_reconnect(self) -> None:
        self._for_selected(ReconnectRequested)

    def action_queue(self, action: str) -> None:
        if self.selected is not None and action in DIALOG_ACTIONS:
            # Its dialog comes after the App's round trip: keys typed with L, d or m in
            # one burst reached the grid meanwhile (Lp pulled behind the launch plan).
            expect_typing(self)
        self._for_selected(lambda host: QueueActionRequested(host, action))

    def action_shell(self) -> None:
        pane = self.selected
        if pane is None:
            self.notify("No host selected", severity="warning")
            return
        request_shell(self, pane.host.name)

    def action_disk_usage(self) -> None:
        if self.selected is not None:
            # Its dialog comes after the App's round trip: keys typed with u in one burst
            # (a paste of "plus") reached the grid meanwhile, and p pulled behind the
            # dialog (a keyboard audit). Kept for the dialog's box, as after t and /.
            expect_typing(self)
        self._for_selected(DiskUsageRequested)

    def queue_viewed(self, host: str, view: QueueView) -> None:
        """Show a polled queue view as the pane's summary line."""
        pane = self.panes.get(host)
        if pane is not None:
            pane.cell_running = any(c.status == "running" for c in view.cells)
            pane.show_queue(queue_pane_line(view, torn_down=pane.torn_down_at is not None))
            if pane.host.group is not None:
                runtime = getattr(self.app, "runtime", None)  # RgtApp's (none in a bare app)
                self.rank_views[host] = runtime.queues.ranks.get(host, ()) if runtime else ()
                for rank in self.rank_views[host]:
                    member = self.panes.get(rank.box)
                    if member is not None and rank.view is not None:
                        member.group_cell_running[host] = any(
                            c.status == "running" for c in rank.view.cells
                        )
                self._show_members(host)

    def action_host_job(self, job: str, tab: str) -> None:
        pane = self.selected
        if pane is None:
            self.notify("No host selected", severity="warning")
            return
        if tab == "teardown":
            expect_typing(self)  # the host's name may follow at once
        # To the App itself, not bubbled through this screen: a q typed right after
        # (``p q`` in one burst) must find the pull asked for (App.action_quit).
        self.app.post_message(JobRequested(pane.host.name, job, show_tab=tab))

    def jobs_changed(self, state: HostJobs) -> None:
        """A host's jobs moved on: a teardown greys its pane out and stops its cost."""
        pane = self.panes.get(state.host)
        if pane is not None:
            pane.show_periodic_failure(state.periodic_failure)  # one line, never a toast
        if pane is not None and pane.torn_down_at != state.shown_torn_down_at:
            pane.mark_torn_down(state.shown_torn_down_at)
            self._refresh_summary()
            runtime = getattr(self.app, "runtime", None)  # RgtApp's (none in a bare app)
            view = runtime.queues.views.get(state.host) if runtime else None
            if view is not None:  # its line, again: no launch offered now (no poll comes)
                self.queue_viewed(state.host, view)

    def host_preempted(self, host: str, preemption: Preemption | None) -> None:
        """An interruptible host named preempted (issue 40): its pane says so."""
        pane = self.panes.get(host)
        if pane is not None and pane.preemption != preemption:
            pane.show_preemption(preemption)

    def checkpoint_verified(self, host: str, cell: str, checkpoint: Checkpoint | None) -> None:
        """The running cell's newest verified checkpoint: its pane shows its age."""
        pane = self.panes.get(host)
        if pane is not None:
            pane.show_verified(cell, checkpoint)

    def host_key_refused(self, host: str, error: HostKeyError | None) -> None:
        """A host's key was refused (or it connected again): its pane offers K."""
        pane = self.panes.get(host)
        if pane is not None:
            pane.show_key_refusal(error)
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if typing_ahead(self) or getattr(self.app, "quit_pending", False):
            return False  # t was pressed (keys for the confirmation box), or q (its question)
        if action == "host_key":  # shown (and working) only on a refused host
            pane = self.selected
            return pane is not None and pane.key_refusal is not None
        # In the filter box / is text: the footer must not offer it.
        return not (action == "filter" and isinstance(self.focused, Input))

    def action_host_key(self) -> None:
        pane = self.selected
        if pane is not None:
            expect_typing(self)  # for its name box, as after L
            self.post_message(HostKeyReviewRequested(pane.host.name))

    def action_open(self) -> None:
        pane = self.selected
        if pane is not None:
            self.post_message(OpenHostRequested(pane.host.name))

    @on(HostPane.Opened)
    def _open(self, event: HostPane.Opened) -> None:
        event.stop()
        self.post_message(OpenHostRequested(event.host))

    # -- filter ------------------------------------------------------------------------

    @property
    def filter_input(self) -> FilterInput:
        """The name filter's input box."""
        return self._filter

    def action_filter(self) -> None:
        """Show the filter input and focus it. Keys typed right after ``/`` reach the
        screen before the box has the cursor: kept for it (the type-ahead ``t`` uses),
        never run as commands (hour s19b #15: ``/far`` ran f, a and r)."""
        box = self._filter
        # A new filter, as / starts a new search in less or vim: typed after the old
        # one's text, "box2box3" matched nothing (hour s24b #3).
        box.reopen()
        box.display = True
        box.can_focus = True
        expect_typing(self)
        box.focus()
        # After the focus moves (focus() is a call_later of the app): the kept keys go in,
        # and an Enter typed among them keeps the filter (hour s24b #2).
        self.app.call_later(typed_into, self, box, True)

    def action_clear_filter(self) -> None:
        box = self._filter
        if box.value or box.display:
            box.value = ""
            # Now, not on the box's Changed message: the finish below looks for panes
            # to select, and with none shown yet it left the grid with no focus while
            # Enter still opened the pane selected before (a user's hour, session 28).
            self.apply_filter("")
            self._finish_filter()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.apply_filter(event.value)

    @on(FilterInput.Done)
    def _finish_filter(self) -> None:
        box = self._filter
        # Done: no focus of its own until / again. Textual gives a screen coming back
        # from a dialog the first focusable widget: with every pane filtered out, that was
        # the box, and the next command key became filter text (hour s24c #3).
        box.can_focus = False
        if not box.value:
            box.display = False
        panes = self.visible_panes
        target = self.selected if self.selected in panes else (panes[0] if panes else None)
        if target is not None:
            self.select(target.host.name)
        else:
            self.set_focus(None)

    def _shows_a_host(self, text: str) -> bool:
        """Whether the filter ``text`` shows any host (no hosts at all: nothing to hide)."""
        needle = text.strip().lower()
        return not self.panes or any(needle in name.lower() for name in self.panes)

    def apply_filter(self, text: str) -> None:
        """Show only the hosts whose name contains ``text`` (case-insensitive)."""
        needle = text.strip().lower()
        for name, pane in self.panes.items():
            pane.display = needle in name.lower()
        none = bool(self.panes) and not any(p.display for p in self.panes.values())
        self._no_match.display = none
        if none:
            self._no_match.update(
                Content.assemble(
                    ("no host name contains ", "$warning"),
                    (repr(text.strip()), "bold $warning"),
                    (" — correct it, or Escape clears the filter", "$warning"),
                )
            )
        self._grid.refit()
        self._refresh_summary()
        self.call_after_refresh(self._draw_stale)


def _in_view(pane: Widget) -> bool:
    """Whether ``pane`` is wholly in its scrolling parent's view (one taller than the
    view: its top at the view's top)."""
    view = pane.parent
    if not isinstance(view, Widget):
        return True
    outer, inner = view.region, pane.region
    return outer.contains_region(inner) if inner.height <= outer.height else inner.y == outer.y
