"""Secrets stay on the box (U34, issue 39): the launch's ``~/.rgt/credentials.env`` never
comes home, and a launch that names no credentials leaves no earlier file behind.

Over real loopback boxes, the real command line (launch, pull, verify, watch, teardown),
the real queue runner, journal and state folder:

- a pull whose root is the *parent* of the box's home (``pull = ["/home"]``, a HOME
  under ``/workspace``) brings every file of the home but the credentials file, and is
  ok; verify and the teardown gate pass without it;
- after launch, pull, verify, a watch notification and the teardown, the credential's
  value is nowhere: not in the state folder (journal, logs), the results, the box's
  files, the commands' output or the notification;
- a launch without credentials removes the file an earlier launch left, says so in one
  line, and its cells do not see the old value; with no file there it says nothing.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

from support.cli import arun
from support.fleet_files import set_host_key
from support.queues import SCRIPT_RUN, QueueFleet, wait_view
from support.webhook import webhook

from rgt_tui.domain.config import Credential
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.services.credentials import send_credentials
from rgt_tui.services.queue.launch import launch, plan_launch


def value() -> str:
    """A credential no file could hold by chance."""
    return f"rgt-secret-{uuid.uuid4().hex}"


def files_holding(roots: list[Path], needle: str) -> list[str]:
    """Every regular file under ``roots`` whose bytes hold ``needle``."""
    return [
        str(path)
        for root in roots
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink() and needle.encode() in path.read_bytes()
    ]


def fleet_over_home_parent(qf: QueueFleet, results: Path, hook_url: str, marker: Path) -> Path:
    """box1's fleet file: results outside the fleet's folder, one pull root that is the
    parent of the box's home (as ``pull = ["/home"]`` is), a credential read from the
    environment, a teardown command, and an alert every poll trips (for a notification)."""
    hosts = qf.loopback.hosts_file
    set_host_key(hosts, "teardown", f"echo destroyed > {marker}")
    assert qf.root().parent == qf.base
    with hosts.open("a") as f:
        f.write(
            f"pull = [{json.dumps(str(qf.base))}]\n"
            "[hosts.credentials]\n"
            'CRED_T_TOKEN = { env = "CRED_T_TOKEN_SOURCE" }\n'
        )
    head = (
        f"[fleet]\nresults_dir = {json.dumps(str(results))}\npoll_seconds = 0.2\n"
        f"notify = {json.dumps([hook_url])}\n[fleet.thresholds]\ninode_pct = 0.0001\n\n"
    )
    hosts.write_text(head + hosts.read_text())
    return hosts


async def test_a_pull_over_the_homes_parent_brings_no_credentials_and_no_trace_is_left(
    make_queue_fleet, home: Path, state_dir: Path, tmp_path: Path
) -> None:
    secret = value()
    qf: QueueFleet = await make_queue_fleet(1, run=SCRIPT_RUN)
    results, marker = tmp_path / "results", tmp_path / "destroyed"
    # The cell checks the token by its sha256: no fixture file holds the value itself.
    digest = hashlib.sha256(secret.encode()).hexdigest()
    body = (
        'h=$(printf %s "${CRED_T_TOKEN:-}" | sha256sum | cut -c1-64)\n'
        f'[ "$h" = {digest} ] && echo "token match" || echo MISMATCH\n'
        'mkdir -p "$2" && echo \'{"acc": 0.9}\' > "$2/metrics.json"'
    )
    qf.write_queue(f"{qf.cell_script('tok', body)} t\n")
    outputs: list[str] = []

    async def cli(*args: str, env: dict[str, str | None] | None = None):  # type: ignore[no-untyped-def]
        done = await arun(
            *args, "--hosts", hosts, env={"XDG_STATE_HOME": str(state_dir), **(env or {})}
        )
        outputs.append(done.stdout + done.stderr)
        return done

    with webhook() as hook:
        hosts = fleet_over_home_parent(qf, results, hook.url("/n"), marker)
        launched = await cli("launch", "box1", "--yes", env={"CRED_T_TOKEN_SOURCE": secret})
        assert launched.returncode == 0, launched.stdout + launched.stderr
        assert "CRED_T_TOKEN (env CRED_T_TOKEN_SOURCE)" in launched.stdout
        await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
        log = (qf.qdir() / "cells" / "tok.log").read_text()
        assert "token match" in log and "MISMATCH" not in log  # the cell had the value
        on_box = qf.root() / ".rgt" / "credentials.env"
        assert secret in on_box.read_text()

        # The queue's lock is empty by design: rgt-tui's own state, skipped by rule (a
        # zero-byte file pulled home would be a verify problem, and lock the gate).
        assert (qf.root() / ".rgt" / "queue.lock").stat().st_size == 0
        pulled = await cli("pull", "box1")
        assert pulled.returncode == 0, pulled.stdout + pulled.stderr
        home_copy = results / "box1" / "box1"  # the box's home, below the one pull root
        # The box's own ~/.rgt is rgt-tui's records, skipped by rule whole (never walked).
        assert not (home_copy / ".rgt").exists()
        assert (home_copy / "cells" / "tok.sh").is_file()
        assert not (home_copy / ".rgt" / "credentials.env").exists()
        assert not (home_copy / ".rgt" / "queue.lock").exists()
        assert not [*results.rglob("credentials.env"), *results.rglob(".credentials.env.*")]

        verified = await cli("verify", "box1")
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "rgt-tui's records on this box" in verified.stdout  # skipped, no problem
        checked = await cli("teardown", "box1", "--check")
        assert checked.returncode == 0, checked.stdout + checked.stderr

        watched = await cli("watch", "--once")
        assert watched.returncode == 0, watched.stdout + watched.stderr
        assert hook.at("/n")  # a notification went out

        torn = await cli("teardown", "box1", "--confirm", "box1")
        assert torn.returncode == 0, torn.stdout + torn.stderr
        assert "removed ~/.rgt/credentials.env from box1" in torn.stdout
        notes = json.dumps(hook.at("/n"))
    assert marker.read_text() == "destroyed\n" and not on_box.exists()
    # Nowhere: the state folder (journal, logs), this machine's HOME (settings, caches),
    # the results, the box's own files (its queue, cell logs), what each command
    # printed, what the notification said.
    assert files_holding([state_dir, home, results, qf.base], secret) == []
    assert not [out for out in outputs if secret in out]
    assert secret not in notes


async def test_a_launch_without_credentials_removes_an_earlier_file(
    make_queue_fleet, tmp_path: Path
) -> None:
    old = value()
    qf: QueueFleet = await make_queue_fleet(1, run=SCRIPT_RUN)
    script = qf.cell_script("a", 'echo "old=${RGT_T_OLD:-unset}"')
    qf.write_queue(f"{script} t\n")
    on_box = qf.root() / ".rgt" / "credentials.env"
    transport = qf.transport()
    try:
        # What an earlier launch that named a credential left (written as it writes it).
        cred = Credential("RGT_T_OLD", "env", "RGT_T_OLD_SOURCE")
        await transport.connect()
        await send_credentials("box1", [cred], transport, environ={"RGT_T_OLD_SOURCE": old})
        assert old in on_box.read_text()
        plan = await plan_launch(qf.fleet, qf.host(), transport)
        assert plan.ok and plan.credentials == (), plan.problems
        result = await launch(plan, transport)
    finally:
        await transport.close()
    assert not on_box.exists()
    assert result.credentials == (
        "credentials: removed an earlier ~/.rgt/credentials.env from box1 (this launch sends none)"
    )
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    assert "old=unset" in (qf.qdir() / "cells" / "a.log").read_text()  # the cell never saw it

    # With no file on the box, a launch has nothing to say about credentials.
    qf.append_queue(f"{qf.cell_script('b', 'echo b')} t\n")
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport, start_index=1)
        assert plan.ok, plan.problems
        again = await launch(plan, transport)
    finally:
        await transport.close()
    assert again.credentials == ""
    assert files_holding([qf.base], old) == []


async def test_a_box_that_echoes_what_it_is_sent_never_shows_the_values(tmp_path: Path) -> None:
    """h512 #1: a box whose login reads stdin (an rc file running `cat`) sends the
    credentials back, and the error quoted its answer: the token on this machine's screen
    and wherever errors go. Real OpenSSH sshd; its bash sources the box's ~/.bashrc."""
    from support.queues import started_boxes

    from rgt_tui.services.credentials import CredentialError
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.transport import transport_for

    # Long enough that the line shown is cut within it (review h514 #10: a value cut in
    # half by the 300-character limit was shown in part), with a quote to split it.
    secret = f"hf_{uuid.uuid4().hex * 8}'{uuid.uuid4().hex}"
    with started_boxes(tmp_path, ("box1",)) as (box,):
        # HOME is the workdir. Its login logs what it reads, then gives up.
        (box.workdir / ".bashrc").write_text("cat >&2; exit 3\n")
        host = load_fleet(box.hosts_file).host("box1")
        transport = transport_for(host)
        try:
            await transport.connect()
            await send_credentials(
                "box1", [Credential("HF_TOKEN", "env", "HF_TOKEN")], transport,
                environ={"HF_TOKEN": secret},
            )  # fmt: skip
        except CredentialError as exc:
            said = str(exc)
        else:
            said = ""
        finally:
            await transport.close()
    assert said.startswith("box1: the box"), said  # refused, or not confirmed
    assert secret not in said and secret[3:20] not in said and secret[-20:] not in said, said
