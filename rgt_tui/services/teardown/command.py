"""Run the host's configured teardown command: bounded in time, ended with all it started.

The command runs in a session of its own (the one local process-group runner,
``transport.process_group``), so it leads a process group; on timeout the whole group is
killed, not only the shell: a provider CLI the shell
started (``sh -c 'cli destroy & wait'``) must not keep running, unseen, after the app
said the command was stopped. What it printed is kept (its last ``OUTPUT_CAP`` bytes).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rgt_tui.domain.literal_secret import without_env_secrets
from rgt_tui.timeouts import within
from rgt_tui.transport.process_group import kill_group, start_in_group

OUTPUT_CAP = 64 * 1024  # bytes of output kept (the tail): the record keeps 4,000 chars


@dataclass(frozen=True)
class LocalRun:
    """A command run on this machine (a box's answer is ``transport.CommandResult``): the
    exit status (negative: killed by that signal), the output, and whether the
    command ran past its time and was killed with its process group."""

    status: int | None
    output: str
    timed_out: bool


def timed_out_note(timeout_s: float) -> str:
    """What a timeout means for the box, for the checklist, the CLI and the record."""
    return (
        f"teardown command timed out after {timeout_s:g} s and was stopped with every "
        "process it started. The provider may have half-destroyed the box: check the "
        "provider's console before running it again; the box is NOT recorded as torn down"
    )


async def run_teardown_command(
    command: str,
    cwd: Path | None,
    timeout_s: float,
    started: Callable[[int], None] | None = None,
) -> LocalRun:
    """Run ``command`` with ``sh``; after ``timeout_s`` kill its whole process group.
    ``started`` hears its pid as it starts (the command line says so, and names it if
    the user presses Ctrl-C).

    Its output goes to an unnamed temporary file, not a pipe: the wait ends when the
    shell exits, even if something it left in the background still holds its output.
    Cancelled (the app quits mid-teardown), the command goes on: a provider's destroy
    interrupted halfway would be worse.
    """
    with tempfile.TemporaryFile() as out:
        proc = await start_in_group(  # its own process group, killed whole on timeout
            "/bin/sh",
            "-c",
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd,
        )
        if started is not None:
            started(proc.pid)
        timed_out = False
        try:
            await within(proc.wait(), timeout_s)
        except asyncio.TimeoutError:
            timed_out = True
            kill_group(proc)
            await proc.wait()
        tail = await asyncio.to_thread(_tail, out)
    # The command runs with this environment: a key it echoes is not shown nor recorded.
    output = without_env_secrets(tail.decode(errors="replace"), os.environ)
    if timed_out:
        sep = "" if not output or output.endswith("\n") else "\n"
        output += sep + timed_out_note(timeout_s)
    return LocalRun(proc.returncode, output, timed_out)


def _tail(f: IO[bytes]) -> bytes:
    """The last ``OUTPUT_CAP`` bytes written to ``f``, from a whole line: a cut line may
    begin inside a secret, whose tail the redaction would not know (review h473 #4)."""
    end = f.seek(0, os.SEEK_END)
    f.seek(max(0, end - OUTPUT_CAP))
    data = f.read()
    if end <= OUTPUT_CAP:
        return data
    return b"[earlier output cut]\n" + data[data.find(b"\n") + 1 :] if b"\n" in data else b""
