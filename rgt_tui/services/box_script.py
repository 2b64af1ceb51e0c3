"""The one box-script call: a script shipped in ``rgt_tui/scripts`` sent whole as
``bash -c <script> NAME ARGS...`` and its ``refused<TAB>CODE<TAB>DETAIL`` answer read.

Nothing is deployed for it: the script's text travels on the command line (never a secret:
payloads go on stdin), so the box runs exactly the bytes this version ships. ``NAME``
becomes ``$0`` (what the script's own messages call it). Every argument is shell-quoted
unless it is a ``ShellWord`` (a box path whose ``~`` must expand on the box, a command
line built for the box's shell). The answer is box text: the refusal's code and detail
are made printable here, once, for every caller.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import cache
from importlib import resources

from rgt_tui.domain.text import SHOWN_CHARS, printable
from rgt_tui.transport import CommandResult, Transport


class ShellWord(str):
    """An argument already written for the box's shell, passed to it as is (never quoted
    again): ``box_path``'s ``"$HOME"/…``, a command line built word by word."""


@cache
def script_text(name: str) -> str:
    """The text of a script shipped in ``rgt_tui/scripts`` (queue_ctl.sh, run_one.sh, …)."""
    return resources.files("rgt_tui").joinpath("scripts", name).read_text(encoding="utf-8")


_DISPATCH = '\ncase "$verb" in\n'


@cache
def after_queue_ctl(name: str) -> str:
    """queue_ctl.sh's functions (its verb dispatch cut off), then the script ``name``
    (code_ctl.sh, resume_ctl.sh): one copy of refuse, the lock and make_dir on the box."""
    ctl = script_text("queue_ctl.sh")
    cut = ctl.rfind(_DISPATCH)
    if cut < 0:
        raise RuntimeError("queue_ctl.sh has no verb dispatch to cut off")
    return ctl[:cut] + "\n" + script_text(name)


def box_path(path: str) -> ShellWord:
    """A path argument for the box's shell: a leading ``~`` becomes ``"$HOME"``, the rest
    is quoted."""
    if path == "~":
        return ShellWord('"$HOME"')
    if path.startswith("~/"):
        return ShellWord('"$HOME"/' + shlex.quote(path[2:]))
    return ShellWord(shlex.quote(path))


def box_command(script: str, name: str, *args: str | int) -> str:
    """``bash -c <script> NAME ARGS...`` with ``script`` (the text, not a file name) and
    every argument quoted, except a ``ShellWord``."""
    words = ["bash", "-c", shlex.quote(script), name]
    words += [a if isinstance(a, ShellWord) else shlex.quote(str(a)) for a in args]
    return " ".join(words)


async def run_box_script(
    transport: Transport,
    script: str,
    name: str,
    *args: str | int,
    input: str | None = None,
    timeout: float,
    max_output: int | None = None,
) -> CommandResult:
    """Run ``box_command(script, name, *args)`` on the box (TransportError: unreachable)."""
    command = box_command(script, name, *args)
    if max_output is None:
        return await transport.run(command, input=input, timeout=timeout)
    return await transport.run(command, input=input, timeout=timeout, max_output=max_output)


@dataclass(frozen=True)
class BoxRefusal:
    """Why a box script did not do what was asked: its refusal ``code`` (running, changed,
    …; empty for a failure) and ``message``, printable."""

    code: str
    message: str


def box_refusal(
    result: CommandResult,
    what: str,
    *,
    limit: int | None = SHOWN_CHARS,
    answer: str | None = None,
) -> BoxRefusal | None:
    """The script's answer as a refusal: an answer cut short (it cannot be trusted; named
    ``answer``, else ``what``), a ``refused<TAB>CODE<TAB>DETAIL`` line (``DETAIL`` cut to
    ``limit``), or a non-zero exit (``WHAT exited with N: <its last stderr line>``); None
    when it succeeded."""
    flood = result.overflow(what if answer is None else answer)
    if flood is not None:
        return BoxRefusal("", flood)
    # split("\n"), not splitlines(): a detail holding \x1c or \x85 is one line of the box's
    for line in result.stdout.split("\n"):
        if line.startswith("refused\t"):
            _, code, detail = (line.split("\t", 2) + ["", ""])[:3]
            return BoxRefusal(printable(code, 40), printable(detail.rstrip("\r"), limit))
    if result.exit_status != 0:
        err = result.stderr.strip().splitlines()
        last = printable(err[-1]) if err else "no message"
        return BoxRefusal("", f"{what} exited with {result.exit_status}: {last}")
    return None
