"""GPUs tab: every GPU with its clocks, memory, power, throttling and compute processes.

Under the GPUs, when one holds VRAM with no work (the zombie rule's terms, U11), the tab
reads who holds it from the box (controllers/vram.py over services/box/vram.py:
nvidia-smi's processes and the /dev/nvidia* holders, one round trip, at most every
``EVIDENCE_EVERY_S`` while shown)
and ``x`` kills one, its PID typed (screens/vram_kill.py). The kill runs on the box; the
list after it is read in a separate call, since a kill may drop the session (U1).
"""

from __future__ import annotations

import time

from textual import on
from textual.app import ComposeResult
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.gpu_row import util_line, vram_line
from rgt_tui.content.vram_text import candidates_content, evidence_content, reclaim_candidates
from rgt_tui.controllers.vram import VramControl, VramRead
from rgt_tui.controllers.workers import run_host_worker
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.snapshot import GpuProcess, GpuSample, HostSnapshot
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.services.box.vram import VramEvidence
from rgt_tui.services.connections import FleetConnections
from rgt_tui.widgets.spark import Spark

EVIDENCE_EVERY_S = 30.0  # the fd walk reads every process's fds: not on every sample


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
        Content.assemble(
            (f"GPU{gpu.index} ", "bold"), shown(gpu.name), (f"  {shown(gpu.uuid or '')}", muted)
        ),
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
            Content.assemble(
                ("throttling: ", "bold $gauge-crit"), shown(", ".join(gpu.throttle_reasons))
            )
        )
    if procs is None:
        lines.append(Content.styled("processes: not polled in this sample", muted))
    mine = [p for p in procs or () if p.gpu_index == gpu.index]
    if procs is not None:
        # One line: "as listed 7s ago:" above "none listed" read as two lists.
        when = f" as listed {fmt_duration(ago)} ago" if ago is not None else ""
        none = "" if mine else " none (containers often hide them)"
        lines.append(Content.styled(f"processes{when}:{none}", muted))
    for p in mine:
        omp = "unset" if p.omp_threads is None else str(p.omp_threads)
        lines.append(
            Content.assemble(
                ("  pid ", muted),
                f"{p.pid:<8}",
                f"{shown(p.name)[:28]:<28}",
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

    class Evidence(Message):
        """The box's VRAM evidence (or why it could not be read; a kill's outcome)."""

        def __init__(self, read: VramRead) -> None:
            super().__init__()
            self.evidence = read.evidence
            self.error = read.error
            self.note = read.note

    def __init__(self) -> None:
        super().__init__()
        self.host: HostConfig | None = None
        self.connections: FleetConnections | None = None
        self.evidence: VramEvidence | None = None
        self._evidence_at = 0.0
        self._reading = False
        self._open_after_read = False
        self.note = ""  # the last kill's outcome, or why the evidence could not be read

    def compose(self) -> ComposeResult:
        self._empty = Static(classes="gpu-none")
        yield self._empty
        self._vram = Static(classes="gpu-vram")
        self._vram.display = False  # until a GPU holds VRAM with no work
        yield self._vram
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
        self.mount_all([w for pair in self._blocks for w in pair], before=self._vram)

    def show(self, view: HostView) -> None:
        snap = view.update.snapshot if view.update else None
        if snap is None:
            self._empty.update(Content.styled("no sample yet", "$foreground-muted"))
            return
        self._rebuild(snap)
        if not snap.gpus:
            why = snap.gpu_unavailable_reason or "none found"
            self._empty.update(Content.assemble(("no GPU: ", "bold"), shown(why)))
        self._empty.display = not snap.gpus
        width = 64  # the tab may not be laid out yet when first shown
        ago = listed_ago(snap)
        for (block, spark), gpu in zip(self._blocks, snap.gpus, strict=True):
            block.update(gpu_block(gpu, snap.gpu_processes, view.thresholds, width, ago))
            spark.data = tuple(view.history.per_gpu_util.get(gpu.index, ()))
        self.host, self.connections = view.host, view.connections
        idle = reclaim_candidates(snap, view.thresholds)
        self._vram_lines = [candidates_content(idle, view.history, view.thresholds)] if idle else []
        stale = time.monotonic() - self._evidence_at > EVIDENCE_EVERY_S
        # x pressed before the tab had its host (from another tab): read, then open.
        if (idle and (self.evidence is None or stale)) or self._open_after_read:
            self.read_evidence()
        self._draw_vram()

    # -- VRAM holders (U11, GEN7) ---------------------------------------------------------

    def _draw_vram(self) -> None:
        lines = list(getattr(self, "_vram_lines", []))
        if self.evidence is not None and (lines or self.note or self.evidence.processes):
            lines.append(
                Content.styled("who holds the GPUs (read from the box):", "$foreground-muted")
            )
            lines.append(evidence_content(self.evidence))
        if self.note:
            lines.append(Content.styled(shown(self.note, lines=True), "bold $warning"))
        self._vram.update(Content("\n").join(lines))
        self._vram.display = bool(lines)

    def read_evidence(self, *, then_open: bool = False) -> None:
        """Read who holds the VRAM from the box (``then_open``: the kill dialog after)."""
        self._open_after_read = self._open_after_read or then_open
        if self.host is None or self.connections is None or self._reading:
            return
        self._reading = True
        self._evidence_at = time.monotonic()
        run_host_worker(self, self._read(self.host.name, self.connections), "vram", self.host.name)

    async def _read(self, host: str, connections: FleetConnections) -> None:
        self.post_message(self.Evidence(await VramControl(connections).read(host)))

    @on(Evidence)
    def _evidence(self, message: Evidence) -> None:
        self._reading = False
        if message.evidence is not None:
            self.evidence = message.evidence
        self.note = message.note or (
            f"VRAM holders not read: {message.error}" if message.error else ""
        )
        if self.is_mounted:
            self._draw_vram()
        if self._open_after_read:
            self._open_after_read = False
            if message.evidence is not None:  # not read: the note says why; no read again
                self.open_kill_dialog()

    def open_kill_dialog(self) -> None:
        """``x``: the kill dialog on fresh evidence (read first when there is none yet)."""
        from rgt_tui.screens.vram_kill import VramKillScreen

        evidence = self.evidence
        if evidence is None or time.monotonic() - self._evidence_at > 5.0:
            self.read_evidence(then_open=True)
            return
        if evidence.no_gpu:  # no PID to ask for
            self.app.notify(
                shown(f"{evidence.no_gpu}: there is nothing to kill"), title="VRAM", markup=False
            )
            return
        self.app.push_screen(VramKillScreen(evidence), self._kill_chosen)

    def _kill_chosen(self, pid: int | None) -> None:
        evidence, connections = self.evidence, self.connections
        if pid is None or evidence is None or connections is None:
            return
        self.note = f"killing pid {pid} (SIGTERM, then SIGKILL after 10 s)…"
        self._draw_vram()
        self._reading = True
        run_host_worker(self, self._kill(evidence, connections, pid), "vram", evidence.host)

    async def _kill(self, evidence: VramEvidence, connections: FleetConnections, pid: int) -> None:
        read = await VramControl(connections).kill(evidence, pid)
        self.post_message(self.Evidence(read))
        if read.killed:
            note = shown(f"{evidence.host}: {read.note}", lines=True)
            self.app.notify(note, title="VRAM")
