"""Reclaiming VRAM a dead or forgotten process still holds (U11, GEN7).

One round trip runs ``rgt_tui/scripts/vram.sh list`` on the box (sent whole, as the
queue control is) and reads back the evidence a container allows: nvidia-smi's compute
processes (PID, VRAM) and every process of this PID namespace with a ``/dev/nvidia*``
file open (``fuser -v /dev/nvidia*``, by a bounded walk of ``/proc/*/fd``). Inside a
container nvidia-smi lists host PIDs, or none: ``VramEvidence.hidden_reason`` says so,
and the device holders are then the only processes that can be reclaimed from here.

A kill is refused here unless its PID is in the evidence the user saw, holds a device
file, and is no running queue cell's (the queue's own kill records why a cell ended);
the box checks the device and the cell again right before it signals, so a PID reused
since the list is never killed. SIGTERM first, SIGKILL after ``grace_s`` if the process
still runs: a process stuck holding VRAM often ignores SIGTERM. A kill may drop the SSH
session it ran on (U1): that is ``KillResult.dropped``, and the caller looks again on a
fresh connection rather than trusting a half-read answer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.text import printable
from rgt_tui.services.box_script import box_command, box_refusal, script_text
from rgt_tui.transport import CommandResult, Transport

LIST_TIMEOUT_S = 60.0  # nvidia-smi and the fd walk are each cut at 20 s on the box
KILL_GRACE_S = 10  # SIGTERM, then SIGKILL this long after
HIDDEN = (
    "the container's PID namespace hides them; the /dev/nvidia* holders below are this "
    "container's own processes"
)
# Said instead of HIDDEN when no holder of this container was listed: then no row can be
# killed here, and the VRAM is freed only where those processes run or by a restart.
HIDDEN_NONE_HERE = (
    "the container's PID namespace hides them, and no process of this container is listed "
    "holding a /dev/nvidia* file, so nothing can be killed from here: stop the holders where "
    "they run (another container or the host), or restart the container or the box to free "
    "the VRAM"
)


class VramError(Exception):
    """Reading or reclaiming VRAM failed or was refused; ``str()`` names the host."""

    def __init__(self, host: str, message: str, *, code: str = "") -> None:
        self.host = host
        self.message = message
        self.code = code  # not-in-evidence, queue-cell, not-holder, gone, denied, …
        super().__init__(f"{host}: {message}")


@dataclass(frozen=True)
class GpuMemory:
    """One GPU as nvidia-smi saw it during the list."""

    index: int
    uuid: str
    used_mib: int | None
    util_pct: float | None


@dataclass(frozen=True)
class VramProcess:
    """One process in the evidence: listed by nvidia-smi, holding a device file, or both."""

    pid: int
    visible: bool  # /proc/PID exists in this PID namespace
    devices: tuple[str, ...] = ()  # the /dev/nvidia* files it holds open
    smi_mib: int | None = None  # the VRAM nvidia-smi puts on this PID
    gpu_index: int | None = None  # the GPU nvidia-smi lists it on
    state: str = ""  # /proc/PID/stat's state letter (D: stuck in the driver)
    uid: str = ""
    age_s: int | None = None
    cell: str = ""  # the queue cell it belongs to (running, or one it was left behind by)
    # Of that cell's run going on now (its kill is the queue's); False: a leftover of a
    # finished cell, or of an earlier run of one run again, which a reclaim may kill.
    in_run: bool = False
    comm: str = ""
    cmdline: str = ""
    started: str = ""  # /proc/PID/stat's start time: which process the pid was when listed

    @property
    def listed(self) -> bool:
        """Whether nvidia-smi names this PID."""
        return self.smi_mib is not None or self.gpu_index is not None

    def refusal(self, host: str) -> str | None:
        """Why this PID is not killed from here, or None when it may be."""
        if self.cell and self.in_run:
            return (
                f"pid {self.pid} belongs to the running queue cell {self.cell}: kill the cell "
                f"with the queue's own kill (Queue tab, or `rgt-tui queue kill {host}`), "
                "which records why it ended"
            )
        if not self.visible:
            return (
                f"pid {self.pid} is listed by nvidia-smi but is not in this PID namespace: only "
                "this container's own /dev/nvidia* holders can be killed here"
            )
        if not self.devices:
            return (
                f"pid {self.pid} holds no /dev/nvidia* file here: the process nvidia-smi means "
                "is in another PID namespace, and this number is someone else's"
            )
        return None


@dataclass(frozen=True)
class VramEvidence:
    """What the box showed of who holds its VRAM."""

    host: str
    smi: str  # ok | missing | failed
    smi_detail: str = ""
    walk: str = "ok"  # ok | missing (no find on the box)
    gpus: tuple[GpuMemory, ...] = ()
    processes: tuple[VramProcess, ...] = field(default_factory=tuple)

    def find(self, pid: int) -> VramProcess | None:
        """The process ``pid`` of this evidence, or None."""
        return next((p for p in self.processes if p.pid == pid), None)

    def command_of(self, p: VramProcess) -> str:
        """What runs as ``p`` here, in words: its command line, or, for a PID nvidia-smi
        lists that holds no /dev/nvidia* file here, that the number is another process's
        in this namespace (s38 disk hour #3: `sleep 600` stood as the holder of 15 GB)."""
        ran = p.cmdline or p.comm
        if not p.visible:
            return "not in this PID namespace"
        if p.listed and not p.devices and self.walk == "ok":
            return f"another process here ({ran or '?'}), not the GPU's"
        return ran or "?"

    @property
    def holders(self) -> tuple[VramProcess, ...]:
        """Processes of this namespace with a device file open (the killable kind)."""
        return tuple(p for p in self.processes if p.devices)

    @property
    def no_gpu(self) -> str | None:
        """``box1 has no NVIDIA GPU: …`` when nvidia-smi is not on the box and no process
        holds a /dev/nvidia* file (the walk ran); None when there may be one."""
        if self.smi == "missing" and self.walk == "ok" and not self.processes:
            return f"{self.host} has no NVIDIA GPU: nvidia-smi is not on the box's PATH"
        return None

    @property
    def nothing_held(self) -> str:
        """The line for evidence that lists no process, naming only what was asked."""
        if self.smi == "ok":
            return "no process holds the GPU (nvidia-smi lists none, no /dev/nvidia* holder)"
        return "no process holds a /dev/nvidia* file (nvidia-smi could not list any)"

    @property
    def hidden_reason(self) -> str | None:
        """Why nvidia-smi's list cannot be used to reclaim here, or None when it can."""
        if self.smi != "ok":
            return None
        listed = [p for p in self.processes if p.listed]
        held = any((g.used_mib or 0) > 0 for g in self.gpus)
        hidden = HIDDEN if self.holders else HIDDEN_NONE_HERE
        if not listed:
            return f"nvidia-smi lists no process while VRAM is in use: {hidden}" if held else None
        # Two ways a pid of nvidia-smi's is not the GPU's holder here: no such process in
        # this namespace, or another process under the same number, holding no
        # /dev/nvidia* file (h503 #9: both were said "not visible", then listed visible).
        gone = [p.pid for p in listed if not p.visible]
        other = [p.pid for p in listed if p.visible and self.walk == "ok" and not p.devices]
        parts = []
        if gone:
            word = "pid" if len(gone) == 1 else "pids"
            parts.append(
                f"{word} {', '.join(map(str, gone[:8]))}, not visible in this PID namespace"
            )
        if other:
            one = len(other) == 1
            parts.append(
                f"{'pid' if one else 'pids'} {', '.join(map(str, other[:8]))}, "
                f"{'another process' if one else 'other processes'} here holding no "
                "/dev/nvidia* file"
            )
        if parts:
            return f"nvidia-smi lists {'; '.join(parts)}: {hidden}"
        return None

    def to_json(self) -> dict[str, Any]:
        """The ``rgt-tui vram --json`` object."""
        return {
            "host": self.host,
            "nvidia_smi": self.smi,
            "nvidia_smi_detail": self.smi_detail,
            "fd_walk": self.walk,
            "hidden_reason": self.hidden_reason,
            "gpus": [asdict(g) for g in self.gpus],
            "processes": [
                {**asdict(p), "devices": list(p.devices), "killable": p.refusal(self.host) is None}
                for p in self.processes
            ],
        }


@dataclass(frozen=True)
class KillResult:
    """What a kill did: the signal that ended it, or the state it is stuck in."""

    pid: int
    signal: str = ""  # TERM or KILL: the process ended after it
    still_state: str = ""  # it still runs after SIGKILL, in this state (D: in the driver)
    dropped: bool = False  # the connection went down during the kill: look again


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_evidence(host: str, text: str) -> VramEvidence:
    """The ``list`` verb's lines as evidence (pure; unknown or short lines are skipped)."""
    smi, smi_detail, walk = "missing", "", "missing"
    gpus: list[GpuMemory] = []
    apps: dict[int, tuple[str, int | None]] = {}
    devices: dict[int, list[str]] = {}
    procs: dict[int, list[str]] = {}
    for line in text.splitlines():
        key, *f = line.split("\t")
        if key == "smi" and f:
            smi, smi_detail = f[0], printable(f[1] if len(f) > 1 else "", 200)
        elif key == "walk" and f:
            walk = f[0]
        elif key == "gpu" and len(f) >= 4 and (index := _int(f[0])) is not None:
            gpus.append(GpuMemory(index, printable(f[1], 80), _int(f[2]), _float(f[3])))
        elif key == "app" and len(f) >= 3 and (pid := _int(f[1])) is not None:
            apps[pid] = (f[0], _int(f[2]))
        elif key == "holder" and len(f) >= 2 and (pid := _int(f[0])) is not None:
            devices.setdefault(pid, []).append(printable(f[1], 120))
        elif key == "proc" and len(f) >= 8 and (pid := _int(f[0])) is not None:
            procs[pid] = f
    index_of = {g.uuid: g.index for g in gpus}
    processes = []
    for pid in sorted(set(apps) | set(devices) | set(procs)):
        f = procs.get(pid, ["", "0", "-", "-", "-", "-", "-", "-"])

        def shown(value: str, limit: int = 80) -> str:
            return "" if value == "-" else printable(value, limit)

        uuid, mib = apps.get(pid, ("", None))
        processes.append(
            VramProcess(
                pid=pid,
                visible=f[1] == "1",
                devices=tuple(devices.get(pid, ())),
                smi_mib=mib,
                gpu_index=index_of.get(uuid) if pid in apps else None,
                state=shown(f[2], 2),
                uid=shown(f[3], 12),
                age_s=_int(f[4]),
                cell=shown(f[5]),
                comm=shown(f[6], 32),
                cmdline=shown(f[7], 160),
                started=f[8] if len(f) > 8 and f[8].isdigit() else "",
                # A box's list without the field (none such): taken as the run's, to be safe.
                in_run=f[9] != "0" if len(f) > 9 else True,
            )
        )
    return VramEvidence(host, smi, smi_detail, walk, tuple(gpus), tuple(processes))


def _command(verb: str, *args: str | int) -> str:
    return box_command(script_text("vram.sh"), "vram", verb, *args)


def _refusal(host: str, result: CommandResult) -> VramError | None:
    refused = box_refusal(result, "the box's VRAM script", answer="the VRAM evidence")
    return None if refused is None else VramError(host, refused.message, code=refused.code)


async def read_vram_evidence(host: str, transport: Transport) -> VramEvidence:
    """List who holds the box's VRAM, in one round trip (TransportError: unreachable)."""
    await transport.connect()
    result = await transport.run(_command("list"), timeout=LIST_TIMEOUT_S)
    error = _refusal(host, result)
    if error is not None:
        raise error
    return parse_evidence(host, result.stdout)


def check_kill(evidence: VramEvidence, pid: int) -> VramProcess:
    """The process ``pid`` may be killed by: in the evidence, a device holder, no cell's.
    VramError (its code says why) otherwise; nothing is sent to the box."""
    host = evidence.host
    if evidence.no_gpu:
        # The error names the host first: "box1: box1 has no NVIDIA GPU" said it twice.
        raise VramError(
            host,
            "no NVIDIA GPU on the box (nvidia-smi is not on its PATH): there is nothing to kill",
            code="no-gpu",
        )
    process = evidence.find(pid)
    if process is None:
        listed = ", ".join(str(p.pid) for p in evidence.holders) or "none"
        raise VramError(
            host,
            f"pid {pid} is not in the VRAM evidence just listed (device holders: {listed}): "
            "only a listed holder is killed from here",
            code="not-in-evidence",
        )
    why = process.refusal(host)
    if why is not None:
        code = "queue-cell" if process.cell and process.in_run else "not-holder"
        raise VramError(host, why, code=code)
    return process


async def kill_vram_holder(
    evidence: VramEvidence, transport: Transport, pid: int, *, grace_s: int = KILL_GRACE_S
) -> KillResult:
    """SIGTERM ``pid`` on the box, SIGKILL after ``grace_s``: only a holder ``check_kill``
    allows, checked again on the box right before the signal: the same process (its
    start time as listed), still holding a device, no running cell's."""
    process = check_kill(evidence, pid)
    await transport.connect()  # unreachable: TransportError, and nothing was sent
    try:
        result = await transport.run(
            _command("kill", pid, grace_s, process.started or "-"),
            timeout=LIST_TIMEOUT_S + grace_s,
        )
    except TransportError:
        # The process may have held the session's own resources (U1): the answer is lost
        # with the connection, not the kill. The caller lists again on a fresh one.
        return KillResult(pid, dropped=True)
    error = _refusal(evidence.host, result)
    if error is not None:
        raise error
    for line in result.stdout.splitlines():
        kind, _, rest = line.partition("\t")
        if kind == "killed":
            return KillResult(pid, signal=rest.partition("\t")[2] or "TERM")
        if kind == "alive":
            return KillResult(pid, still_state=rest.partition("\t")[2] or "?")
    return KillResult(pid, dropped=True)  # cut short without an answer: look again


def kill_outcome(result: KillResult, after: VramEvidence | None) -> str:
    """One line on what a kill did, from its answer and the list taken after it."""
    pid = result.pid
    still = after.find(pid) if after is not None else None
    held = still is not None and bool(still.devices)
    if result.dropped:
        if after is None:
            return f"pid {pid}: the connection dropped during the kill and the box is not back yet"
        verdict = "still holds the GPU" if held else "is gone"
        return f"pid {pid} {verdict} (the connection dropped during the kill; looked again)"
    if result.still_state:
        return (
            f"pid {pid} still runs after SIGKILL (state {result.still_state}: stuck in the "
            "driver) — only restarting the container or the box frees its VRAM"
        )
    freed = "; the GPU memory is released as the driver cleans up" if not held else ""
    return f"pid {pid} ended after SIG{result.signal}{freed}"
