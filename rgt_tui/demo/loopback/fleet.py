"""A loopback fleet: N boxes plus the client key, known_hosts and hosts.toml to reach them."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

import asyncssh

from rgt_tui.demo.gpu_replay import install_nvidia_smi
from rgt_tui.demo.loopback.box import (
    LOOPBACK_HOST,
    LoopbackBox,
    current_user,
    load_or_create_key,
    real_boot_id,
)

# A loopback box is this machine, where no GPU is: torch sees none ("gpu"), and there
# is no driver for torch's CUDA to match ("driver"; with ``gpus`` the stand-in
# nvidia-smi names one that no torch build can use). Both fail on every loopback box,
# so its launches go ahead without them. "torch" is not among them: the demo's workload
# needs it, and the demo says so before it starts (demo.preflight).
LOOPBACK_PREFLIGHT_ACK = ("gpu", "driver")
# A box dressed as a provider's (``costs`` gives it the profile) keeps its durable dir in
# a folder of this machine, which that provider's teardown never touches; the profile's
# rule (RunPod: under /workspace) would call it lost ("durable").
DRESSED_PREFLIGHT_ACK = ("durable",)
# A box with the replayed H100 (``gpus``): under load the recording lists its own GPU
# processes (memhog, gpu_burn), which no cell of this host started ("gpu-busy"); they
# are the recording's, not processes of this machine.
REPLAYED_GPU_PREFLIGHT_ACK = ("gpu-busy",)


class LoopbackFleet:
    """N loopback boxes plus the client key, known_hosts and hosts.toml to reach them."""

    def __init__(
        self,
        n: int = 3,
        base_dir: Path | None = None,
        *,
        queue_dir: Path | None = None,
        run: str | None = None,
        workload: bool = False,
        tmux_tmpdir: Path | None = None,
        gpus: bool = False,
        costs: Sequence[tuple[str, float]] = (),
        preflight_ack: Sequence[str] | None = None,
    ) -> None:
        """``queue_dir``: give each host ``queue = <queue_dir>/<box>.txt`` (and ``run``).
        ``workload``: install the demo training workload on every box with a ready queue
        (queue_dir defaults to ``<base_dir>/queues``, run to the workload's template).
        ``tmux_tmpdir``: the boxes' sessions use their own tmux server there (tests run
        side by side without sharing session names); None: the user's usual server.
        ``gpus``: each box's PATH starts with a stand-in ``nvidia-smi`` replaying a recorded
        H100 (``gpu_replay``). ``costs``: (profile, cost per hour) for box 1, 2, ... in turn,
        so the fleet shows what it costs. ``preflight_ack``: the preflight checks every
        host's launches go ahead without (its ``preflight_ack`` key); None: what a loopback
        box cannot pass (``LOOPBACK_PREFLIGHT_ACK``, and ``DRESSED_PREFLIGHT_ACK`` with
        ``costs``), acknowledged in the fleet file where the user reads it, rather than
        preflight turned off."""
        self.n = n
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.queue_dir = Path(queue_dir) if queue_dir is not None else None
        self.run = run
        self.workload = workload
        self.tmux_tmpdir = tmux_tmpdir
        self.gpus = gpus
        self.costs = tuple(costs)
        if preflight_ack is None:
            preflight_ack = (
                LOOPBACK_PREFLIGHT_ACK
                + (DRESSED_PREFLIGHT_ACK if costs else ())
                + (REPLAYED_GPU_PREFLIGHT_ACK if gpus else ())
            )
        self.preflight_ack = tuple(preflight_ack)
        # The run's python for preflight (the host's `python` key); None: from the
        # run template. Tests set it so what preflight finds does not depend on PATH.
        self.python: str | None = None
        # The hosts' `teardown` command, given the box's name (the demo's stand-in for a
        # provider's destroy: demo/destroy.py); None: none, each is torn down by hand.
        self.teardown: Callable[[str], str] | None = None
        self.boxes: list[LoopbackBox] = []
        self._made_base_dir = False

    @property
    def hosts_file(self) -> Path:
        """The fleet file (``hosts.toml``) listing every box."""
        return self._dir / "hosts.toml"

    @property
    def known_hosts(self) -> Path:
        """The known_hosts file with every box's host key."""
        return self._dir / "known_hosts"

    @property
    def client_key(self) -> Path:
        """The private client key (ed25519, mode 0600) every box authorizes."""
        return self._dir / "client_key"

    @property
    def username(self) -> str:
        """The user name the fleet file logs in as (the current user)."""
        return current_user()

    @property
    def errors(self) -> list[str]:
        """Handler errors of every box, prefixed with the box name."""
        return [f"{b.name}: {e}" for b in self.boxes for e in b.errors]

    def box(self, name: str) -> LoopbackBox:
        """The box called `name`."""
        for b in self.boxes:
            if b.name == name:
                return b
        raise KeyError(name)

    def connect(self, box: LoopbackBox | str, **kwargs: object) -> asyncssh.SSHClientConnection:
        """``asyncssh.connect`` to a box with the fleet's key and known_hosts.

        Returns asyncssh's awaitable / async context manager, as ``asyncssh.connect`` does.
        """
        b = self.box(box) if isinstance(box, str) else box
        options: dict[str, object] = {
            "username": self.username,
            "client_keys": [str(self.client_key)],
            "known_hosts": str(self.known_hosts),
            "config": None,  # ignore ~/.ssh/config so tests see only these settings
        }
        options.update(kwargs)
        return asyncssh.connect(LOOPBACK_HOST, b.port, **options)  # type: ignore[return-value]

    async def start(self, n: int | None = None, base_dir: Path | None = None) -> None:
        """Create ``base_dir/box1..boxN``, start their servers and write the fleet files.

        Files already there (client key, host keys) are reused, so a fleet restarted over
        the same directory keeps its identities.
        """
        if self.boxes:
            raise RuntimeError("LoopbackFleet already started")
        self.n = n if n is not None else self.n
        if base_dir is not None:
            self.base_dir = Path(base_dir)
        if self.base_dir is None:
            self.base_dir = Path(tempfile.mkdtemp(prefix="rgt-demo-"))
            self._made_base_dir = True
        self.base_dir = self.base_dir.resolve()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        client = load_or_create_key(self.client_key)
        if self.tmux_tmpdir is not None:
            self.tmux_tmpdir.mkdir(parents=True, exist_ok=True)
        self.boxes = [
            LoopbackBox(f"box{i}", self.base_dir / f"box{i}", client, tmux_tmpdir=self.tmux_tmpdir)
            for i in range(1, self.n + 1)
        ]
        for b in self.boxes:
            (b.root / "results").mkdir(parents=True, exist_ok=True)
            b.boot_id_file.write_text(real_boot_id())  # a fleet starts in this boot
            if self.gpus:  # beside the box's folder, as its host key is: not in its tree
                b.extra_path.append(install_nvidia_smi(self.base_dir / f"{b.name}.bin").parent)
        if self.workload:
            from rgt_tui.demo.workload_setup import install_workload, workload_run_template

            self.queue_dir = self.queue_dir or self.base_dir / "queues"
            self.run = self.run or workload_run_template()
            for b in self.boxes:
                install_workload(b.root, b.name, self.queue_dir / f"{b.name}.txt")
        results = await asyncio.gather(*(b.start() for b in self.boxes), return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            await self.stop()
            raise failed[0]
        self.known_hosts.write_text("".join(b.known_hosts_line + "\n" for b in self.boxes))
        self.hosts_file.write_text(self._hosts_toml())

    async def stop(self) -> None:
        """Stop every box for good (their directories and fleet files stay)."""
        await asyncio.gather(*(b.close() for b in self.boxes), return_exceptions=True)

    async def __aenter__(self) -> LoopbackFleet:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
        if self._made_base_dir and self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    @property
    def _dir(self) -> Path:
        if self.base_dir is None:
            raise RuntimeError("LoopbackFleet has no base_dir until it is started")
        return self.base_dir

    def _profile_lines(self, i: int) -> list[str]:
        """The profile (and cost per hour) of box ``i`` in the fleet file."""
        if not self.costs:
            return ['profile = "generic-ssh"']
        profile, cost = self.costs[i % len(self.costs)]
        return [f"profile = {toml_str(profile)}", f"cost_per_hour = {cost}"]

    def _hosts_toml(self) -> str:
        lines = ["# Loopback demo fleet written by rgt-tui (rgt_tui/demo/loopback.py).", ""]
        for i, b in enumerate(self.boxes):
            lines += [
                "[[hosts]]",
                f"name = {toml_str(b.name)}",
                f"ssh = {toml_str(f'{self.username}@{LOOPBACK_HOST}:{b.port}')}",
                f"identity_file = {toml_str(str(self.client_key))}",
                f"known_hosts = {toml_str(str(self.known_hosts))}",
                *self._profile_lines(i),
                f"workdir = {toml_str(str(b.root))}",
                f"durable_dir = {toml_str(str(b.root / 'results'))}",
                f"mounts = [{toml_str(str(b.root))}]",
            ]
            if self.queue_dir is not None:
                lines.append(f"queue = {toml_str(str(self.queue_dir / f'{b.name}.txt'))}")
            if self.run is not None:
                lines.append(f"run = {toml_str(self.run)}")
            if self.preflight_ack:
                acks = ", ".join(toml_str(a) for a in self.preflight_ack)
                lines.append(f"preflight_ack = [{acks}]")
            if self.python:
                lines.append(f"python = {toml_str(self.python)}")
            if self.teardown is not None:
                lines.append("# the demo's stand-in for a provider's destroy: it stops the box")
                lines.append(f"teardown = {toml_str(self.teardown(b.name))}")
            lines.append("")
        return "\n".join(lines)


def toml_str(value: str) -> str:
    """A TOML basic string (backslashes, quotes and control characters escaped)."""
    out = []
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
