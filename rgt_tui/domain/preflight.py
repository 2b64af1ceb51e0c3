"""Preflight's model: what the box said (``BoxFacts``, parsed from the box script's
``key<TAB>value`` lines as hostile input) and the report (``Check``, ``PreflightReport``).

The checks themselves are ``preflight_checks``; the box side is
``rgt_tui/scripts/preflight.sh`` with ``preflight_check.py`` run by the run's own
interpreter; ``services.preflight`` runs them. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.config import Readiness
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.run_interpreter import RunInterpreter
from rgt_tui.domain.text import is_digits

MARKER = "RGT-PREFLIGHT "  # the python program's answer lines (preflight_check.py)
MAX_DETAIL = 300  # the box's text shown in a check: one line, bounded
# The fix of a check torch's failure keeps from running: a run that does not use torch
# acknowledges it with torch ("fix torch first" alone read circular once torch was
# acknowledged on purpose: hour s19b #9).
TORCH_FIRST = "fix torch first — or, for a run that does not use torch, acknowledge {} with torch"


def clip(text: object, limit: int = MAX_DETAIL) -> str:
    """The box's text as one bounded line (control characters dropped)."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Check:
    """One preflight check (its name one of ``domain.config.PREFLIGHT_CHECKS``): passed or
    not, what was seen, and, when it failed, what to do about it."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    # False: the check could not run here (a smoke while a cell runs, one only a launch
    # knows): not failed, and never shown as passed ("A check that could not run never
    # reads as passed", docs/ready.md; hour s18b #5 read "ok smoke … not run").
    ran: bool = True
    # The failure is a fact, not a doubt (a rendezvous address rank 0 does not hold: the
    # job can only wait out torchrun's timeout, billing every box): no acknowledgement
    # lets a launch go (hour s22b #2).
    certain: bool = False


@dataclass(frozen=True)
class CheckContext:
    """What the checks need besides the box's facts: the host's name, profile, budget,
    the interpreter the run uses, and what the durable dir must outlive
    (``PreflightScope.outlives``); ``cells``: how many cells the launch will still run
    (None: not known, as for ``rgt-tui preflight`` alone: one is budgeted, U6);
    ``data_dir``: the host's, where the run reads its data (U8); ``interruptible``: the
    host's own key."""

    host: str
    profile: Profile
    ready: Readiness
    interpreter: RunInterpreter
    workdir: str
    durable_dir: str
    outlives: str = ""
    cells: int | None = None
    data_dir: str | None = None
    # The host may be preempted (``interruptible``): a durable dir in memory is then lost
    # with the cell it was to resume.
    interruptible: bool = False
    # The host has a teardown command: that, not the profile's by-hand verb, is what tears
    # it down (h521 #11: "teardown (manual (provider console or API))" beside one).
    teardown_command: bool = False

    @property
    def teardown_words(self) -> str:
        """How this host is torn down, as the durable check says it."""
        return (
            "the host's teardown command" if self.teardown_command else self.profile.teardown_verb
        )


@dataclass(frozen=True)
class PreflightReport:
    """Every check of one host; ``code``: the box's code identity when it is in sync (the
    identity a launch records with each cell); ``note``: why some checks were not run
    (``PreflightScope.note``: a Slurm login node's)."""

    host: str
    checks: tuple[Check, ...]
    code: CodeIdentity | None = None
    note: str = ""
    # The box's sync record the code check read (``BoxTree.record_stamp``; "" unchecked):
    # the launch refuses to start when a sync has replaced it since.
    code_stamp: str = ""
    # What the host's queue file holds that a launch refuses (``queue check``'s words),
    # read beside the checks where a screen shows no queue check of its own (the TUI's P).
    queue_problems: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[Check, ...]:
        """The checks that did not pass."""
        return tuple(c for c in self.checks if not c.ok)

    def unacknowledged(self, acks: Iterable[str]) -> tuple[Check, ...]:
        """The failed checks whose names are not in ``acks``, and every certain one (what
        refuses a launch)."""
        acked = set(acks)
        return tuple(c for c in self.failed if c.name not in acked or c.certain)

    def check(self, name: str) -> Check | None:
        """The check called ``name`` (None when it was not run, as ``code`` without a
        ``code`` key)."""
        return next((c for c in self.checks if c.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON data (``rgt-tui preflight --json``)."""
        return {
            "host": self.host,
            "ok": not self.failed,
            "checks": [
                # ran: false, a check that could not run (ok then says only "not failed")
                {"name": c.name, "ok": c.ok, "ran": c.ran, "detail": c.detail, "fix": c.fix}
                for c in self.checks
            ],
            "code": self.code.record() if self.code is not None else None,
            "note": self.note,
        }


@dataclass(frozen=True)
class GpuHolder:
    """A process nvidia-smi lists on a GPU: its memory, name and ancestors on the box
    (``chain``: itself, its parent, …; empty when the box has no such process: another
    container's, or it ended)."""

    pid: int
    used_mib: float | None
    comm: str = ""
    chain: tuple[int, ...] = ()


@dataclass(frozen=True)
class BoxFacts:
    """What the box's preflight script printed, parsed."""

    ended: bool = False  # the script's last line came: nothing was cut off
    boot: str = ""
    workdir_ok: bool = False
    python: dict[str, Any] | None = None  # preflight_check.py's "python" answer
    # The console script the run starts, as found on the box (``rgt_script_python`` in
    # preflight.sh): found, ran, path, shebang ("" when it is no Python script).
    script: dict[str, Any] | None = None
    torch: dict[str, Any] | None = None  # ... and its "torch" answer
    storage: dict[str, Any] | None = None  # ... and its "storage" answer (U8)
    routes: dict[str, Any] | None = None  # ... and its "routes" answer (generic-ssh §3)
    home: str = ""  # the box's $HOME
    py_rc: int | None = None
    py_tail: tuple[str, ...] = ()  # the interpreter's other output (its error)
    smi: str = ""  # nvidia-smi's path; "" when the box has none
    gpu_lines: tuple[str, ...] = ()
    gpu_rc: int | None = None
    version_lines: tuple[str, ...] = ()
    apps_rc: int | None = None
    app_lines: tuple[str, ...] = ()
    holders: tuple[GpuHolder, ...] = ()
    cell_pids: frozenset[int] = frozenset()
    durable_real: str = ""
    durable_exists: bool = False
    durable_at: str = ""  # the durable dir, or its nearest existing parent
    durable_blocked: str = ""  # a path on the way there that is there but no folder
    durable_writable: bool = True  # this login may write durable_at (access test only)
    tmpdir: str = ""
    df_bytes: str = ""
    df_kib: str = ""
    df_inodes: str = ""
    fstype: str = ""
    checkpoint: tuple[float, int, str] | None = None  # mtime, size, path of the newest
    tmux: str = ""
    tmux_version: str = ""


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if is_digits(text) else None


def _answer(line: str) -> tuple[str, dict[str, Any]] | None:
    """One ``RGT-PREFLIGHT kind {json}`` line, or None for anything else."""
    if not line.startswith(MARKER):
        return None
    kind, _, payload = line[len(MARKER) :].partition(" ")
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    return (kind, data) if isinstance(data, dict) else None


def _holders(app_lines: list[str], ancestry: dict[int, tuple[str, tuple[int, ...]]]) -> tuple:
    found: list[GpuHolder] = []
    for line in app_lines:
        pid_text, _, memory = line.partition(",")
        pid = _int(pid_text)
        if pid is None:
            continue
        # A whole number of MiB (with or without its unit), no larger than a GPU holds:
        # anything else is unknown, never read by its first digits (h503 #5: "1e308" read
        # as 1308 MiB, "99999999999" as 93 PiB).
        whole = re.fullmatch(r"\s*(\d{1,8})(?:\s*MiB)?\s*", memory)
        used: float | None = float(whole.group(1)) if whole else None
        comm, chain = ancestry.get(pid, ("", ()))
        found.append(GpuHolder(pid, used, comm, chain))
    return tuple(found)


def parse_box_facts(text: str) -> BoxFacts:
    """The box script's lines as facts (pure; unknown keys and malformed values are
    skipped, never fatal: the box's text is hostile)."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    answers: dict[str, dict[str, Any]] = {}
    py_tail: list[str] = []
    ancestry: dict[int, tuple[str, tuple[int, ...]]] = {}
    cells: set[int] = set()
    for line in text.splitlines():
        key, _, value = line.partition("\t")
        if key == "py":
            answer = _answer(value)
            if answer is not None:
                answers.setdefault(answer[0], answer[1])
            elif value.strip():
                py_tail.append(clip(value))
        elif key in ("gpu", "ver", "app", "dfb", "dfk", "dfi", "ckpt"):
            multi.setdefault(key, []).append(value)
        elif key == "anc":
            pid_text, _, rest = value.partition("\t")
            comm, _, chain = rest.partition("\t")
            pid = _int(pid_text)
            if pid is not None:
                pids = tuple(p for p in (_int(x) for x in chain.split()) if p is not None)
                ancestry[pid] = (clip(comm, 64) if comm != "-" else "", pids)
        elif key == "cell":
            pid = _int(value)
            if pid is not None:
                cells.add(pid)
        else:
            single.setdefault(key, value)
    checkpoint = None
    for line in multi.get("ckpt", [])[:1]:
        parts = line.split(" ", 2)
        if len(parts) == 3 and is_digits(parts[1]):
            try:
                checkpoint = (float(parts[0]), int(parts[1]), clip(parts[2]))
            except ValueError:
                checkpoint = None
    first = lambda key: multi.get(key, [""])[0]  # noqa: E731
    return BoxFacts(
        ended=single.get("end") == "1",
        boot=clip(single.get("boot", ""), 64),
        workdir_ok=single.get("workdir") == "1",
        python=answers.get("python"),
        script=answers.get("script"),
        torch=answers.get("torch"),
        storage=answers.get("storage"),
        routes=answers.get("routes"),
        home=clip(single.get("home", ""), 4096),
        py_rc=_int(single.get("py_rc", "")),
        py_tail=tuple(py_tail[-5:]),
        smi=clip(single.get("smi", "")),
        gpu_lines=tuple(multi.get("gpu", [])[:64]),
        gpu_rc=_int(single.get("gpu_rc", "")),
        version_lines=tuple(multi.get("ver", [])[:16]),
        apps_rc=_int(single.get("apps_rc", "")),
        app_lines=tuple(multi.get("app", [])[:256]),
        holders=_holders(multi.get("app", [])[:256], ancestry),
        cell_pids=frozenset(cells),
        durable_real=clip(single.get("durable_real", "")),
        durable_exists=single.get("durable_exists") == "1",
        durable_at=clip(single.get("durable_at", "")),
        durable_blocked=clip(single.get("durable_blocked", "")),
        durable_writable=single.get("durable_writable") != "0",
        tmpdir=clip(single.get("tmpdir", "")),
        df_bytes=first("dfb"),
        df_kib=first("dfk"),
        df_inodes=first("dfi"),
        fstype=clip(single.get("fstype", ""), 64),
        checkpoint=checkpoint,
        tmux=clip(single.get("tmux", "")),
        tmux_version=clip(single.get("tmux_version", ""), 100),
    )
