"""A box's queue records and liveness, read in one probe (``queue_ctl.sh probe``).

The probe's answer is the box's text: what is shown (a cell's last printed line, kernel
log lines, tmux's path) is made printable in ``parse_probe``; the boot id stays as
written (compared, never shown raw); a HOME holding control characters is refused by
``probe`` (it is an identity: the cells' paths are built on it). The control script
itself is called through ``services.box_ctl``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.out_disk import OutDisk, parse_out_disk
from rgt_tui.domain.queue_records import (
    CellAttempt,
    CellMarks,
    DeployedCell,
    RunnerLaunch,
    parse_cell_marks,
    parse_cell_state,
    parse_cells_tsv,
    parse_runner_state,
)
from rgt_tui.domain.text import is_digits, printable
from rgt_tui.domain.torchrun import TorchrunCause, parse_cause
from rgt_tui.services.box_ctl import CTL_TIMEOUT_S, QueueError, refusal, run_ctl
from rgt_tui.services.box_script import box_path
from rgt_tui.transport import Transport


@dataclass(frozen=True)
class BoxQueueFacts:
    """What the probe saw on the box: environment, liveness, and every queue record."""

    home: str
    boot_id: str
    now: int
    uptime_s: float | None = None
    tmux: str = ""  # path of tmux on the box, "" when absent
    setsid: str = ""
    session_present: bool = False
    workdir_exists: bool = False
    durable_exists: bool = False
    # The tmux session of the host entry that launched this account's queue (``owner``
    # in queue_ctl.sh); "" when none was recorded.
    owner: str = ""
    qbytes: int = 0  # size of ~/.rgt/queue/queue.txt
    clines: int = 0  # lines of ~/.rgt/queue/cells.tsv
    runner_alive: bool = False
    deployed: tuple[DeployedCell, ...] = ()
    launches: tuple[RunnerLaunch, ...] = ()
    attempts: dict[str, tuple[CellAttempt, ...]] = field(default_factory=dict)
    # Each cell's queue-control records (retry, skip), by name.
    marks: dict[str, CellMarks] = field(default_factory=dict)
    alive_cells: frozenset[str] = frozenset()
    # Failed cells: the last line each one's command printed (its log), the box's text.
    why: dict[str, str] = field(default_factory=dict)
    # Unfinished attempts: when each one's log was last written (the box's clock).
    log_mtimes: dict[str, int] = field(default_factory=dict)
    # Running cells: the last line each one's command printed so far (its log), the box's text.
    last_lines: dict[str, str] = field(default_factory=dict)
    oom_now: int | None = None
    dmesg: str = "missing"
    dmesg_lines: tuple[str, ...] = ()
    # diagnose (U22, GEN5/U10): Xid lines, nvidia-smi's GPU/ECC lines, CUDA OOM lines by cell.
    xid_lines: tuple[str, ...] = ()
    gpu_lines: tuple[str, ...] = ()
    cuda_oom: dict[str, str] = field(default_factory=dict)
    # diagnose (U6): failed cells' ENOSPC log lines, and the disk under each one's {out}.
    nospace: dict[str, str] = field(default_factory=dict)
    out_disks: dict[str, OutDisk] = field(default_factory=dict)
    # Failed torchrun cells: the root cause torchrun's summary names (issue 41), by cell.
    torchrun: dict[str, TorchrunCause] = field(default_factory=dict)
    # Files in ~/.rgt/sync-kept: the box's own copies syncs replaced (not results).
    sync_kept: int = 0


def parse_probe(text: str) -> BoxQueueFacts:
    """The probe verb's ``key<TAB>value`` lines as facts (pure)."""
    single: dict[str, str] = {}
    runner: list[str] = []
    cells: list[str] = []
    states: dict[str, list[str]] = {}
    ooms: dict[str, list[str]] = {}
    alive: set[str] = set()
    garbled: set[str] = set()  # state files with bytes but no record
    why: dict[str, str] = {}
    log_mtimes: dict[str, int] = {}
    last_lines: dict[str, str] = {}
    dmesg_lines: list[str] = []
    lists: dict[str, list[str]] = {"xid_line": [], "gpu_line": []}
    cuda_oom: dict[str, str] = {}
    nospace: dict[str, str] = {}
    out_disks: dict[str, OutDisk] = {}
    torchrun: dict[str, TorchrunCause] = {}
    for line in text.splitlines():
        key, _, rest = line.partition("\t")
        if key == "runner":
            runner.append(rest)
        elif key == "cell":
            cells.append(rest)
        elif key in ("state", "oom"):
            name, _, record = rest.partition("\t")
            (states if key == "state" else ooms).setdefault(name, []).append(record)
        elif key == "alive":
            alive.add(rest)
        elif key == "garbled":
            garbled.add(rest)
        elif key == "why":
            name, _, reason = rest.partition("\t")
            why[name] = printable(reason)  # the box's text, shown
        elif key == "last":
            name, _, last = rest.partition("\t")
            last_lines[name] = printable(last)  # the box's text, shown
        elif key == "logt":
            name, _, mtime = rest.partition("\t")
            if is_digits(mtime):
                log_mtimes[name] = int(mtime)
        elif key == "dmesg_line":
            dmesg_lines.append(printable(rest))  # shown by diagnose; "process PID " kept
        elif key in lists:
            lists[key].append(printable(rest))  # the box's text, shown by diagnose
        elif key == "cuda_oom":
            name, _, oom_line = rest.partition("\t")
            cuda_oom[name] = printable(oom_line, 600)
        elif key == "nospace":
            name, _, said = rest.partition("\t")
            nospace[name] = printable(said, 600)
        elif key == "outdf":
            name, _, row = rest.partition("\t")
            disk = parse_out_disk(row)
            if disk is not None:
                out_disks[name] = disk
        elif key == "torchrun":
            name, _, record = rest.partition("\t")
            cause = parse_cause(record)
            if cause is not None:
                torchrun[name] = cause
        else:
            single[key] = rest

    def number(key: str) -> int:
        try:
            return int(single.get(key, "0") or 0)
        except ValueError:
            return 0

    try:
        uptime: float | None = float(single["uptime"])
    except (KeyError, ValueError):
        uptime = None
    oom = single.get("oom_now", "?")
    for name, cause in torchrun.items():  # torchrun's last line is its banner: its cause instead
        why[name] = cause.note()
    attempts = {
        name: parse_cell_state("\n".join(records), "\n".join(ooms.get(name, [])))
        for name, records in states.items()
    }
    marks = {name: parse_cell_marks("\n".join(records)) for name, records in states.items()}
    for name in garbled:
        marks[name] = replace(marks.get(name, CellMarks()), unreadable=True)
    return BoxQueueFacts(
        home=single.get("home", ""),
        boot_id=single.get("boot", "unknown"),
        now=number("now"),
        uptime_s=uptime,
        tmux=printable(single.get("tmux", "")),
        setsid=printable(single.get("setsid", "")),
        session_present=single.get("session") == "1",
        workdir_exists=single.get("workdir") == "1",
        durable_exists=single.get("durable") == "1",
        owner=printable(single.get("owner", ""), 200),
        qbytes=number("qbytes"),
        clines=number("clines"),
        runner_alive=single.get("runner_alive") == "1",
        deployed=parse_cells_tsv("".join(c + "\n" for c in cells)),
        launches=parse_runner_state("\n".join(runner)),
        attempts=attempts,
        marks=marks,
        alive_cells=frozenset(alive),
        why=why,
        log_mtimes=log_mtimes,
        last_lines=last_lines,
        oom_now=int(oom) if is_digits(oom) else None,
        dmesg=printable(single.get("dmesg", "missing"), 20),
        dmesg_lines=tuple(dmesg_lines),
        xid_lines=tuple(lists["xid_line"][:5]),
        gpu_lines=tuple(lists["gpu_line"][:16]),
        cuda_oom=cuda_oom,
        nospace=nospace,
        out_disks=out_disks,
        torchrun=torchrun,
        sync_kept=min(max(0, number("synckept")), 10000),  # the box's count: bounded
    )


async def probe(
    transport: Transport,
    host: str,
    *,
    session: str,
    workdir: str = "~",
    durable_dir: str = "~",
    diag: bool = False,
) -> BoxQueueFacts:
    """Read the box's queue records and liveness facts in one round trip.

    ``workdir``/``durable_dir`` are checked for existence; a leading ``~`` is resolved
    on the box.
    """
    # box_path: a leading ~ expands on the box (a ShellWord, not quoted whole)
    paths = (box_path(workdir), box_path(durable_dir))
    result = await run_ctl(transport, "probe", session, *paths, *(["diag"] if diag else []))
    error = refusal(host, result)
    if error is not None:
        raise error
    facts = parse_probe(result.stdout)
    if not facts.home:
        raise TransportError(host, "the queue probe printed nothing: is bash installed on the box?")
    if printable(facts.home, None) != facts.home:
        # HOME is an identity, not a label: the cells' commands and out folders are built
        # on it and sent back. Cleaned, it would name another folder; raw, it would carry
        # the box's escapes into every path shown. So such a box is refused.
        raise TransportError(
            host,
            f"the box's HOME {printable(facts.home)} holds control characters: "
            "rgt-tui runs no queue there",
            "give the box's user a plain home folder",
        )
    return facts


async def read_box_queue_text(transport: Transport, host: str) -> str:
    """The box's copy of the queue file (``~/.rgt/queue/queue.txt``); "" when there is none."""
    result = await transport.run(
        'f="$HOME/.rgt/queue/queue.txt"; if [ -e "$f" ]; then cat "$f"; fi', timeout=CTL_TIMEOUT_S
    )
    flood = result.overflow("~/.rgt/queue/queue.txt")
    if flood is not None:
        raise QueueError(host, flood)
    if result.exit_status != 0:
        why = printable(result.stderr.strip())  # the box's text
        raise QueueError(host, f"cannot read ~/.rgt/queue/queue.txt: {why}")
    return result.stdout
