"""GPUs tab: every GPU with its clocks, memory, power, throttling and compute processes."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from rgt_tui.content.gpu_row import util_line, vram_line
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.snapshot import GpuProcess, GpuSample, HostSnapshot
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.widgets.spark import Spark


def _num(value: float | None, unit: str, digits: int = 0) -> str:
    return "?" if value is None else f"{value:.{digits}f}{unit}"


def listed_ago(snap: HostSnapshot) -> float | None:
    """How much older than ``snap`` its process list is (None: listed in this sample)."""
    listed = snap.processes_listed
    if listed is None or listed.seq == snap.seq:
        return None
    return max(0.0, snap.t - listed.t)


def gpu_block(
    gpu: GpuSample,
    procs: tuple[GpuProcess, ...] | None,
    th: Thresholds,
    width: int,
    ago: float | None = None,
) -> Content:
    """Everything about one GPU, its processes last (``ago``: the list's age, when it
    comes from an earlier sample: processes are listed every few samples)."""
    muted = "$foreground-muted"
    lines = [
        Content.assemble((f"GPU{gpu.index} ", "bold"), gpu.name, (f"  {gpu.uuid or ''}", muted)),
        util_line(gpu, th),
        Content.assemble(
            ("SM clock ", muted),
            _num(gpu.sm_clock_mhz, " MHz"),
            (" of ", muted),
            _num(gpu.sm_clock_max_mhz, " MHz"),
            ("  power ", muted),
            _num(gpu.power_w, " W"),
            (" of ", muted),
            _num(gpu.power_limit_w, " W"),
            ("  ECC volatile ", muted),
            "?" if gpu.ecc_volatile is None else str(gpu.ecc_volatile),
        ),  # fmt: skip
        vram_line(gpu, width, indent=0),
    ]
    if gpu.throttle_reasons:
        lines.append(
            Content.assemble(("throttling: ", "bold $gauge-crit"), ", ".join(gpu.throttle_reasons))
        )
    if procs is None:
        lines.append(Content.styled("processes: not polled in this sample", muted))
    mine = [p for p in procs or () if p.gpu_index == gpu.index]
    if procs is not None and ago is not None:
        lines.append(Content.styled(f"processes as listed {fmt_duration(ago)} ago:", muted))
    if procs is not None and not mine:
        lines.append(Content.styled("processes: none listed (containers often hide them)", muted))
    for p in mine:
        omp = "unset" if p.omp_threads is None else str(p.omp_threads)
        lines.append(
            Content.assemble(
                ("  pid ", muted),
                f"{p.pid:<8}",
                f"{p.name[:28]:<28}",
                (" VRAM ", muted),
                f"{fmt_bytes(p.used_mem):>6}",
                (" threads ", muted),
                "?" if p.threads is None else str(p.threads),
                (" OMP_NUM_THREADS ", muted),
                omp,
            )  # fmt: skip
        )
    lines.append(Content.styled("util history (fixed 0–100 % scale):", muted))
    return Content("\n").join(lines)


class GpusTab(DetailTab):
    """One block per GPU with its util history; 'no GPU' and why when there is none."""

    TAB_ID = "gpus"
    TITLE = "GPUs"

    def compose(self) -> ComposeResult:
        self._empty = Static(classes="gpu-none")
        yield self._empty
        self._blocks: list[tuple[Static, Spark]] = []
        self._key: tuple[int, ...] | None = None

    def _rebuild(self, snap: HostSnapshot) -> None:
        key = tuple(g.index for g in snap.gpus)
        if key == self._key:
            return
        self._key = key
        for block, spark in self._blocks:
            block.remove()
            spark.remove()
        self._blocks = [
            (Static(classes="gpu-block"), Spark(style="$primary", classes="plot plot-gpu"))
            for _ in key
        ]
        self.mount_all([w for pair in self._blocks for w in pair])

    def show(self, view: HostView) -> None:
        snap = view.update.snapshot if view.update else None
        if snap is None:
            self._empty.update(Content.styled("no sample yet", "$foreground-muted"))
            return
        self._rebuild(snap)
        if not snap.gpus:
            why = snap.gpu_unavailable_reason or "none found"
            self._empty.update(Content.assemble(("no GPU: ", "bold"), why))
        self._empty.display = not snap.gpus
        width = 64  # the tab may not be laid out yet when first shown
        ago = listed_ago(snap)
        for (block, spark), gpu in zip(self._blocks, snap.gpus, strict=True):
            block.update(gpu_block(gpu, snap.gpu_processes, view.thresholds, width, ago))
            spark.data = tuple(view.history.per_gpu_util.get(gpu.index, ()))
