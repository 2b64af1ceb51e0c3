"""Preflight's ``arch`` check (U28, the architecture half): each GPU's compute capability
against the architectures the installed torch has kernels for, and one tiny CUDA op run
on each GPU. A card newer than the build (an sm_120 RTX 5090 under a cu124 wheel) passes
the driver check and then dies at the first forward pass with "no kernel image is
available for execution on the device"; this says so before the meter runs. Pure.

The facts come from ``preflight_check.py``'s ``arch_facts``: ``{"arch_list": ["sm_80",
…], "devices": [{"index", "name", "capability": [major, minor], "op": "ok" | error}]}``.
"""

from __future__ import annotations

import re
from typing import Any

from rgt_tui.domain.cuda_versions import CUDA_MIN_DRIVER, driver_cuda, vs
from rgt_tui.domain.preflight import TORCH_FIRST, BoxFacts, Check, CheckContext, clip

# The first PyTorch wheel index (its CUDA build) and torch release with kernels for a
# compute capability, newest first; a card takes the row of its major version whose
# minor is not above its own (cubins run on the same major, same or newer minor).
# Sources: PyTorch 2.7.0's release notes ("Blackwell support", CUDA 12.8 wheels with
# sm_100 and sm_120); the arch lists the wheels report (torch.cuda.get_arch_list()):
# torch 2.0's cu118 wheels list sm_90, while the cu124/cu126 wheels of 2.4–2.6 stop at
# sm_90 — the recordings in tests/fixtures/torch_arch (README.txt).
ARCH_WHEELS: tuple[tuple[tuple[int, int], str, str, str], ...] = (
    ((12, 0), "cu128", "2.7", "Blackwell: RTX 50xx, RTX PRO 6000"),
    ((10, 0), "cu128", "2.7", "Blackwell: B200, GB200"),
    ((9, 0), "cu118", "2.0", "Hopper: H100, H200, GH200"),
    ((8, 0), "cu118", "2.0", "Ampere/Ada: A100, A10, RTX 30xx/40xx, L4, L40"),
    ((7, 0), "cu118", "2.0", "Volta/Turing: V100, T4, RTX 20xx"),
)
NO_KERNEL = "no kernel image is available"
_ARCH = re.compile(r"(sm|compute)_(\d{1,6})([a-z]?)$", re.ASCII)  # a box's text: bounded


def sm(cap: tuple[int, int]) -> str:
    """A compute capability as torch names it: (12, 0) → ``sm_120``."""
    return f"sm_{cap[0]}{cap[1]}"


def parse_arch(name: str) -> tuple[str, tuple[int, int], bool] | None:
    """``sm_90a`` → ("sm", (9, 0), True); ``compute_120`` → ("compute", (12, 0), False)."""
    m = _ARCH.match(name.strip())
    if not m:
        return None
    n = int(m.group(2))
    return m.group(1), (n // 10, n % 10), bool(m.group(3))


def runs_on(arch_list: list[str], cap: tuple[int, int]) -> str | None:
    """How a build with ``arch_list`` runs on a card of ``cap``: "sm_86" (a cubin of the
    same major, minor not above the card's), "PTX compute_90" (JIT-compiled at the first
    start), or None (no kernel at all)."""
    cubins: list[tuple[int, str]] = []
    ptx = None
    for name in arch_list:
        parsed = parse_arch(name)
        if parsed is None:
            continue
        kind, (major, minor), specific = parsed
        if kind == "sm" and major == cap[0] and (minor == cap[1] if specific else minor <= cap[1]):
            cubins.append((minor, name))
        if kind == "compute" and not specific and (major, minor) <= cap:
            ptx = ptx or f"PTX {name}"
    return max(cubins)[1] if cubins else ptx


def wheel_for(cap: tuple[int, int]) -> tuple[str, str, str] | None:
    """The first wheel index, torch release and family for ``cap`` (ARCH_WHEELS)."""
    for (major, minor), wheel, release, family in ARCH_WHEELS:
        if cap[0] == major and cap[1] >= minor:
            return wheel, release, family
    return None


def _cap(device: dict[str, Any]) -> tuple[int, int] | None:
    cap = device.get("capability")
    if isinstance(cap, list) and len(cap) == 2 and all(isinstance(x, int) for x in cap):
        return cap[0], cap[1]
    return None


def _fix(ctx: CheckContext, facts: BoxFacts, caps: list[tuple[int, int]]) -> str:
    """Which wheels have the cards' kernels, and the driver they need."""
    parts = []
    for cap in sorted(set(caps), reverse=True):
        found = wheel_for(cap)
        if found is None:
            parts.append(f"{sm(cap)}: a torch wheel whose torch.cuda.get_arch_list() has {sm(cap)}")
            continue
        wheel, release, family = found
        need = f"{sm(cap)} ({family}) needs torch ≥ {release} from the {wheel}+ wheels: "
        need += (
            f"{ctx.interpreter.command} -m pip install 'torch>={release}' "
            f"--index-url https://download.pytorch.org/whl/{wheel}"
        )
        build = (int(wheel[2:-1]), int(wheel[-1]))
        cuda, _ = driver_cuda(facts)
        driver = next((d for c, d in CUDA_MIN_DRIVER if c == build), None)
        if cuda is not None and cuda < build and driver is not None:
            need += f" — and a driver ≥ {vs(driver)} (the box's supports CUDA {vs(cuda)})"
        parts.append(need)
    return "; ".join(parts) + " — or rent a card the installed torch was built for"


def check_arch(facts: BoxFacts, ctx: CheckContext) -> Check:
    """Every GPU torch can use has kernels in the installed build and ran one op (U28)."""
    torch = facts.torch or {}
    if facts.python is None or facts.torch is None:
        # Nothing ran: not a pass (as torch and storage say).
        return Check(
            "arch", False, "not checked: the run's python did not answer", "fix python first"
        )
    if not torch.get("importable"):
        # Nothing ran: not a pass (ux-d #6). A run whose cells do not use torch
        # acknowledges arch with torch (and driver, which fails the same way).
        return Check(
            "arch",
            False,
            "not checked: torch does not import here (see torch)",
            TORCH_FIRST.format("arch"),
        )
    arch = torch.get("arch")
    if not isinstance(arch, dict):
        return Check(
            "arch", False, "not checked: the box's answer has no architectures", "fix torch first"
        )
    arch_list = [a for a in arch.get("arch_list") or [] if isinstance(a, str)][:64]
    devices = [d for d in arch.get("devices") or [] if isinstance(d, dict)][:64]
    built = " ".join(clip(a, 20) for a in arch_list) or "none"
    version = clip(torch.get("version", "?"), 40)
    if not torch.get("available") or not devices:
        kind = "a CPU-only build" if not torch.get("cuda") else "CUDA unusable here (see gpu)"
        # Nothing was compared: not run, never read as passed (h523 #4: "ok arch" on a
        # box where no GPU check had run at all).
        return Check(
            "arch",
            True,
            f"no GPU torch can use ({kind}): no architecture to compare (U28)",
            ran=False,
        )
    bad: list[str] = []
    caps: list[tuple[int, int]] = []
    good: list[str] = []
    for d in devices:
        cap = _cap(d)
        card = f"GPU {d.get('index', '?')} {clip(d.get('name', '?'), 60)}"
        op = d.get("op")
        said = clip(op, 200) if isinstance(op, str) else "no answer"
        if cap is None:
            bad.append(
                f"{card}: its compute capability is unknown ({clip(d.get('capability_error', '?'), 120)})"
            )
            continue
        how = runs_on(arch_list, cap)
        if op == "ok":
            via = f" via {how}" if how and how.startswith("PTX") else ""
            good.append(f"{card} {sm(cap)}{via}")
            continue
        if how is None or NO_KERNEL in said:
            caps.append(cap)
            bad.append(
                f"{card} is {sm(cap)}, which torch {version} has no kernels for (it has: "
                f"{built}): its first CUDA op failed — {said}"
            )
        else:
            bad.append(f"{card} {sm(cap)}: one tiny CUDA op failed — {said}")
    if bad:
        fix = (
            _fix(ctx, facts, caps)
            if caps
            else "the op's error names the cause: another process's memory (see gpu-busy) or "
            f"a lost GPU (rgt-tui diagnose {ctx.host}) — re-rent the box if it stays"
        )
        return Check("arch", False, "; ".join(bad) + " (U28)", fix)
    return Check(
        "arch", True, f"{'; '.join(good)}: a CUDA op ran on each (torch {version} has {built})"
    )
