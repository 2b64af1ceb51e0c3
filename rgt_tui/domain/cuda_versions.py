"""CUDA versions for preflight's driver check (U28): which CUDA a driver supports, and
which of PyTorch's CUDA wheel indexes fits it. Pure."""

from __future__ import annotations

import re

from rgt_tui.domain.preflight import BoxFacts, clip

# The oldest Linux driver of each CUDA toolkit (NVIDIA's CUDA release notes, "CUDA
# Toolkit and Corresponding Driver Versions"), newest first: the CUDA version a driver
# supports when nvidia-smi does not print it.
CUDA_MIN_DRIVER: tuple[tuple[tuple[int, int], tuple[int, ...]], ...] = (
    ((13, 1), (590, 44, 1)), ((13, 0), (580, 65, 6)), ((12, 9), (575, 51, 3)),
    ((12, 8), (570, 26)), ((12, 6), (560, 28, 3)), ((12, 5), (555, 42, 2)),
    ((12, 4), (550, 54, 14)), ((12, 3), (545, 23, 6)), ((12, 2), (535, 54, 3)),
    ((12, 1), (530, 30, 2)), ((12, 0), (525, 60, 13)), ((11, 8), (520, 61, 5)),
    ((11, 7), (515, 43, 4)), ((11, 6), (510, 39, 1)), ((11, 5), (495, 29, 5)),
    ((11, 4), (470, 42, 1)), ((11, 3), (465, 19, 1)), ((11, 2), (460, 27, 3)),
    ((11, 1), (455, 23)), ((11, 0), (450, 36, 6)), ((10, 2), (440, 33)),
    ((10, 1), (418, 39)), ((10, 0), (410, 48)),
)  # fmt: skip
# The CUDA builds PyTorch publishes wheels for (download.pytorch.org/whl/cuXYZ).
TORCH_CUDA_BUILDS = ((11, 8), (12, 1), (12, 4), (12, 6), (12, 8), (12, 9), (13, 0))
_CUDA_VERSION = re.compile(r"CUDA Version\s*:?\s*(\d+)\.(\d+)")


def version(text: str) -> tuple[int, ...] | None:
    """``"12.8"`` / ``"590.48.01"`` as numbers; None for anything else."""
    parts = re.findall(r"\d+", text or "")
    return tuple(int(p) for p in parts[:3]) if parts else None


def driver_cuda(facts: BoxFacts) -> tuple[tuple[int, int] | None, str]:
    """The driver's CUDA version and the driver version (for messages): nvidia-smi's
    own "CUDA Version" line, else the driver version's row of ``CUDA_MIN_DRIVER``."""
    driver = ""
    for line in facts.gpu_lines:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) >= 2 and version(cells[1]):
            driver = clip(cells[1], 40)
            break
    for line in facts.version_lines:
        found = _CUDA_VERSION.search(line)
        if found:
            return (int(found[1]), int(found[2])), driver
    have = version(driver)
    if have:
        for cuda, minimum in CUDA_MIN_DRIVER:
            if have >= minimum:
                return cuda, driver
    return None, driver


def vs(v: tuple[int, ...]) -> str:
    return ".".join(map(str, v))


def torch_index(cuda: tuple[int, int] | None) -> str:
    """PyTorch's wheel index for the newest CUDA build a driver of ``cuda`` runs."""
    fitting = [b for b in TORCH_CUDA_BUILDS if cuda is not None and b <= cuda]
    if not fitting:
        return ""
    major, minor = fitting[-1]
    return f"https://download.pytorch.org/whl/cu{major}{minor}"
