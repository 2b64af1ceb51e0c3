"""What the box's own text says about a GPU fault, for diagnose's ladder (pure).

- A dead GPU (U22): an Xid 48/79 line in the kernel log, or — where that log is not
  readable (containers) — nvidia-smi saying a GPU is lost (``lost_gpu_lines``, the
  agent's own parser) or a non-zero volatile uncorrected ECC count (errors since the
  driver loaded, this boot).
- A CUDA out-of-memory error (GEN5/U10): torch's ``OutOfMemoryError: CUDA out of memory.
  Tried to allocate ...`` line in the cell's log. Unlike a cgroup OOM kill (U9: exit 137,
  no traceback, the oom_kill counter rises) the process raised it itself, and the fix is
  the batch or the allocator, not the host's RAM.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rgt_tui.agent.probe.gpu_smi import lost_gpu_lines, smi_number
from rgt_tui.agent.probe.kmsg import parse_xid_line
from rgt_tui.domain.health import DEAD_GPU_XIDS
from rgt_tui.domain.text import printable

CUDA_OOM_RE = re.compile(r"CUDA out of memory")
_TRIED_RE = re.compile(r"Tried to allocate ([\d.]+ [KMGT]iB)")
_TOTAL_RE = re.compile(
    r"total capac(?:i)?ty of ([\d.]+ [KMGT]iB)|\(GPU \d+; ([\d.]+ [KMGT]iB) total"
)


def dead_gpu_signs(xid_lines: Iterable[str], gpu_lines: Iterable[str]) -> tuple[str, ...]:
    """The signs of a dead GPU in kernel-log lines and ``nvidia-smi --query-gpu=index,
    ecc.errors.uncorrected.volatile.total`` output (each printable, cut)."""
    signs: list[str] = []
    for line in xid_lines:
        event = parse_xid_line(line)
        if event is not None and event["xid"] in DEAD_GPU_XIDS:
            signs.append(f"kernel log: {printable(event['text'], 160)}")
    gpu_lines = list(gpu_lines)
    signs += [f"nvidia-smi: {printable(x, 160)}" for x in lost_gpu_lines("\n".join(gpu_lines))]
    for line in gpu_lines:
        cells = line.split(",")
        if len(cells) != 2:
            continue
        index, ecc = smi_number(cells[0]), smi_number(cells[1])
        if index is not None and ecc:
            signs.append(f"GPU {int(index)}: {int(ecc)} uncorrected ECC errors this boot")
    return tuple(dict.fromkeys(signs))[:5]


@dataclass(frozen=True)
class CudaOom:
    """torch's CUDA OOM line, and what it tried to allocate on a card of what size."""

    line: str
    tried: str | None
    total: str | None


def cuda_oom(log_line: str) -> CudaOom | None:
    """The CUDA OOM of a log line (``torch.OutOfMemoryError: CUDA out of memory ...``)."""
    if not CUDA_OOM_RE.search(log_line):
        return None
    tried = _TRIED_RE.search(log_line)
    total = _TOTAL_RE.search(log_line)
    return CudaOom(
        line=printable(log_line.strip(), 240),
        tried=tried.group(1) if tried else None,
        total=(total.group(1) or total.group(2)) if total else None,
    )
