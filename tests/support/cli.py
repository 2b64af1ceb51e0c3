"""The real command line, run as a person or a script runs it: a subprocess of its own."""

from __future__ import annotations

import asyncio
import os
import pty
import subprocess
import sys
from pathlib import Path

RGT = [sys.executable, "-m", "rgt_tui"]  # the entry point, run by this interpreter
RGT_TUI = Path(sys.executable).parent / "rgt-tui"  # the installed console script


def cli_env(env: dict[str, str | None] | None = None) -> dict[str, str]:
    """This process's environment without a fleet file of the user's (``RGT_HOSTS``
    empty), then ``env`` on top (a value of None removes the variable)."""
    merged: dict[str, str | None] = {**os.environ, "RGT_HOSTS": "", **(env or {})}
    return {k: v for k, v in merged.items() if v is not None}


def rgt(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str | None] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``rgt-tui ARGS`` to its end; stdin is ``stdin``'s text, else nothing (never a
    terminal, so it never asks)."""
    return subprocess.run(
        [*RGT, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=cli_env(env),
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
    )


async def arun(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """``rgt`` off the event loop: the loopback boxes serve from the test's loop, so a
    command that connects to them must not block it."""
    return await asyncio.to_thread(rgt, *args, **kwargs)  # type: ignore[arg-type]


class Terminal:
    """``rgt-tui ARGS`` under a pseudo-terminal, so it asks as it would a person.

    stdin is the terminal; stdout and stderr are pipes, or the terminal too with
    ``output_on_terminal`` (then what it prints reads as ``out`` and stderr is empty).
    """

    def __init__(
        self,
        *args: str | Path,
        cwd: Path | None = None,
        env: dict[str, str | None] | None = None,
        output_on_terminal: bool = False,
    ) -> None:
        self.master, slave = pty.openpty()
        out = slave if output_on_terminal else subprocess.PIPE
        self.proc = subprocess.Popen(
            [*RGT, *map(str, args)],
            stdin=slave,
            stdout=out,
            stderr=out,
            cwd=cwd,
            env=cli_env(env),
        )
        os.close(slave)
        self._read_fd = self.master if output_on_terminal else self.proc.stdout.fileno()  # type: ignore[union-attr]
        self.out = b""

    async def expect(self, text: str, timeout: float = 60) -> None:
        """Read what it prints until ``text`` shows (a prompt has no newline after it)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while text.encode() not in self.out:
            left = deadline - asyncio.get_running_loop().time()
            assert left > 0, f"no {text!r} within {timeout:g} s: {self.out.decode()}"
            chunk = await asyncio.wait_for(asyncio.to_thread(os.read, self._read_fd, 4096), left)
            assert chunk, f"exited before {text!r}: {self.out.decode()}"
            self.out += chunk

    async def expect_asked(self, text: str, timeout: float = 60) -> None:
        """``text`` (why a question is asked again, say), then the question after it: a
        prompt drops what was typed before it showed (rgt_tui.cli.prompt.ask)."""
        await self.expect(text, timeout)
        at = self.out.rfind(text.encode())
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.out[at:].endswith((b": ", b"? ", b"] ")):
            left = deadline - asyncio.get_running_loop().time()
            assert left > 0, f"no question after {text!r} within {timeout:g} s: {self.out.decode()}"
            chunk = await asyncio.wait_for(asyncio.to_thread(os.read, self._read_fd, 4096), left)
            assert chunk, f"exited before a question after {text!r}: {self.out.decode()}"
            self.out += chunk

    def type(self, line: str) -> None:
        """Type ``line`` and Enter."""
        os.write(self.master, line.encode() + b"\n")

    async def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        """Wait for the end; (exit code, everything it printed, stderr)."""
        try:
            if self._read_fd == self.master:
                await asyncio.to_thread(self.proc.wait, timeout)
                out, err = self._drain_terminal(), b""
            else:
                out, err = await asyncio.to_thread(self.proc.communicate, timeout=timeout)
        finally:
            os.close(self.master)
            if self.proc.returncode is None:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode, (self.out + out).decode(errors="replace"), err.decode()

    def _drain_terminal(self) -> bytes:
        rest = b""
        try:
            while chunk := os.read(self.master, 4096):
                rest += chunk
        except OSError:  # the terminal's other side closed: everything was read
            pass
        return rest
