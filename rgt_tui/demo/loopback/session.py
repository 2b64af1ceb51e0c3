"""One exec session: an SSH channel bridged to its child process the way sshd does.

Streams pumped both ways in binary, the exit status or killing signal reported back,
and on a dropped channel the session's process group hung up on (SIGHUP, then SIGKILL
after a grace), while jobs that detached into another session survive. The exit report
and the hang-up are a session's, with a terminal or not (``terminal`` uses them too).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import asyncssh

from rgt_tui.timeouts import within

_CHUNK = 65536
_HANGUP_GRACE_S = 1.0  # between SIGHUP and SIGKILL after a session drop


class ExecBridge:
    """Bridges one exec channel and its child process the way sshd does."""

    def __init__(
        self, process: asyncssh.SSHServerProcess[bytes], child: asyncio.subprocess.Process
    ) -> None:
        self._process = process
        self._child = child

    async def run(self) -> None:
        """Pump the streams until the child is done or the channel goes away."""
        assert self._child.stdout is not None and self._child.stderr is not None
        outputs = [
            asyncio.create_task(self._pump_out(self._child.stdout, self._process.stdout)),
            asyncio.create_task(self._pump_out(self._child.stderr, self._process.stderr)),
        ]
        tasks = [
            asyncio.create_task(self._pump_in()),
            *outputs,
            finished := asyncio.create_task(self._finished(outputs)),
            closed := asyncio.create_task(self._process.channel.wait_closed()),
        ]
        try:
            done, _ = await asyncio.wait({finished, closed}, return_when=asyncio.FIRST_COMPLETED)
            if finished in done and not self._process.is_closing():
                report_exit(self._process, self._child)
            else:
                await self._hang_up()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _finished(self, outputs: list[asyncio.Task[None]]) -> None:
        # sshd reports the exit once the child is gone AND its output reached EOF, so a
        # background job still holding stdout keeps the channel open (as on a real box).
        await asyncio.gather(*outputs)
        await self._child.wait()

    async def _pump_in(self) -> None:
        stdin = self._child.stdin
        assert stdin is not None
        sink = False  # once the child closed its stdin, discard input as sshd does
        while True:
            try:
                data = await self._process.stdin.read(_CHUNK)
            except asyncssh.SignalReceived as exc:
                signal_from_client(self._child, exc)
                continue
            except (asyncssh.BreakReceived, asyncssh.TerminalSizeChanged):
                continue
            except (asyncssh.Error, OSError):
                data = b""  # the connection went away: treat as EOF
            if not data:
                if not stdin.is_closing():
                    stdin.close()
                return
            if sink:
                continue
            try:
                stdin.write(data)
                await stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                sink = True

    async def _pump_out(
        self, reader: asyncio.StreamReader, writer: asyncssh.SSHWriter[bytes]
    ) -> None:
        while data := await reader.read(_CHUNK):
            try:
                writer.write(data)
                await writer.drain()  # flow control: a slow client slows the child
            except (BrokenPipeError, ConnectionError, asyncssh.Error):
                return  # channel gone; run() hangs up on the child

    async def _hang_up(self) -> None:
        """Close the child's stdin, throw its output away, and hang up on its group."""
        if self._child.stdin is not None and not self._child.stdin.is_closing():
            self._child.stdin.close()
        # Output that can no longer go anywhere is thrown away, as sshd closes its ends of
        # the pipes: a command blocked writing to a full pipe gets on to its hang-up, and
        # asyncio's wait() (which waits for the pipes' end too) can return.
        discard = [
            asyncio.create_task(_discard(pipe))
            for pipe in (self._child.stdout, self._child.stderr)
            if pipe is not None
        ]
        try:
            await hang_up(self._child)
        finally:
            for task in discard:
                task.cancel()


def report_exit(
    process: asyncssh.SSHServerProcess[bytes], child: asyncio.subprocess.Process
) -> None:
    """Tell the client how the (exited) child ended: EOF, then the status, then close, as
    sshd does."""
    rc = child.returncode
    assert rc is not None
    process.stdout.write_eof()
    if rc < 0:
        # Same fields as OpenSSH: the bare signal name, no message, no language tag.
        name = signal.Signals(-rc).name.removeprefix("SIG")
        process.exit_with_signal(name, False, "", "")
    else:
        process.exit(rc)


async def hang_up(child: asyncio.subprocess.Process) -> None:
    """SIGHUP the session's group; SIGKILL it if the command outlives the grace."""
    # The whole group, even when the command already exited: a job it put in the
    # background may still hold the channel's stdout.
    signal_group(child, signal.SIGHUP)
    try:
        await within(child.wait(), _HANGUP_GRACE_S)
    except asyncio.TimeoutError:
        # Only when the command itself ignored SIGHUP: a nohup'd job that the
        # command left behind in its group survives, as it does on a real box.
        signal_group(child, signal.SIGKILL)
        await child.wait()


def signal_from_client(child: asyncio.subprocess.Process, exc: asyncssh.SignalReceived) -> None:
    """A signal the client sent (``signal`` request): to the session's group."""
    signal_group(child, getattr(signal, f"SIG{exc.signal}", None))


def signal_group(child: asyncio.subprocess.Process, sig: signal.Signals | None) -> None:
    """Send ``sig`` to the child's process group (it leads a session of its own)."""
    if sig is None:
        return
    try:
        os.killpg(child.pid, sig)  # pgid == pid: start_new_session=True
    except (ProcessLookupError, PermissionError):
        pass  # the whole group is already gone


async def _discard(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(Exception):
        while await reader.read(_CHUNK):
            pass
