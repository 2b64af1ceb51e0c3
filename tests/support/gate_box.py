"""One loopback box with results and a queue, pulled and verified, and its journal: the
ground every teardown-gate test stands on (``tests/services/conftest.py``'s ``ready``
fixture makes one whose gate holds all but the typed name)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.pull import pull_host
from rgt_tui.services.teardown import GateReport, check_gate, confirm_and_tear_down
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import open_transport
from support.cli import Terminal, arun
from support.fleet_files import set_host_key

QUEUE = "configs/cellA.yaml train 1\nconfigs/cellB.yaml train 1\n"


class Setup:
    """One loopback box with results (and a queue), pulled and verified, its journal."""

    def __init__(self, loopback, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        self.loopback = loopback
        self.box = loopback.box("box1")
        self.tmp = tmp_path
        self.state = tmp_path / "state"
        # The journal of this fleet file, where the command line and the TUI keep it.
        env = {"XDG_STATE_HOME": str(self.state)}
        self.journal = Journal(journal_dir(loopback.hosts_file, env))
        self.marker = tmp_path / "destroyed"
        queue = tmp_path / "queue.txt"
        queue.write_text(QUEUE)
        set_host_key(loopback.hosts_file, "queue", str(queue))
        results = self.box.root / "results"
        for cell in ("cellA", "cellB"):
            (results / cell).mkdir(parents=True, exist_ok=True)
            (results / cell / "metrics.json").write_text(json.dumps({"cell": cell, "acc": 0.9}))
        (results / "notes.txt").write_text("hash-only\n")

    @property
    def fleet(self):  # type: ignore[no-untyped-def]
        return load_fleet(self.loopback.hosts_file)  # re-read: tests change the file

    @property
    def host(self):  # type: ignore[no-untyped-def]
        return self.fleet.host("box1")

    async def pull_and_verify(self, *, expect_ok: bool = True):  # type: ignore[no-untyped-def]
        async with open_transport(self.host) as t:
            await pull_host(self.host, self.fleet.results_dir, t)
            report = await verify_host(self.host, self.fleet.results_dir, transport=t)
        assert report.ok == expect_ok, report.problems
        return report

    async def check(self) -> GateReport:
        async with open_transport(self.host) as t:
            return await check_gate(self.fleet, self.host, t, self.journal)

    async def confirm(self, typed: str = "box1"):  # type: ignore[no-untyped-def]
        async with open_transport(self.host) as t:
            return await confirm_and_tear_down(
                self.fleet, self.host, self.journal, typed, t, cwd=self.tmp
            )

    def env(self) -> dict[str, str | None]:
        """The command line's state folder and fleet file: this setup's."""
        return {"XDG_STATE_HOME": str(self.state), "RGT_HOSTS": str(self.loopback.hosts_file)}

    async def cli(self, *args: str) -> subprocess.CompletedProcess:
        return await arun(*args, env=self.env(), cwd=self.tmp)

    def terminal(self, *args: str) -> Terminal:
        """The command line at a terminal of its own (it asks, as it would a person)."""
        return Terminal(*args, env=self.env(), cwd=self.tmp)


def write_queue(setup: Setup, text: str) -> None:
    """The host's local queue file, rewritten."""
    Path(setup.host.queue).write_text(text)
