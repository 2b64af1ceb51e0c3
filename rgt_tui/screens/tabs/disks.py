"""Disks tab: every watched path with its mount's bytes AND inodes (inodes die first, U7)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from rgt_tui.content.box_text import shown
from rgt_tui.domain.snapshot import DiskSample
from rgt_tui.domain.units import fmt_bytes, fmt_count, plural
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.widgets.usage_bar import UsageBar


def disk_heading(d: DiskSample) -> Content:
    """``/workspace  on /  (1.2T free, 9.1M inodes free)``."""
    free = d.inodes_total - d.inodes_used
    free_inodes = f", {plural(free, 'inode', shown=fmt_count(free))} free" if d.inodes_total else ""
    return Content.assemble(
        (shown(d.path), "bold"),
        ("  on ", "$foreground-muted"),
        shown(d.mount),
        (f"  ({fmt_bytes(d.bytes_total - d.bytes_used)} free{free_inodes})", "$foreground-muted"),
    )


class DisksTab(DetailTab):
    """Bytes and inodes bars for each watched path."""

    TAB_ID = "disks"
    TITLE = "Disks"

    def compose(self) -> ComposeResult:
        self._empty = Static(classes="disk-none")
        yield self._empty
        self._rows: list[tuple[Static, UsageBar, UsageBar]] = []
        self._key: tuple[str, ...] | None = None

    def show(self, view: HostView) -> None:
        snap = view.update.snapshot if view.update else None
        disks = snap.disks if snap else ()
        self._empty.display = not disks
        self._empty.update(
            Content.styled(
                "no sample yet" if snap is None else "no watched mount reported",
                "$foreground-muted",
            )
        )
        key = tuple(d.path for d in disks)
        if key != self._key:
            self._key = key
            for row in self._rows:
                for widget in row:
                    widget.remove()
            th = view.thresholds
            self._rows = [
                (
                    Static(classes="disk-heading"),
                    UsageBar("bytes", label_width=8, crit_at=th.disk_pct / 100),
                    UsageBar("inodes", label_width=8, crit_at=th.inode_pct / 100),
                )
                for _ in disks
            ]
            self.mount_all([w for row in self._rows for w in row])
        for d, (heading, b, i) in zip(disks, self._rows, strict=True):
            heading.update(disk_heading(d))
            b.show(d.bytes_fraction, f"{fmt_bytes(d.bytes_used)} of {fmt_bytes(d.bytes_total)}")
            if d.inodes_total:
                i.show(d.inodes_fraction, f"{d.inodes_used:,} of {d.inodes_total:,}")
            else:
                i.show(None, "no inode limit on this file system")
