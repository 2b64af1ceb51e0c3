#!/usr/bin/env python3
"""A one-node Slurm cluster on this machine, to try rgt-tui's Slurm hosts without a cluster.

    sudo python3 scripts/local_slurm.py [--dir /tmp/rgt-slurm] [--cpus 2] [--mem-mb 2000]

It starts ``munged``, ``slurmctld`` and ``slurmd`` from Debian's packages (``apt-get
install slurmctld slurmd slurm-client munge``), everything — config, munge key and
socket, state, spool, logs — under one folder of its own, on two free ports of its own,
so it touches no system Slurm or munge. Once the node is idle it prints the
``SLURM_CONF`` to export and a ``[[hosts]]`` block for this machine as the login node
(``ssh = "local"``, ``scheduler = "slurm"``); Ctrl-C cancels its jobs, stops the daemons
and removes the folder.

The node has ``--cpus`` CPUs, ``--mem-mb`` MB and one ``gpu`` GRES that is a plain file
(``--gres=gpu:1`` schedules; nothing can use a GPU). slurmd starts jobs as their user,
so it runs as root (hence sudo); jobs run as the user who submits them.

The tests' cluster (tests/support/slurm.py) is the same recipe with test-only parts
(pytest fixtures, AssertionError with log tails, job-completion records); this script
stays standalone so that a user needs neither pytest nor the test tree.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MUNGED = Path("/usr/sbin/munged")
SLURMCTLD = Path("/usr/sbin/slurmctld")
SLURMD = Path("/usr/sbin/slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "scontrol", "sinfo")
INSTALL = "sudo apt-get install slurmctld slurmd slurm-client munge"
NODE = "rgtnode1"
START_TIMEOUT_S = 60.0


def missing_programs() -> list[str]:
    """The daemons and clients this machine lacks."""
    missing = [str(p) for p in (MUNGED, SLURMCTLD, SLURMD) if not p.exists()]
    return missing + [c for c in CLIENTS if shutil.which(c) is None]


def free_port() -> int:
    """A TCP port nothing listens on now (taken again by a daemon a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalCluster:
    """munged, slurmctld and slurmd under ``base``: ``start``, ``stop``."""

    def __init__(self, base: Path, cpus: int, mem_mb: int) -> None:
        self.base, self.cpus, self.mem_mb = base, cpus, mem_mb
        self.conf = base / "slurm.conf"
        self.munge_socket = base / "munge.socket.2"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def env(self) -> dict[str, str]:
        """This environment for the daemons and clients: the cluster's SLURM_CONF, and
        no SLURM_* of a job this runs inside."""
        clean = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        return clean | {"SLURM_CONF": str(self.conf)}

    def start(self) -> None:
        """Start the three daemons; return once the node is idle. RuntimeError naming
        the logs otherwise."""
        (self.base / "dev").mkdir(exist_ok=True)
        (self.base / "dev" / "fakegpu0").touch()
        for sub in ("state", "spool"):
            (self.base / sub).mkdir(exist_ok=True)
        self._munged()
        ctld_port = free_port()
        slurmd_port = free_port()
        while slurmd_port == ctld_port:
            slurmd_port = free_port()
        self.conf.write_text(self._slurm_conf(ctld_port, slurmd_port))
        (self.base / "gres.conf").write_text(
            f"NodeName={NODE} Name=gpu File={self.base / 'dev' / 'fakegpu0'}\n"
        )
        self._spawn("slurmctld", [str(SLURMCTLD), "-D", "-c", "-f", str(self.conf)])
        self._spawn("slurmd", [str(SLURMD), "-D", "-f", str(self.conf), "-N", NODE])
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(self.procs[n].poll() is not None for n in ("slurmctld", "slurmd")):
                break
            out = self.client("sinfo", "-h", "-n", NODE, "-o", "%t")
            if out.returncode == 0 and out.stdout.strip() == "idle":
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"the node did not become idle: see {self.base}/slurmctld.log and slurmd.log"
        )

    def client(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client against this cluster."""
        return subprocess.run(
            list(args), env=self.env(), capture_output=True, text=True, timeout=30
        )

    def stop(self) -> None:
        """Cancel every job, shut the daemons down (killing what stays), remove the folder."""
        if "slurmctld" in self.procs:
            self.client("scancel", "--user", str(os.getuid()))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                out = self.client("squeue", "-h", "-t", "PD,R,CG,S,CF", "-o", "%i")
                if out.returncode != 0 or not out.stdout.strip():
                    break
                time.sleep(0.2)
            self.client("scontrol", "shutdown")
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            for step in (None if name != "munged" else proc.terminate, proc.terminate, proc.kill):
                if step is not None:
                    with contextlib.suppress(ProcessLookupError):
                        step()
                try:
                    proc.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
        shutil.rmtree(self.base, ignore_errors=True)

    def _munged(self) -> None:
        key = self.base / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self._spawn(
            "munged",
            [
                str(MUNGED), "--foreground", f"--socket={self.munge_socket}",
                f"--key-file={key}", f"--pid-file={self.base / 'munged.pid'}",
                f"--log-file={self.base / 'munged.log'}",
                f"--seed-file={self.base / 'munged.seed'}",
            ],
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.munge_socket.exists():
            if self.procs["munged"].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"munged did not start: see {self.base}/munged.log")
            time.sleep(0.05)

    def _spawn(self, name: str, argv: list[str]) -> None:
        # In the foreground, children of this process: stop() reaps them.
        with (self.base / f"{name}.out").open("ab") as out:
            self.procs[name] = subprocess.Popen(
                argv, env=self.env(), stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def _slurm_conf(self, ctld_port: int, slurmd_port: int) -> str:
        b, host = self.base, socket.gethostname()
        return "\n".join(
            [
                "# A one-node cluster written by rgt-tui's scripts/local_slurm.py.",
                "ClusterName=rgtlocal",
                f"SlurmctldHost={host}(127.0.0.1)",
                f"SlurmctldPort={ctld_port}",
                f"SlurmdPort={slurmd_port}",
                f"SlurmUser={getpass.getuser()}",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={self.munge_socket}",
                f"StateSaveLocation={b / 'state'}",
                f"SlurmdSpoolDir={b / 'spool'}",
                f"SlurmctldPidFile={b / 'slurmctld.pid'}",
                f"SlurmdPidFile={b / 'slurmd.pid'}",
                f"SlurmctldLogFile={b / 'slurmctld.log'}",
                f"SlurmdLogFile={b / 'slurmd.log'}",
                "SlurmdParameters=config_overrides",  # the node is what this file says
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "MpiDefault=none",
                "JobAcctGatherType=jobacct_gather/linux",
                "JobAcctGatherFrequency=1",
                "JobAcctGatherParams=OverMemoryKill",  # over --mem: the job is killed
                "JobCompType=jobcomp/filetxt",
                f"JobCompLoc={b / 'jobcomp.log'}",
                "AccountingStorageType=accounting_storage/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core_Memory",
                "GresTypes=gpu",
                "KillWait=5",
                "MinJobAge=300",
                "ReturnToService=2",
                "SchedulerParameters=sched_interval=1,bf_interval=1",
                f"NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 Port={slurmd_port} "
                f"CPUs={self.cpus} RealMemory={self.mem_mb} Gres=gpu:1 State=UNKNOWN",
                "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )


def hosts_block(name: str) -> str:
    """A [[hosts]] block for this machine as the cluster's login node."""
    return "\n".join(
        [
            "[[hosts]]",
            f'name = "{name}"',
            'ssh = "local"                 # this machine is the login node',
            'profile = "slurm"',
            'scheduler = "slurm"           # the queue is one job array',
            'partition = "debug"',
            'mem = "500M"',
            'time = "00:10:00"',
            'workdir = "~/rgt-local-slurm/code"',
            'durable_dir = "~/rgt-local-slurm/runs"   # a shared folder: not $TMPDIR',
            'pull = ["~/rgt-local-slurm/runs"]',
            f'queue = "queues/{name}.txt"',
            # done.txt is read by eye; epochs.json (a JSON number) is what verify loads,
            # so the cell's results verify and the teardown gate can open.
            'run = "mkdir -p {out} && echo {cfg} {epochs} > {out}/done.txt'
            ' && echo {epochs} > {out}/epochs.json"',
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dir", type=Path, help="the cluster's folder (default: a new one in /tmp)"
    )
    parser.add_argument("--cpus", type=int, default=2, help="the node's CPUs (default 2)")
    parser.add_argument("--mem-mb", type=int, default=2000, help="the node's memory (default 2000)")
    parser.add_argument("--name", default="slurm-local", help="the host name in the block")
    args = parser.parse_args(argv)
    missing = missing_programs()
    if missing:
        print(f"local_slurm: {', '.join(missing)} missing — {INSTALL}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("local_slurm: slurmd must run as root — run it with sudo", file=sys.stderr)
        return 2
    # Short, under /tmp: the munge socket lives in it and a socket path is <= 108 bytes.
    base = args.dir or Path(tempfile.mkdtemp(prefix="rgt-slurm-"))
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)  # munged wants every folder above its socket searchable
    cluster = LocalCluster(base.resolve(), args.cpus, args.mem_mb)
    # Ctrl-C, a kill or the terminal closing (SIGHUP): stop in the finally below, never
    # leaving root daemons behind (a user's hour closed the tmux pane and found them).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGHUP, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with it ignored
    try:
        cluster.start()
        print(f"Slurm is up: node {NODE} ({args.cpus} CPUs, {args.mem_mb} MB, a fake gpu), ")
        print(f"partition debug, everything under {base}\n")
        print("In the shell where you run rgt-tui (and sbatch, squeue):\n")
        print(f"    export SLURM_CONF={cluster.conf}\n")
        print("Add this block to your hosts.toml:\n")
        print(hosts_block(args.name) + "\n")
        print("Ctrl-C stops the cluster: its jobs are cancelled, its folder removed.", flush=True)
        signal.pause() if hasattr(signal, "pause") else time.sleep(1e9)
    except KeyboardInterrupt:
        pass
    except RuntimeError as exc:
        print(f"local_slurm: {exc}", file=sys.stderr)
        for log in ("munged.log", "slurmctld.log", "slurmd.log"):  # the folder goes next
            path = base / log
            tail = path.read_text(errors="replace").splitlines()[-10:] if path.exists() else []
            print(f"--- {log}", *tail, sep="\n", file=sys.stderr)
        cluster.stop()
        return 1
    finally:
        # A second signal (the terminal's SIGHUP after a Ctrl-C) must not cut the stop.
        for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        if cluster.procs:
            with contextlib.suppress(OSError):  # a closed terminal: stop all the same
                print("\nstopping the cluster…", flush=True)
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
