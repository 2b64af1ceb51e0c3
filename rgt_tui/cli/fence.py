"""The command line's last fence: nothing it writes carries a control character it did not
put there itself.

Box text is made printable where it enters (the parsers, ``domain.text.printable``); this
is the second fence, for whatever a parser missed. It has two doors, one per way the CLI
writes, and both escape the same characters (``domain.text.visible_controls``: C0 but
newline and tab, ESC, DEL, C1, as ``\\uXXXX``):

- plain ``print()`` and ``sys.stdout.write``: while a command runs, ``sys.stdout`` and
  ``sys.stderr`` are ``FencedStream``s (``fenced_output``, entered by ``cli.main``);
- Rich: every Console the CLI makes is a ``FencedConsole`` writing to the stream beneath
  the fence. Its render hook escapes the *content* of each segment, never a segment's
  style or Rich's own control segments, so bold/red and Live's redraws still work. The
  hook stays last in the console's hook list, so what a ``Live`` adds is fenced too.

The one way through is ``Vetted``: a log line already filtered by
``domain.terminal_text.terminal_safe`` (its SGR colours kept on a terminal), filtered
again on the way out so even it cannot carry anything but SGR; and ``unfenced()`` for
``rgt-tui logs --raw``, which the user asked to pass the box's bytes untouched.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from rich.console import (
    Console,
    ConsoleOptions,
    ConsoleRenderable,
    RenderHook,
    RenderResult,
)
from rich.segment import Segment

from rgt_tui.domain.terminal_text import terminal_safe
from rgt_tui.domain.text import visible_controls


class FencedStream(io.TextIOBase):
    """A text stream that writes ``visible_controls(text)`` to the stream beneath it."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.unfenced = inner

    def write(self, text: str) -> int:
        self.unfenced.write(visible_controls(text))
        return len(text)

    def flush(self) -> None:
        self.unfenced.flush()

    def isatty(self) -> bool:
        return self.unfenced.isatty()

    def fileno(self) -> int:
        return self.unfenced.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.unfenced, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.unfenced, "errors", None)


def unfenced(stream: TextIO) -> TextIO:
    """The stream beneath a ``FencedStream`` (``stream`` itself when it is not one)."""
    while isinstance(stream, FencedStream):
        stream = stream.unfenced
    return stream


@contextlib.contextmanager
def fenced_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` fenced for the length of the block."""
    saved = sys.stdout, sys.stderr
    sys.stdout = FencedStream(unfenced(sys.stdout))  # type: ignore[assignment]
    sys.stderr = FencedStream(unfenced(sys.stderr))  # type: ignore[assignment]
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        sys.stdout, sys.stderr = saved


class Vetted:
    """Segments of box text already filtered by ``terminal_safe`` (a log line): the fence
    passes them, filtered once more with the same rule, SGR kept only when asked."""

    def __init__(self, segments: Iterable[Segment], *, keep_sgr: bool) -> None:
        self.segments = list(segments)
        self.keep_sgr = keep_sgr

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for seg in self.segments:
            if seg.control:
                yield seg
            else:
                yield Segment(terminal_safe(seg.text, keep_sgr=self.keep_sgr), seg.style)


class _Fenced:
    """One renderable, its segments' text escaped (styles and control segments kept)."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for seg in console.render(self.inner, options):
            if seg.control:  # Rich's own cursor moves and clears (Live, control())
                yield seg
            else:
                yield Segment(visible_controls(seg.text), seg.style)


class _ContentFence(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [r if isinstance(r, Vetted) else _Fenced(r) for r in renderables]  # type: ignore[misc]


class FencedConsole(Console):
    """A Rich Console whose printed content can carry no control character (module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fence = _ContentFence()
        super().push_render_hook(self._fence)

    def push_render_hook(self, hook: RenderHook) -> None:
        """Push ``hook`` beneath the fence: the fence sees what ``hook`` adds (a Live's
        display) and so stays the last word."""
        super().pop_render_hook()
        super().push_render_hook(hook)
        super().push_render_hook(self._fence)

    def pop_render_hook(self) -> None:
        """Pop the hook beneath the fence."""
        super().pop_render_hook()
        super().pop_render_hook()
        super().push_render_hook(self._fence)

    def on_broken_pipe(self) -> None:
        """The reader went away (``rgt-tui pull box1 2>&1 | head -1``): raise, so the
        command stops as any other write to a closed pipe stops it, and ``main`` ends it
        quietly with SIGPIPE's 141. Rich's own answer is SystemExit(1): read as a failed
        pull, and the pull's clean-up (its parts, its record) cut short. Quiet from here
        on: that clean-up prints nothing more into the dead pipe."""
        self.quiet = True
        raise BrokenPipeError
