"""Credentials over stdin (U34), over real boxes: loopback asyncssh boxes and OpenSSH's
sshd, the real queue runner, the real journal and the real `rgt-tui status`.

- an ``env`` and a ``netrc`` credential reach the cell's environment (the cell prints only
  whether each one's sha256 matches); the box's ``~/.rgt/credentials.env`` is mode 0600;
- the secret is nowhere else: not on any command line sent to the box, not in ``ps`` on
  the box while the cell runs, not in the plan, the queue's files and logs, the results,
  the journal / state folder, the fleet file or `status --json`;
- a credential that cannot be read stops the launch before anything is sent;
- the teardown removes the file from the box and says so.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import uuid
from pathlib import Path

import pytest
from support.cli import arun
from support.fleet_files import set_host_key
from support.queues import GATE, SCRIPT_RUN, QueueFleet, QueueSshServer, wait_view
from support.waiting import wait_for

from rgt_tui.cli.launch import format_plan
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.paths import journal_dir
from rgt_tui.services.credentials import CredentialError
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.pull import pull_host
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.teardown import check_gate, confirm_and_tear_down
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import Transport, open_transport, transport_for

NETRC_MACHINE = "api.example.test"


def secrets() -> tuple[str, str]:
    """Two values no file could hold by chance; quotes and spaces test the quoting."""
    return f"env'val {uuid.uuid4().hex}", f"netrc{uuid.uuid4().hex}"


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def cell_body(env_value: str, netrc_value: str, *, gate: bool = True) -> str:
    """Prints only whether each variable's sha256 is the expected one, waits for the
    test's gate, then writes a result for the teardown gate to pull and verify."""
    check = (
        'h() { printf %s "$1" | sha256sum | cut -c1-64; }\n'
        f'[ "$(h "${{CRED_T_ENV:-}}")" = {sha(env_value)} ] && echo "env match" || echo "env MISMATCH"\n'
        f'[ "$(h "${{CRED_T_NETRC:-}}")" = {sha(netrc_value)} ] && echo "netrc match" || echo "netrc MISMATCH"\n'
    )
    wait = GATE + "\n" if gate else ""
    return check + wait + 'mkdir -p "$2" && echo \'{"acc": 0.9}\' > "$2/metrics.json"'


def add_credentials(hosts_file: Path) -> None:
    """box1 sends two credentials: one from the environment, one from ~/.netrc."""
    with hosts_file.open("a") as f:
        f.write(
            "[hosts.credentials]\n"
            'CRED_T_ENV = { env = "CRED_T_ENV_SOURCE" }\n'
            f'CRED_T_NETRC = {{ netrc = "{NETRC_MACHINE}" }}\n'
        )


def set_sources(
    monkeypatch: pytest.MonkeyPatch, home: Path, env_value: str, netrc_value: str
) -> None:
    monkeypatch.setenv("CRED_T_ENV_SOURCE", env_value)
    netrc = home / ".netrc"
    netrc.write_text(
        "machine other.example login me password not-this-one\n"
        f"machine {NETRC_MACHINE} login user password {netrc_value}\n"
    )
    netrc.chmod(0o600)


class Recording:
    """The real transport, keeping every command line it is asked to run (the box stays
    real; everything else is the wrapped transport's own)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.sent: list[str] = []

    async def run(self, command: str, **kwargs: object):  # type: ignore[no-untyped-def]
        self.sent.append(command)
        return await self.inner.run(command, **kwargs)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def files_holding(roots: list[Path], needles: list[str], allowed: set[Path]) -> list[str]:
    """Every regular file under ``roots`` (but ``allowed``) holding one of ``needles``."""
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if path in allowed or path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            found += [f"{path}: {n[:8]}…" for n in needles if n.encode() in data]
    return found


def ps_args() -> str:
    """``ps -eo args`` on this machine, where the boxes' processes run; ``-ww``: whole
    lines, never cut at the terminal's width."""
    return subprocess.run(
        ["ps", "-ww", "-eo", "args"], capture_output=True, text=True, check=True
    ).stdout


async def test_credentials_reach_the_cell_and_leave_no_trace(
    make_queue_fleet, home: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env_value, netrc_value = secrets()
    needles = [env_value, env_value.split()[-1], netrc_value]
    set_sources(monkeypatch, home, env_value, netrc_value)
    qf: QueueFleet = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = qf.loopback.hosts_file
    add_credentials(hosts)
    marker = tmp_path / "destroyed"
    set_host_key(hosts, "teardown", f"echo destroyed > {marker}")
    qf.write_queue(f"{qf.cell_script('secret', cell_body(env_value, netrc_value))} t\n")
    host = qf.host()

    recorded = Recording(qf.transport())
    transport: Transport = recorded  # type: ignore[assignment]
    sent = recorded.sent
    plan = await plan_launch(qf.fleet, host, transport)
    assert plan.ok, plan.problems
    text = format_plan(plan)
    assert f"CRED_T_ENV (env CRED_T_ENV_SOURCE), CRED_T_NETRC (netrc {NETRC_MACHINE})" in text
    assert not [n for n in needles if n in text or n in repr(plan)]
    await launch(plan, transport)
    await transport.close()

    log = qf.qdir() / "cells" / "secret.log"
    await wait_for(lambda: log.exists() and "waiting for" in log.read_text(), 30, "the cell")
    running = ps_args()  # the cell waits at its gate: it and the runner are running now
    assert "run_one" in running
    assert not [n for n in needles if n in running]
    creds = qf.root() / ".rgt" / "credentials.env"
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    assert not list((qf.root() / ".rgt").glob(".credentials.env.*"))  # no temp file left
    (qf.root() / "go").touch()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert "env match" in log.read_text() and "netrc match" in log.read_text()
    assert "MISMATCH" not in log.read_text()

    # Not on any command line rgt-tui sent to the box (the value went over stdin).
    assert any("queue_ctl credentials" in c for c in sent)
    assert not [c for c in sent for n in needles if n in c]
    status = await arun(
        "status", "--json", env={"RGT_HOSTS": str(hosts), "XDG_STATE_HOME": str(state_dir)}
    )
    assert status.returncode in (0, 1), status.stderr
    assert not [n for n in needles if n in status.stdout + status.stderr]

    # The teardown: pull and verify open the gate; the typed name removes the file first.
    fleet = load_fleet(hosts)
    host = fleet.host("box1")
    journal = Journal(journal_dir(hosts))
    async with open_transport(host) as t:
        await pull_host(host, fleet.results_dir, t)
        assert (await verify_host(host, fleet.results_dir, transport=t)).ok
        assert (await check_gate(fleet, host, t, journal)).ready_but_confirmation
        outcome = await confirm_and_tear_down(fleet, host, journal, "box1", t, cwd=tmp_path)
    assert outcome.ok and marker.read_text() == "destroyed\n"
    assert outcome.credentials == "credentials: removed ~/.rgt/credentials.env from box1"
    assert not creds.exists()
    # Nowhere else: the box's files (queue, logs, results), the pulled results, the
    # fleet file, the journal and state folder.
    roots = [qf.base, state_dir, fleet.results_dir]
    assert files_holding(roots, needles, allowed=set()) == []


async def test_the_plan_names_every_credential_that_cannot_be_read(
    make_queue_fleet, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ux-d #10: the plan reads every source (no ~/.netrc, the variable unset) and is
    refused naming both with their fixes, not Launch one at a time."""
    monkeypatch.delenv("CRED_T_ENV_SOURCE", raising=False)
    qf: QueueFleet = await make_queue_fleet(1, run=SCRIPT_RUN)
    add_credentials(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('secret', 'echo hi')} t\n")
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport)
    finally:
        await transport.close()
    assert not plan.ok
    refused = [p for p in plan.problems if p.startswith("cannot read credential ")]
    assert len(refused) == 2, plan.problems
    env, netrc = refused
    assert env.startswith("cannot read credential CRED_T_ENV (env CRED_T_ENV_SOURCE): ")
    assert "export CRED_T_ENV_SOURCE=" in env
    assert netrc.startswith(f"cannot read credential CRED_T_NETRC (netrc {NETRC_MACHINE}): ")
    assert f"{home / '.netrc'} does not exist" in netrc and "log in" in netrc
    assert "REFUSED: cannot read credential CRED_T_NETRC" in format_plan(plan)
    assert not (qf.root() / ".rgt" / "credentials.env").exists()  # nothing was sent


async def test_a_credential_that_cannot_be_read_stops_the_launch(
    make_queue_fleet, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read again at send time: one gone since the plan stops the launch there."""
    env_value, netrc_value = secrets()
    set_sources(monkeypatch, home, env_value, netrc_value)
    qf: QueueFleet = await make_queue_fleet(1, run=SCRIPT_RUN)
    add_credentials(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('secret', cell_body(env_value, netrc_value))} t\n")
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport)
        assert plan.ok, plan.problems
        monkeypatch.delenv("CRED_T_ENV_SOURCE")
        with pytest.raises(CredentialError) as refused:
            await launch(plan, transport)
    finally:
        await transport.close()
    message = str(refused.value)
    assert message.startswith("box1: credential CRED_T_ENV (env CRED_T_ENV_SOURCE): ")
    assert "not set in rgt-tui's environment" in message and "export CRED_T_ENV_SOURCE=" in message
    assert netrc_value not in message
    assert not (qf.root() / ".rgt" / "credentials.env").exists()  # nothing was sent
    assert not (qf.qdir() / "runner.state").exists()  # and nothing launched


async def test_credentials_over_openssh_sshd(
    openssh_queue_server: QueueSshServer, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same through the user's kind of box: OpenSSH's sshd, on this machine."""
    env_value, netrc_value = secrets()
    needles = [env_value, env_value.split()[-1], netrc_value]
    set_sources(monkeypatch, home, env_value, netrc_value)
    server = openssh_queue_server
    queue = server.add_queue(SCRIPT_RUN)
    add_credentials(server.hosts_file)
    script = server.workdir / "cells" / "secret.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(cell_body(env_value, netrc_value) + "\n")
    queue.write_text("cells/secret.sh t\n")
    fleet = load_fleet(server.hosts_file)
    host = fleet.host(server.host_name)
    recorded = Recording(transport_for(host))
    transport: Transport = recorded  # type: ignore[assignment]
    sent = recorded.sent
    try:
        plan = await plan_launch(fleet, host, transport)
        assert plan.ok, plan.problems
        await launch(plan, transport)
    finally:
        await transport.close()
    qdir = server.workdir / ".rgt" / "queue"
    log = qdir / "cells" / "secret.log"
    await wait_for(lambda: log.exists() and "waiting for" in log.read_text(), 30, "the cell")
    running = ps_args()
    assert "run_one" in running and not [n for n in needles if n in running]
    creds = server.workdir / ".rgt" / "credentials.env"
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    (server.workdir / "go").touch()
    await wait_for(lambda: "exit 0" in log.read_text(), 30, "the cell to end")
    assert "env match" in log.read_text() and "netrc match" in log.read_text()
    assert not [c for c in sent for n in needles if n in c]
    assert files_holding([server.base_dir], needles, allowed={creds}) == []
    # The one place the values are (the scan would have found them anywhere else).
    assert files_holding([server.base_dir], needles, allowed=set())
    assert os.environ["CRED_T_ENV_SOURCE"] == env_value  # the source is untouched
