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
from rgt_tui.transport.openssh import OpenSsh

# Same rule as the SFTP path: a file with any x bit becomes 0755, else 0644; no
# set-id or sticky bit crosses.
_CHMOD = "--chmod=D755,Fu=rwX,Fgo=rX,Fa-st"
_IO_TIMEOUT_S = 120  # rsync's own: no data for this long ends it
_TAIL = 2000  # characters of rsync's stderr kept for the message


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
                await asyncio.wait_for(proc.wait(), 5)
    if status != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        raise SyncError(
            host,
            f"rsync exited with {status}: {lines[-1] if lines else 'no message'}",
            "the workdir is unchanged; check the connection and sync again",
        )
