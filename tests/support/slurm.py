"""A real one-node Slurm cluster on this machine for tests: ``munged``, ``slurmctld`` and
``slurmd`` (Debian's Slurm 22.05), everything under a short temporary folder of its own.

What the cluster is (issue 32, "Checked on this kind of machine"):

- one node (``SlurmCluster.node``) with 2 CPUs, 2000 MB and one ``gpu`` GRES. GPUs
  cannot exist here: the GRES is a fake device file the cluster creates under
  ``gres_dir``, so ``--gres=gpu:1`` schedules but nothing can use a GPU;
- memory is enforced by polling (``JobAcctGatherParams=OverMemoryKill``, every second):
  a job over its ``--mem`` ends FAILED with ``Exceeded job memory limit`` in its output,
  not OUT_OF_MEMORY (that state needs cgroups, which this machine has not);
- finished jobs stay in ``squeue -t all`` for 300 s (``MinJobAge``); every job's end
  state and exit code is a line of the job-completion log (``jobcomp``); ``sacct`` does
  not work (accounting needs slurmdbd);
- jobs run as the submitting user (root here) with the submitter's environment.

Each cluster has its own ports, state, spool and munge socket, so test workers running
side by side each start their own. Clients reach it with ``env`` (``SLURM_CONF``: the
munge socket is named in slurm.conf, ``AuthInfo``).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from support.machine import free_port
from support.queues import QueueFleet

MUNGED = Path("/usr/sbin/munged")
SLURMCTLD = Path("/usr/sbin/slurmctld")
SLURMD = Path("/usr/sbin/slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "scontrol", "sinfo")
INSTALL_HINT = (
    "install Debian's slurmctld slurmd slurm-client munge (scripts/install_system_deps.sh)"
)
NODE_CPUS = 2
NODE_MEMORY_MB = 2000  # well below any machine's: the node is never over-committed
_START_TIMEOUT_S = 60.0  # generous: a busy machine starts the daemons slowly
_STOP_TIMEOUT_S = 30.0  # KillWait (5 s) plus margin for the jobs to go
_START_TRIES = 3  # a port picked free may be taken before the daemon binds it
# A job-completion log line: "JobId=5 UserId=root(0) ... JobState=FAILED ... ExitCode=0:9 ".
# Values may hold spaces (a job's name), so a value runs up to the next " Key=".
_JOBCOMP_FIELD = re.compile(r"(\w+)=(.*?)(?= \w+=|\s*$)")


@pytest.fixture
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A started one-node Slurm cluster of the test's own (about a second to start; job
    ids from 1, an empty job-completion log); every job cancelled and every daemon
    stopped afterwards. Fails when Slurm or munge is missing."""
    missing = missing_programs()
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: {INSTALL_HINT}")
    cluster = SlurmCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
async def slurm_queue_fleet(
    slurm_cluster: SlurmCluster, make_queue_fleet: Callable[..., Awaitable[QueueFleet]]
) -> AsyncIterator[Callable[..., Awaitable[QueueFleet]]]:
    """Factory: ``await slurm_queue_fleet(n, run=..., workload=False, **keys)`` is
    ``make_queue_fleet``'s fleet whose boxes are login nodes of ``slurm_cluster``: their
    sessions have its ``env`` (``sbatch`` over the product's transport reaches it), and
    each host in the fleet file gets ``scheduler = "slurm"`` plus ``keys`` (``mem="100M",
    max_parallel=2``; with ``scheduler=None`` it is left out). Jobs are cancelled first
    at teardown, before the fleet's folders are cleaned."""

    async def make(
        n: int = 1, *, run: str | None = None, workload: bool = False, **keys: object
    ) -> QueueFleet:
        qf = await make_queue_fleet(n, run=run, workload=workload)
        for box in qf.loopback.boxes:
            box.extra_env.update(slurm_cluster.env)
        keys = {"scheduler": "slurm", **keys}
        add_host_keys(qf, {k: v for k, v in keys.items() if v is not None})
        return qf

    yield make
    slurm_cluster.cancel_all()


def add_host_keys(qf: QueueFleet, keys: dict[str, object], name: str | None = None) -> None:
    """Add ``keys`` (TOML strings, integers or lists of strings) to host ``name``'s entry
    in the fleet file — every host's when ``name`` is None — and drop the loaded fleet."""
    lines = "".join(f"{key} = {_toml(value)}\n" for key, value in keys.items())
    path = qf.loopback.hosts_file
    entries = path.read_text().split("[[hosts]]")
    for i, entry in enumerate(entries[1:], 1):
        if name is None or f'name = "{name}"\n' in entry:
            entries[i] = entry.rstrip("\n") + "\n" + lines + "\n"
    path.write_text("[[hosts]]".join(entries))
    qf._fleet = None  # reloaded on the next use


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def missing_programs() -> list[str]:
    """The Slurm and munge programs this machine lacks (empty when the cluster can run)."""
    missing = [str(p) for p in (MUNGED, SLURMCTLD, SLURMD) if not p.exists()]
    return missing + [c for c in CLIENTS if shutil.which(c) is None]


class SlurmCluster:
    """One started-on-demand Slurm cluster (``start``/``stop``) under its own folder."""

    def __init__(self, node: str = "rgtnode1") -> None:
        # Short, under /tmp: the munge socket and slurmd's step sockets live in it and a
        # unix socket path is limited to 108 bytes (pytest's tmp_path can be longer).
        self.base = Path(tempfile.mkdtemp(prefix="rgt-slurm-"))
        # munged wants every folder above its socket searchable by all (0755).
        self.base.chmod(0o755)
        self.node = node
        self.conf = self.base / "slurm.conf"
        self.jobcomp = self.base / "jobcomp.log"
        self.gres_dir = self.base / "dev"
        self.munge_socket = self.base / "munge.socket.2"
        self.env: dict[str, str] = {"SLURM_CONF": str(self.conf)}
        self.ctld_port = 0
        self.slurmd_port = 0
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # -- clients ----------------------------------------------------------------------

    def client_env(self) -> dict[str, str]:
        """This process's environment plus ``env``, without a job's SLURM_* variables
        (a test run inside a Slurm job must not address that job's cluster)."""
        base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        return base | self.env

    def run(
        self, *args: str, check: bool = True, timeout: float = 60.0, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client (``run("sbatch", "--wrap", "true")``) against this cluster;
        with ``check`` a non-zero exit fails naming the command, its output and the
        daemons' log tails."""
        done = subprocess.run(
            list(args),
            env=self.client_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
            cwd=self.base,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}"
                f"{done.stdout.strip()}\n{self.log_tails()}"
            )
        return done

    async def arun(self, *args: str, timeout: float = 60.0) -> tuple[int, str, str]:
        """``run`` for async tests, without blocking the event loop (loopback boxes serve
        from it): (exit status, stdout, stderr)."""
        proc = await asyncio.create_subprocess_exec(
            *args,
            env=self.client_env(),
            cwd=self.base,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    def sbatch(self, *args: str) -> str:
        """``sbatch --parsable ARGS`` run here; the job id."""
        return self.run("sbatch", "--parsable", *args).stdout.strip().split(";")[0]

    def tasks(self, job_id: str) -> dict[str, str]:
        """Every task (``<job>_<index>``, or the job id) of ``job_id`` that squeue still
        knows, finished ones included (for MinJobAge), with its state."""
        out = self.run("squeue", "-h", "-r", "-t", "all", "-j", job_id, "-o", "%i %T").stdout
        return dict(line.split(None, 1) for line in out.splitlines() if line.strip())

    def jobcomp_records(self) -> list[dict[str, str]]:
        """The job-completion log's lines as fields (JobId, JobState, ArrayJobId,
        ArrayTaskId, ExitCode, ...), oldest first."""
        if not self.jobcomp.exists():
            return []
        return [
            dict(_JOBCOMP_FIELD.findall(line))
            for line in self.jobcomp.read_text(errors="replace").splitlines()
            if line.strip()
        ]

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Start munged, slurmctld and slurmd; return once the node is idle (or fail with
        the daemons' log tails)."""
        self.gres_dir.mkdir(exist_ok=True)
        (self.gres_dir / "fakegpu0").touch()  # the fake GPU: a file, see the module doc
        for sub in ("state", "spool"):
            (self.base / sub).mkdir(exist_ok=True)
        self._start_munged()
        for attempt in range(_START_TRIES):
            self.ctld_port, self.slurmd_port = _two_free_ports()
            self.conf.write_text(self._slurm_conf())
            (self.base / "gres.conf").write_text(
                f"NodeName={self.node} Name=gpu File={self.gres_dir / 'fakegpu0'}\n"
            )
            self._spawn("slurmctld", [str(SLURMCTLD), "-D", "-c", "-f", str(self.conf)])
            self._spawn("slurmd", [str(SLURMD), "-D", "-f", str(self.conf), "-N", self.node])
            if self._wait_idle():
                return
            if attempt + 1 < _START_TRIES and self._port_taken():
                self._stop_slurm()
                continue
            break
        tails = self.log_tails()
        self.stop()
        raise AssertionError(
            f"the test Slurm cluster in {self.base} did not become idle within "
            f"{_START_TIMEOUT_S:g} s ({INSTALL_HINT} if a daemon is missing)\n{tails}"
        )

    def stop(self) -> None:
        """Cancel every job, wait for them to go, shut the daemons down (then kill what
        is left of them) and remove the folder."""
        with contextlib.suppress(Exception):
            self.cancel_all()
        self._stop_slurm()
        munged = self._procs.pop("munged", None)
        if munged is not None:
            _end(munged, asked=False)
        shutil.rmtree(self.base, ignore_errors=True)

    def cancel_all(self, timeout: float = _STOP_TIMEOUT_S) -> None:
        """``scancel`` every job of this cluster and wait until none is pending, running
        or completing (their processes gone: slurmd does not kill them when it stops)."""
        if "slurmctld" not in self._procs:
            return
        self.run("scancel", "--user", str(os.getuid()), check=False, timeout=15)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.run("squeue", "-h", "-t", "PD,R,CG,S,CF", "-o", "%i", check=False)
            if out.returncode == 0 and not out.stdout.strip():
                return
            time.sleep(0.2)
        raise AssertionError(f"jobs still alive {timeout:g} s after scancel\n{self.log_tails()}")

    def log_tails(self, lines: int = 15) -> str:
        """The last lines of each daemon's log, for failure messages."""
        parts = []
        for name in ("munged", "slurmctld", "slurmd"):
            path = self.base / f"{name}.log"
            text = path.read_text(errors="replace") if path.exists() else "(no log)"
            parts.append(f"--- {path}:\n" + "\n".join(text.splitlines()[-lines:]))
        return "\n".join(parts)

    # -- internals --------------------------------------------------------------------

    def _start_munged(self) -> None:
        key = self.base / "munge.key"
        key.write_bytes(os.urandom(1024))  # what `mungekey` makes; munged wants mode 0400
        key.chmod(0o400)
        self._spawn(
            "munged",
            [
                str(MUNGED),
                "--foreground",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={self.base / 'munged.pid'}",
                f"--log-file={self.base / 'munged.log'}",
                f"--seed-file={self.base / 'munged.seed'}",
            ],
        )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self.munge_socket.exists():
            if self._procs["munged"].poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"munged did not start\n{self.log_tails()}")
            time.sleep(0.02)

    def _spawn(self, name: str, argv: list[str]) -> None:
        # Foreground (-D / --foreground) children of this process: stop() reaps them, and
        # none is left as an orphan PID 1 may never reap.
        with (self.base / f"{name}.out").open("ab") as out:
            self._procs[name] = subprocess.Popen(
                argv,
                env=self.client_env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _wait_idle(self) -> bool:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(self._procs[n].poll() is not None for n in ("slurmctld", "slurmd")):
                return False
            out = self.run("sinfo", "-h", "-n", self.node, "-o", "%t", check=False, timeout=10)
            if out.returncode == 0 and out.stdout.strip() == "idle":
                return True
            time.sleep(0.1)
        return False

    def _port_taken(self) -> bool:
        logs = "".join(
            (self.base / f"{n}.log").read_text(errors="replace")
            for n in ("slurmctld", "slurmd")
            if (self.base / f"{n}.log").exists()
        )
        return "Address already in use" in logs

    def _stop_slurm(self) -> None:
        daemons = [self._procs.pop(n) for n in ("slurmd", "slurmctld") if n in self._procs]
        if not daemons:
            return
        # shutdown stops both daemons cleanly (state saved); a daemon that does not go
        # (slurmctld already dead, say) is terminated, then killed.
        self.run("scontrol", "shutdown", check=False, timeout=15)
        for proc in daemons:
            _end(proc)

    def _slurm_conf(self) -> str:
        b = self.base
        host = socket.gethostname()
        return "\n".join(
            [
                "# A one-node test cluster written by tests/support/slurm.py.",
                "ClusterName=rgttest",
                f"SlurmctldHost={host}(127.0.0.1)",
                f"SlurmctldPort={self.ctld_port}",
                f"SlurmdPort={self.slurmd_port}",
                f"SlurmUser={getpass.getuser()}",  # root here: slurmd must be root
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={self.munge_socket}",
                f"StateSaveLocation={b / 'state'}",
                f"SlurmdSpoolDir={b / 'spool'}",
                f"SlurmctldPidFile={b / 'slurmctld.pid'}",
                f"SlurmdPidFile={b / 'slurmd.pid'}",
                f"SlurmctldLogFile={b / 'slurmctld.log'}",
                f"SlurmdLogFile={b / 'slurmd.log'}",
                # The node's CPUs and memory are what this file says, not the machine's:
                # the same cluster on a smaller CI machine does not drain itself.
                "SlurmdParameters=config_overrides",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "MpiDefault=none",
                "JobAcctGatherType=jobacct_gather/linux",
                "JobAcctGatherFrequency=1",
                "JobAcctGatherParams=OverMemoryKill",
                "JobCompType=jobcomp/filetxt",
                f"JobCompLoc={self.jobcomp}",
                "AccountingStorageType=accounting_storage/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core_Memory",
                "GresTypes=gpu",
                "KillWait=5",
                "MinJobAge=300",
                "MaxArraySize=10001",
                "ReturnToService=2",
                # Schedule at once and every second: tests wait on the scheduler.
                "SchedulerParameters=sched_interval=1,bf_interval=1",
                f"NodeName={self.node} NodeHostname={host} NodeAddr=127.0.0.1 "
                f"Port={self.slurmd_port} CPUs={NODE_CPUS} RealMemory={NODE_MEMORY_MB} "
                "Gres=gpu:1 State=UNKNOWN",
                "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )


def _two_free_ports() -> tuple[int, int]:
    first = free_port()
    second = free_port()
    while second == first:
        second = free_port()
    return first, second


def _end(proc: subprocess.Popen[bytes], *, asked: bool = True) -> None:
    """Wait for a daemon already ``asked`` to stop to exit; SIGTERM, then SIGKILL, if
    it does not."""
    for step in (None if asked else proc.terminate, proc.terminate, proc.kill):
        if step is not None:
            with contextlib.suppress(ProcessLookupError):
                step()
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue
