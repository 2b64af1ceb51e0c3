"""One GPU as two lines — util beside its SM clock, then VRAM — with heat, power, throttling.

Util alone lies (U21): a trickle of tiny kernels reads 100 %, so the SM clock's share of
its maximum is always printed right beside it, and turns to a warning colour when the
card is busy but slow.
"""

from __future__ import annotations

from textual.content import Content

from rgt_tui.content.gauge import bar_content, gauge_style, pct_text
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.snapshot import GpuSample
from rgt_tui.domain.units import fmt_bytes

VRAM_WARN_AT = 0.95
VRAM_CRIT_AT = 0.99


def vram_fraction(gpu: GpuSample) -> float | None:
    """VRAM used as a share of the card's memory, when both are known."""
    if gpu.mem_used is None or not gpu.mem_total:
        return None
    return gpu.mem_used / gpu.mem_total


def gpu_badges(gpu: GpuSample, thresholds: Thresholds) -> list[tuple[str, str]]:
    """Short flags for what is silently wrong: throttling (U23), heat, ECC errors."""
    badges = []
    if gpu.throttle_reasons:
        badges.append((" THROTTLE ", "bold reverse $gauge-crit"))
    elif gpu.temp_c is not None and gpu.temp_c >= thresholds.temp_c:
        badges.append((" HOT ", "bold reverse $gauge-crit"))
    if gpu.ecc_volatile:
        badges.append((" ECC ", "bold reverse $gauge-warn"))
    return badges


def util_line(gpu: GpuSample, thresholds: Thresholds) -> Content:
    """``GPU0 util  97% SM  62% of max  71°C 250W`` plus badges."""
    util = None if gpu.util_pct is None else gpu.util_pct / 100
    clock = gpu.sm_clock_fraction
    busy = gpu.util_pct is not None and gpu.util_pct >= thresholds.util_high_pct
    slow = clock is not None and clock * 100 < thresholds.sm_clock_low_pct
    clock_style = "$gauge-warn bold" if busy and slow else "$foreground"
    temp = "?°C" if gpu.temp_c is None else f"{gpu.temp_c:.0f}°C"
    hot = gpu.temp_c is not None and gpu.temp_c >= thresholds.temp_c
    power = "?W" if gpu.power_w is None else f"{gpu.power_w:.0f}W"
    parts: list[str | tuple[str, str] | Content] = [
        (f"GPU{gpu.index}", "bold"),
        (" util ", "$foreground-muted"),
        (pct_text(util), "$foreground"),
        (" SM ", "$foreground-muted"),
        (pct_text(clock), clock_style),
        (" of max ", "$foreground-muted"),
        (temp, "$gauge-crit" if hot else "$foreground"),
        " ",
        (power, "$foreground"),
    ]
    for text, style in gpu_badges(gpu, thresholds):
        parts += [" ", (text, style)]
    return Content.assemble(*parts)


def vram_line(gpu: GpuSample, width: int, indent: int = 5) -> Content:
    """``     VRAM ██████░░░░ 38% 30G/80G``, the bar filling what the width leaves."""
    frac = vram_fraction(gpu)
    figure = f" {fmt_bytes(gpu.mem_used)}/{fmt_bytes(gpu.mem_total)}"
    label = " " * indent + "VRAM "
    bar_width = max(3, width - len(label) - len(figure) - 5)
    # A training job fills VRAM on purpose (the caching allocator): only the last few
    # percent mean an out-of-memory is near.
    return Content.assemble(
        (label, "$foreground-muted"),
        bar_content(frac, bar_width, warn_at=VRAM_WARN_AT, crit_at=VRAM_CRIT_AT),
        " ",
        (pct_text(frac), gauge_style(frac, VRAM_WARN_AT, VRAM_CRIT_AT)),
        figure,
    )
