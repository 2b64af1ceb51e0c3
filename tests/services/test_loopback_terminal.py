"""A loopback box serves a session with a terminal as sshd does (``ssh -t``, the shell key):
an interactive login shell on a pty of its own, in the box's folder, the client's window
size and its changes passed on, the terminal's keys reaching the foreground job, ``exit``
ending the session with the shell's status, and a dropped channel hanging up on it."""

from __future__ import annotations

import asyncio
import signal

import asyncssh
import psutil
from support.machine import alive
from support.waiting import wait_for

from rgt_tui.demo.loopback import LoopbackFleet


class _Screen:
    """What a terminal session printed, read as it arrives (until the session's EOF)."""

    def __init__(self, process: asyncssh.SSHClientProcess[str]) -> None:
        self.text = ""
        self._reading = asyncio.create_task(self._read(process))

    async def _read(self, process: asyncssh.SSHClientProcess[str]) -> None:
        while data := await process.stdout.read(4096):
            self.text += data

    async def shows(self, text: str, timeout: float = 30) -> None:
        await wait_for(lambda: text in self.text, timeout, repr(text), show=lambda: self.text)

    async def ended(self, timeout: float = 30) -> None:
        await wait_for(self._reading.done, timeout, "the session's EOF", show=lambda: self.text)


def _job(cmdline: list[str]) -> psutil.Process | None:
    """The process under this one (the box's session) running ``cmdline``."""
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.cmdline() == cmdline:
                return proc
        except psutil.Error:
            continue
    return None


async def test_a_terminal_gets_an_interactive_login_shell_and_exit_ends_it(
    loopback_fleet: LoopbackFleet,
) -> None:
    box = loopback_fleet.box("box2")
    async with loopback_fleet.connect(box) as conn:
        # A shell request with a pty, as `ssh -t box` makes (the shell key sends a command).
        process = await conn.create_process(term_type="xterm-256color", term_size=(100, 30))
        screen = _Screen(process)
        process.stdin.write(
            "echo at-$((6*7)) $PWD; tty; stty size; echo $TERM; shopt login_shell\n"
        )
        await screen.shows(f"at-42 {box.root}")  # the typed line ran, in the box's folder
        # Each line is waited for: the rest of the output can arrive a read later.
        await screen.shows("/dev/pts/")
        await screen.shows("30 100")
        await screen.shows("\nxterm-256color")
        await screen.shows("login_shell    \ton")
        # A resize reaches the terminal (the shell's programs redraw at the new size).
        process.change_terminal_size(120, 40)
        process.stdin.write("stty size\n")
        await screen.shows("40 120")

        # The terminal's keys go to the foreground job: its own controlling terminal.
        process.stdin.write("sleep 6161\n")
        await wait_for(lambda: _job(["sleep", "6161"]), 30, "the sleep to start")
        process.stdin.write("\x1a")  # Ctrl-Z
        await screen.shows("Stopped")
        # A second `exit` in case the shell had not yet seen the job end ("There are
        # stopped jobs"); else the session ends with the first.
        process.stdin.write("kill -9 %1; echo ok-$((6*7))\nexit 0\nexit 0\n")
        await screen.shows("ok-42")
        await screen.ended()
        await asyncio.wait_for(process.wait_closed(), 30)
        assert process.exit_status == 0
    assert not loopback_fleet.errors


async def test_a_dropped_terminal_session_is_hung_up_on(loopback_fleet: LoopbackFleet) -> None:
    async with loopback_fleet.connect("box1") as conn:
        process = await conn.create_process("exec bash -l", term_type="xterm", term_size=(80, 24))
        process.stdin.write("sleep 6262\n")
        job = await wait_for(lambda: _job(["sleep", "6262"]), 30, "the sleep to start")
        shell = job.parent()  # the login shell
        assert shell is not None
        process.close()
        await wait_for(lambda: not alive(job.pid) and not alive(shell.pid), 30, "the hang-up")
    assert not loopback_fleet.errors


async def test_ctrl_c_reaches_the_job_when_the_demo_itself_ignores_sigint(
    loopback_fleet: LoopbackFleet,
) -> None:
    """A demo started as a background job of a script ignores SIGINT, and a child keeps
    an ignored signal: the shell's jobs ignored Ctrl-C. As sshd does, the terminal's child
    starts with every signal at its default."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        async with loopback_fleet.connect("box1") as conn:
            process = await conn.create_process(term_type="xterm", term_size=(80, 24))
            screen = _Screen(process)
            process.stdin.write("sleep 6464\n")
            job = await wait_for(lambda: _job(["sleep", "6464"]), 30, "the sleep to start")
            process.stdin.write("\x03")  # Ctrl-C
            await wait_for(lambda: not alive(job.pid), 30, "the sleep to end on Ctrl-C")
            process.stdin.write("echo after-$((6*7)) $?\n")
            await screen.shows("after-42 130")  # killed by SIGINT: 128 + 2
            process.stdin.write("exit 0\n")
            await screen.ended()
    finally:
        signal.signal(signal.SIGINT, before)
    assert not loopback_fleet.errors
