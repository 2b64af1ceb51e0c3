"""Helpers for the queue tests: a loopback fleet with queue files, waits, and cleanup."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.demo.loopback.fleet import LOOPBACK_PREFLIGHT_ACK
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.run_interpreter import run_interpreter
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.view import read_queue_view
from rgt_tui.transport import Transport, transport_for
from support.machine import kill_processes_under, kill_session, kill_tmux_server
from support.sshd import OpenSshServer
from support.waiting import wait_for

# A cell's "config" is a bash script in the box's workdir; its stem names the cell.
SCRIPT_RUN = "bash {cfg} {name} {out} {task} {epochs}"
# The preflight checks the queue tests' boxes cannot pass, acknowledged in their fleet
# file (preflight_ack) so their launches run preflight and go ahead: no GPU on this
# machine ("gpu", "driver": LOOPBACK_PREFLIGHT_ACK), and their cells are bash scripts,
# so the interpreter preflight tries needs no torch ("torch", and "arch", which cannot
# be checked without it).
QUEUE_PREFLIGHT_ACK = (*LOOPBACK_PREFLIGHT_ACK, "torch", "arch")
# That interpreter, without site-packages: whether the python3 first on the test's PATH
# has torch (the project's .venv does) must not decide what preflight finds.
QUEUE_PYTHON = "python3 -S"
# A cell that runs until the test creates ``$HOME/go`` (the box's workdir), then succeeds.
GATE = (
    'echo "waiting for $HOME/go"; while [ ! -e "$HOME/go" ]; do sleep 0.05; done; echo "gate open"'
)


class QueueFleet:
    """A started LoopbackFleet whose hosts have queue files, plus test conveniences."""

    def __init__(self, loopback: LoopbackFleet) -> None:
        self.loopback = loopback
        self._fleet: Fleet | None = None
        if not loopback.boxes:  # not started: its fleet file is not written yet
            loopback.preflight_ack = tuple(
                dict.fromkeys((*loopback.preflight_ack, *QUEUE_PREFLIGHT_ACK))
            )
            # A quick interpreter for preflight, where the cells are bash scripts. A
            # template that starts its own Python (the workload's: this one, with torch)
            # keeps it: a python key naming another is a clash preflight fails (s22a #3).
            own = run_interpreter(loopback.run).source == "run template"
            if not loopback.workload and not own:
                loopback.python = QUEUE_PYTHON

    def set_preflight_ack(self, names: tuple[str, ...], name: str = "box1") -> None:
        """Rewrite host ``name``'s preflight_ack in the fleet file (a test that needs its
        launches refused by a failed check sets none)."""
        path = self.loopback.hosts_file
        entries = path.read_text().split("[[hosts]]")
        for i, entry in enumerate(entries):
            if f'name = "{name}"\n' in entry:
                kept = [line for line in entry.split("\n") if not line.startswith("preflight_ack")]
                acks = ", ".join(f'"{n}"' for n in names)
                entries[i] = "\n".join(kept).rstrip("\n") + (
                    f"\npreflight_ack = [{acks}]\n\n" if names else "\n\n"
                )
        path.write_text("[[hosts]]".join(entries))
        self._fleet = None

    @property
    def base(self) -> Path:
        assert self.loopback.base_dir is not None
        return self.loopback.base_dir

    @property
    def fleet(self) -> Fleet:
        """The fleet file, loaded once."""
        if self._fleet is None:
            self._fleet = load_fleet(self.loopback.hosts_file)
        return self._fleet

    def host(self, name: str = "box1") -> HostConfig:
        return self.fleet.host(name)

    def transport(self, name: str = "box1") -> Transport:
        return transport_for(self.host(name))

    def root(self, name: str = "box1") -> Path:
        return self.loopback.box(name).root

    def qdir(self, name: str = "box1") -> Path:
        return self.root(name) / ".rgt" / "queue"

    def queue_file(self, name: str = "box1") -> Path:
        return self.base / "queues" / f"{name}.txt"

    def write_queue(self, text: str, name: str = "box1") -> None:
        path = self.queue_file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())

    def append_queue(self, text: str, name: str = "box1") -> None:
        with self.queue_file(name).open("ab") as f:
            f.write(text.encode())

    def cell_script(self, stem: str, body: str, name: str = "box1") -> str:
        """Write ``cells/<stem>.sh`` (a cell whose name is ``stem``); return its queue path."""
        path = self.root(name) / "cells" / f"{stem}.sh"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + "\n")
        return f"cells/{stem}.sh"

    def state(self, cell: str, name: str = "box1") -> str:
        path = self.qdir(name) / "cells" / f"{cell}.state"
        return path.read_text() if path.exists() else ""

    def kill_session(self, name: str = "box1") -> None:
        """``tmux kill-session`` on the box's queue session (on this fleet's tmux server)."""
        kill_session(tmux_session_name(name), self.loopback.tmux_tmpdir)

    def reboot(self, name: str = "box1") -> str:
        """Kill the box's queue session and change its boot id, as a reboot would."""
        self.kill_session(name)
        new = str(uuid.uuid4())
        self.loopback.box(name).boot_id_file.write_text(new + "\n")
        return new

    def cleanup(self) -> None:
        """Stop this fleet's own tmux server and kill what still runs in its directories."""
        tmpdir = self.loopback.tmux_tmpdir
        if tmpdir is not None:
            kill_tmux_server(tmpdir)
        kill_processes_under(self.base)
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


async def wait_view(
    qf: QueueFleet,
    check: Callable[[QueueView], bool],
    *,
    name: str = "box1",
    timeout: float = 60.0,  # a cap for a busy machine: the view is polled, not waited out
    what: str = "queue state",
) -> QueueView:
    """Read the view from the box until ``check`` holds; return that view."""
    transport = qf.transport(name)
    seen: list[QueueView] = []

    async def ok() -> bool:
        seen.append(await read_queue_view(qf.host(name), transport))
        return check(seen[-1])

    try:
        await wait_for(ok, timeout, what)
    except AssertionError as exc:
        last = seen[-1].summary() if seen else "none"
        raise AssertionError(f"{exc}; last view: {last}") from None
    finally:
        await transport.close()
    return seen[-1]


# A cell that holds until the test creates $HOME/go.
HOLD = 'while [ ! -e "$HOME/go" ]; do sleep 0.1; done'


async def launched_holding(
    qf: QueueFleet, cells: str = "", name: str = "box1", hold: str = HOLD
) -> QueueView:
    """Launch ``name``'s queue: cell ``hold`` (its script ``hold``, held until
    ``$HOME/go``), then ``cells`` (queue lines); the view once it runs."""
    from rgt_tui.domain.queue_state import Q_RUNNING
    from rgt_tui.services.queue.launch import launch, plan_launch

    qf.write_queue(f"{qf.cell_script('hold', hold, name)} t\n{cells}", name)
    transport = qf.transport(name)
    try:
        await launch(await plan_launch(qf.fleet, qf.host(name), transport), transport)
    finally:
        await transport.close()
    return await wait_view(qf, lambda v: v.state == Q_RUNNING, name=name, what="the queue to run")


async def stopped_after_hold(
    qf: QueueFleet, cells: str = "", name: str = "box1", hold: str = HOLD
) -> QueueView:
    """``launched_holding``, then a stop while ``hold`` runs and ``hold`` let go: the view
    of the queue stopped by the user, ``cells`` never started."""
    from rgt_tui.domain.queue_state import USER_STOPPED
    from rgt_tui.services.queue.control import stop_queue

    await launched_holding(qf, cells, name, hold)
    transport = qf.transport(name)
    try:
        await stop_queue(qf.host(name), transport)
    finally:
        await transport.close()
    (qf.root(name) / "go").touch()
    return await wait_view(qf, lambda v: v.state == USER_STOPPED, name=name, what="the stop")


class QueueSshServer(OpenSshServer):
    """The real sshd, with HOME set to the host's workdir so ``~/.rgt`` stays in the test's
    directory, and a tmux server of its own (sshd's ``SetEnv``); the boot id comes from
    /proc as on any box."""

    def __init__(self, base_dir: Path, host_name: str = "real1") -> None:
        super().__init__(base_dir, host_name)
        self.tmux_tmpdir = Path(tempfile.mkdtemp(prefix="rgtq-"))

    def session_env(self) -> dict[str, str]:
        return super().session_env() | {"TMUX_TMPDIR": str(self.tmux_tmpdir)}

    def cleanup(self) -> None:
        """Stop its tmux server and what still runs in its directories."""
        kill_tmux_server(self.tmux_tmpdir)
        kill_processes_under(self.base_dir)
        shutil.rmtree(self.tmux_tmpdir, ignore_errors=True)

    def add_queue(self, run: str) -> Path:
        """Give the host a queue file and run template; return the queue file's path."""
        queue = self.base_dir / "queues" / f"{self.host_name}.txt"
        queue.parent.mkdir(parents=True, exist_ok=True)
        acks = ", ".join(f'"{n}"' for n in QUEUE_PREFLIGHT_ACK)
        with self.hosts_file.open("a") as f:
            f.write(
                f'queue = "{queue}"\nrun = "{run}"\npreflight_ack = [{acks}]\n'
                f'python = "{QUEUE_PYTHON}"\n'
            )
        return queue


@contextlib.contextmanager
def started_boxes(
    tmp_path: Path, names: tuple[str, ...], *kinds: type[QueueSshServer]
) -> Iterator[list[QueueSshServer]]:
    """One OpenSSH queue box per name, each in ``tmp_path/<name>``, started; stopped and
    removed on the way out (a group's tests: two boxes, one run). ``kinds``: each box's
    server class in turn (QueueSshServer for those not given)."""
    from support.sshd import INSTALL_HINT, SSHD

    if not SSHD.exists():
        raise AssertionError(f"{SSHD} is missing: {INSTALL_HINT}")
    classes = [*kinds, *[QueueSshServer] * (len(names) - len(kinds))]
    made = [kind(tmp_path / name, name) for kind, name in zip(classes, names, strict=True)]
    try:
        for server in made:
            server.start()
        yield made
    finally:
        for server in made:
            server.stop()
            server.cleanup()
