"""Trust (issue 19): host keys, forwarding, bytes from a box and the user's keys, over real
servers only: OpenSSH's sshd (its DEBUG3 log shows every request a client makes) and
loopback asyncssh boxes. HOME points at a test folder, so ~/.ssh/config and
~/.ssh/known_hosts are the test's own.

Kept whole: the cases share the sshd, known_hosts and ssh-agent set-ups.
"""

from __future__ import annotations

import asyncio
import dataclasses
import getpass
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest
from support.cli import arun
from support.sshd import INSTALL_HINT, SSHD, OpenSshServer

from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for
from rgt_tui.transport.known_hosts import trust_host_key
from rgt_tui.transport.local import LocalTransport
from rgt_tui.transport.ssh import SshTransport

# A config as people write it for throwaway cloud boxes: every line here used to reach
# the box (or switch our check off) before issue 19.
LAX_CONFIG = """\
Host *
    UserKnownHostsFile none
    GlobalKnownHostsFile none
    StrictHostKeyChecking no
    ForwardAgent yes
    ForwardX11 yes
    ForwardX11Trusted yes
    SendEnv LANG LC_*
    SetEnv RGT_LEAKED=1
    RequestTTY force
    RemoteCommand echo hijacked
    LocalForward 127.0.0.1:59999 127.0.0.1:22
    RemoteForward 127.0.0.1:59998 127.0.0.1:22
    DynamicForward 127.0.0.1:59997
"""
# What sshd logs (LogLevel DEBUG3) for each request that would hand the box something.
LEAKS = (
    "auth-agent-req",
    "x11-req",
    "pty-req",
    "request env",
    "tcpip-forward",  # a global request: RemoteForward
    "streamlocal-forward",
)


NO_AGENT = {"SSH_AUTH_SOCK": None}  # the command line's environment without an ssh-agent


@pytest.fixture
def home(home: Path) -> Path:
    """The HOME of the test's own (conftest), with an empty ~/.ssh to write config in (no
    ssh-agent unless a test starts one)."""
    (home / ".ssh").mkdir(mode=0o700)
    return home


@pytest.fixture
def ssh_agent(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A real ssh-agent (empty), with SSH_AUTH_SOCK pointing at it."""
    folder = Path(tempfile.mkdtemp(prefix="rgt-agent-"))  # socket paths are short
    sock = folder / "agent.sock"
    proc = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60  # a cap a busy machine meets
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "ssh-agent did not start"
            time.sleep(0.02)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        yield sock
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


def _sshd(base: Path, **kwargs) -> OpenSshServer:
    if not SSHD.exists():
        pytest.fail(f"{SSHD} is missing: {INSTALL_HINT}")
    return OpenSshServer(base, **kwargs)


def _ssh_add(key: Path, sock: Path) -> None:
    subprocess.run(
        ["ssh-add", str(key)],
        env={**os.environ, "SSH_AUTH_SOCK": str(sock)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
    )


def _fingerprint(pub: Path) -> str:
    """OpenSSH's own SHA256 fingerprint of a public key file (not ours)."""
    out = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub)],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()[1]


def _public(key: asyncssh.SSHKey) -> str:
    return " ".join(key.export_public_key("openssh").decode().split()[:2])


def _loopback_transport(fleet, box, known_hosts: Path, **kwargs) -> SshTransport:
    return SshTransport(
        box.name,
        address="127.0.0.1",
        port=box.port,
        username=getpass.getuser(),
        identity_file=fleet.client_key,
        known_hosts=known_hosts,
        **kwargs,
    )


async def _refused(transport: SshTransport) -> HostKeyError:
    with pytest.raises(HostKeyError) as err:
        await transport.connect()
    assert not transport.connected
    return err.value


def _run_fix(fix: str) -> None:
    """Run the command a fix prints after ``run:`` (up to the dash that ends it)."""
    command = fix.split("run: ", 1)[1].split(" — ", 1)[0]
    subprocess.run(["bash", "-c", command], check=True, capture_output=True)


async def test_lax_ssh_config_neither_skips_the_key_check_nor_forwards_anything(
    tmp_path, home, ssh_agent, monkeypatch
):
    server = _sshd(tmp_path / "sshd", log_level="DEBUG3")
    server.start()
    try:
        _ssh_add(server.client_key, ssh_agent)
        (home / ".ssh" / "config").write_text(LAX_CONFIG)
        monkeypatch.setenv("LANG", "C.UTF-8")
        monkeypatch.setenv("DISPLAY", ":0")
        t = SshTransport(
            "real1",
            address="127.0.0.1",
            port=server.port,
            username=server.user,
            identity_file=server.client_key,
        )
        # No known_hosts line anywhere: refused, with the fingerprint OpenSSH computes.
        err = await _refused(t)
        fp = _fingerprint(server.host_key.with_name(server.host_key.name + ".pub"))
        host_line = server.host_key.with_name(server.host_key.name + ".pub").read_text().strip()
        assert err.kind == "unknown" and err.presented == f"ssh-ed25519 {fp}"
        assert fp in err.message and fp in err.fix
        assert err.trust_line == f"[127.0.0.1]:{server.port} {host_line}"
        assert err.known_hosts_file == home / ".ssh" / "known_hosts"
        assert not err.known_hosts_file.exists()

        # Trusted once the user confirms: the file is created private, then it connects.
        assert trust_host_key(err) == home / ".ssh" / "known_hosts"
        assert (home / ".ssh" / "known_hosts").stat().st_mode & 0o777 == 0o600
        start = len(server.log_file.read_bytes())
        await t.connect()
        try:
            assert t.host_key_fingerprint == fp
            result = await t.run("echo ${RGT_LEAKED:-unset}; tty || true")
            assert result.stdout.splitlines() == ["unset", "not a tty"]
            lines = [ln async for ln in t.stream_lines("echo streamed")]
            assert lines == ["streamed"]
            chunks = [c async for c in t.stream_bytes("printf bytes")]
            assert b"".join(chunks) == b"bytes"
            assert await t.read_range(str(server.authorized_keys), 0, 11) == b"ssh-ed25519"
        finally:
            await t.close()
        await asyncio.sleep(0.3)  # sshd's session processes finish their logging
        ours = server.log_file.read_bytes()[start:].decode(errors="replace")
        assert "request exec" in ours  # the log does show channel requests...
        assert [leak for leak in LEAKS if leak in ours] == []  # ...and none of these

        # The same config left to asyncssh's defaults: no key check, the agent offered.
        start = len(server.log_file.read_bytes())
        async with asyncssh.connect(
            "127.0.0.1", server.port, username=server.user, client_keys=[str(server.client_key)]
        ) as conn:
            await conn.run("true", request_pty=False)
        await asyncio.sleep(0.3)
        theirs = server.log_file.read_bytes()[start:].decode(errors="replace")
        assert "auth-agent-req" in theirs
    finally:
        server.stop()


async def test_revoked_key_is_refused_and_never_offered_for_trust(loopback_fleet, tmp_path):
    box = loopback_fleet.boxes[0]
    public = _public(box.host_key)
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"{box.known_hosts_line}\n@revoked [127.0.0.1]:{box.port} {public}\n")
    err = await _refused(_loopback_transport(loopback_fleet, box, known_hosts))
    fp = box.host_key.get_fingerprint("sha256")
    assert err.kind == "revoked" and err.presented.endswith(fp)
    assert "@revoked" in err.message and str(known_hosts) in err.message
    assert err.trust_line is None
    with pytest.raises(ValueError, match="only an unknown host key"):
        trust_host_key(err)
    # Revoked for every host by a pattern, no trusted line, accept-new: still refused,
    # and nothing is recorded.
    known_hosts.write_text(f"@revoked * {public}\n")
    t = _loopback_transport(loopback_fleet, box, known_hosts, host_key="accept-new")
    err = await _refused(t)
    assert err.kind == "revoked" and err.presented.endswith(fp)
    assert known_hosts.read_text() == f"@revoked * {public}\n"


def _sign_host_key(server: OpenSshServer, ca: Path, principal: str = "127.0.0.1") -> Path:
    """An OpenSSH host certificate for the server's host key, signed by ``ca``."""
    if not ca.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ca)],
            check=True,
            capture_output=True,
        )
    pub = server.host_key.with_name(server.host_key.name + ".pub")
    subprocess.run(
        ["ssh-keygen", "-q", "-s", str(ca), "-I", "rgt-test", "-h", "-n", principal]
        + ["-V", "-5m:+1h", str(pub)],
        check=True,
        capture_output=True,
    )
    return server.host_key.with_name(server.host_key.name + "-cert.pub")


async def test_cert_authority_lines_are_honoured(tmp_path, home):
    server = _sshd(tmp_path / "sshd")
    server.prepare_keys()
    cert = _sign_host_key(server, tmp_path / "ca")
    server.extra_config = (f"HostCertificate {cert}",)
    server.start()
    try:
        ca_line = (tmp_path / "ca.pub").read_text().split()[:2]
        known_hosts = tmp_path / "known_hosts"
        known_hosts.write_text(f"@cert-authority [127.0.0.1]:{server.port} {' '.join(ca_line)}\n")
        t = SshTransport(
            "real1",
            address="127.0.0.1",
            port=server.port,
            username=server.user,
            identity_file=server.client_key,
            known_hosts=known_hosts,
        )
        await t.connect()  # only the CA is known: the box's certificate is what counts
        try:
            host_pub = server.host_key.with_name(server.host_key.name + ".pub")
            assert t.host_key_fingerprint == _fingerprint(host_pub)
            assert (await t.run("echo ok")).stdout == "ok\n"
        finally:
            await t.close()
        # Another CA: refused, naming the CA that signed the box's certificate.
        other = asyncssh.generate_private_key("ssh-ed25519")
        known_hosts.write_text(f"@cert-authority [127.0.0.1]:{server.port} {_public(other)}\n")
        err = await _refused(t)
        assert err.kind == "changed" and "signed by CA" in err.message
        assert err.presented == f"ssh-ed25519 {_fingerprint(tmp_path / 'ca.pub')}"
        # The right CA, but the box's own key is revoked: refused.
        known_hosts.write_text(
            f"@cert-authority [127.0.0.1]:{server.port} {' '.join(ca_line)}\n"
            f"@revoked [127.0.0.1]:{server.port} {host_pub.read_text().strip()}\n"
        )
        err = await _refused(t)
        assert err.kind == "revoked" and err.trust_line is None
    finally:
        server.stop()


async def test_accept_new_records_a_first_key_and_refuses_a_changed_one(loopback_fleet, tmp_path):
    fleet = load_fleet(loopback_fleet.hosts_file)
    box = loopback_fleet.boxes[0]
    known_hosts = tmp_path / "keys" / "known_hosts"  # neither the file nor its folder exist
    host = dataclasses.replace(fleet.hosts[0], known_hosts=known_hosts, host_key="accept-new")
    t = transport_for(host)
    await t.connect()
    try:
        assert (await t.run("echo ok")).stdout == "ok\n"
        assert t.host_key_fingerprint == box.host_key.get_fingerprint("sha256")
    finally:
        await t.close()
    assert known_hosts.read_text() == box.known_hosts_line + "\n"
    assert known_hosts.stat().st_mode & 0o777 == 0o600
    assert known_hosts.parent.stat().st_mode & 0o777 == 0o700
    await t.connect()  # the recorded key again: connects, nothing written twice
    await t.close()
    assert known_hosts.read_text() == box.known_hosts_line + "\n"

    old = box.host_key.get_fingerprint("sha256")
    box.host_key = asyncssh.generate_private_key("ssh-ed25519")  # the box is re-created
    await box.restart()
    err = await _refused(t)
    assert err.kind == "changed" and err.trust_line is None
    assert err.known == (f"ssh-ed25519 {old}",)
    assert err.presented == f"ssh-ed25519 {box.host_key.get_fingerprint('sha256')}"
    assert known_hosts.read_text().count("\n") == 1

    # The default (strict) records nothing: a new box waits for the user.
    empty = tmp_path / "empty_known_hosts"
    strict = transport_for(dataclasses.replace(fleet.hosts[1], known_hosts=empty))
    err = await _refused(strict)
    assert err.kind == "unknown" and not empty.exists()


async def test_alias_fix_lines_name_hostname_and_port_and_work_when_followed(tmp_path, home):
    server = _sshd(tmp_path / "sshd")
    server.start()
    try:
        (home / ".ssh" / "config").write_text(
            "Host mybox\n"
            "    HostName 127.0.0.1\n"
            f"    Port {server.port}\n"
            f"    User {server.user}\n"
            f"    IdentityFile {server.client_key}\n"
        )
        known_hosts = home / ".ssh" / "known_hosts"
        t = SshTransport("real1", address="mybox")  # everything else from ~/.ssh/config
        err = await _refused(t)
        assert err.kind == "unknown"
        assert err.trust_line.startswith(f"[127.0.0.1]:{server.port} ssh-ed25519 ")
        assert "mybox" not in err.fix
        _run_fix(err.fix)  # the printed `echo ... >> ~/.ssh/known_hosts`
        await t.connect()
        assert (await t.run("echo ok")).stdout == "ok\n"
        await t.close()

        # The box is re-created on the same address and port with a new host key (T6).
        server.stop()
        for old in server.base_dir.glob("ssh_host_ed25519_key*"):
            old.unlink()
        server.start()
        err = await _refused(t)
        assert err.kind == "changed" and err.known_hosts_file == known_hosts
        assert (
            f"ssh-keygen -R '[127.0.0.1]:{server.port}' -f {shlex.quote(str(known_hosts))}"
            in err.fix
        )
        _run_fix(err.fix)  # the printed `ssh-keygen -R ...` removes the old line
        assert "ssh-ed25519" not in known_hosts.read_text()
        err = await _refused(t)  # now simply unknown: the user compares and trusts it
        assert err.kind == "unknown"
        trust_host_key(err)
        await t.connect()
        assert (await t.run("echo ok")).stdout == "ok\n"
        await t.close()
    finally:
        server.stop()


async def test_host_key_alias_is_the_name_keys_are_recorded_under(loopback_fleet, home):
    box = loopback_fleet.boxes[0]
    (home / ".ssh" / "config").write_text(
        f"Host aliased\n    HostName 127.0.0.1\n    Port {box.port}\n    HostKeyAlias GPU-Box-7\n"
    )
    t = SshTransport(
        box.name,
        address="aliased",
        username=getpass.getuser(),
        identity_file=loopback_fleet.client_key,
    )
    err = await _refused(t)
    assert err.trust_line == f"gpu-box-7 {_public(box.host_key)}"  # as OpenSSH writes it
    trust_host_key(err)
    await t.connect()
    await t.close()


async def test_invalid_utf8_from_a_box_drops_neither_the_connection_nor_a_read_in_flight(
    loopback_fleet,
):
    box = loopback_fleet.boxes[0]
    t = _loopback_transport(loopback_fleet, box, loopback_fleet.known_hosts)
    blob = box.root / "results" / "big.bin"
    data = os.urandom(24 << 20)
    blob.write_bytes(data)
    odd = box.root / "results" / "odd"
    odd.mkdir()
    (odd / os.fsdecode(b"name\xff.txt")).write_bytes(b"\xff\xfe")
    await t.connect()
    try:
        link = (await t.run("echo $SSH_CONNECTION")).stdout

        async def pull() -> bytes:
            reader = await t.open_reader(str(blob))
            try:
                parts, offset = [], 0
                while part := await reader.read(offset, 1 << 20):
                    parts.append(part)
                    offset += len(part)
                return b"".join(parts)
            finally:
                await reader.close()

        pulling = asyncio.create_task(pull())
        await asyncio.sleep(0)  # the pull is in flight when the odd bytes come
        result = await t.run(r"printf 'before\377\376after\n'; printf 'err\377\n' >&2")
        assert result.exit_status == 0
        assert result.stdout == "before\ufffd\ufffdafter\n" and result.stderr == "err\ufffd\n"
        lines = [ln async for ln in t.stream_lines(r"printf 'x\377y\nz\n'")]
        assert lines == ["x\ufffdy", "z"]
        assert await pulling == data
        # The same connection goes on: a command, an SFTP read, a listing with a bad name.
        assert (await t.run("echo $SSH_CONNECTION")).stdout == link
        assert await t.read_range(str(odd / os.fsdecode(b"name\xff.txt")), 0, 9) == b"\xff\xfe"
        names = await (await t.sftp()).listdir(str(odd))
        assert os.fsdecode(b"name\xff.txt") in names  # round-trips, as os.listdir's do
        assert t.connected
    finally:
        await t.close()
    assert loopback_fleet.errors == []
    local = await LocalTransport().run(r"printf 'a\377b\n'")
    assert local.stdout == "a\ufffdb\n"


async def test_passphrase_key_fails_its_host_only_and_the_agent_is_used(
    make_loopback_fleet, tmp_path, home, ssh_agent
):
    fleet = await make_loopback_fleet(2)
    locked = tmp_path / "locked_key"  # the fleet's own key, behind a passphrase
    shutil.copy(fleet.client_key, locked)
    locked.chmod(0o600)
    await asyncio.to_thread(
        subprocess.run,
        ["ssh-keygen", "-q", "-p", "-P", "", "-N", "secret", "-f", str(locked)],
        check=True,
        capture_output=True,
    )
    blocks = fleet.hosts_file.read_text().split("[[hosts]]")
    blocks[2] = blocks[2].replace(str(fleet.client_key), str(locked))
    hosts = tmp_path / "hosts.toml"
    hosts.write_text("[[hosts]]".join(blocks))
    healthy, guarded = (b.name for b in fleet.boxes)

    out = await arun("status", "--hosts", hosts, "--json", env=NO_AGENT)
    assert out.returncode == 1, out.stderr
    by_name = {h["name"]: h for h in json.loads(out.stdout)}
    assert by_name[healthy]["reachable"] and by_name[healthy]["boot_id"]
    assert not by_name[guarded]["reachable"]
    assert "needs a passphrase" in by_name[guarded]["error"]
    assert str(locked) in by_name[guarded]["error"]
    assert f"ssh-add {locked}" in by_name[guarded]["fix"]
    table = await arun("status", "--hosts", hosts, env=NO_AGENT)
    assert table.returncode == 1 and "UNREACHABLE" in table.stdout
    assert f"ssh-add {locked}" in table.stdout

    # An agent that lacks the key: refused by the box, and the fix still says ssh-add.
    out = await arun("status", "--hosts", hosts, "--json", env={"SSH_AUTH_SOCK": str(ssh_agent)})
    assert out.returncode == 1, out.stderr
    guarded_report = {h["name"]: h for h in json.loads(out.stdout)}[guarded]
    assert "authentication refused" in guarded_report["error"]
    assert f"ssh-add {locked}" in guarded_report["fix"]
    # Once the agent holds the key, the agent signs for it.
    _ssh_add(fleet.client_key, ssh_agent)
    out = await arun("status", "--hosts", hosts, "--json", env={"SSH_AUTH_SOCK": str(ssh_agent)})
    assert out.returncode == 0, out.stdout + out.stderr
    assert all(h["reachable"] for h in json.loads(out.stdout))


async def test_unreadable_identity_file_is_a_transport_error_naming_the_file(
    loopback_fleet, tmp_path
):
    box = loopback_fleet.boxes[0]
    not_a_key = tmp_path / "id_oops"
    not_a_key.write_text("this is not a key\n")
    for identity, words in ((not_a_key, "not a private key"), (tmp_path / "absent", "no such")):
        t = SshTransport(
            box.name,
            address="127.0.0.1",
            port=box.port,
            identity_file=identity,
            known_hosts=loopback_fleet.known_hosts,
        )
        with pytest.raises(TransportError) as err:
            await t.connect()
        assert str(identity) in err.value.message and words in err.value.message.lower()


async def test_proxyjump_hops_get_the_same_key_check_and_no_forwarding(
    loopback_fleet, tmp_path, home, ssh_agent
):
    jump = _sshd(tmp_path / "jump", log_level="DEBUG3")
    jump.start()
    try:
        _ssh_add(jump.client_key, ssh_agent)
        box = loopback_fleet.boxes[0]
        (home / ".ssh" / "config").write_text(
            "Host viajump\n"
            "    HostName 127.0.0.1\n"
            f"    Port {box.port}\n"
            f"    ProxyJump {jump.user}@127.0.0.1:{jump.port}\n"
            "Host 127.0.0.1\n"
            f"    IdentityFile {jump.client_key}\n" + LAX_CONFIG
        )
        known_hosts = tmp_path / "known_hosts"
        shutil.copy(loopback_fleet.known_hosts, known_hosts)  # the box's key, not the hop's
        t = SshTransport(
            box.name,
            address="viajump",
            username=getpass.getuser(),
            identity_file=loopback_fleet.client_key,
            known_hosts=known_hosts,
        )
        err = await _refused(t)
        assert err.kind == "unknown" and "jump host" in err.message
        assert err.trust_line.startswith(f"[127.0.0.1]:{jump.port} ssh-ed25519 ")
        trust_host_key(err)
        start = len(jump.log_file.read_bytes())
        await t.connect()
        try:
            assert t.host_key_fingerprint == box.host_key.get_fingerprint("sha256")
            assert (await t.run("echo $HOME")).stdout.strip() == str(box.root)
        finally:
            await t.close()
        await asyncio.sleep(0.3)
        log = jump.log_file.read_bytes()[start:].decode(errors="replace")
        assert "direct-tcpip" in log  # it went through the hop...
        assert [leak for leak in LEAKS if leak in log] == []  # ...which got nothing
    finally:
        jump.stop()


async def test_a_known_hosts_path_whose_folder_is_missing_is_named_and_never_made(
    loopback_fleet, tmp_path
):
    """A typo'd known_hosts path read as an ordinary first connection, its `echo … >>`
    fix failed, and trusting the key made the typo'd folder the host's trust store (a
    user's hour): the refusal names the missing folder, and trusting refuses to make it."""
    box = loopback_fleet.boxes[0]
    known_hosts = tmp_path / "no" / "such" / "known_hosts"
    err = await _refused(_loopback_transport(loopback_fleet, box, known_hosts))
    assert err.kind == "unknown"
    folder = tmp_path / "no" / "such"
    assert f"(its folder {folder} does not exist: a typo in known_hosts?)" in err.message
    assert err.fix.startswith(f"correct known_hosts in the fleet file, or create {folder}")
    with pytest.raises(ValueError, match="the known_hosts folder .* does not exist"):
        trust_host_key(err)
    assert not (tmp_path / "no").exists()
