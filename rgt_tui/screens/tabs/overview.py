"""Overview tab: the connection, the box's identity, its cgroup budget, and history plots."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Label, Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.host_text import (
    cgroup_line,
    cgroup_memory,
    connection_lines,
    cost_text,
    started_label,
    torn_down_line,
)
from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.domain.preemption import suspected
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.widgets.hanging import Hanging
from rgt_tui.widgets.spark import Spark
from rgt_tui.widgets.usage_bar import UsageBar


def identity_lines(
    view: HostView, snap: HostSnapshot | None, torn_down_at: float | None = None
) -> list[Content]:
    """Host name, boot, uptime, cost (stopped at a teardown); host-wide figures
    labelled as such (U41)."""
    muted = "$foreground-muted"
    lines = [Content.assemble(("profile ", muted), view.host.profile)]
    first_seen = view.update.first_seen if view.update is not None else None
    unbilled = view.update.unbilled if view.update is not None else ()
    cost = cost_text(view.host, view.now, torn_down_at, first_seen=first_seen, unbilled=unbilled)
    if cost:
        lines.append(
            Content.assemble(("cost ", muted), cost, (f"  {started_label(view.host)}", muted))
        )
    if snap is None:
        lines.append(Content.styled("no sample yet", muted))
        return lines
    lines.append(Content.assemble(("hostname ", muted), shown(snap.hostname or "?")))
    lines.append(
        Content.assemble(
            ("boot id ", muted),
            shown(snap.boot_id or "?"),
            ("  up ", muted),
            fmt_duration(snap.uptime_s),
        )  # fmt: skip
    )
    if snap.loadavg is not None or snap.host_mem_total:
        load = " ".join(f"{v:.2f}" for v in snap.loadavg) if snap.loadavg else "?"
        mem = f"{fmt_bytes(snap.host_mem_available)} free of {fmt_bytes(snap.host_mem_total)}"
        lines.append(
            Content.assemble(
                ("host-wide (the physical machine, not your container): ", muted),
                f"load {load} · {snap.host_cpus or '?'} CPUs · {mem}",
            )
        )
    if snap.cgroup and snap.cgroup.memory_pressure_avg10 is not None:
        lines.append(
            Content.assemble(
                ("memory pressure (avg10) ", muted), f"{snap.cgroup.memory_pressure_avg10:.1f}%"
            )
        )
    for problem in snap.problems:
        # The agent's own errors come as "agent: …"; the parser's words on its fields
        # ("sample.t: expected a number") get the same one prefix.
        said = problem if problem.startswith("agent: ") else f"agent: {problem}"
        lines.append(Content.styled(shown(said), "$warning"))
    return lines


class OverviewTab(DetailTab):
    """Connection and identity, the cgroup figures, and longer history plots."""

    TAB_ID = "overview"
    TITLE = "Overview"

    torn_down_at: float | None = None  # from the journal: the box is done
    _view: HostView | None = None  # as last drawn, for a teardown recorded meanwhile

    def show_jobs(self, state: HostJobs) -> None:
        """A teardown recorded (here or by the command line) shows at once."""
        if state.shown_torn_down_at != self.torn_down_at:
            self.torn_down_at = state.shown_torn_down_at
            if self._view is not None:
                self.show(self._view)

    def compose(self) -> ComposeResult:
        yield Static(classes="detail-conn")
        yield Hanging(classes="detail-identity")
        yield Label("cgroup (this container's own budget)", classes="section-title")
        yield UsageBar("memory", label_width=8, classes="detail-cgmem")
        yield Hanging(classes="detail-cgroup")
        yield Label("GPU util, mean of all GPUs", classes="section-title gpu-only")
        yield Spark(style="$primary", classes="plot plot-gpu gpu-only")
        yield Label("VRAM used, all GPUs", classes="section-title gpu-only")
        yield Spark(classes="plot plot-vram gpu-only")
        yield Label("memory used (cgroup, else host)", classes="section-title")
        yield Spark(classes="plot plot-mem")

    def show(self, view: HostView) -> None:
        self._view = view
        update, at = view.update, self.torn_down_at
        snap = update.snapshot if update else None
        first_seen = update.first_seen if update is not None else None
        if at is not None:  # done: when, and what it cost; no connection or uptime
            conn = [
                torn_down_line(
                    view.host, at, view.now, first_seen, update.unbilled if update else ()
                )
            ]
        else:
            conn = (
                connection_lines(
                    update.connection,
                    snap,
                    view.now,
                    view.preemption
                    or suspected(
                        view.host,
                        update.connection.status,
                        update.connection.since,
                        ever_seen=update.last_seen is not None or first_seen is not None,
                    ),
                    first_seen=first_seen,
                    last_seen=update.last_seen,
                )
                if update
                else []
            )
        if conn:
            self.query_one(".detail-conn", Static).update(Content("\n").join(conn))
        self.query_one(".detail-identity", Static).update(
            Content("\n").join(identity_lines(view, snap, at))
        )
        cg = snap.cgroup if snap else None
        fraction, figure = cgroup_memory(cg)
        bar = self.query_one(".detail-cgmem", UsageBar)
        bar.crit_at = view.thresholds.cgroup_mem_pct / 100
        bar.show(fraction, figure)
        baseline = update.health.oom_baseline if update else None
        # Before any sample there is nothing to read yet, not an unreadable cgroup.
        line = (
            cgroup_line(cg, baseline)
            if snap is not None
            else Content.styled("no sample yet", "$foreground-muted")
        )
        if baseline is not None:
            line = Content.assemble(line, (f" · oom_kill at start {baseline}", "$foreground-muted"))
        self.query_one(".detail-cgroup", Static).update(line)
        h = view.history
        # A box without GPUs says so on the GPUs tab; empty plots would only take room.
        has_gpus = bool(h.gpu_util) or (snap is not None and bool(snap.gpus))
        for widget in self.query(".gpu-only"):
            widget.display = has_gpus
        self.query_one(".plot-gpu", Spark).data = tuple(h.gpu_util)
        self.query_one(".plot-vram", Spark).data = tuple(h.vram)
        self.query_one(".plot-mem", Spark).data = tuple(h.memory)
