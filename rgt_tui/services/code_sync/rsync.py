"""Sending files with rsync over the user's OpenSSH (``transport.openssh``: our host-key
check and nothing forwarded, whatever ssh_config says).

rsync writes into the sync's staging dir only (``--files-from``: just the files that
differ, relative paths kept), so an interrupted transfer leaves the workdir as it was.
Modes are 0755 for a file with any executable bit and 0644 otherwise, never wider;
nothing is deleted (no ``--delete``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Callable

from rgt_tui.services.code_sync.listing import LocalFile, LocalTree
from rgt_tui.services.code_sync.types import SyncError
from rgt_tui.timeouts import within
from rgt_tui.transport.openssh import OpenSsh

# Same rule as the SFTP path: a file with any x bit becomes 0755, else 0644; no
# set-id or sticky bit crosses.
_CHMOD = "--chmod=D755,Fu=rwX,Fgo=rX,Fa-st"
_IO_TIMEOUT_S = 120  # rsync's own: no data for this long ends it
_TAIL = 2000  # characters of rsync's stderr kept for the message
_SSH_LINES = 3  # of ssh's own lines in it, the last ones named
_LINE = 300  # characters of each line named


def have_rsync() -> bool:
    """Whether this machine has rsync."""
    return shutil.which("rsync") is not None


async def rsync_send(
    host: str,
    tree: LocalTree,
    files: list[LocalFile],
    ssh: OpenSsh,
    staging: str,
    on_bytes: Callable[[int, str], None],
) -> None:
    """Send ``files`` of ``tree`` into ``staging`` on the box; ``on_bytes(size, path)``
    as each file is done. SyncError with rsync's last words when it fails."""
    rsync = shutil.which("rsync")
    if rsync is None:
        raise SyncError(host, "rsync is not installed here", "install rsync, or sync over SFTP")
    argv = [
        rsync,
        "--protect-args",  # the staging path reaches the box's rsync unsplit
        "--from0",
        "--files-from=-",
        "--perms",
        _CHMOD,
        "--times",
        f"--timeout={_IO_TIMEOUT_S}",
        "--out-format=%n",
        "-e",
        ssh.rsync_shell(),
        "--",
        f"{tree.root}/",
        ssh.remote(f"{staging}/"),
    ]
    sizes = {f.path: f.size for f in files}
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(ssh.env),  # rsync's ssh inherits it: nothing of ours for a SendEnv
    )
    assert proc.stdin and proc.stdout and proc.stderr
    err = bytearray()

    async def feed() -> None:
        with contextlib.suppress(OSError):  # rsync ended first: its status says why
            assert proc.stdin
            proc.stdin.write(b"".join(f.path.encode() + b"\0" for f in files))
            await proc.stdin.drain()
            proc.stdin.close()

    async def progress() -> None:
        assert proc.stdout
        while line := await proc.stdout.readline():
            name = line.decode(errors="replace").rstrip("\n")
            if name in sizes:
                on_bytes(sizes.pop(name), name)

    async def errors() -> None:
        assert proc.stderr
        while chunk := await proc.stderr.read(65536):
            err.extend(chunk)
            del err[: max(0, len(err) - _TAIL)]

    try:
        await asyncio.gather(feed(), progress(), errors())
        status = await proc.wait()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await within(proc.wait(), 5)
    if status != 0:
        raise rsync_failure(host, status, err.decode(errors="replace"))


_SUMMARY = ("rsync error:", "rsync warning:")
_AFTERMATH = ("Broken pipe", "connection unexpectedly closed")


def _rsyncs(line: str) -> bool:
    """Whether rsync itself wrote ``line`` (not ssh): its causes and its summary."""
    return line.startswith("rsync") or line.startswith("file has vanished:")


def rsync_failure(host: str, status: int, stderr: str) -> SyncError:
    """The SyncError for an rsync that exited with ``status``: ssh's own words first
    (rsync's stderr carries them: "Permission denied (publickey)."), which rsync's last
    line ("unexplained error (code 255)") hides; and for a refused login the fix about the
    key, since OpenSSH may find another key than rgt-tui's own connection does."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    ssh = [ln[:_LINE] for ln in lines if not _rsyncs(ln)][-_SSH_LINES:]
    # rsync's own cause ("rsync: [receiver] write failed on …: No space left on device"),
    # not only its last line ("error in file IO (code 11)"), which said nothing (h603 #4).
    cause = [ln[:_LINE] for ln in lines if _rsyncs(ln) and not ln.startswith(_SUMMARY)]
    # The aftermath of another failure (ssh's, the other side's), not a cause.
    cause = [ln for ln in cause if not any(a in ln for a in _AFTERMATH)][:_SSH_LINES]
    # rsync's cause first when it gave one: ssh's lines then may be a banner or a
    # warning, not the failure (review h605 #4).
    if cause:
        said = "; ".join(cause)
    elif ssh:
        said = "ssh: " + "; ".join(ssh)
    else:
        said = lines[-1][:_LINE] if lines else "no message"
    message = f"rsync exited with {status}: {said}"
    words = " ".join(ssh)
    causes = " ".join(cause)
    local = " ".join(ln for ln in cause if ln.startswith("rsync: [sender]"))
    if "No space left on device" in causes or "Disk quota exceeded" in causes:
        fix = (
            f"the box's disk holding the workdir is full (df -h; df -i on {host}): free space "
            f"there, or leave data out of the code (code_exclude), then rgt-tui sync {host}; "
            "the workdir is unchanged"
        )
    elif "vanished" in causes or "link_stat" in causes:
        fix = (
            "a file of the code tree changed or vanished here while it was sent (an editor "
            f"saving, a build): rgt-tui sync {host} again; the workdir is unchanged"
        )
    elif "Permission denied" in local:
        fix = (
            "a file of the code tree here cannot be read (its mode or owner on this "
            f"machine): fix it, or leave it out with code_exclude, then rgt-tui sync {host}; "
            "the workdir is unchanged"
        )
    elif "Permission denied" in causes:
        fix = (
            f"the box's login cannot write where rsync says: fix its owner or mode on {host} "
            f"(ls -ld), then rgt-tui sync {host}; the workdir is unchanged"
        )
    elif "Permission denied" in words:
        fix = (
            f"OpenSSH, which rsync runs, found no key {host} accepts (rgt-tui's own "
            f'connection may use another one): set identity_file = "~/.ssh/<key>" for '
            f"{host} in hosts.toml to the key that logs in, or rgt-tui sync {host} --sftp; "
            "the workdir is unchanged"
        )
    elif "has changed" in words or "IDENTIFICATION HAS CHANGED" in words:
        # Not "add the key", nor around it by --sftp: a changed key may be someone in
        # the middle (a user's hour, s39). rgt-tui's own connection shows both
        # fingerprints and the exact ssh-keygen -R when it connects again.
        fix = (
            f"{host}'s host key CHANGED since it was trusted: expected if the box was "
            "re-created (T6), otherwise someone may be intercepting the connection; do "
            f"not sync until you know which: rgt-tui status {host} shows both fingerprints "
            "and the fix; the workdir is unchanged"
        )
    elif "Host key verification failed" in words:
        fix = (
            f"OpenSSH does not find {host}'s host key in the known_hosts files rgt-tui "
            f"checks (known_hosts in hosts.toml): rgt-tui sync {host} --sftp, or add the "
            "key; the workdir is unchanged"
        )
    elif ssh:
        fix = f"the workdir is unchanged; fix what ssh says, or rgt-tui sync {host} --sftp"
    elif cause:
        fix = f"the workdir is unchanged; fix what rsync says, then rgt-tui sync {host}"
    else:
        fix = "the workdir is unchanged; check the connection and sync again"
    return SyncError(host, message, fix)
