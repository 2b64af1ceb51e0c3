"""Large files from a near box through OpenSSH's ``ssh`` (issue 44).

On a near box (a few milliseconds away, or the same datacenter) a pull is bound by this
machine's CPU, not the link, and most of that CPU was asyncssh's: every 32 KiB packet
decrypted, parsed and copied in Python on the event loop, one core for the whole pull.
``ssh`` (C, AES-NI) reading one file to its stdout, drained by a thread in 1 MiB reads that
write and hash the part, costs less per byte and runs beside the loop on another core
(``scripts/bench_bulk.py``, docs/pulls.md): the loopback bench's large files move in about
half the time.

Only where it is sound:
- the box is near (``NEAR_RTT_S``): OpenSSH's session window is 2 MiB, a far box's
  round trip caps one stream at a few MB/s, and the SFTP lanes fill such a link;
- no bandwidth budget (SFTP paces its reads; a pipe cannot);
- ``transport.openssh.openssh_for`` gives a command: ours stays the only host-key check
  whatever ~/.ssh/config says, no forwarding, no shared master (else it says why, and
  the pull says it in its summary);
- files of at least ``MIN_BYTES``: each is one more login on the box.

What the box sends counts for nothing until the part's SHA-256 is the manifest's (the copy's
own check). At most the bytes the manifest lists are read; a stream that ends short, a
stall or an ``ssh`` that fails hands the rest of the file, from the part's size, to SFTP
(``BulkFailed``), which says precisely what is wrong. The box's stderr is read (bounded)
and shown only through ``printable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import select
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Protocol

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.text import printable
from rgt_tui.services.pull.plan import FilePlan
from rgt_tui.services.pull.state import PullRun
from rgt_tui.timeouts import within
from rgt_tui.transport.openssh import OpenSsh, openssh_for

# Up to this round trip (``round_trip``: the quickest of a few stats) the box is in the
# same datacenter or rack, where links are fast and a pull is bound by this machine's
# CPU: ssh wins (loopback bench 4.2 s against 5.6-6.1). At 4 ms the link bound, and
# OpenSSH's 2 MiB session windows filled less of it than the SFTP lanes (4 ms / 1 Gbit/s:
# 3.9-4.0 s against 3.7, for less CPU): SFTP, unless --bulk ssh.
NEAR_RTT_S = 0.003
MODES = ("auto", "ssh", "sftp")
MIN_BYTES = 64 << 20  # one login per file: worth it from here up
FILES_AT_ONCE = 3  # ssh processes at once: each decrypts on its own core
READ_BYTES = 1 << 20  # a thread read; also the pipe's size, where the kernel allows it
WRITE_BYTES = 1 << 20  # bytes written and hashed at once
STDERR_KEPT = 2048  # the end of ssh's (and the box's) stderr, for the message
# AES-GCM first: one AES-NI pass per packet (chacha20 costs ~20 % more client CPU here,
# docs/pulls.md). ``^``: ahead of ssh's own list, the rest still offered.
CIPHERS = "^aes128-gcm@openssh.com,aes256-gcm@openssh.com"
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


SSH_FAILED = 255  # ssh's own exit status (connection, login); else the box command's


class BulkFailed(Exception):
    """The stream could not bring the file; SFTP takes over from the part's size.
    ``route``: ssh itself failed (it could not start or connect, or the stream stalled),
    so the pull's other files go by SFTP too; else it was this file (gone, unreadable,
    shorter than listed: the box's ``cat`` said so)."""

    def __init__(self, why: str, *, route: bool) -> None:
        super().__init__(why)
        self.route = route


class Part(Protocol):
    """What the copy's part gives: its plan, its size so far and a blocking append (write
    and hash)."""

    plan: FilePlan
    at: int

    def write(self, chunks: list, dest: Path) -> None: ...


PROBES = 5  # stat round trips; the quickest is the link's (a busy loop only adds)


async def round_trip(
    stat: Callable[[], Awaitable[object]], estimate: float | None, line: float = NEAR_RTT_S
) -> float | None:
    """The link's round trip for the choice below: the quickest of up to ``PROBES`` SFTP
    stats, one round trip each. The copy's width is chosen on a session's start
    (``estimate``, three round trips and sftp-server's start, on a loop that is busy
    reading the box's listing): near the line that read 6-20 ms for a 2 ms link (ux-j 2),
    and 32 ms for a loopback box under an open TUI on a loaded machine (a user's hour). So
    an estimate up to 30x the ``line`` is probed; a box past that is far whatever a probe
    says, and pays none. Probing stops at the first stat under the line (near) or one
    past 10x it (far): a box 50 ms away pays one round trip."""
    if estimate is None or estimate > 30 * line:
        return estimate
    best = estimate
    for _ in range(PROBES):
        start = time.monotonic()
        try:
            await stat()
        except Exception:  # noqa: BLE001 - a failed probe measures nothing
            break
        took = time.monotonic() - start
        best = min(best, took)
        if best <= line or took > 10 * line:
            break
    return best


def bulk_command(
    host: HostConfig, *, rtt_s: float | None, budget: object, mode: str
) -> OpenSsh | str:
    """The ``ssh`` to stream large files with, or why not (a phrase for the summary).
    ``mode``: "auto" (a near box), "ssh" (whatever the round trip), "sftp" (never).
    Blocking: ``openssh_for`` runs ``ssh -G``; call it in a thread."""
    if mode == "sftp":
        return "--bulk sftp"
    if budget is not None:
        return "a bandwidth limit (SFTP paces it)"
    if mode == "auto" and (rtt_s is None or rtt_s > NEAR_RTT_S):
        far = f"a {rtt_s * 1000:.0f} ms round trip" if rtt_s is not None else "an unknown link"
        return f"{far} (SFTP lanes fill it; --bulk ssh to stream anyway)"
    return openssh_for(host)


def stream_argv(ssh: OpenSsh, path: str, offset: int) -> tuple[str, ...]:
    """``ssh … -- HOST 'cat -- PATH'``: the file from byte ``offset`` on stdout. A resumed
    one by POSIX ``tail -c +N`` (GNU, busybox), which GNU reads 8 KiB at a time, so a whole
    file is ``cat``'s (128 KiB); ``--`` keeps a path starting with ``-`` a path."""
    word = shlex.quote(path)
    command = f"tail -c +{offset + 1} -- {word}" if offset else f"cat -- {word}"
    return (*ssh.argv, "-T", "-o", f"Ciphers={CIPHERS}", "--", ssh.destination, command)


async def stream_into(
    argv: tuple[str, ...],
    part: Part,
    size: int,
    dest: Path,
    *,
    moved: Callable[[int], None],
    stall_s: float,
    env: Mapping[str, str] | None = None,
) -> None:
    """Append the stream of ``argv`` to ``part`` until it holds ``size`` bytes. ``moved(n)``
    runs on the loop for each write. Raises ``BulkFailed`` when the stream ends short,
    stalls for ``stall_s`` or ``ssh`` fails; the part keeps what was written."""
    read_fd, write_fd = os.pipe()
    with contextlib.suppress(OSError):  # a smaller pipe only costs more reads
        fcntl.fcntl(read_fd, F_SETPIPE_SZ, READ_BYTES)
    try:
        # Its own process group: what ssh starts (a ProxyCommand) goes with it.
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=None if env is None else dict(env),  # OpenSsh.env: nothing to SendEnv
        )
    except OSError as exc:
        os.close(read_fd)
        raise BulkFailed(f"ssh could not start ({exc.strerror or exc})", route=True) from exc
    finally:
        os.close(write_fd)  # ssh holds the only writer: its end is the stream's end
    loop = asyncio.get_running_loop()
    last = [time.monotonic()]
    stop = threading.Event()  # the thread's reads end at its next wake (0.5 s at most)

    def wrote(n: int) -> None:
        last[0] = time.monotonic()
        moved(n)

    def wrote_there(n: int) -> None:  # from the thread
        loop.call_soon_threadsafe(wrote, n)

    errors = asyncio.ensure_future(_stderr_tail(proc.stderr))
    drain = asyncio.ensure_future(
        asyncio.to_thread(_drain, read_fd, part, size, dest, wrote_there, stop)
    )
    try:
        while not drain.done():
            await asyncio.wait({drain}, timeout=min(stall_s, 1.0))
            if not drain.done() and time.monotonic() - last[0] > stall_s:
                raise BulkFailed(f"no byte for {stall_s:.0f} s", route=True)
        drain.result()  # the part's write errors (LocalWriteError) go to the copy
        if part.at >= size:
            return
        ends = f"the stream ended at {part.at} of {size} bytes"
        try:  # a box command that closed its output may still hold the session open
            code = await within(proc.wait(), stall_s)
        except asyncio.TimeoutError:
            raise BulkFailed(f"{ends}, and ssh did not end", route=True) from None
        try:  # bounded: something ssh started may still hold its stderr
            lines = (await within(asyncio.shield(errors), 5.0)).strip().splitlines()
        except asyncio.TimeoutError:
            lines = []
        why = printable(lines[-1]) if lines else ""
        said = f"{ends}: ssh exited {code}" + (f" ({why})" if why else "")
        raise BulkFailed(said, route=code == SSH_FAILED or code < 0)
    finally:
        # The file's bytes are in (a growing file goes on), a stall, or we are cancelled.
        stop.set()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        if not drain.done():
            # The thread must end before its descriptor closes (a number closed under it
            # could be another file's by then).
            with contextlib.suppress(BaseException):
                await asyncio.shield(drain)
        os.close(read_fd)
        await proc.wait()
        errors.cancel()


def _drain(
    fd: int,
    part: Part,
    size: int,
    dest: Path,
    wrote: Callable[[int], None],
    stop: threading.Event,
) -> None:
    """Read the pipe into ``part`` (a worker thread) until ``size`` bytes, its end or
    ``stop``; never reads past ``size``: whatever more the box sends is left in the pipe."""
    buffer = bytearray(WRITE_BYTES)
    view = memoryview(buffer)
    while part.at < size:
        want, got = min(WRITE_BYTES, size - part.at), 0
        while got < want:
            # A wait with a timeout, not a blocking read: whatever else still holds the
            # pipe open, ``stop`` ends this thread.
            if not select.select([fd], [], [], 0.5)[0]:
                if stop.is_set():
                    return
                continue
            n = os.readv(fd, [view[got : min(want, got + READ_BYTES)]])
            if not n:
                break
            got += n
        if got:
            part.write([view[:got]], dest)
            wrote(got)
        if got < want:
            return


async def _stderr_tail(stream: asyncio.StreamReader | None) -> str:
    """The last ``STDERR_KEPT`` bytes of ``stream``, read to its end (so ssh never blocks
    on a full stderr pipe, whatever the box writes there)."""
    kept = b""
    if stream is not None:
        while chunk := await stream.read(65536):
            kept = (kept + chunk)[-STDERR_KEPT:]
    return kept.decode("utf-8", "replace")


async def choose(run: PullRun) -> None:
    """Decide, once a pull, whether its large files stream (``run.bulk``: the command, or
    why not), on the probed round trip (``run.bulk_rtt_s``)."""
    run.bulk_rtt_s = await round_trip(lambda: run.transport.stat("/"), run.width_rtt_s)
    run.bulk = await asyncio.to_thread(
        bulk_command,
        run.host,
        rtt_s=run.bulk_rtt_s,
        budget=run.options.budget,
        mode=run.options.bulk,
    )


async def stream_part(run: PullRun, part: Part, ssh: OpenSsh, size: int) -> None:
    """``part``'s file from its size through ``ssh``; the copy's SFTP brings whatever it did
    not (``BulkFailed``: ssh's own failure turns the route off for the pull, the box's
    ``cat`` failing for this file sends this file alone to SFTP)."""
    local = part.plan.local

    def moved(nbytes: int) -> None:
        run.touch()
        run.tracker.moved(local, nbytes)
        run.tracker.advance(local, nbytes)

    argv = stream_argv(ssh, run.remote_path(part.plan), part.at)
    try:
        # Half the stall timeout: a stalled stream is handed to SFTP before the pull's own
        # stall watch would drop the (healthy) connection for it.
        stall_s = run.options.stall_timeout_s / 2
        await stream_into(argv, part, size, run.dest, moved=moved, stall_s=stall_s, env=ssh.env)
    except BulkFailed as exc:
        run.touch()  # SFTP starts now: its own time to the first byte
        if exc.route:  # ssh itself: the other files by SFTP too
            run.bulk_off(local, str(exc))
        else:  # this file (gone, unreadable, shorter): SFTP says precisely what
            run.bulk_skipped.append((local, str(exc)))
    finally:
        run.streamed.add(local)
