"""HostPane: one host in the fleet grid, redrawn from each telemetry update.

The screen hands a pane every ``HostUpdate`` (attributes down); the pane draws it only
while it can be seen — not filtered out, scrolled into view, on a screen in view — and
otherwise just remembers that it is stale, so 64 streaming hosts cost what the few
visible ones cost. ``draw_if_stale`` catches up when it comes back into view. In a big
fleet (``batched``) a visible pane, too, waits for the screen's once-a-second tick: the
samples of 100 hosts arrive spread over the second, and drawing each at once made a
screen update of its own (~17 a second), where the tick makes one.

A pane is one widget rendering one block of text, not a tree of small widgets: with 64
hosts every extra widget per pane is 64 more to lay out whenever anything moves.

About 500 lines on purpose: the pane and the small drawing helpers at the top
(``pane_shape``, ``figure_lines``, ``key_line``) that only it draws with.

Past 450 lines on purpose: one widget rendering one block, as said above (its text is
content.host_text's).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual import events
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from rgt_tui.content.alert_list import alert_lines
from rgt_tui.content.box_text import shown
from rgt_tui.content.gauge import usage_line
from rgt_tui.content.gpu_row import util_line, vram_line
from rgt_tui.content.host_text import (
    at_risk_lines,
    billing_start,
    border_subtitle,
    cgroup_line,
    cgroup_memory,
    connection_lines,
    cost_parts,
    host_cost,
    periodic_failure_line,
    torn_down_line,
    unique_mounts,
)
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.cost import IdleMeter, Span
from rgt_tui.domain.errors import HostKeyError
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.preemption import Checkpoint, Preemption, suspected
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.units import fmt_bytes, fmt_count, fmt_duration
from rgt_tui.services.runtime.stopped import STOPPED
from rgt_tui.services.telemetry import HostUpdate
from rgt_tui.widgets.fleet_header import Meter
from rgt_tui.widgets.line_rows import LineRows
from rgt_tui.widgets.spark import spark_block, spark_line

MAX_ALERT_LINES = 4
# Lines are cut for 20 cells at least: a narrower pane wraps them (see _repaint).
MIN_DRAW_WIDTH = 20


def screen_in_view(screen: Screen[object]) -> bool:
    """Whether ``screen`` can be seen: on top, or under see-through ones (help, palette).

    ``Screen.is_current`` also says yes for the screen right below an opaque one.
    """
    stack = screen.app.screen_stack
    if screen not in stack:
        return False
    above = stack[stack.index(screen) + 1 :]
    return all(s.styles.background.a < 1 for s in above)


def screen_on_top(screen: Screen[object]) -> bool:
    """Whether ``screen`` is the top one: only there is a redraw of a sample sent. One
    redrawn under a see-through modal (help, a dialog) is written over the modal's own
    box too (Textual 8.2.8; a plain Static under a ModalScreen does it as well): a
    user's hour saw a pane's chart blocks inside the help. What comes meanwhile is drawn
    when the screen is on top again (its ScreenResume)."""
    return screen.is_attached and screen.app.screen is screen


def same_line(a: Content, b: Content) -> bool:
    """Whether two lines look the same: text and styles (``==`` compares text only)."""
    return a.plain == b.plain and a.spans == b.spans


def pane_shape(update: HostUpdate) -> tuple[object, ...]:
    """What decides a pane's height: lines of status, GPUs, mounts, alerts."""
    snap, conn = update.snapshot, update.connection
    gpus = len(snap.gpus) if snap else -1
    mounts = tuple(d.mount for d in snap.disks) if snap else ()
    return (
        conn.status,
        conn.error,
        conn.fix,
        gpus,
        mounts,
        min(len(update.alerts), MAX_ALERT_LINES),
    )


# A Slurm login node has no GPU by design: its cells' GPUs are sampled inside their
# allocations and shown on the cluster line (s35 Slurm hour #10 read "no GPU: no NVIDIA
# driver tools" there as a fault).
LOGIN_NODE_GPU = "on the login node: the cells' GPUs show on the cluster line, from their jobs"


def figure_lines(
    snap: HostSnapshot,
    oom_baseline: int | None,
    th: Thresholds,
    width: int,
    *,
    login_node: bool = False,
) -> list[Content]:
    """GPUs (or why there are none), every watched mount's bytes AND inodes, the cgroup."""
    lines: list[Content] = []
    if snap.gpus:
        for gpu in snap.gpus:
            lines += [util_line(gpu, th).truncate(width, ellipsis=True), vram_line(gpu, width)]
    elif login_node:
        lines.append(Content.assemble(("no GPU ", "bold"), (LOGIN_NODE_GPU, "$foreground-muted")))
    else:
        why = snap.gpu_unavailable_reason or "none found"
        lines.append(Content.assemble(("no GPU: ", "bold"), (shown(why), "$foreground-muted")))
    for d in unique_mounts(snap.disks):
        lines.append(
            Content.styled(shown(d.mount), "bold $foreground-muted").truncate(width, ellipsis=True)
        )
        lines.append(
            usage_line("bytes", d.bytes_fraction, f"{fmt_bytes(d.bytes_used)}/{fmt_bytes(d.bytes_total)}",
                       width, crit_at=th.disk_pct / 100)
        )  # fmt: skip
        if d.inodes_total:
            inodes = f"{fmt_count(d.inodes_used)}/{fmt_count(d.inodes_total)}"
            lines.append(
                usage_line("inodes", d.inodes_fraction, inodes, width, crit_at=th.inode_pct / 100)
            )
        else:
            lines.append(usage_line("inodes", None, "no inode limit", width))
    fraction, figure = cgroup_memory(snap.cgroup)
    lines.append(usage_line("cg mem", fraction, figure, width, crit_at=th.cgroup_mem_pct / 100))
    lines.append(cgroup_line(snap.cgroup, oom_baseline).truncate(width, ellipsis=True))
    return lines


def key_line(error: HostKeyError) -> Content:
    """The line under a refused host key: what K does for this kind of refusal."""
    if error.kind == "unknown" and error.jump_host:
        # A hop's key: its own fingerprint, never the box provider's (as the dialog says).
        return Content.assemble(
            ("K ", "bold $accent"),
            "trust the jump host's key? compare ",
            (error.presented, "bold"),
            (f" with {error.jump_host}'s own fingerprint first", "$foreground-muted"),
        )
    if error.kind == "unknown":
        return Content.assemble(
            ("K ", "bold $accent"),
            "trust this key? compare ",
            (error.presented, "bold"),
            (" with your provider's first", "$foreground-muted"),
        )
    return Content.assemble(
        ("K ", "bold $accent"), f"host key {error.kind}: old and new fingerprints, the fix"
    )


class HostPane(Widget, can_focus=True):
    """A host's live summary; focus shows the fleet's selection, a click opens it."""

    DEFAULT_CSS = """
    HostPane { height: auto; }
    """

    class Opened(Message):
        """The user asked for this host's detail screen."""

        def __init__(self, host: str) -> None:
            super().__init__()
            self.host = host

    def __init__(
        self,
        host: HostConfig,
        *,
        thresholds: Thresholds | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(classes="host-pane")
        self.host = host
        self.thresholds = thresholds or Thresholds()
        self.clock = clock
        self.update: HostUpdate | None = None
        self.torn_down_at: float | None = None  # from the journal: greys out, cost stops
        self.history: HostHistory | None = None
        self.stale = False
        self.reshaped = False  # stale with a new shape: drawn at the tick, even out of view
        self.draws = 0  # how many times it was drawn: tests and the benchmark read it
        self._shape: tuple[object, ...] | None = None
        # The pane's text as one block, joined when Textual asks (render): a pane out of
        # view is measured by its rows (get_content_height), never joined.
        self._content: Content | None = Content.styled("◌ connecting…", "$foreground-muted")
        self._figures: list[Content] = []
        # Rows of the lines around the figures (status, queue, a failing pull) when the
        # height was last set: one more of them needs a new height, not a repaint.
        self._around_rows = 0
        self._lines: list[Content] = []  # as drawn: status, figures, queue line
        self._heights: list[int] = []  # the rows each line takes
        self._drawn_width = 0  # the width they were drawn for
        self._unpainted = False  # drawn out of view: Textual has not been told (_repaint)
        # Each line's rows as Textual draws them: a sample renders only what it changed.
        self._rows = LineRows(same_line)
        # The rows the pane needs (borders included) with a one-row history: the grid
        # reads it to decide whether rows of panes fill the screen.
        self.natural_height = 0
        self.filling = False  # the grid's rows share its height: spare rows go to history
        # Drawn on the screen's once-a-second tick, not at each sample (a big fleet).
        self.batched = False
        self.member_lines: tuple[Content, ...] = ()  # a group's boxes, one line each
        self.queue_line: Content | None = None  # "queue k/N done · …" once a view is known
        self.pull_failure: tuple[float, str] | None = None  # a failing periodic pull
        self.key_refusal: HostKeyError | None = None  # the monitor's refused host key
        self.preemption: Preemption | None = None  # the runtime's named one (issue 40)
        self.verified: tuple[str, Checkpoint | None] | None = None  # (cell, its newest)
        self._key_line: Content | None = None  # what K does about it
        # Idle paid minutes: every GPU under 5 % and no cell running, while billed.
        self.idle = IdleMeter()
        self.cell_running = False  # from the queue poller; False until a view says otherwise
        # A group's cell runs on this box (its rank's view, from the group's poll): busy,
        # not idle, whether or not the box's own queue is polled (h501 #11: a rank's
        # footer read "idle 2m32s" while it ran the group's cell).
        self.group_cell_running: dict[str, bool] = {}  # by group (a box may be in two)
        self.border_title = host.name
        self.border_subtitle = host.profile

    # -- what the screen calls ---------------------------------------------------------

    def show(self, update: HostUpdate, history: HostHistory | None = None) -> bool:
        """Take a new update; draw it now if visible. True when it was drawn."""
        self.update = update
        self.history = history
        snap = update.snapshot
        if self.host.cost_per_hour and snap is not None and snap.t != self.idle.last_t:
            utils = tuple(g.util_pct if g.util_pct is not None else 100.0 for g in snap.gpus)
            running = self.cell_running or any(self.group_cell_running.values())
            self.idle = self.idle.observe(snap.t, utils, running)
        self.set_class(update.connection.status != "connected", "-down")
        self.set_class(any(a.severity == "critical" for a in update.alerts), "-critical")
        # A change of shape (first sample, a GPU or mount gone, more alerts) changes the
        # pane's height, so it is drawn even out of view: otherwise the grid's layout,
        # and with it what is in view, would shift once it is finally drawn. In a big
        # fleet an out-of-view one waits for the screen's tick: each repaint of a widget
        # out of view has Textual lay out every pane again at the next region look-up
        # (500 hosts with flapping alerts: ~10 times a second, a quarter of the app's
        # CPU), and the tick makes that once a second.
        reshaped = pane_shape(update) != self._shape
        # (can_draw walks up to the screen: a batched pane's sample asks only if reshaped)
        if (reshaped and self.can_draw()) if self.batched else (reshaped or self.can_draw()):
            self.draw()
            return True
        self.stale = True  # drawn on the screen's next tick, or when it comes into view
        self.reshaped = self.reshaped or reshaped
        return False

    def show_queue(self, line: Content | None) -> None:
        """Take the queue summary line (None: no queue on the box); redraw if visible."""
        if line == self.queue_line:
            return
        self.queue_line = line
        if self.update is not None and self.can_draw():
            self._compose_content(self.update, recompute_figures=False)
        else:
            self.stale = True

    def show_members(self, lines: tuple[Content, ...]) -> None:
        """Take a group's per-box lines (issue 41: its boxes side by side); redraw if
        visible. Any other host has none."""
        if len(lines) == len(self.member_lines) and all(
            same_line(a, b) for a, b in zip(lines, self.member_lines, strict=True)
        ):
            return
        self.member_lines = lines
        if self.update is not None and self.can_draw():
            self._compose_content(self.update, recompute_figures=False)
        else:
            self.stale = True

    def show_periodic_failure(self, failure: tuple[float, str] | None) -> None:
        """Take the host's failing periodic pull ((when, why); None: it does not fail):
        one line under the queue's, in place of a toast over the grid."""
        if failure == self.pull_failure:
            return
        self.pull_failure = failure
        if self.update is not None and self.can_draw():
            self._compose_content(self.update, recompute_figures=False)
        else:
            self.stale = True

    def show_key_refusal(self, error: HostKeyError | None) -> None:
        """Take the host's refused key (None: it connected): the pane says what K does."""
        self.key_refusal = error
        self._key_line = key_line(error) if error is not None else None
        if self.update is not None and self.can_draw():
            self._compose_content(self.update, recompute_figures=False)
        else:
            self.stale = True

    def draw_if_stale(self) -> None:
        """Catch up after coming back into view, and a new shape even out of view."""
        if self.stale and (self.reshaped or self.can_draw()):
            self.draw()

    def tick(self) -> None:
        """Redraw what depends on the clock alone (countdowns, cost) when visible."""
        if self.update is not None and self.can_draw():
            self._compose_content(self.update, recompute_figures=False)

    def can_draw(self) -> bool:
        """Whether a redraw would be seen: displayed, on the top screen, in view."""
        # Not attached: composing, or being removed (the app closing prunes the grid
        # while the screen's timer still ticks); self.screen would raise then.
        if not (self.is_mounted and self.is_attached) or not self.display:
            return False
        if not screen_on_top(self.screen):
            return False
        # Panes the last screen update left out (scrolled away) are turned down at once,
        # without the widget's region, whose look-up can lay out every pane.
        return self.screen.can_view_partial(self)

    def fill(self, filling: bool) -> None:
        """The grid says whether its rows share the height (this pane may have rows to
        spare) or are as tall as their panes (it has none)."""
        if filling == self.filling:
            return
        self.filling = filling
        if self.update is not None:
            if self.can_draw():
                self.draw()
            else:
                self.stale = True

    def on_resize(self, event: events.Resize) -> None:
        # Bars are drawn to the width: a new width needs a new drawing.
        if self.update is not None:
            if self.can_draw():
                self.draw()
            else:
                self.stale = True

    # -- drawing -----------------------------------------------------------------------

    def draw(self) -> None:
        """Render the latest update into the pane."""
        if self.update is None:
            return
        self.stale = self.reshaped = False
        self.draws += 1
        self._shape = pane_shape(self.update)
        self._compose_content(self.update, recompute_figures=True)

    def _queue_rows(self, width: int) -> list[Content]:
        """The queue line cut to the width (a summary), then the failed cell's reason whole:
        it wraps, since a cut reason ("ModuleNotFound…") would not say why."""
        if self.queue_line is None:
            return []
        summary, *reasons = self.queue_line.split("\n")
        if not self.answering:  # no new read comes: "running" is not live
            summary = Content.assemble(("last read: ", "bold $warning"), summary)
        return [summary.truncate(width, ellipsis=True), *reasons]

    def _extra_rows(self, width: int) -> list[Content]:
        """The queue's rows, then a failing periodic pull's line cut to the width."""
        failure = self.pull_failure
        pull = [] if failure is None else [periodic_failure_line(*failure, width=width)]
        members = [line.truncate(width, ellipsis=True) for line in self.member_lines]
        return [*members, *self._queue_rows(width), *pull, *self._at_risk()]

    def _at_risk(self) -> list[Content]:
        """Work at risk of the running cell (issue 40): checkpoint ages, the cadence."""
        snap = self.update.snapshot if self.update is not None else None
        cell = snap.cell if snap is not None else None
        mine = self.verified is not None and self.verified[0] == cell
        verified = self.verified[1] if mine and self.verified else None
        return at_risk_lines(self.host, snap, verified, answering=self.answering)

    @property
    def answering(self) -> bool:
        """Whether the box answers now (no update yet counts as answering): what the
        pane shows of its queue is otherwise the last read, not live."""
        return self.update is None or self.update.connection.status == "connected"

    def show_verified(self, cell: str, checkpoint: Checkpoint | None) -> None:
        """Take ``cell``'s newest pulled-and-verified checkpoint (issue 40)."""
        if self.verified != (cell, checkpoint):
            self.verified = (cell, checkpoint)
            self.stale = True
            self.draw_if_stale()

    def _compose_content(self, update: HostUpdate, *, recompute_figures: bool) -> None:
        now = self.clock()
        width = max(MIN_DRAW_WIDTH, self.content_size.width or 40)
        snap = update.snapshot
        status = self._status_lines(update, now)
        extra = self._extra_rows(width)
        if self._key_line is not None and update.connection.status != "connected":
            status = [*status, self._key_line]
        around = sum(self._heights_of([*status, *extra], width))
        # A line that comes or goes without a new sample (a periodic pull failing, a key
        # refused) would otherwise be cut off by the old height until the next sample
        # re-laid the pane (h561 #2: the failing pull's line hidden for 30 s).
        if recompute_figures or around != self._around_rows:
            self._around_rows = around
            figures: list[Content] = []
            # A torn-down box's last sample is not drawn: greyed out, its "util 100%
            # 632W" still read as a box at work (a user's hour). The detail screen
            # keeps its history.
            if snap is not None and self.torn_down_at is None:
                figures = figure_lines(
                    snap, update.health.oom_baseline, self.thresholds, width,
                    login_node=self.host.is_login_node,
                )  # fmt: skip
            # A torn-down box's last alerts ask nothing now; a box never sampled has no
            # known alerts ("✓ no alerts" under "never connected" read as healthy).
            if self.torn_down_at is None and (snap is not None or update.alerts):
                figures += alert_lines(update.alerts, MAX_ALERT_LINES, width)
            history = self.history if snap is not None and self.torn_down_at is None else None
            if history is not None:
                figures.append(spark_line(history, width))
            rows = sum(self._heights_of([*status, *figures, *extra], width))
            self._set_natural_height(rows + 2)  # + the border
            spare = max(0, self.content_size.height - rows) if self.filling else 0
            if history is not None and spare:
                figures[-1:] = spark_block(history, width, 1 + spare)
            self._figures = figures
        self._set_subtitle(now)
        self._repaint([*status, *self._figures, *extra], width)

    def _status_lines(self, update: HostUpdate, now: float) -> list[Content]:
        """The connection's line(s); a torn-down host's one line says when and its cost."""
        if self.torn_down_at is not None:
            return [
                torn_down_line(
                    self.host, self.torn_down_at, now, self._first_seen(), update.unbilled
                )
            ]
        return connection_lines(
            update.connection,
            update.snapshot,
            now,
            self._preempted(update),
            first_seen=update.first_seen,
            last_seen=update.last_seen,
        )

    def show_preemption(self, preemption: Preemption | None) -> None:
        """Take the runtime's named preemption of this host (issue 40; None: none)."""
        self.preemption = preemption
        if self.update is not None and self.can_draw():
            self._compose_content(self.update, recompute_figures=False)
        else:
            self.stale = True

    def _preempted(self, update: HostUpdate) -> Preemption | None:
        """A named preemption, else "preempted?" for an interruptible box not answering."""
        if self.preemption is not None:
            return self.preemption
        return suspected(
            self.host,
            update.connection.status,
            update.connection.since,
            ever_seen=update.last_seen is not None or update.first_seen is not None,
        )

    def _heights_of(self, lines: list[Content], width: int) -> list[int]:
        """Rows per line as Textual wraps it here (figures are cut to the width; the
        no-GPU reason and a connection error wrap)."""
        return [
            1 if line.cell_length <= width else line.get_height(self.styles, width)
            for line in lines
        ]

    def _set_natural_height(self, rows: int) -> None:
        if rows == self.natural_height:
            return
        self.natural_height = rows
        grid = self.parent
        refit = getattr(grid, "refit", None)
        if callable(refit) and self.is_attached:
            # The grid decides from every pane's needs whether rows fill the screen.
            self.call_after_refresh(refit)

    def _repaint(self, lines: list[Content], width: int) -> None:
        """Show ``lines``, repainting only the rows that changed when no line moved.

        A sample changes a few figures of a pane: repainting those rows, not the whole
        pane, spares Textual re-rendering and re-compositing the rest. A change of
        height needs a layout pass (every pane), so it is asked for only then.

        Out of view nothing is repainted, only a new height laid out: Textual takes a
        repaint of a widget it does not show as a new widget and lays out every pane
        again at the next region look-up (500 hosts: 8 % of the app's time at the
        tick). The pane stays stale and is repainted whole once it can be seen.
        """
        old = self._lines
        unpainted, self._unpainted = self._unpainted, False
        if not unpainted and len(lines) == len(old) and all(map(same_line, lines, old)):
            return
        heights = self._heights_of(lines, width)
        old_heights, old_width = self._heights, self._drawn_width
        self._lines, self._heights, self._drawn_width = lines, heights, width
        self._content = None
        self._rows.changed()
        layout = sum(heights) != sum(old_heights)
        if not self.can_draw():
            self._unpainted = self.stale = True
            if layout:
                self.clear_cached_dimensions()
                self.refresh(repaint=False, layout=True)
            return
        # (A pane narrower than 20 cells gets lines cut for 20: they wrap, all of it.)
        if unpainted or heights != old_heights or not width == old_width == self.content_size.width:
            self.refresh(layout=layout)
            return
        y = 0
        for line, before, height in zip(lines, old, heights, strict=True):
            if not same_line(line, before):
                self.refresh(Region(0, y, width, height))
            y += height

    def render(self) -> Content:
        if self._content is None:
            self._content = Content("\n").join(self._lines)
        return self._content

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        # The rows were counted when drawn, as Textual wraps them (_heights_of): the
        # layout need not join and wrap the text again to measure it. At a new width
        # (20 cells or more) too: the pane redraws for it (on_resize) with lines cut to
        # it, and asks for a layout if their count changed (_repaint). Wrapping the lines
        # cut for the old width would count more rows than the redraw has and leave them
        # blank, with no layout to take them back.
        if self._lines and width >= MIN_DRAW_WIDTH:
            return sum(self._heights)
        return super().get_content_height(container, viewport, width)

    def render_line(self, y: int) -> Strip:
        """Row ``y``: only the lines that changed are rendered again (``LineRows``)."""
        if self.text_selection is not None:  # a mouse selection: Textual draws it
            return super().render_line(y)
        return self._rows.row(self, self._lines or [self.render()], y)

    # -- cost and teardown -------------------------------------------------------------

    def _set_subtitle(self, now: float) -> None:
        *rate, spent = cost_parts(
            self.host,
            now,
            self._billing_end(),
            first_seen=self._first_seen(),
            unbilled=self._unbilled(),
        ) or [""]
        torn = "torn down" if self.torn_down_at is not None else ""
        idle: tuple[str, str] = ("", "")
        if spent and self.idle.idle_minutes >= 1 and self.torn_down_at is None:
            took = fmt_duration(self.idle.idle_s)
            idle = (f"idle paid {took}", f"idle {took}")
        # Dropped from the left when the border is too narrow: the profile, then the rate;
        # the spend and the idle time are shortened ($0.28 · idle 4m), not dropped.
        # (The corners and a cell of border each side; not laid out yet: all of it.)
        room = self.size.width - 4 if self.size.width else 1 << 16
        spend = (spent, spent.split(" ", 1)[0])  # "$0.28 since first seen": "$0.28"
        subtitle = border_subtitle([self.host.profile, *rate, torn, spend, idle], room)
        if subtitle != self.border_subtitle:
            if self.update is None or self.can_draw():
                self.border_subtitle = subtitle
            else:  # a reactive: set out of view it is a repaint (see _repaint); later
                self.stale = True

    def cost_so_far(self, now: float) -> float | None:
        """Money spent on this host so far (its cost stops at its teardown or stop)."""
        return host_cost(
            self.host,
            now,
            self._billing_end(),
            first_seen=self._first_seen(),
            unbilled=self._unbilled(),
        )

    def bills_now(self) -> bool:
        """Whether its meter runs now: neither torn down nor stopped by watch's autostop."""
        return self._billing_end() is None

    def _billing_end(self) -> float | None:
        """When its meter stopped: the teardown, or the stop watch's autostop ran (a
        stopped box bills no compute, as watch's metrics say); None: it runs."""
        if self.torn_down_at is not None:
            return self.torn_down_at
        conn = self.update.connection if self.update is not None else None
        return conn.since if conn is not None and conn.status == STOPPED else None

    def _unbilled(self) -> tuple[Span, ...]:
        """The spans the box billed nothing (stopped by watch's autostop, then started)."""
        return self.update.unbilled if self.update is not None else ()

    def _first_seen(self) -> float | None:
        """When rgt-tui first saw the box (no ``started_at``: its bill starts then)."""
        return self.update.first_seen if self.update is not None else None

    def meter(self) -> Meter | None:
        """(cost per hour, billing start, teardown) for the fleet's spend; None: unknown."""
        rate = self.host.cost_per_hour
        if rate is None:
            return None
        start = billing_start(self.host, self._first_seen())
        return None if start is None else (rate, start, self._billing_end(), self._unbilled())

    def mark_torn_down(self, at: float | None) -> None:
        """Record the host's teardown (greys the pane out and stops its cost)."""
        if at == self.torn_down_at:
            return
        self.torn_down_at = at
        self.set_class(at is not None, "-torn-down")
        self._set_subtitle(self.clock())
        if self.update is None and at is not None:  # no sample yet: the line alone
            self._content = torn_down_line(self.host, at, self.clock())
            self._lines = []
            self.refresh(layout=True)
        elif self.update is not None and self.can_draw():
            self.draw()  # at once: no "connected · up" left over
        else:
            self.stale = True

    # -- input -------------------------------------------------------------------------

    def on_click(self) -> None:
        self.post_message(self.Opened(self.host.name))
