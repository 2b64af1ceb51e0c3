"""Why a queued run vanished: the four causes of U3, each with its evidence (pure).
One module past 450 lines on purpose: the causes are weighed against each other, and
read apart they would each need the others' evidence.

A cell that stopped without an end record, or that a signal killed, died of one of four
things, and the fix differs for each (gotchas U3): the box rebooted, the cgroup's OOM
killer took it (U9), the SSH session it hung on closed, or someone killed it. The facts
that tell them apart are recorded on the box: the boot id at the cell's start and now,
the cgroup's oom_kill counter at its start and end, the runner's detach method, and the
kernel log when it is readable. ``diagnose`` weighs them and names the next step.

An interruptible box's preemption, once the TUI or ``watch`` named it (issue 40), is a
fifth: the box went silent past its grace (vast.ai keeps the boot id and kills every
process at once, which reads as a manual kill) or came back from a new start (which
reads as a reboot). ``with_preemption`` names it instead, with the move or relaunch.

Two GPU faults come before those four (gotchas U22, GEN5/U10): a dead GPU (an Xid 48/79
line, nvidia-smi saying a GPU is lost, uncorrected ECC errors this boot) ends a run
however it was started, and the fix is another box; a CUDA out-of-memory error (torch's
traceback line in the cell's log) is the run's own, told apart from the cgroup's OOM
kill (exit 137, no traceback, the oom_kill counter), each with its own fix.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from rgt_tui.domain.gpu_faults import CudaOom, cuda_oom, dead_gpu_signs
from rgt_tui.domain.health import spare_move
from rgt_tui.domain.out_disk import OutDisk, disk_full_words
from rgt_tui.domain.preemption import Preemption, preemption_line
from rgt_tui.domain.queue_records import CellAttempt, RunnerLaunch
from rgt_tui.domain.queue_state import (
    FAILED,
    INTERRUPTED,
    PENDING,
    REBOOTED,
    STOPPED,
    CellView,
    QueueView,
    nothing_left_to_run,
    queue_is,
)
from rgt_tui.domain.units import fmt_duration

REBOOT, OOM, HANGUP, MANUAL_KILL = "reboot", "OOM kill", "hang-up", "manual kill"
DEAD_GPU, CUDA_OOM = "dead GPU", "CUDA out of memory"
PREEMPTED = "preempted"
KILL_REMAINS = "a kill is what remains"
DISK_FULL = "disk full"
CAUSES = (DEAD_GPU, REBOOT, OOM, HANGUP, MANUAL_KILL, CUDA_OOM, PREEMPTED, DISK_FULL)
YES, NO, UNKNOWN, LIKELY = "yes", "no", "unknown", "likely"
SIGNALS = {129: "SIGHUP", 130: "SIGINT", 137: "SIGKILL", 143: "SIGTERM"}
# The signals a program's own fault raises (128 + the signal): a crash, not a vanished run
# (h552 #1: a segfault read "manual kill" and sent the user after a pkill), each with where
# it most often comes from in a training run.
CRASHES = {
    132: ("SIGILL", "an instruction this CPU lacks: a wheel or binary built for another CPU"),
    134: ("SIGABRT", "an abort in native code: a C++, CUDA or NCCL assertion (its log's last "
          "lines say which)"),
    135: ("SIGBUS", "in a container most often /dev/shm too small for DataLoader workers "
          "(num_workers=0 confirms it; a larger shm, or fewer workers, fixes it)"),
    136: ("SIGFPE", "an integer division by zero in native code"),
    139: ("SIGSEGV", "a segfault in native code: a C extension, or a CUDA, NCCL or driver "
          "library that does not match the others"),
}  # fmt: skip


@dataclass(frozen=True)
class BoxFacts:
    """What the box showed when the diagnosis ran."""

    boot_id: str
    uptime_s: float | None = None
    oom_kill_now: int | None = None  # the cgroup's counter now; None: not readable
    dmesg: str = "missing"  # ok | denied | missing
    dmesg_lines: tuple[str, ...] = ()  # OOM-killer lines of the kernel log
    session_name: str = ""
    session_present: bool = False
    xid_lines: tuple[str, ...] = ()  # NVRM Xid lines of the kernel log (U22)
    gpu_lines: tuple[str, ...] = ()  # nvidia-smi index, uncorrected volatile ECC (or its error)
    cuda_oom: Mapping[str, str] = field(default_factory=dict)  # cell → its CUDA OOM log line
    # The most VRAM the monitor saw in use on one GPU and that card's total (bytes), when
    # this diagnosis has the samples (GEN5): how close the run already was to the card.
    vram_peak: tuple[int, int] | None = None
    spare: tuple[str, ...] = ()  # the host's spare hosts (issue 40): a dead GPU's move (U22)
    # torchrun cells whose worker a signal killed (torchrun's summary, issue 41), by cell:
    # torchrun itself exits 1, so the signal is weighed as the cell's own.
    worker_signals: Mapping[str, int] = field(default_factory=dict)
    # Failed cells' disks (U6): a log's ENOSPC line, and the disk under each one's {out}.
    nospace: Mapping[str, str] = field(default_factory=dict)
    out_disks: Mapping[str, OutDisk] = field(default_factory=dict)


@dataclass(frozen=True)
class Evidence:
    """What the records say about one cause."""

    cause: str
    verdict: str  # yes | no | unknown | likely
    detail: str


@dataclass(frozen=True)
class Diagnosis:
    """The cause of the latest vanished run, the evidence for each cause, the next step."""

    host: str
    subject: str | None  # "cell 3 (name)", "the runner", or None when nothing vanished
    cause: str | None  # one of CAUSES, or None
    summary: str
    evidence: tuple[Evidence, ...] = ()
    next_step: str = ""
    resume_index: int | None = None
    cell: str | None = None  # the vanished cell's name; None for the runner or nothing
    # The subject ended with its own error code: named, with its log, but no run vanished.
    by_itself: bool = False

    @property
    def found(self) -> bool:
        """A run vanished or was ended (a kill, a fault, the scheduler): `diagnose`'s exit
        1. Nothing vanished, or a cell failed by itself: 0, as the summary says."""
        return self.subject is not None and not self.by_itself


def _skipped_before(view: QueueView, index: int) -> str:
    """``; cells 1 (b), 3 (d) before it never ran: …`` when a queue that no longer runs
    left cells before ``index`` pending (a retry's runner runs only the retried cells, and
    one appended to it after them): a relaunch from ``index`` would leave them again."""
    if view.runner_alive:
        return ""
    waiting = [c for c in view.cells if c.status == PENDING and c.index < index]
    if not waiting:
        return ""
    named = ", ".join(f"{c.index} ({c.name})" for c in waiting)
    cells = "cells" if len(waiting) > 1 else "cell"
    return (
        f"; {cells} {named} before it never ran: a launch from cell {index} leaves them, "
        f"rgt-tui launch {view.host} --start {waiting[0].index} runs from them (the plan lists "
        "every cell it runs)"
    )


def _launch_for(ts: int, launches: tuple[RunnerLaunch, ...]) -> RunnerLaunch | None:
    """The launch whose runner started the attempt at ``ts``."""
    before = [launch for launch in launches if launch.ts <= ts]
    return before[-1] if before else (launches[-1] if launches else None)


def _reboot(boot_at_start: str, facts: BoxFacts) -> Evidence:
    up = f"; the box has been up {fmt_duration(facts.uptime_s)}" if facts.uptime_s else ""
    if boot_at_start != facts.boot_id:
        return Evidence(
            REBOOT,
            YES,
            f"boot id at start {boot_at_start[:8]}…, now {facts.boot_id[:8]}…: the box "
            f"rebooted since, and every tmux/nohup job died with it{up}",
        )
    return Evidence(REBOOT, NO, f"same boot id as at the start ({facts.boot_id[:8]}…){up}")


def _oom(attempt: CellAttempt | None, rebooted: bool, facts: BoxFacts) -> Evidence:
    log = _kernel_log(attempt, facts)
    if rebooted:
        return Evidence(
            OOM,
            UNKNOWN,
            "the oom_kill counter and the kernel log restart at boot, so the old boot's "
            "kills cannot be counted" + (f"; {log[1]}" if log[1] else ""),
        )
    before = attempt.oom_at_start if attempt else None
    after = None
    if attempt is not None:
        after = attempt.oom_at_end if attempt.ended else facts.oom_kill_now
    if log[0] == YES:
        return Evidence(OOM, YES, log[1])
    if before is not None and after is not None:
        if after > before:
            return Evidence(
                OOM,
                YES,
                f"the cgroup's oom_kill counter rose {before} → {after} while it ran"
                + (f"; {log[1]}" if log[1] else ""),
            )
        return Evidence(
            OOM,
            NO,
            f"the cgroup's oom_kill counter did not move ({before} → {after})"
            + (f"; {log[1]}" if log[1] else ""),
        )
    why = (
        "no counter was recorded when it started"
        if attempt is None or before is None
        else "the counter is not readable now"
    )
    return Evidence(OOM, UNKNOWN, f"cannot compare the cgroup's oom_kill counter: {why}; {log[1]}")


def _kernel_log(attempt: CellAttempt | None, facts: BoxFacts) -> tuple[str, str]:
    """(YES when the kernel log names this pid as OOM-killed else "", a sentence)."""
    if facts.dmesg == "denied":
        return (
            "",
            "dmesg is denied to this user (kernel.dmesg_restrict), so the kernel log was not read",
        )
    if facts.dmesg != "ok":
        return "", "dmesg is not available on the box"
    if not facts.dmesg_lines:
        return "", "the kernel log has no OOM-killer lines"
    count = len(facts.dmesg_lines)
    lines = f"{count} OOM-killer line{'s' if count != 1 else ''}"
    if attempt is None:
        return "", f"the kernel log has {lines}, and no pid of this attempt to look for"
    for line in facts.dmesg_lines:
        if f"process {attempt.pid} " in line or f"process {attempt.pid}(" in line:
            return YES, f"the kernel log names its pid: {line.strip()}"
    # Not quoted: another process's kill (an earlier cell's, or on a shared host another
    # container's) read as this cell's evidence (h583 #3).
    return "", f"none of the kernel log's {lines} names its pid {attempt.pid}"


def _hangup(launch: RunnerLaunch | None, facts: BoxFacts, exit_code: int | None) -> Evidence:
    if launch is None:
        return Evidence(HANGUP, UNKNOWN, "no launch record: how it was started is unknown")
    if launch.detach == "none":
        return Evidence(
            HANGUP,
            YES,
            "the runner ran in the foreground of a login session (not tmux, not setsid "
            "nohup): when that connection dropped it got SIGHUP"
            + (" — and it ended with SIGHUP (exit 129)" if exit_code == 129 else ""),
        )
    where = (
        f"tmux session {facts.session_name} is {'still open' if facts.session_present else 'gone now'}"
        if launch.detach == "tmux"
        else "setsid nohup, outside any login session"
    )
    return Evidence(
        HANGUP,
        NO,
        f"it was detached ({launch.detach}: {where}), so a dropped SSH connection cannot stop it",
    )


def _manual(
    exit_code: int | None, others: list[Evidence], detach: str | None, worker: bool = False
) -> Evidence:
    """``worker``: the code is 128 + the signal torchrun's summary says killed its worker."""
    ruled_out = all(e.verdict == NO for e in others)
    code = (
        f"torchrun's summary: its worker's exitcode {128 - (exit_code or 128)}"
        if worker
        else f"exit {exit_code}"
    )
    if exit_code == 143:
        return Evidence(
            MANUAL_KILL,
            YES,
            f"{code} = SIGTERM, kill/pkill's default signal: something stopped it on purpose",
        )
    if exit_code == 137:
        detail = (
            f"{code} = SIGKILL: `kill -9` and the kernel's OOM killer end a process the same "
            "way, so the exit code alone cannot tell them apart"
        )
    elif exit_code is not None and worker:
        detail = f"{code} = signal {exit_code - 128} ({SIGNALS.get(exit_code, 'by a signal')})"
    elif exit_code is not None:
        detail = f"it ended with {SIGNALS.get(exit_code, f'exit {exit_code}')}"
    else:
        detail = "it left no end record: its runner died with it" + (
            " (tmux kill-session, or kill/pkill matching more than intended, U4)" if detach else ""
        )
    if ruled_out:
        return Evidence(
            MANUAL_KILL,
            LIKELY,
            detail + f"; no reboot, no OOM kill and no hang-up: {KILL_REMAINS}",
        )
    return Evidence(MANUAL_KILL, UNKNOWN, detail)


def _dead_gpu(facts: BoxFacts) -> Evidence | None:
    signs = dead_gpu_signs(facts.xid_lines, facts.gpu_lines)
    if not signs:
        return None
    return Evidence(DEAD_GPU, YES, "; ".join(signs) + ": the GPU is failing (hardware, U22)")


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _cuda_oom(oom: CudaOom, facts: BoxFacts) -> Evidence:
    sizes = []
    if oom.tried:
        sizes.append(f"it tried to allocate {oom.tried}")
    if facts.vram_peak is not None:
        peak, total = facts.vram_peak
        sizes.append(f"the samples saw up to {_gib(peak)} of the card's {_gib(total)} in use")
    elif oom.total:
        sizes.append(f"on a {oom.total} card")
    detail = f"its log: {oom.line}"
    if sizes:
        detail += " — " + ", ".join(sizes)
    return Evidence(
        CUDA_OOM,
        YES,
        detail + "; torch raised it itself (a traceback, not exit 137): GPU memory, not the "
        "cgroup's RAM",
    )


def _next_step(
    cause: str,
    host: str,
    index: int | None,
    cell: str | None = None,
    spare: tuple[str, ...] = (),
    oom: CudaOom | None = None,
    *,
    nothing_left: bool = False,
) -> str:
    if nothing_left:
        # Every cell done or moved away: a relaunch runs done work, or nothing (h541 #6).
        # What the cause asks of the box still stands; no "relaunch … reloads" around it
        # (review h544 #1: the words were put inside the relaunch sentences).
        left = (
            "do not relaunch: nothing is left to run here (its cells are done, or moved: "
            f"rgt-tui queue show {host} says where each went)"
        )
        return {
            DEAD_GPU: "stop this instance: a rental's card cannot be reseated, so do not "
            f"debug code for a hardware fault; {left}",
            CUDA_OOM: f"{(oom or CudaOom('', None, None)).advice()}; {left}",
            REBOOT: "find out why the box rebooted (provider maintenance, spot preemption) "
            f"and check that durable_dir survived; {left}",
            OOM: f"the cgroup ran out of host RAM, not GPU memory (U9); {left}",
            HANGUP: "launch detached next time (tmux, else setsid nohup), never from a "
            f"foreground SSH command; {left}",
            MANUAL_KILL: "find what killed it (a pkill pattern broader than meant, U4; a "
            f"teammate; a tmux kill-session); {left}",
        }[cause]
    # Neutral words: the CLI adds its flag (--start N), the TUI its key (L).
    resume = f"relaunch from cell {index}" if index is not None else "relaunch the queue"
    return {
        DEAD_GPU: "re-rent the box: stop this instance, rent another, and "
        f"{resume} there (each cell reloads its latest checkpoint) — a rental's card cannot "
        "be reseated, so do not debug code for a hardware fault" + spare_move(cell, spare),
        CUDA_OOM: f"{(oom or CudaOom('', None, None)).advice()}; then {resume}",
        REBOOT: f"{resume} (each cell reloads its latest checkpoint); find out why the box "
        "rebooted (provider maintenance, spot preemption) and check that durable_dir survived",
        OOM: "the cgroup ran out of host RAM, not GPU memory (U9): lower DataLoader num_workers or what each worker holds, or rent "
        "more memory — do not shrink the batch just to fit, that changes the experiment; then "
        f"{resume}",
        HANGUP: f"{resume}, detached (tmux, else setsid nohup) — never from a foreground SSH command",
        MANUAL_KILL: "find what killed it (a pkill pattern broader than meant, U4; a teammate; a "
        f"tmux kill-session), then {resume}",
    }[cause]


def diagnose(
    view: QueueView,
    launches: tuple[RunnerLaunch, ...],
    attempts: Mapping[str, tuple[CellAttempt, ...]],
    facts: BoxFacts,
) -> Diagnosis:
    """Name the cause of the latest vanished cell (or runner), with evidence for all four."""
    host = view.host

    def exit_of(cell: CellView) -> int | None:
        """The cell's exit code, or a torchrun worker's death by a signal as one."""
        signal = facts.worker_signals.get(cell.name) if cell.status == FAILED else None
        return 128 + signal if signal else cell.exit_code

    vanished = [
        c for c in view.cells
        if c.status == INTERRUPTED
        or (c.status == FAILED and (exit_of(c) or 0) >= 128 and exit_of(c) not in CRASHES)
    ]  # fmt: skip
    if vanished:
        cell = max(vanished, key=lambda c: (c.started_at or 0, c.index))
        attempt = attempts[cell.name][-1]
        subject = f"cell {cell.index} ({cell.name})"
        return _weigh(
            host,
            subject,
            attempt,
            attempt.boot_id,
            _launch_for(attempt.ts, launches),
            facts,
            exit_of(cell),
            cell.index,
            cell.name,
            worker=exit_of(cell) != cell.exit_code,
        )
    if view.state in (STOPPED, REBOOTED) and view.launch is not None:
        launch = view.launch
        return _weigh(
            host, "the runner", None, launch.boot_id, launch, facts, None, view.resume_index,
            nothing_left=nothing_left_to_run(view),
        )  # fmt: skip
    failed = [c for c in view.cells if c.status == FAILED]
    if failed:
        cell = max(failed, key=lambda c: (c.started_at or 0, c.index))
        subject = f"cell {cell.index} ({cell.name})"
        gpu = _dead_gpu(facts)
        oom = cuda_oom(facts.cuda_oom.get(cell.name, ""))
        if gpu is not None or oom is not None:
            found = gpu if gpu is not None else _cuda_oom(oom, facts)  # type: ignore[arg-type]
            return Diagnosis(
                host,
                subject,
                found.cause,
                f"{subject} exited {cell.exit_code}: {found.cause}",
                (found,),
                _next_step(found.cause, host, cell.index, cell.name, facts.spare, oom),
                cell.index,
            )
        full = disk_full_words(facts.out_disks.get(cell.name), facts.nospace.get(cell.name, ""))
        if full is not None:  # "exited 1 by itself — fix the cause" hid a full disk (U6)
            disk = facts.out_disks.get(cell.name)
            where = disk.mount if disk is not None else "the disk under its {out}"
            return Diagnosis(
                host,
                subject,
                DISK_FULL,
                f"{subject} exited {cell.exit_code}: {full}",
                (Evidence(DISK_FULL, YES, full),),
                f"free space on {where} (pulled and verified results can go with rgt-tui disk "
                f"{host}), then relaunch from cell {cell.index}"
                + _skipped_before(view, cell.index),
                cell.index,
            )
        code = exit_of(cell)
        if code in CRASHES:
            sig, why = CRASHES[code]
            how = (
                f"its torchrun worker crashed with {sig}"
                if code != cell.exit_code
                else f"crashed with {sig} (exit {code})"
            )
            return Diagnosis(
                host,
                subject,
                None,
                f"{subject} {how} — the program's own fault, not a vanished run (a kill "
                f"sends TERM or KILL): {why}",
                next_step=f"read its log (~/.rgt/queue/cells/{cell.name}.log), and a core dump "
                f"if the box keeps one, fix the cause, and rerun the identical config from "
                f"cell {cell.index}" + _skipped_before(view, cell.index),
                resume_index=cell.index,
                by_itself=True,
            )
        return Diagnosis(
            host,
            f"cell {cell.index} ({cell.name})",
            None,
            f"cell {cell.index} ({cell.name}) exited {cell.exit_code} by itself — not a vanished "
            "run (no reboot, OOM kill, hang-up or kill ends a run with that code)",
            next_step=f"read its log (~/.rgt/queue/cells/{cell.name}.log), fix the cause, and rerun "
            f"the identical config from cell {cell.index}" + _skipped_before(view, cell.index),
            resume_index=cell.index,
            by_itself=True,
        )
    return Diagnosis(
        host,
        None,
        None,
        f"nothing vanished: {queue_is(view.state)}; {view.summary(with_state=False)}",
    )


def _weigh(
    host: str,
    subject: str,
    attempt: CellAttempt | None,
    boot_at_start: str,
    launch: RunnerLaunch | None,
    facts: BoxFacts,
    exit_code: int | None,
    index: int | None,
    name: str | None = None,
    *,
    worker: bool = False,
    nothing_left: bool = False,
) -> Diagnosis:
    reboot = _reboot(boot_at_start, facts)
    oom = _oom(attempt, reboot.verdict == YES, facts)
    hangup = _hangup(launch, facts, exit_code)
    detach = launch.detach if launch else None
    manual = _manual(exit_code, [reboot, oom, hangup], detach, worker)
    evidence: tuple[Evidence, ...] = (reboot, oom, hangup, manual)
    gpu = _dead_gpu(facts)
    if gpu is not None:  # a dead card ends a run however it ran: said first
        evidence = (gpu, *evidence)
    cause = next((e.cause for e in evidence if e.verdict == YES), MANUAL_KILL)
    signal = SIGNALS.get(exit_code or 0, f"signal {(exit_code or 128) - 128}")
    how = (
        "stopped without an end record"
        if exit_code is None
        else f"had its worker killed by {signal} (torchrun then exited 1)"
        if worker
        else f"was killed ({SIGNALS.get(exit_code, f'exit {exit_code}')})"
    )
    summary = f"{subject} {how}: {cause}"
    # The kill is the guess when nothing else is seen: say each cause left standing (a
    # hang-up without a launch record read as ruled out, h545 #9).
    standing = [w for e, w in ((oom, "an OOM kill"), (hangup, "a hang-up")) if e.verdict == UNKNOWN]
    if cause == MANUAL_KILL and standing:
        summary += f" ({' and '.join(standing)} cannot be ruled out: see the evidence)"
    if cause == OOM and not facts.cuda_oom.get(name or "", ""):
        summary += " of host RAM (no CUDA out-of-memory line in its log)"
    return Diagnosis(
        host,
        subject,
        cause,
        summary,
        evidence,
        _next_step(cause, host, index, name, facts.spare, nothing_left=nothing_left),
        index,
        name,
    )


def with_preemption(
    d: Diagnosis, named: Preemption | None, spare: tuple[str, ...] = ()
) -> Diagnosis:
    """``d`` with the preemption the TUI or ``watch`` named for its host (``named``: the
    one that still holds) as its cause, where the records alone said a manual kill (the
    default when nothing else is seen) or a reboot: the run it interrupted is the one
    ``d`` names (its cell, or the runner). Evidence of an OOM kill, a hang-up or a dead
    GPU is kept as it is."""
    if named is None or not named.named or d.cause not in (MANUAL_KILL, REBOOT):
        return d
    if d.cell is not None and named.cell is not None and d.cell != named.cell:
        return d  # another cell's end: not the run the preemption interrupted
    subject = d.subject or "the runner"
    # "<subject> <how>: <cause>…" (``_weigh``); the how has no ": " (the name may).
    how = d.summary[len(subject) + 1 :].split(": ", 1)[0] if d.summary.startswith(subject) else ""
    if d.resume_index is None:
        step = "nothing is left to relaunch here"
    else:
        step = f"relaunch from cell {d.resume_index} (each cell reloads its latest checkpoint)"
    if d.cell is not None:  # or resume it elsewhere, from its last verified checkpoint
        to = spare[0] if spare else "HOST"
        step += f", or move it to another box (rgt-tui queue move {shlex.quote(d.cell)} --to {to})"
    # "a kill is what remains" was the records' guess for want of another cause: the
    # preemption is that cause (s44 spot hour #7: the table said both).
    evidence = tuple(
        replace(
            e, verdict=UNKNOWN, detail=e.detail.replace(KILL_REMAINS, "the preemption explains it")
        )
        if e.cause == MANUAL_KILL and e.verdict == LIKELY
        else e
        for e in d.evidence
    )
    return replace(
        d,
        cause=PREEMPTED,
        summary=f"{subject} {how}: {PREEMPTED}" if how else f"{subject}: {PREEMPTED}",
        next_step=step,
        evidence=(Evidence(PREEMPTED, YES, preemption_line(named)), *evidence),
    )
