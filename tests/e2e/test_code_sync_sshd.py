"""Code sync over OpenSSH's sshd: rsync through the user's ssh with our host-key check,
and SFTP where this machine has no rsync."""

from __future__ import annotations

import stat
import subprocess

from support.cli import rgt
from support.code_trees import (
    add_code,
    box_files,
    git,
    git_tree,
    path_without,
    staging_left,
    write,
)

from rgt_tui.services.code_sync import code_status, sync_code
from rgt_tui.services.code_sync.rsync import rsync_failure
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for
from rgt_tui.transport.openssh import OpenSsh, openssh_for


def _host(server, code, exclude=()):
    add_code(server.hosts_file, code, exclude)
    return load_fleet(server.hosts_file).host(server.host_name)


async def test_rsync_sends_only_what_differs_and_the_box_hash_matches(openssh_server, tmp_path):
    server = openssh_server
    code = tmp_path / "proj"
    head = git_tree(code)
    host = _host(server, code)
    root = server.workdir
    write(root, "mine.log", "the box's own\n")  # ignored here (*.log): the box's own
    write(root, "src/train.py", "print('train')\n")  # already right: not sent
    before = box_files(root)
    seen: list[tuple[int, int, str]] = []
    t = transport_for(host)
    try:
        result = await sync_code(host, t, on_progress=lambda *a: seen.append(a))
        status = await code_status(host, t)
    finally:
        await t.close()
    assert result.method == "rsync", result.note
    assert result.files_sent == 3 and result.files_total == 4  # train.py was there
    assert {p for _, _, p in seen} == {".gitignore", "run.sh", "src/model/net.py"}
    assert box_files(root) == before | {".gitignore", "run.sh", "src/model/net.py"}
    assert not (root / "data").exists() and (root / "mine.log").exists()
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "src/model/net.py").stat().st_mode) == 0o644
    assert (result.identity.commit, result.identity.dirty) == (head, False)
    assert status is not None and status.in_sync and status.problem() is None
    assert not staging_left(root)


async def test_without_rsync_here_the_sync_goes_over_sftp(openssh_server, tmp_path, monkeypatch):
    server = openssh_server
    code = tmp_path / "proj"
    git_tree(code)
    host = _host(server, code, ("src/model/",))
    monkeypatch.setenv("PATH", path_without("rsync", tmp_path / "bin"))
    t = transport_for(host)
    try:
        result = await sync_code(host, t)
    finally:
        await t.close()
    assert (result.method, result.note) == ("sftp", "rsync not used: rsync is not installed here")
    assert result.files_sent == 3 and not (server.workdir / "src/model").exists()
    assert (server.workdir / "src/train.py").read_text() == "print('train')\n"


def test_the_ssh_rsync_uses_checks_the_host_key_against_the_fleet_known_hosts(
    openssh_server, tmp_path
):
    server = openssh_server
    host = load_fleet(server.hosts_file).host(server.host_name)
    ssh = openssh_for(host)
    assert isinstance(ssh, OpenSsh), ssh
    assert "ForwardAgent=no" in ssh.argv and "ClearAllForwardings=yes" in ssh.argv
    ok = subprocess.run(
        [*ssh.argv, ssh.destination, "echo", "reached"], capture_output=True, text=True
    )
    assert ok.stdout == "reached\n", ok.stderr
    # Another key for the box in the fleet's known_hosts: ssh refuses, as the transport does.
    line = server.known_hosts.read_text().split()
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    server.known_hosts.write_text(f"{line[0]} {(tmp_path / 'other_key.pub').read_text()}")
    refused = subprocess.run(
        [*ssh.argv, ssh.destination, "echo", "reached"], capture_output=True, text=True
    )
    assert refused.returncode == 255 and refused.stdout == ""
    assert "Host key verification failed" in refused.stderr
    # What sync then says, from OpenSSH's own words (a user's hour, s39: it said "add the
    # key" or go round it with --sftp, where a changed key may be someone in the middle).
    said = rsync_failure("real1", 255, refused.stderr)
    assert "real1's host key CHANGED since it was trusted" in said.fix, said.fix
    assert "rgt-tui status real1 shows both fingerprints" in said.fix
    assert "--sftp" not in said.fix and "add the key" not in said.fix


def test_the_sync_command_reports_checks_and_exits_as_pull_does(openssh_server, tmp_path):
    server = openssh_server
    code = tmp_path / "proj"
    git_tree(code)
    _host(server, code)
    hosts = server.hosts_file
    differs = rgt("sync", "real1", "--check", "--hosts", hosts)
    synced = rgt("sync", "real1", "--hosts", hosts)
    write(server.workdir, "run.sh", "changed on the box\n")
    changed = rgt("sync", "real1", "--check", "--hosts", hosts)
    again = rgt("sync", "real1", "--hosts", hosts)
    same = rgt("sync", "real1", "--check", "--hosts", hosts)
    assert differs.returncode == 1 and "4 files missing or changed" in differs.stdout
    assert synced.returncode == 0, synced.stderr
    assert "real1: sent 4 of 4 files" in synced.stdout and "by rsync" in synced.stdout
    assert "sending" in synced.stderr  # progress, on stderr
    assert changed.returncode == 1 and "1 file missing or changed (run.sh)" in changed.stdout
    assert "rgt-tui sync real1" in changed.stdout
    assert again.returncode == 0 and "sent 1 of 4 files" in again.stdout
    assert same.returncode == 0 and "real1: in sync (4 files)" in same.stdout


def test_a_symlink_left_out_of_the_tree_is_said_by_the_sync_and_its_check(openssh_server, tmp_path):
    """A symlinked file in the tree was named only once, on stderr among the progress
    lines; the summary, ``--check`` ("in sync") and the TUI said nothing, so a run that
    read it failed on the box (s36 acts hour #7)."""
    server = openssh_server
    code = tmp_path / "proj"
    git_tree(code)
    (code / "link.py").symlink_to(code / "src" / "train.py")
    git(code, "add", "link.py")
    git(code, "commit", "-q", "-m", "a link")
    _host(server, code)
    hosts = server.hosts_file
    synced = rgt("sync", "real1", "--hosts", hosts)
    check = rgt("sync", "real1", "--check", "--hosts", hosts)
    said = (
        "real1: not sent, so not on the box: link.py (a symlink: not followed) — a symlink's "
        "target is never followed: put the file itself in the tree"
    )
    assert synced.returncode == 0 and said in synced.stdout, synced.stdout + synced.stderr
    assert check.returncode == 0 and said in check.stdout, check.stdout
    assert "real1: in sync" in check.stdout  # left out by rule: not a difference
    assert not (server.workdir / "link.py").exists()
