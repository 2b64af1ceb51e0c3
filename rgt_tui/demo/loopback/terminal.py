"""One session with a terminal (``ssh -t``, the shell key): the child on a pty, as sshd does.

A client that requests a pty gets one: the child runs in a new session with the pty's
slave as its controlling terminal and its stdin, stdout and stderr, the client's window
size and terminal modes set on it and ``TERM`` from the request, so a login shell is
interactive (prompt, line editing, job control) and the terminal's keys send their
signals (Ctrl-C, Ctrl-Z). Bytes pass through the pty's master both ways; a window change
resizes it (the child gets SIGWINCH). As on sshd, the session ends when the child has
exited and the terminal reads EOF, and a dropped channel hangs up on the session (the
master closed, then ``session``'s hang-up).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import struct
import sys
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import asyncssh

from rgt_tui.demo.loopback.session import hang_up, report_exit, signal_from_client

_CHUNK = 65536
# What sshd does in the child before it execs the shell, run as a small program between
# fork and exec (calls in a preexec_fn would run Python in a forked copy of a threaded
# process): the pty becomes the new session's controlling terminal, and every signal
# goes back to its default, so a demo started with SIGINT ignored (a background job of
# a script) still gives its shell a Ctrl-C that works. The signals are set before exec,
# which keeps an ignored one ignored but resets a caught one: both end at the default.
_AS_SSHD_DOES = """
import fcntl, os, signal, sys, termios
fcntl.ioctl(0, termios.TIOCSCTTY, 0)
for number in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}:
    try:
        signal.signal(number, signal.SIG_DFL)
    except (OSError, ValueError):
        pass
os.execvp(sys.argv[1], sys.argv[1:])
"""
# The client's terminal modes (RFC 4254, 8) that the pty takes: the control characters
# (the termios name, then asyncssh's where it differs), then the flags by termios word
# (iflag, oflag, lflag). CS7/CS8/PAR* (cflag) are a serial line's, nothing to a pty.
_MODE_CHARS = {
    **{c: c for c in ("VINTR", "VQUIT", "VERASE", "VKILL", "VEOF", "VEOL", "VEOL2")},
    **{c: c for c in ("VSTART", "VSTOP", "VSUSP", "VREPRINT", "VLNEXT", "VDISCARD")},
    "VWERASE": "WERASE",
}
_MODE_FLAGS = {
    0: ("IGNPAR", "PARMRK", "INPCK", "ISTRIP", "INLCR", "IGNCR", "ICRNL", "IUCLC", "IXON")
    + ("IXANY", "IXOFF", "IMAXBEL", "IUTF8"),
    1: ("OPOST", "OLCUC", "ONLCR", "OCRNL", "ONOCR", "ONLRET"),
    3: ("ISIG", "ICANON", "XCASE", "ECHO", "ECHOE", "ECHOK", "ECHONL", "NOFLSH", "TOSTOP")
    + ("IEXTEN", "ECHOCTL", "ECHOKE", "PENDIN"),
}


class Terminal:
    """A pty for one channel: its master (ours) and slave (the child's), set as asked."""

    def __init__(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        self.master, self._slave = os.openpty()
        try:
            self.name = os.ttyname(self._slave)  # the child's $SSH_TTY, as sshd sets it
            _set_modes(self._slave, process.term_modes)
            self.resize(*process.get_terminal_size())
            os.set_blocking(self.master, False)
        except BaseException:
            os.close(self._slave)
            self.close()
            raise

    def resize(self, width: int, height: int, pixwidth: int = 0, pixheight: int = 0) -> None:
        """Set the window size (a client that sent none: 0x0, as sshd leaves it)."""
        size = struct.pack("HHHH", height, width, pixwidth, pixheight)
        with contextlib.suppress(OSError):  # a size the pty refuses: keep the old one
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, size)

    async def spawn(
        self, argv: Sequence[str], cwd: Path, env: dict[str, str]
    ) -> asyncio.subprocess.Process:
        """Start ``argv`` on the slave, in a session of its own that the pty controls."""
        try:
            return await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-S", "-c", _AS_SSHD_DOES, *argv,
                cwd=cwd,
                env=env,
                stdin=self._slave,
                stdout=self._slave,
                stderr=self._slave,
                start_new_session=True,
            )  # fmt: skip
        finally:
            # The child holds the slave now: once it and its jobs let go, the master
            # reads EOF (EIO on Linux).
            os.close(self._slave)

    def close(self) -> None:
        """Close the master: the pty hangs up (SIGHUP to the session it controls). Once:
        a second close could hit another file that took the same number."""
        master, self.master = self.master, -1
        if master >= 0:
            with contextlib.suppress(OSError):
                os.close(master)

    def read(self) -> bytes | None:
        """What the child wrote (b"": nothing holds the slave any more; None: nothing yet)."""
        try:
            return os.read(self.master, _CHUNK)
        except BlockingIOError:
            return None
        except OSError:  # EIO: every process let go of the slave
            return b""


class PtyBridge:
    """Bridges one channel with a terminal and the child on its pty, as sshd does."""

    def __init__(
        self,
        process: asyncssh.SSHServerProcess[bytes],
        child: asyncio.subprocess.Process,
        terminal: Terminal,
    ) -> None:
        self._process = process
        self._child = child
        self._terminal = terminal

    async def run(self) -> None:
        """Pump the bytes until the child is done or the channel goes away."""
        pumps = [asyncio.create_task(self._pump_in()), asyncio.create_task(self._pump_out())]
        finished = asyncio.create_task(self._finished(pumps[1]))
        closed = asyncio.create_task(self._process.channel.wait_closed())
        try:
            done, _ = await asyncio.wait({finished, closed}, return_when=asyncio.FIRST_COMPLETED)
            # The pumps stop before the master closes: none waits on its number then.
            await _cancel(pumps)
            self._terminal.close()
            if finished in done and not self._process.is_closing():
                report_exit(self._process, self._child)
            else:
                await hang_up(self._child)
        finally:
            await _cancel([*pumps, finished, closed])
            self._terminal.close()

    async def _finished(self, output: asyncio.Task[None]) -> None:
        # As sshd: the exit is reported once the child is gone AND the pty reads EOF, i.e.
        # every byte it wrote was read (the kernel hands a pty's output over late) and no
        # job it left in the background still holds the terminal.
        await output
        await self._child.wait()

    async def _pump_in(self) -> None:
        while True:
            try:
                data = await self._process.stdin.read(_CHUNK)
            except asyncssh.TerminalSizeChanged as exc:
                self._terminal.resize(exc.width, exc.height, exc.pixwidth, exc.pixheight)
                continue
            except asyncssh.SignalReceived as exc:
                signal_from_client(self._child, exc)
                continue
            except asyncssh.BreakReceived:
                continue
            except (asyncssh.Error, OSError):
                return  # the connection went away: run() hangs up
            if not data:
                return  # the client's EOF: a terminal has none to pass on (Ctrl-D is a byte)
            while data:
                try:
                    data = data[os.write(self._terminal.master, data) :]
                except BlockingIOError:  # the pty's input queue is full: wait for room
                    await _ready(self._terminal.master, writable=True)
                except OSError:
                    return  # the pty is gone (the child exited)

    async def _pump_out(self) -> None:
        while True:
            data = self._terminal.read()
            if data is None:
                await _ready(self._terminal.master)
                continue
            if not data:
                return
            try:
                self._process.stdout.write(data)
                await self._process.stdout.drain()  # flow control: a slow client slows the child
            except (BrokenPipeError, ConnectionError, asyncssh.Error):
                return  # channel gone; run() hangs up on the child


async def _cancel(tasks: Sequence[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _ready(fd: int, *, writable: bool = False) -> None:
    """Wait until ``fd`` can be read (or written) without blocking."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    add, remove = (
        (loop.add_writer, loop.remove_writer) if writable else (loop.add_reader, loop.remove_reader)
    )
    add(fd, lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        remove(fd)


def _set_modes(fd: int, modes: Mapping[int, int]) -> None:
    """Give the pty the client's terminal modes it sent (the rest stay the kernel's)."""
    if not modes:
        return
    attrs = termios.tcgetattr(fd)
    try:
        disabled = max(os.fpathconf(fd, "PC_VDISABLE"), 0)  # turns a key off (SSH: 255)
    except OSError:
        disabled = 0
    for ours, theirs in _MODE_CHARS.items():
        index = getattr(termios, ours, None)
        value = modes.get(getattr(asyncssh, f"PTY_{theirs}", -1))
        if index is not None and value is not None:
            attrs[6][index] = bytes([disabled if value == 255 else value & 0xFF])
    for word, names in _MODE_FLAGS.items():
        for name in names:
            bit = getattr(termios, name, None)
            value = modes.get(getattr(asyncssh, f"PTY_{name}", -1))
            if bit is not None and value is not None:
                attrs[word] = attrs[word] | bit if value else attrs[word] & ~bit
    with contextlib.suppress(termios.error):  # modes the pty refuses: the kernel's then
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
