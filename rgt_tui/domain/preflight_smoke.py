"""Preflight's ``smoke`` check (GEN5/U10): what ``rgt_tui/scripts/smoke.sh`` reported of
one command run on the box as a cell runs, before the queue — its exit, its peak host
memory and VRAM, a CUDA out-of-memory error (``gpu_faults.cuda_oom``) or a cgroup OOM
kill (U9) — as a check with its fix. Pure: the box's lines are hostile input.
"""

from __future__ import annotations

from dataclasses import dataclass

from rgt_tui.domain.gpu_faults import cuda_oom, size_bytes
from rgt_tui.domain.preflight import Check, clip
from rgt_tui.domain.text import is_digits
from rgt_tui.domain.units import fmt_bytes

SMOKE_DEFAULT_S = 300  # a smoke command's bound when no smoke_seconds is set
# The ``{out}`` root of the first cell a ``smoke_seconds`` smoke runs: scratch that
# smoke.sh empties before and after, never the host's durable_dir. A smoke that saved a
# checkpoint into the cell's real {out} left the real run to resume from it — a 7 s
# "done" cell (s42's second hour).
SMOKE_OUT_DIR = "~/.rgt/smoke/out"
MIB = 1 << 20


@dataclass(frozen=True)
class SmokeFacts:
    """What smoke.sh said."""

    ended: bool = False
    error: str = ""  # smoke.sh itself could not run the smoke
    rc: int | None = None
    timed_out: bool = False
    seconds: int | None = None
    limit: int | None = None
    samples: int = 0
    rss_kib: int = 0  # peak of the tree's summed VmHWM
    smi: str = ""
    vram_tree_mib: int = 0  # peak of what nvidia-smi listed for the tree's pids
    gpu_used_mib: int = 0  # peak of the GPUs' memory used in all
    gpu_base_mib: int = 0  # ... before the smoke started
    gpu_total_mib: int = 0
    oom_kills: tuple[str, str] | None = None  # the cgroup's counter at start and end
    oom_lines: tuple[str, ...] = ()
    log_tail: tuple[str, ...] = ()
    worker_line: str = ""  # under torchrun: the worker's last line before it was reported


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if is_digits(text) else None


def parse_smoke(text: str) -> SmokeFacts:
    """smoke.sh's ``key<TAB>value`` lines as facts (unknown or malformed: skipped)."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, _, value = line.partition("\t")
        if key in ("oom", "log", "oomrec"):
            multi.setdefault(key, []).append(value)
        else:
            single.setdefault(key, value)
    num = lambda key: _int(single.get(key, "")) or 0  # noqa: E731
    records = dict((r.split(" ", 1) + [""])[:2] for r in multi.get("oomrec", [])[:4] if " " in r)
    oom_kills = (records["start"], records["end"]) if {"start", "end"} <= set(records) else None
    return SmokeFacts(
        ended=single.get("end") == "1",
        error=clip(single.get("error", "")),
        rc=_int(single.get("rc", "")),
        timed_out=single.get("timed_out") == "1",
        seconds=_int(single.get("seconds", "")),
        limit=_int(single.get("limit", "")),
        samples=num("samples"),
        rss_kib=num("rss_kib"),
        smi=clip(single.get("smi", "")),
        vram_tree_mib=num("vram_tree_mib"),
        gpu_used_mib=num("gpu_used_mib"),
        gpu_base_mib=num("gpu_base_mib"),
        gpu_total_mib=num("gpu_total_mib"),
        oom_kills=oom_kills,
        # Long enough for torch's whole OOM line: its figures come after 300 characters.
        oom_lines=tuple(clip(x, 1200) for x in multi.get("oom", [])[:3]),
        log_tail=tuple(clip(x, 200) for x in multi.get("log", [])[-20:]),
        worker_line=clip(single.get("worker", ""), 300),
    )


def peaks(facts: SmokeFacts, oom_held: str | None = None) -> str:
    """The recorded peaks: VRAM (or "no GPU") and host memory. ``oom_held``: what torch's
    OOM line says the process held, which stands when the samples saw less: the 1 s
    sampler misses a process that allocates and fails within a second (a real H200
    smoke held 80.51 GiB and no sample saw it, tests/fixtures/h200/smoke_oom.txt)."""
    if facts.smi and oom_held and facts.vram_tree_mib * MIB < (size_bytes(oom_held) or 0):
        vram = f"it held {oom_held} of VRAM when it ran out (torch's count; the samples missed it)"
    elif not facts.smi:
        vram = "no GPU (no nvidia-smi on the box)"
    elif facts.vram_tree_mib:
        vram = f"peak VRAM {fmt_bytes(facts.vram_tree_mib * MIB)}"
        if facts.gpu_total_mib:
            vram += f" of the GPUs' {fmt_bytes(facts.gpu_total_mib * MIB)}"
    elif facts.gpu_used_mib > facts.gpu_base_mib:
        # nvidia-smi lists host pids a container cannot see: the GPUs' own count rose.
        rise = facts.gpu_used_mib - facts.gpu_base_mib
        vram = f"GPU memory used rose by {fmt_bytes(rise * MIB)} (peak {fmt_bytes(facts.gpu_used_mib * MIB)}"
        vram += f" of {fmt_bytes(facts.gpu_total_mib * MIB)})" if facts.gpu_total_mib else ")"
    else:
        vram = "no VRAM used by it"
    return f"{vram}; peak host memory {fmt_bytes(facts.rss_kib * 1024)} (resident, its processes)"


def check_smoke(facts: SmokeFacts, what: str, host: str) -> Check:
    """``smoke``: the smoke ``what`` ran without a CUDA OOM and exited 0 (or was still
    running at its bound), with its peaks recorded in the detail."""
    if facts.error or not facts.ended:
        return Check(
            "smoke",
            False,
            f"the smoke of {what} did not run: {facts.error or 'its report was cut short'}",
            f"run rgt-tui preflight {host} again; see ~/.rgt/smoke on the box",
        )
    ran = f"{facts.seconds}s" if facts.seconds is not None else "?"
    oom = next((o for o in (cuda_oom(line) for line in facts.oom_lines) if o), None)
    measured = peaks(facts, oom.in_use if oom is not None else None)
    if oom is not None:
        tried = f" (tried to allocate {oom.tried}" if oom.tried else ""
        tried += f" of a {oom.total} card)" if oom.tried and oom.total else (")" if tried else "")
        return Check(
            "smoke",
            False,
            f"CUDA out of memory in the smoke of {what} after {ran}{tried} (GEN5/U10): "
            f"{oom.line}; {measured}",
            oom.advice(),
        )
    if facts.timed_out:
        return Check(
            "smoke",
            True,
            f"{what} ran {ran} without failing (stopped at smoke_seconds {facts.limit}); {measured}",
        )
    if facts.rc == 0:
        return Check("smoke", True, f"{what} exited 0 after {ran}; {measured}")
    last = "last lines: " + (" | ".join(facts.log_tail[-3:]) or "no output")
    if facts.worker_line:
        # torchrun's banner ends the log; a worker's own error is the cause (s18b #7).
        last = f"a worker's error: {facts.worker_line}"
    killed = facts.oom_kills is not None and facts.oom_kills[0] != facts.oom_kills[1]
    if killed or facts.rc == 137:
        why = (
            "the cgroup's oom_kill counter rose: killed for host memory (U9)"
            if killed
            else ("killed (exit 137: SIGKILL, often the cgroup OOM killer, U9)")
        )
        return Check(
            "smoke",
            False,
            f"{what} was {why} after {ran}; {measured}; {last}",
            "fewer DataLoader workers (num_workers) or less memory per worker, or a box "
            "with more RAM",
        )
    return Check(
        "smoke",
        False,
        f"{what} exited {facts.rc} after {ran}; {last}; {measured}",
        "run it by hand in the workdir on the box and fix it (its log: "
        "~/.rgt/smoke/cells/smoke.log); or launch anyway: acknowledge the smoke check",
    )
