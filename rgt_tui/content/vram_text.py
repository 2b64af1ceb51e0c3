"""The GPU tab's VRAM holders: which GPUs hold memory with no work, and the box's evidence.

A GPU is a reclaim candidate on the zombie rule's own terms (domain/health.py): util
under ``idle_util_pct`` with at least ``zombie_vram_mib`` in use. How long it has been
so comes from the host's util history, so "idle for 40 min" is a fact, not a guess.
"""

from __future__ import annotations

from textual.content import Content

from rgt_tui.content.box_text import shown
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.history import HostHistory
from rgt_tui.domain.snapshot import GpuSample, HostSnapshot
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.services.box.vram import VramEvidence, VramProcess

MUTED = "$foreground-muted"


def reclaim_candidates(snap: HostSnapshot, th: Thresholds) -> list[GpuSample]:
    """GPUs at ~0 % util holding at least the zombie rule's VRAM."""
    return [
        g
        for g in snap.gpus
        if g.util_pct is not None
        and g.util_pct < th.idle_util_pct
        and (g.mem_used or 0) >= th.zombie_vram_mib * 2**20
    ]


def idle_for(history: HostHistory, gpu_index: int, th: Thresholds) -> tuple[float, bool] | None:
    """How long GPU ``gpu_index`` has been under the idle threshold, from its history, and
    whether that is the whole history (then it is "at least" that long)."""
    utils = list(history.per_gpu_util.get(gpu_index, ()))
    times = list(history.times)[-len(utils) :] if utils else []
    if not utils or len(times) != len(utils):
        return None
    start = len(utils)
    while start > 0 and utils[start - 1] * 100 < th.idle_util_pct:
        start -= 1
    if start == len(utils):
        return None
    return times[-1] - times[start], start == 0


def candidates_content(gpus: list[GpuSample], history: HostHistory, th: Thresholds) -> Content:
    """``VRAM held with no work: GPU0 19.4G at 0% for ≥ 3m`` and the key that reclaims it."""
    parts: list[Content] = []
    for g in gpus:
        idle = idle_for(history, g.index, th)
        span = ""
        if idle is not None:
            span = f" for {'≥ ' if idle[1] else ''}{fmt_duration(idle[0])}"
        parts.append(
            Content.assemble(
                (f"GPU{g.index} ", "bold"),
                f"{fmt_bytes(g.mem_used)} at {g.util_pct or 0:.0f}% util{span}",
            )
        )
    return Content.assemble(
        ("VRAM held with no work (U11): ", "bold $warning"),
        Content("; ").join(parts),
        ("  x: kill a holder (its PID typed)", MUTED),
    )


def process_content(p: VramProcess, evidence: VramEvidence) -> Content:
    """One process of the evidence on one line, with why it may not be killed."""
    host = evidence.host
    devices = shown(" ".join(d.rsplit("/", 1)[-1] for d in p.devices) or "no device file")
    # Listed with no figure: the box sent one that is no whole number (h503 #1: "1e308"
    # crashed the tab here); the command line says "-" for it.
    mib = f"{p.smi_mib:,} MiB" if p.smi_mib is not None else "? MiB (not a whole number)"
    smi = f"nvidia-smi {mib} on GPU{p.gpu_index}" if p.listed else "not in nvidia-smi"
    age = f" up {fmt_duration(p.age_s)}" if p.age_s is not None else ""
    what = shown(evidence.command_of(p))
    refusal = p.refusal(host)
    mark = ("  cannot be killed here", "$warning") if refusal else ("", "")
    cell = (f" cell {shown(p.cell)}", "bold") if p.cell else ("", "")
    return Content.assemble(
        ("  pid ", MUTED),
        (f"{p.pid:<8}", "bold"),
        (f"{devices:<28} ", ""),
        (smi, MUTED),
        (age, MUTED),
        cell,
        f"  {what[:60]}",
        mark,
    )


def evidence_content(evidence: VramEvidence) -> Content:
    """The box's evidence: nvidia-smi's state, why PIDs are hidden, each process."""
    if evidence.no_gpu:
        return Content.styled(shown(evidence.no_gpu), MUTED)
    lines: list[Content] = []
    if evidence.smi != "ok":
        lines.append(
            Content.styled(shown(f"nvidia-smi {evidence.smi}: {evidence.smi_detail}"), MUTED)
        )
    if evidence.walk != "ok":
        lines.append(Content.styled("no /dev/nvidia* holders: `find` is missing on the box", MUTED))
    if evidence.hidden_reason:
        lines.append(Content.styled(shown(evidence.hidden_reason), "$warning"))
    if not evidence.processes:
        lines.append(Content.styled(evidence.nothing_held, MUTED))
    lines += [process_content(p, evidence) for p in evidence.processes]
    return Content("\n").join(lines)
