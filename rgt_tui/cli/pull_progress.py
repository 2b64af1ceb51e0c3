"""The pull's progress on the command line: a live Rich block on a terminal, plain lines
elsewhere.

The block is drawn from each ``PullProgress`` snapshot as it comes (a pure function of it),
not through ``rich.progress.Progress`` tasks: the pull service measures rate and ETA over
its own window, and the TUI shows the same figures, so Rich must not estimate its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from rgt_tui.domain.units import fmt_bytes

if TYPE_CHECKING:
    from rgt_tui.services.pull import PullProgress


V = TypeVar("V", bound="LiveView")


class LiveView:
    """What every progress view of the command line shares: a Rich ``Live`` block on an
    interactive terminal (none elsewhere), started and stopped as a context manager.
    ``auto_refresh`` is off: the work's callbacks pace the redraws, and no thread draws
    behind the event loop's back. ``_last`` is when the block (or a line) was last drawn.
    """

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self._live = Live(console=console, auto_refresh=False) if console.is_interactive else None
        self._last = -1e9

    def __enter__(self: V) -> V:
        if self._live is not None:
            self._live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._final(self._live)
            self._live.stop()  # the last block stays on screen, the cursor below it

    def _final(self, live: Live) -> None:
        """Draw the last block before stopping (a view whose block may be stale)."""


class PullProgressView(LiveView):
    """The pull's ``on_progress`` callback; use it as a context manager around the pull.

    On an interactive terminal it redraws a block (a total bar, then one bar per file in
    flight) in place at most every ``REDRAW_S``; elsewhere (a log, CI) it prints a line
    per phase and a total every ``LINE_EVERY_S`` seconds, so logs stay short.
    """

    REDRAW_S = 0.1
    LINE_EVERY_S = 5.0
    MAX_FILES = 6

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(console, clock=clock)
        self._phase = ""
        self._plan_line = ""

    def __call__(self, p: PullProgress) -> None:
        now = self.clock()
        phase_changed = p.phase != self._phase
        self._phase = p.phase
        if p.plan_line and not self._plan_line:  # the bytes to move, their cost: once
            self._plan_line = p.plan_line  # (the summary has the exact figure)
            self.console.print(f"{p.host}: {p.plan_line}", markup=False, highlight=False)
        if self._live is not None:
            if phase_changed or now - self._last >= self.REDRAW_S:
                self._last = now
                self._live.update(render_progress(p, self.MAX_FILES), refresh=True)
        elif phase_changed or now - self._last >= self.LINE_EVERY_S:
            self._last = now
            self.console.print(f"{p.host}: {p.phase:<10} {_totals(p)}".rstrip())


def render_progress(p: PullProgress, max_files: int = PullProgressView.MAX_FILES) -> Group:
    """The block for one snapshot: the pull's total, then the files in flight."""
    lines = [_Line(f"{p.host} {p.phase}", p.fraction, 20, _totals(p))]
    for f in p.active[:max_files]:
        name = f.path if len(f.path) <= 40 else "…" + f.path[-39:]  # the file's end names it
        detail = f"{name} {f.state} {f.figures()} {f.note}"
        lines.append(_Line(" ", f.done / f.size if f.size else 1.0, 12, detail))
    if len(p.active) > max_files:
        lines.append(Text(f"  … and {len(p.active) - max_files} more files in flight"))
    return Group(*lines)


class _Line:
    """``left [bar] right`` on one row. The bar takes at most a quarter of the width (a
    40-column terminal cut the figures after "314/3…" behind a 20-cell bar); past that
    ``right`` gives way, cut with an ellipsis, never the bar."""

    def __init__(self, left: str, fraction: float, bar_width: int, right: str) -> None:
        self.left, self.right = left, right
        self.fraction, self.bar_width = max(0.0, min(1.0, fraction)), bar_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        bar = max(4, min(self.bar_width, options.max_width // 4))
        line = Table.grid(padding=(0, 1))
        line.add_column(no_wrap=True)
        line.add_column(width=bar, no_wrap=True)
        line.add_column()  # the only column Rich may narrow; its text never wraps
        line.add_row(
            Text(self.left),
            ProgressBar(total=1.0, completed=self.fraction, width=bar),
            Text(self.right.rstrip(), no_wrap=True, overflow="ellipsis"),
        )
        yield line


def _totals(p: PullProgress) -> str:
    if p.phase in ("connecting", "manifest", "planning"):
        return p.message  # no totals before the manifest is in
    failed = p.phase == "failed"
    if failed and not p.files_total:
        return ""  # "0/0 files 0B/0B" of a box never reached says nothing
    text = p.figures()
    if p.files_failed:
        text += f"  {p.files_failed} FAILED"
    # A failure's why is the command's own last line, with its fix: here too, it was said
    # twice (h491 #11).
    return text + (f"  {p.message}" if p.message and not failed else "")


class FleetPullView(LiveView):
    """``pull --all``'s one progress view: a total bar over every host, then one line per
    host (its phase, files, bytes, rate). Call ``on(host)`` for each pull's callback;
    use it as a context manager around the pulls. Off a terminal: a line per host's
    phase, and the fleet's total every ``LINE_EVERY_S``."""

    REDRAW_S = 0.1
    LINE_EVERY_S = 5.0

    def __init__(
        self,
        console: Console,
        hosts: list[str],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(console, clock=clock)
        self.latest: dict[str, PullProgress | None] = dict.fromkeys(hosts)
        self.failed: dict[str, str] = {}
        self._phases: dict[str, str] = {}
        self._plan_lines: dict[str, str] = {}

    def _final(self, live: Live) -> None:
        live.update(render_fleet(self.latest, self.failed), refresh=True)

    def on(self, host: str) -> Callable[[PullProgress], None]:
        """The progress callback of ``host``'s pull."""
        return lambda p: self._update(host, p)

    def fail(self, host: str, why: str) -> None:
        """``host``'s pull stopped (shown on its line)."""
        self.failed[host] = why
        self._update(host, self.latest.get(host), force=True)

    def _update(self, host: str, p: PullProgress | None, force: bool = False) -> None:
        self.latest[host] = p
        now = self.clock()
        phase = p.phase if p is not None else "failed"
        new_phase = self._phases.get(host) != phase
        changed = force or new_phase
        self._phases[host] = phase
        if p is not None and p.plan_line and host not in self._plan_lines:
            self._plan_lines[host] = p.plan_line  # each host's bytes to move (U14), once
            self.console.print(f"{host}: {p.plan_line}", markup=False, highlight=False)
        if self._live is not None:
            if changed or now - self._last >= self.REDRAW_S:
                self._last = now
                self._live.update(render_fleet(self.latest, self.failed), refresh=True)
            return
        if new_phase and p is not None:  # a log: once per phase (fail() came after "failed")
            self.console.print(f"{host}: {p.phase:<10} {_totals(p)}")
        if now - self._last >= self.LINE_EVERY_S:
            self._last = now
            self.console.print(f"all hosts: {_fleet_totals(self.latest)}")


def render_fleet(latest: dict[str, PullProgress | None], failed: dict[str, str]) -> Group:
    """The fleet block: the total over every host, then a line per host."""
    shown = [p for p in latest.values() if p is not None]
    total = sum(p.bytes_total for p in shown)
    done = sum(p.bytes_done for p in shown)
    lines = [_Line("all hosts", done / total if total else 0.0, 20, _fleet_totals(latest))]
    width = max((len(h) for h in latest), default=4)
    for host, p in latest.items():
        if host in failed:
            lines.append(_Line(f"  {host:<{width}}", 0.0, 12, f"FAILED: {failed[host]}"))
        elif p is None:
            lines.append(_Line(f"  {host:<{width}}", 0.0, 12, "connecting"))
        else:
            lines.append(_Line(f"  {host:<{width}}", p.fraction, 12, f"{p.phase} {_totals(p)}"))
    return Group(*lines)


def _fleet_totals(latest: dict[str, PullProgress | None]) -> str:
    shown = [p for p in latest.values() if p is not None]
    files = sum(p.files_done for p in shown), sum(p.files_total for p in shown)
    done, total = sum(p.bytes_done for p in shown), sum(p.bytes_total for p in shown)
    rate = sum(p.rate for p in shown if p.phase == "pulling")
    hosts_done = sum(1 for p in shown if p.phase == "done")
    return (
        f"{hosts_done}/{len(latest)} hosts  {files[0]}/{files[1]} files  "
        f"{fmt_bytes(done)}/{fmt_bytes(total)}  {fmt_bytes(rate)}/s"
    )
