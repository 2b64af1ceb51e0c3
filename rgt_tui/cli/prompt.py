"""Asking at the terminal in a way Ctrl-C always ends, and the one ``confirmed()`` every
command that asks before acting goes through (``--yes``, no terminal, the answer).

Not ``input()``: a Ctrl-C that lands after the prompt is written but before ``input()``
blocks in ``read()`` is noted by Python and never interrupts that read, so the command
waits for Enter (seen on a loaded machine: `launch` ignored Ctrl-C at its question).
Waiting in ``select()`` on the terminal and on a signal wake-up pipe closes the gap: the
pipe is readable as soon as a signal came, and Python then raises KeyboardInterrupt.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import sys
import termios
from typing import TYPE_CHECKING

from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_PROBLEMS

if TYPE_CHECKING:
    from rgt_tui.cli.runner import Call


def ask(prompt: str, *, flush: bool = True) -> str | None:
    """A line typed at the terminal, stripped; None at the end of input. ``flush`` False:
    what was typed (pasted) before the prompt answers it (a line continued from the last)."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    try:
        old = signal.set_wakeup_fd(wake_w)
    except ValueError:  # not the main thread: signals are not handled here anyway
        old = None
    # Bytes straight from the descriptor, one at a time: a buffered reader could hold
    # the next answers of piped input where select() cannot see them.
    fd = sys.stdin.fileno()
    line = bytearray()
    try:
        if flush and os.isatty(fd):
            # Keys typed before the question was shown answer nothing: a `y⏎` typed on
            # after the command answered "Stop the queue…? [y/N]" unseen (hour s25a #5),
            # and the same ask() reads teardown's typed host name.
            with contextlib.suppress(termios.error):
                termios.tcflush(fd, termios.TCIFLUSH)
        # Shown inside the try: a Ctrl-C from the moment it shows ends its line (below).
        sys.stdout.write(prompt)
        sys.stdout.flush()
        while True:
            ready, _, _ = select.select([fd, wake_r], [], [])
            if wake_r in ready:
                # A signal came: its Python handler runs before the next line (Ctrl-C:
                # KeyboardInterrupt); any other handler returns and we wait on.
                os.read(wake_r, 512)
                continue
            byte = os.read(fd, 1)
            if not byte:
                if os.isatty(fd):  # Ctrl-D: what the command says next starts a line
                    sys.stdout.write("\n")
                    sys.stdout.flush()
                return _typed(line) if line else None
            if byte == b"\n":
                if not _KEY_SEQUENCE.search(line):
                    return _typed(line)
                # An arrow moved no cursor here: what it meant cannot be known, and a
                # guess writes another value than the one meant (review h605 #7).
                sys.stdout.write(ARROWS_SAID + prompt)
                sys.stdout.flush()
                line.clear()
                continue
            line += byte
    except KeyboardInterrupt:
        # The terminal echoed ^C where the answer was being typed: end that line, so
        # what the command says next starts on a line of its own.
        sys.stdout.write("\n")
        sys.stdout.flush()
        raise
    finally:
        if old is not None:
            with contextlib.suppress(ValueError):
                signal.set_wakeup_fd(old)
        os.close(wake_r)
        os.close(wake_w)


# The keys a line-mode terminal passes on as text: arrows and the like (ESC [ D, ESC O H),
# and a lone Esc. In an answer they were garbage ("~/ESC[DESC[Dabc", h604 #5).
# ESC by its number: keys read here, never escapes written (test_cli's rule on literals).
_KEY_SEQUENCE = re.compile(re.escape(bytes([27])) + rb"(?:\[[0-?]*[ -/]*[@-~]|O.|)")


ARROWS_SAID = "arrow keys do not edit here (Backspace and Ctrl-U do): type it again\n"


def _typed(line: bytes) -> str:
    """The answer ``line`` gives, stripped (at the end of input, without the keys'
    escape sequences: there is no asking again)."""
    return _KEY_SEQUENCE.sub(b"", line).decode(errors="replace").strip()


def confirmed(
    call: Call,
    question: str,
    *,
    verb: str = "",
    why: str = "",
    declined: str = "nothing done",
    typed: str | None = None,
) -> int | None:
    """None to go ahead (``--yes``, or the user answered y — or typed ``typed`` exactly,
    for a question that asks for a value); else the exit code to return. Without a
    terminal there is no one to ask: refused, ``why`` first, naming ``--yes [to VERB]``.
    A declined question prints ``declined``."""
    if call.args.yes:
        return None
    if not sys.stdin.isatty():
        to = f" to {verb}" if verb else ""
        return call.fail(
            f"{why}stdin is not a terminal, so there is no one to ask — pass --yes{to}",
            code=EXIT_BAD_INPUT,
        )
    if typed is not None:
        agreed = ask(question) == typed
    else:
        agreed = (ask(f"{question} [y/N] ") or "").lower() in ("y", "yes")
    if agreed:
        return None
    print(declined)
    return EXIT_PROBLEMS
