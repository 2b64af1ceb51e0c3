"""The Transport protocol: what every service needs from a box, SSH or local.

Services take a Transport and never know which kind it is, so the local machine and a
rented box run through the same code (DESIGN.md, data flow step 2).
"""

from __future__ import annotations

import contextlib
from bisect import bisect_right
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

# The errors live in the domain, where the UI and the command line may import them too;
# named here as well for the transport's own modules.
from rgt_tui.domain.errors import CommandFailed as CommandFailed
from rgt_tui.domain.errors import HostKeyError as HostKeyError
from rgt_tui.domain.errors import NoAnswer as NoAnswer
from rgt_tui.domain.errors import SessionRefused as SessionRefused
from rgt_tui.domain.errors import TransportError as TransportError

STREAM_CHUNK = 1 << 20  # local stream_bytes reads up to this much at a time (SSH: per packet)
# What ``Transport.run`` keeps of each of stdout and stderr. A box is hostile input: one
# printing 200 MiB into a `status` sample cost 417 MiB here, and `status` asks every host
# at once. Every command run this way prints a few KiB; a caller expecting more says so.
MAX_OUTPUT_BYTES = 4 << 20
# The longest line ``stream_lines`` hands over (the agent's samples and the manifest's
# lines are a few KiB); a longer one ends the stream with TransportError, as a box that
# prints without end must not grow memory here.
MAX_STREAM_LINE = 1 << 20
# Bytes per piece ``put_file`` reads here and writes to the box.
PUT_CHUNK = 1 << 20


def put_mode(mode: int) -> int:
    """``mode`` checked for ``put_file``: ValueError for anything wider than 0o755."""
    if mode & ~0o755:
        raise ValueError(f"put_file mode {mode:#o} is wider than 0o755")
    return mode


def temp_name(path: str, token: str) -> str:
    """``dir/.name.rgt-part.<token>``: where ``put_file`` writes before the rename."""
    parent, slash, name = path.rpartition("/")
    return f"{parent}{slash}.{name}.rgt-part.{token}"


@dataclass(frozen=True)
class FileStat:
    """What a box says about one file (symlinks followed)."""

    size: int
    mtime: float  # seconds since the epoch; whole seconds where the server sends no more
    inode: int | None  # st_ino; None where the transport cannot tell (SFTP v3 carries none)
    # False: a device, a pipe, a socket (a box's log linked to /dev/zero never ends); True
    # where the server sends no file type.
    regular: bool = True


@runtime_checkable
class FileReader(Protocol):
    """An open, read-only handle on one file of a box.

    The handle stays on the file it opened: after the path is renamed or deleted, the
    rest of that file can still be read through it (a local fd and an SFTP handle both
    behave this way). A dropped connection kills an SFTP handle; reads then raise
    TransportError and the caller reopens the path after reconnecting.
    """

    async def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``; fewer at end of file, ``b""`` past it."""

    def blocks(self, offset: int, length: int) -> AsyncIterator[tuple[int, bytes]]:
        """The bytes of ``[offset, offset + length)`` as ``(offset, data)`` pieces, with
        many reads in flight where the transport has a network (SSH: the ``block_size``
        and ``max_requests`` given to ``open_reader``), so pieces come in any order.

        Every piece lies inside the asked range and overlaps no other, so the total is
        never more than ``length``; it is less only when the file ends first, and then
        the pieces cover ``[offset, offset + total)`` without a gap. A box that breaks any
        of this raises TransportError naming the file (see ``checked_blocks``). Errors
        otherwise as ``read``. Closing the iterator early stops the reads.
        """

    async def fstat(self) -> FileStat:
        """The open file's attributes (not the path's: they differ after a rename)."""

    async def close(self) -> None:
        """Release the handle; safe to call twice and on a dead connection."""


async def checked_blocks(
    pieces: AsyncIterator[tuple[int, bytes]],
    offset: int,
    length: int,
    *,
    host: str,
    path: str,
    more_after: Callable[[int], Awaitable[bool]] | None = None,
) -> AsyncIterator[tuple[int, bytes]]:
    """``pieces`` (a box's answers for ``[offset, offset + length)``, in any order) as
    ``FileReader.blocks`` promises them, or TransportError naming ``path`` on ``host``.

    A piece outside the range or overlapping one already given is refused before it is
    handed on, so nothing beyond ``length`` is ever passed to the caller. When the total
    falls short, the pieces must cover ``[offset, offset + total)`` without a gap, and
    ``more_after(end)`` (when given) must confirm that the file holds nothing at ``end``:
    a short answer is only ever the end of the file. Empty pieces are dropped. Pure
    checking: ``pieces`` is closed on the way out, whatever happens.
    """
    if offset < 0 or length < 0:
        raise ValueError(f"blocks({offset}, {length}): a negative offset or length")
    stop = offset + length
    # Disjoint runs of bytes received so far, sorted, merged where they touch: pieces
    # arrive nearly in order, so this stays a handful of runs.
    starts: list[int] = []
    ends: list[int] = []
    total = 0

    def refuse(why: str) -> TransportError:
        return TransportError(host, f"{path}: the box answered a read badly ({why})")

    async with contextlib.aclosing(pieces):
        async for start, data in pieces:
            if not data:
                continue
            end = start + len(data)
            if start < offset or end > stop:
                raise refuse(f"{len(data)} bytes at {start}, outside {offset}-{stop}")
            i = bisect_right(starts, start)
            if (i and ends[i - 1] > start) or (i < len(starts) and starts[i] < end):
                raise refuse(f"{len(data)} bytes at {start} overlap bytes already received")
            if i and ends[i - 1] == start:  # extends the run before it
                ends[i - 1] = end
                i -= 1
            else:
                starts.insert(i, start)
                ends.insert(i, end)
            if i + 1 < len(starts) and starts[i + 1] == end:  # and meets the run after it
                ends[i] = ends.pop(i + 1)
                del starts[i + 1]
            total += len(data)
            yield start, data
    if total == length:
        return
    if total and (len(starts) != 1 or starts[0] != offset):
        gap = ends[0] if starts[0] == offset else offset
        raise refuse(f"nothing for the bytes at {gap} though more came after them")
    if more_after is not None and await more_after(offset + total):
        raise refuse(f"{total} of {length} bytes, though the file goes on after them")


class RangeReads:
    """``read_range`` for any transport, in terms of its ``open_reader``."""

    async def open_reader(
        self,
        path: str,
        *,
        block_size: int | None = None,
        max_requests: int | None = None,
        lane: int = 0,
    ) -> FileReader:  # pragma: no cover - provided by the transport
        raise NotImplementedError

    async def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``."""
        reader = await self.open_reader(path)
        try:
            return await reader.read(offset, length)
        finally:
            await reader.close()


@dataclass(frozen=True)
class CommandResult:
    """The outcome of one finished remote command.

    ``truncated`` names the streams ("stdout", "stderr") that went past ``max_output``
    bytes: the command was stopped there and only the first ``max_output`` bytes of each
    were kept (see ``overflow``)."""

    exit_status: int | None  # None when the command was killed by a signal
    stdout: str
    stderr: str
    truncated: tuple[str, ...] = ()
    max_output: int = MAX_OUTPUT_BYTES

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.truncated

    def overflow(self, what: str = "") -> str | None:
        """``"the box sent more than 4 MiB on stdout (what); the rest was dropped ..."``
        (an error's message: the error names the host), or None when nothing was cut."""
        if not self.truncated:
            return None
        streams = " and ".join(self.truncated)
        about = f" ({what})" if what else ""
        return (
            f"the box sent more than {size_words(self.max_output)} on {streams}{about}; "
            "the rest was dropped and the command stopped"
        )


def overlong_line(host: str) -> TransportError:
    """The error that ends a stream whose box printed a line over ``MAX_STREAM_LINE``."""
    return TransportError(
        host,
        f"the box printed a line over {size_words(MAX_STREAM_LINE)}; the command was stopped",
        "see what on the box writes into the command's output",
    )


def size_words(n: int) -> str:
    """``4 MiB``, ``64 KiB`` or ``1000 bytes``: a cap as a person reads it."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


class OutputCap:
    """Keeps at most ``limit`` bytes of each of a command's streams; says which went over.

    ``add`` returns False once a stream is over: the caller stops the command then."""

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError(f"max_output must be positive, not {limit}")
        self.limit = limit
        self.kept: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        self.over: list[str] = []

    def add(self, stream: str, data: bytes) -> bool:
        """Keep what fits of ``data`` on ``stream``; False when some had to be dropped."""
        buf = self.kept[stream]
        room = self.limit - len(buf)
        if len(data) <= room:
            buf += data
            return True
        buf += data[: max(room, 0)]
        if stream not in self.over:
            self.over.append(stream)
        return False

    def result(self, exit_status: int | None) -> CommandResult:
        """The kept bytes as text (invalid UTF-8 replaced, as everywhere a box speaks)."""
        out, err = (self.kept[s].decode(errors="replace") for s in ("stdout", "stderr"))
        return CommandResult(exit_status, out, err, tuple(self.over), self.limit)


# Where a forwarded port listens here: loopback only, never every interface (0.0.0.0), so
# nothing else on this machine's networks reaches a box's TensorBoard through us.
FORWARD_LISTEN_HOST = "127.0.0.1"


@runtime_checkable
class PortForward(Protocol):
    """A port of this machine carried to a port on the box over the host's connection
    (``Transport.forward_port``): each connection to ``FORWARD_LISTEN_HOST:local_port``
    here becomes one channel to ``remote_port`` on the box."""

    local_port: int
    remote_port: int

    @property
    def listen_host(self) -> str:
        """The address it listens on here: always ``FORWARD_LISTEN_HOST``."""

    async def probe(self) -> str | None:
        """Open one channel to the box's port and close it: None when something answers
        there, else why not ("connection refused": nothing listens; the box's sshd
        refusing forwarding), as the box said it."""

    def close(self) -> None:
        """Stop listening here; safe to call twice and on a dead connection."""

    async def wait_closed(self) -> None:
        """Return once the forward has ended: closed here, or its connection dropped
        (then nothing listens any more: a new forward needs the new connection)."""


@runtime_checkable
class Transport(Protocol):
    """A connection to one host that can run commands, long-lived processes and read files."""

    host: str
    # A named capability (never probed with getattr): whether ``forward_port`` opens a
    # tunnel. False for this machine, whose ports are reached directly.
    forwards_ports: bool

    async def connect(self) -> None:
        """Open the connection (one attempt); raise TransportError with the reason."""

    async def run(
        self,
        command: str,
        *,
        input: str | None = None,
        timeout: float | None = None,
        max_output: int = MAX_OUTPUT_BYTES,
    ) -> CommandResult:
        """Run a shell command to completion; stdin gets ``input`` then EOF.

        At most ``max_output`` bytes of stdout and of stderr are kept: past that the
        command is stopped and the result names the stream in ``truncated`` (callers say
        so with ``CommandResult.overflow``), so no box can fill this machine's memory."""

    def stream_lines(self, command: str, *, input: str | None = None) -> AsyncIterator[str]:
        """Run a long-lived command and yield its stdout line by line (no newline).

        ``input`` is written to stdin, which is then closed. The iterator ends when the
        command exits; a dropped connection raises TransportError, and so does a line
        over ``MAX_STREAM_LINE`` bytes (``overlong_line``).
        """

    def stream_bytes(
        self,
        command: str,
        *,
        input: str | None = None,
        window: int | None = None,
    ) -> AsyncIterator[bytes]:
        """As ``stream_lines``, but yield stdout as raw chunks, as they arrive (for binary
        output: the chunks split it anywhere). ``window`` bounds the bytes in flight over a network (where the
        transport has one)."""

    # File access. Paths are the box's: absolute, relative to its HOME, or "~/..." (also
    # HOME). Missing files raise FileNotFoundError, other file problems OSError, and a
    # connection problem TransportError, so a caller can tell "not there" from "not reachable".

    async def stat(self, path: str) -> FileStat | None:
        """The file's size, mtime and inode; None when nothing exists at ``path``."""

    async def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes of the file from ``offset`` (open, read, close)."""

    async def open_reader(
        self,
        path: str,
        *,
        block_size: int | None = None,
        max_requests: int | None = None,
        lane: int = 0,
    ) -> FileReader:
        """Open the file for reading and keep it open (see FileReader). ``block_size``
        (bytes per read) and ``max_requests`` (reads in flight) shape ``blocks``; None
        leaves the transport's defaults (SSH: the server's largest read, asyncssh's
        count). ``lane``: which session carries it (SSH: an SFTP session, with its own
        channel window, shared by every reader of that lane; lane 0 also serves stats)."""

    async def open_lanes(self, lanes: Iterable[int]) -> None:
        """Start the sessions of ``lanes`` (see ``open_reader``) ahead of their first use,
        at once; failures are left for the readers to report."""

    async def lane_round_trip(self, lane: int) -> float | None:
        """Once ``lane``'s session is open (it is started if not), an estimate of the
        link's round trip in seconds from how long the quickest session took to open;
        None when not known (the pull then keeps its full width)."""
        return None

    async def put_file(
        self,
        source: Path,
        path: str,
        *,
        mode: int,
        on_bytes: Callable[[int], None] | None = None,
    ) -> None:
        """Copy the local file ``source`` to a new file at ``path`` on the box (code sync).

        Written under a temporary name beside ``path``, created exclusively (so no file or
        symlink already there is opened or written through), given exactly ``mode`` (at
        most 0o755: never wider), then renamed to ``path``; FileExistsError when something
        is already at ``path``. ``on_bytes(n)`` after each piece of ``n`` bytes written."""

    async def forward_port(self, remote_port: int, *, local_port: int = 0) -> PortForward:
        """Listen on ``FORWARD_LISTEN_HOST:local_port`` here (0: a free port) and carry
        each connection to ``remote_port`` on the box's loopback over this connection: no
        new login (U39, an ``ssh -L`` on the connection already open). OSError when the
        port here cannot be bound; TransportError when not connected or the box refuses.
        Only where ``forwards_ports``: this machine raises TransportError saying no
        tunnel is needed."""

    async def close(self) -> None:
        """Close the connection; safe to call twice."""

    @property
    def connected(self) -> bool:
        """Whether the connection is open right now."""

    @property
    def host_key_fingerprint(self) -> str | None:
        """The SHA256 fingerprint (``SHA256:...``) of the host key the box presented on
        the last connection; None before one, and always for this machine."""

    @property
    def recorded_key_in(self) -> Path | None:
        """The known_hosts file the last connection recorded the box's first key in
        (``host_key = "accept-new"``, nothing recorded for it before); None otherwise."""
