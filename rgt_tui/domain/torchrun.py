"""Why a ``torchrun`` cell failed, from torchrun's own summary (pure; issue 41, MN3).

torchrun exits 1 whenever a worker fails, however it failed, and ends its log with a
``ChildFailedError`` banner (a line of ``=``), so the cell's exit code and last line say
nothing. The summary's *Root Cause* names the worker's exit code — negative when a signal
killed it (``exitcode : -9 (pid: 6003)``, ``traceback : Signal 9 (SIGKILL) received by
PID 6003``) — and the worker's own last line comes just before torchrun's
``failed (exitcode: N)`` line. The box's probe sends the three as one record
(``queue_ctl.sh``, ``torchrun_cause``); ``parse_cause`` reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rgt_tui.domain.text import printable

# ASCII digits, bounded: int() refuses Unicode digits and runs past 4300 digits, and a box
# writes this text (the review of s38).
_EXITCODE_RE = re.compile(
    r"exitcode\s*:\s*(-?\d{1,12})(?:\s*\(pid:\s*(\d{1,12})\))?(?:\s*\((SIG[A-Z0-9]+)\))?",
    re.ASCII,
)
_TRACEBACK_RE = re.compile(r"traceback\s*:\s*(.*)")
_SIGNAL_RE = re.compile(r"Signal (\d+) \((SIG[A-Z0-9]+)\)")


@dataclass(frozen=True)
class TorchrunCause:
    """The root cause torchrun reported: the worker's exit code (negative: the signal
    that killed it), the signal's name, the worker's pid, torchrun's traceback line, and
    the last line the worker printed before torchrun reported it."""

    exitcode: int
    signal: str = ""
    pid: str = ""
    traceback: str = ""
    worker_line: str = ""

    @property
    def signal_number(self) -> int | None:
        """The signal that killed the worker, or None when it exited by itself."""
        return -self.exitcode if self.exitcode < 0 else None

    def note(self) -> str:
        """The cell's failure note: the signal that killed the worker, else the worker's
        last line (its error), else its exit code."""
        number = self.signal_number
        if number is not None:
            name = self.signal or f"signal {number}"
            pid = f", pid {self.pid}" if self.pid else ""
            return f"a worker was killed by {name} (torchrun: exitcode {self.exitcode}{pid})"
        if self.worker_line:
            return self.worker_line
        return f"a worker exited {self.exitcode} (torchrun's summary)"


def parse_cause(record: str) -> TorchrunCause | None:
    """``EXITCODE-LINE<TAB>TRACEBACK-LINE<TAB>WORKER-LINE`` (the probe's ``torchrun``
    record, the box's text) as a TorchrunCause; None when it names no exit code."""
    parts = [*record.split("\t"), "", ""]
    found = _EXITCODE_RE.search(parts[0])
    if found is None:
        return None
    traceback = _TRACEBACK_RE.search(parts[1])
    tb = traceback.group(1).strip() if traceback else ""
    signal = found.group(3) or ""
    by_tb = _SIGNAL_RE.search(tb)
    if not signal and by_tb is not None:
        signal = by_tb.group(2)
    return TorchrunCause(
        exitcode=int(found.group(1)),
        signal=signal,
        pid=found.group(2) or "",
        traceback=printable(tb, 300),
        worker_line=printable(parts[2].strip(), 300),
    )
