"""U39, the path half: is the box's TensorBoard reading where the runs write events?

The box reports each process whose command line names TensorBoard (its cwd and argv) and
the directories of the ``events.out.tfevents.*`` files under the durable dir (the cells'
``{out}`` folders); ``tensorboard_advice`` says, in one sentence, what is wrong: no
TensorBoard on the port, one on another port, or one whose ``--logdir`` holds none of the
runs' events. Box text is made printable here, where it enters. Pure: no I/O.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rgt_tui.domain.text import is_digits, printable

TB_DEFAULT_PORT = 6006
MAX_PROCESSES = 20  # TensorBoard processes read from the box's report
MAX_EVENT_DIRS = 200  # event-file directories read from it
_ARG_SEP = "\x1f"  # the box writes each cmdline's NULs as this (shell-safe, never in argv)


@dataclass(frozen=True)
class TensorBoardProcess:
    """One TensorBoard on the box: its pid, logdirs (absolute) and port."""

    pid: int
    logdirs: tuple[str, ...]
    port: int


def is_tensorboard(argv: Sequence[str]) -> bool:
    """``tensorboard …``, ``python …/tensorboard …`` or ``python -m tensorboard[.main]``:
    not a training script that merely mentions it (``--logger tensorboard``)."""
    head = [posixpath.basename(a) for a in argv[:2]]
    if "tensorboard" in head:
        return True
    return len(argv) > 2 and argv[1] == "-m" and argv[2] in ("tensorboard", "tensorboard.main")


def _option(argv: Sequence[str], name: str) -> list[str]:
    """Every value of ``--name V`` / ``--name=V`` in ``argv``."""
    values = []
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            values.append(argv[i + 1])
        elif arg.startswith(name + "="):
            values.append(arg[len(name) + 1 :])
    return values


def parse_process(pid: int, cwd: str, argv: Sequence[str]) -> TensorBoardProcess | None:
    """The TensorBoard ``argv`` (relative logdirs resolved against its ``cwd``), or None
    when it is not one. ``--logdir_spec name:path,…`` counts each path."""
    if not is_tensorboard(argv):
        return None
    dirs = list(_option(argv, "--logdir"))
    for spec in _option(argv, "--logdir_spec"):
        dirs += [part.split(":", 1)[-1] for part in spec.split(",") if part]
    ports = [p for p in _option(argv, "--port") if is_digits(p)]
    logdirs = tuple(posixpath.normpath(posixpath.join(cwd or "/", d)) for d in dirs if d)
    return TensorBoardProcess(pid, logdirs, int(ports[-1]) if ports else TB_DEFAULT_PORT)


@dataclass(frozen=True)
class BoxTensorBoard:
    """What the box said: its TensorBoards, the event directories, and where they were
    looked for (the durable dir, as the box's shell expanded it)."""

    processes: tuple[TensorBoardProcess, ...]
    event_dirs: tuple[str, ...]
    root: str


def parse_report(text: str) -> BoxTensorBoard:
    """The box script's lines: ``root\\tPATH``, ``tb\\tPID\\tCWD\\tARGV`` (argv joined by
    \\x1f), ``ev\\tPATH`` (an event file). Anything else is ignored; counts are capped."""
    processes: list[TensorBoardProcess] = []
    dirs: dict[str, None] = {}
    root = ""
    for line in text.splitlines():
        kind, _, rest = line.partition("\t")
        if kind == "root":
            root = rest
        elif kind == "tb" and len(processes) < MAX_PROCESSES:
            pid, _, tail = rest.partition("\t")
            cwd, _, args = tail.partition("\t")
            found = is_digits(pid) and parse_process(int(pid), cwd, args.split(_ARG_SEP))
            if found:
                processes.append(found)
        elif kind == "ev" and rest.startswith("/") and len(dirs) < MAX_EVENT_DIRS:
            dirs[posixpath.dirname(rest)] = None
    return BoxTensorBoard(tuple(processes), tuple(dirs), root)


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def tensorboard_advice(host: str, port: int, box: BoxTensorBoard) -> str | None:
    """What the user must change for TensorBoard on ``host``:``port`` to show the runs,
    or None when nothing (it reads a folder holding their events, or no TensorBoard was
    expected there and none runs). Box paths are printable, each one line."""
    root = printable(box.root or "<durable_dir>")
    start = f"tensorboard --logdir {root} --port {port} --host 127.0.0.1"
    on_port = [p for p in box.processes if p.port == port]
    if not on_port:
        elsewhere = sorted({p.port for p in box.processes})
        if elsewhere:
            ports = ", ".join(map(str, elsewhere))
            return (
                f"no TensorBoard on {host} listens on port {port} (one listens on {ports}): "
                f"tunnel that port (rgt-tui tunnel {host} {elsewhere[0]}), or start one with "
                f"`{start}`"
            )
        if port != TB_DEFAULT_PORT:
            return None  # any port: not necessarily a TensorBoard
        return (
            f"no TensorBoard runs on {host}: start it on the box (under tmux or nohup, so it "
            f"outlives the session) with `{start}` — with the tunnel it needs no --bind_all"
        )
    if not box.event_dirs:
        return (
            f"TensorBoard on {host} runs, but no events.out.tfevents.* file is under "
            f"{root} yet: do the runs log to TensorBoard (a SummaryWriter under their {{out}})?"
        )
    logdirs = sorted({d for p in on_port for d in p.logdirs})
    if any(_under(d, logdirs) for d in box.event_dirs):
        return None
    reads = ", ".join(printable(d) for d in logdirs) or "no --logdir"
    return (
        f"TensorBoard on {host} reads {reads}; your runs write events under {root} — "
        f"start it with --logdir {root}"
    )
