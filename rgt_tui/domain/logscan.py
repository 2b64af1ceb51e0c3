"""Reading training logs: complete lines out of raw bytes, and which lines mean a crash.

Pure functions and small state machines, no I/O. ``LineSplitter`` turns byte chunks as
they arrive from a box into complete lines; ``CrashScanner`` flags the lines a person
scanning a cell's log must not miss (a traceback, a CUDA or cgroup OOM, a segfault, an
NCCL failure). Neither knows where the bytes came from.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

# -- line splitting ----------------------------------------------------------------------

MAX_LINE_BYTES = 1 << 20  # a line longer than this is cut, so a binary blob cannot grow memory


def _visible(raw: bytes) -> bytes:
    """What a terminal shows of one line: the segment after its last ``\\r`` redraw (a
    trailing ``\\r``, as in CRLF, is not a redraw)."""
    return raw.rstrip(b"\r").rsplit(b"\r", 1)[-1]


def clean_line(raw: bytes) -> str:
    """Decode one line (no newline): invalid UTF-8 becomes U+FFFD; ``\\r`` rewrites keep the last.

    tqdm and friends redraw a bar with ``\\r`` and only end the line at the end of the
    epoch; what the terminal would show is the last segment, so that is what we keep.
    A trailing ``\\r`` (CRLF files) is not a redraw.
    """
    return _visible(raw).decode("utf-8", errors="replace")


def cut_note(dropped: int, cap: int) -> str:
    """What ends a line cut at ``cap`` bytes: how much of it was dropped."""
    size = f"{cap >> 20} MiB" if cap >= 1 << 20 and cap % (1 << 20) == 0 else f"{cap:,} bytes"
    return f"… [line cut at {size}: {dropped:,} more bytes dropped]"


def _cut(head: bytes, dropped: int, cap: int) -> str:
    """``head`` (the first ``cap`` bytes of a longer line) decoded, with the cut noted. A
    character split by the cut counts as dropped rather than showing as U+FFFD."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(head, final=False)
    unfinished = len(decoder.getstate()[0])
    return text + cut_note(dropped + unfinished, cap)


class LineSplitter:
    """Bytes in, complete decoded lines out; a partial last line waits for its newline.

    Lines are decoded only once complete, so a UTF-8 character split across two chunks
    decodes correctly. No line is longer than ``max_line`` bytes (plus the ``cut_note``
    saying how much was dropped), however the bytes arrive: a box's 4 MiB line in one
    read is cut like one that trickles in. ``committed`` counts the bytes fed so far that
    belong to lines already returned: a follower that resumes at ``base + committed``
    neither repeats nor loses a line.
    """

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        if max_line <= 0:
            raise ValueError(f"max_line must be positive, not {max_line}")
        self.max_line = max_line
        self.fed = 0  # bytes fed in total
        self.committed = 0  # bytes of fed data that lines returned so far cover
        # The pending partial line's visible segment, at most max_line bytes. Segments
        # before its last "\r" are dropped as they arrive (they would be discarded at the
        # newline anyway), so an hour-long progress bar holds one segment, not megabytes.
        self._buf = bytearray()
        self._dropped = 0  # bytes of the pending segment past max_line, counted, not kept

    @property
    def pending_bytes(self) -> int:
        """Bytes fed since the last complete line (what a resume would read again)."""
        return self.fed - self.committed

    @property
    def partial(self) -> str:
        """The unfinished last line as it would show now (for display only)."""
        return self._text(bytes(self._buf), self._dropped)

    def feed(self, data: bytes) -> list[str]:
        """Add bytes; return the lines they completed (without newlines)."""
        start = self.fed
        self.fed += len(data)
        last_nl = data.rfind(b"\n")
        if last_nl < 0:
            self._append(data)
            return []
        first_nl = data.find(b"\n")
        self._append(data[:first_nl])  # ends the pending line
        lines = [self._take()]
        if last_nl > first_nl:
            cap = self.max_line
            for raw in data[first_nl + 1 : last_nl].split(b"\n"):
                seg = _visible(raw)
                lines.append(
                    seg.decode("utf-8", errors="replace")
                    if len(seg) <= cap
                    else _cut(seg[:cap], len(seg) - cap, cap)
                )
        self.committed = start + last_nl + 1
        self._append(data[last_nl + 1 :])
        return lines

    def flush(self) -> list[str]:
        """End of input: the partial line, if any, as a final line (commits everything)."""
        had = self.pending_bytes > 0
        text = self._take()
        self.committed = self.fed
        return [text] if had else []

    def _append(self, piece: bytes) -> None:
        """Add a piece of the pending line (no newline in it), keeping its visible
        segment up to ``max_line`` bytes and counting the rest."""
        if not piece:
            return
        redraw = piece.rfind(b"\r", 0, len(piece) - 1)
        if redraw >= 0:  # all before it is drawn over
            self._buf.clear()
            self._dropped = 0
            piece = piece[redraw + 1 :]
        elif self._buf.endswith(b"\r") and not self._dropped:
            self._buf.clear()  # the "\r" kept in case of a CRLF was a redraw
        if self._dropped:
            self._dropped += len(piece)
            return
        room = self.max_line - len(self._buf)
        self._buf += piece[:room]
        self._dropped = max(0, len(piece) - room)

    def _take(self) -> str:
        """The pending line as a finished one; the buffer starts empty again."""
        text = self._text(bytes(self._buf), self._dropped)
        self._buf.clear()
        self._dropped = 0
        return text

    def _text(self, raw: bytes, dropped: int) -> str:
        if not dropped:
            return clean_line(raw)
        return _cut(raw, dropped, self.max_line)


# -- crash lines --------------------------------------------------------------------------

CRITICAL = "critical"
ERROR = "error"


@dataclass(frozen=True)
class CrashMark:
    """Why a log line was flagged: a stable kind, a severity and a short explanation."""

    kind: str  # oom | killed | segfault | nccl | traceback | exception | error
    severity: str  # critical | error
    label: str


OOM = CrashMark("oom", CRITICAL, "CUDA out of memory")
KILLED = CrashMark("killed", CRITICAL, "killed (SIGKILL: often the cgroup OOM killer, U9)")
SEGFAULT = CrashMark("segfault", CRITICAL, "segmentation fault / core dump")
NCCL = CrashMark("nccl", ERROR, "NCCL / distributed backend error")
TRACEBACK = CrashMark("traceback", CRITICAL, "Python traceback")
EXCEPTION = CrashMark("exception", ERROR, "exception")
ERROR_LINE = CrashMark("error", ERROR, "error")

# Most specific first: a line gets the first mark whose pattern matches.
_RULES: tuple[tuple[re.Pattern[str], CrashMark], ...] = (
    (
        re.compile(
            r"CUDA out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY"
            r"|CUBLAS_STATUS_ALLOC_FAILED"
        ),
        OOM,
    ),
    # bash's job report ("line 3:  4242 Killed   python train.py"), a bare "Killed",
    # and the kernel's "Killed process 4242 (python)".
    (re.compile(r"(?:^|[\s:])Killed(?:\s|$)"), KILLED),
    (re.compile(r"Segmentation fault|core dumped|SIGSEGV|Fatal Python error"), SEGFAULT),
    (
        re.compile(
            r"NCCL (?:error|Error|ERROR|WARN)|nccl\w*Error|NCCL_ERROR|DistBackendError"
            r"|ProcessGroupNCCL.*(?:[Tt]imeout|[Ee]rror)|Watchdog caught collective operation timeout"
        ),
        NCCL,
    ),
    (re.compile(r"^\s*Traceback \(most recent call last\)"), TRACEBACK),
    # "ValueError: ...", "torch.cuda.OutOfMemoryError: ..." (caught above), "RuntimeError",
    # "Exception in thread ...", "During handling of the above exception ...".
    (re.compile(r"\b\w*(?:Error|Exception)\b(?::|\s*$)|\bException\b"), EXCEPTION),
    (re.compile(r"\bERROR\b|\bError:"), ERROR_LINE),
)


def classify_line(line: str) -> CrashMark | None:
    """The crash mark for one line on its own, or None for an ordinary line."""
    for pattern, mark in _RULES:
        if pattern.search(line):
            return mark
    return None


_TRACEBACK_BODY = re.compile(r"^(?:\s+\S|\s*\^+\s*$|During handling|The above exception)")


class CrashScanner:
    """Flags crash lines, including a traceback's body between its header and the error.

    A traceback's ``File "..."`` lines say nothing alarming on their own; after a
    ``Traceback (most recent call last):`` header every indented line belongs to it until
    the exception line that ends it.
    """

    def __init__(self) -> None:
        self.in_traceback = False  # public so a follower can rewind it with its offset

    def scan(self, line: str) -> CrashMark | None:
        """The mark for the next line of the log (call once per line, in order)."""
        mark = classify_line(line)
        if mark is TRACEBACK:
            self.in_traceback = True
            return mark
        if self.in_traceback:
            if not line.strip():
                return mark
            if _TRACEBACK_BODY.match(line):
                return mark or TRACEBACK
            self.in_traceback = False
            # The exception line closing a traceback is an error whatever it says.
            return mark or EXCEPTION
        return mark


def scan_lines(lines: list[str]) -> list[CrashMark | None]:
    """Marks for a whole list of lines, traceback bodies included."""
    scanner = CrashScanner()
    return [scanner.scan(line) for line in lines]


# -- what a log reader hands out ------------------------------------------------------------


@dataclass(frozen=True)
class LogLine:
    """One complete line of a log; ``crash`` is set only when highlighting was asked for."""

    text: str
    crash: CrashMark | None = None


@dataclass(frozen=True)
class LogPosition:
    """Where to resume: just past the last complete line delivered.

    ``anchor`` (the bytes just before ``offset``) and ``inode`` let a new follower check
    that the path still names the same file before trusting the offset.
    """

    offset: int = 0
    anchor: bytes = b""
    inode: int | None = None


@dataclass(frozen=True)
class LogChunk:
    """What one poll found: new lines and what happened to the file.

    ``rotated``: these lines (if any) start a new file, or the file was truncated.
    ``gap``: lines may be missing before these (the file was replaced while the follower
    could not read it). ``partial`` is the unfinished last line (a tqdm bar), for display
    only: it is delivered in ``lines`` once its newline arrives. ``status`` is
    following | waiting (no file yet) | reconnecting (``error`` says why).
    """

    lines: tuple[LogLine, ...]
    position: LogPosition
    rotated: bool = False
    gap: bool = False
    partial: str = ""
    status: str = "following"
    error: str | None = None

    @property
    def offset(self) -> int:
        """The byte offset to resume from."""
        return self.position.offset
