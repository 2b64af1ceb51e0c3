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


_IN_USE_RE = re.compile(r"this process has ([\d.]+ [KMGT]iB) memory in use")
_SPARE_RE = re.compile(r"([\d.]+ [KMGT]iB) is reserved by PyTorch but unallocated")
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def size_bytes(size: str | None) -> float | None:
    """``"64.00 GiB"`` as bytes (the regexes above only match that shape)."""
    if size is None:
        return None
    number, unit = size.split()
    return float(number) * _UNITS[unit[0]]


@dataclass(frozen=True)
class CudaOom:
    """torch's CUDA OOM line and its figures: what it tried to allocate, the card's size,
    what the process held, and what torch had reserved but left unallocated."""

    line: str
    tried: str | None
    total: str | None
    in_use: str | None = None
    spare: str | None = None

    def advice(self) -> str:
        """What to change, from torch's own figures (GEN5/U10). torch suggests
        expandable_segments "if reserved but unallocated memory is large", and prints the
        same suggestion when it is not: a real H200 asked for 64 GiB with 1.75 MiB reserved
        but unallocated (tests/fixtures/h200/cuda_oom_direct.txt), where no allocator
        setting helps. So the allocator is named only when that spare memory is at least
        half of the request; a request larger than the whole card is said as such."""
        tried, total, spare = size_bytes(self.tried), size_bytes(self.total), size_bytes(self.spare)
        if tried is not None and total is not None and tried > total:
            return (
                f"one allocation of {self.tried} is larger than the whole {self.total} card: "
                "make the batch, sequence or image size smaller (gradient accumulation keeps "
                "the effective batch); no allocator setting makes it fit"
            )
        smaller = (
            "make the batch smaller (gradient accumulation keeps the effective batch), and "
            "check that no other process holds VRAM (GEN7)"
        )
        if tried is not None and spare is not None and spare * 2 < tried:
            return (
                f"the batch does not fit in the card's memory (U10): {smaller} — fragmentation "
                f"is not the cause (only {self.spare} was reserved but unallocated), so "
                "PYTORCH_CUDA_ALLOC_CONF will not help"
            )
        return (
            "the batch does not fit in the card's memory (U10): set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less fragmentation), " + smaller
        )


def cuda_oom(log_line: str) -> CudaOom | None:
    """The CUDA OOM of a log line (``torch.OutOfMemoryError: CUDA out of memory ...``)."""
    if not CUDA_OOM_RE.search(log_line):
        return None
    tried = _TRIED_RE.search(log_line)
    total = _TOTAL_RE.search(log_line)
    in_use = _IN_USE_RE.search(log_line)
    spare = _SPARE_RE.search(log_line)
    return CudaOom(
        line=printable(log_line.strip(), 240),
        tried=tried.group(1) if tried else None,
        total=(total.group(1) or total.group(2)) if total else None,
        in_use=in_use.group(1) if in_use else None,
        spare=spare.group(1) if spare else None,
    )
