"""Local transport: the same operations on this machine, through bash subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import stat
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

from rgt_tui.timeouts import within
from rgt_tui.transport.base import (
    FORWARD_LISTEN_HOST,
    MAX_OUTPUT_BYTES,
    MAX_STREAM_LINE,
    PUT_CHUNK,
    STREAM_CHUNK,
    CommandFailed,
    CommandResult,
    FileStat,
    OutputCap,
    PortForward,
    RangeReads,
    TransportError,
    overlong_line,
    put_mode,
    temp_name,
)
from rgt_tui.transport.process_group import kill_group, start_in_group


async def _feed(stdin: asyncio.StreamWriter, input: str | None) -> None:
    """Write ``input`` to a command's stdin and close it."""
    with contextlib.suppress(OSError):  # the command ended first: it says why
        if input is not None:
            stdin.write(input.encode())
            await stdin.drain()
        stdin.close()


class LocalTransport(RangeReads):
    """A Transport for the machine the app runs on; it is always connected."""

    forwards_ports = False  # its ports are this machine's: nothing to tunnel

    def __init__(self, host: str = "local") -> None:
        self.host = host
        self._home = os.path.expanduser("~")

    @property
    def connected(self) -> bool:
        return True

    @property
    def host_key_fingerprint(self) -> str | None:
        """None: this machine is reached without SSH, so it has no host key to show."""
        return None

    @property
    def recorded_key_in(self) -> Path | None:
        """None: no host key, so none recorded."""
        return None

    async def connect(self) -> None:
        return None

    async def _spawn(self, command: str) -> asyncio.subprocess.Process:
        try:
            return await start_in_group(  # stopped with all it started
                "bash",
                "-c",
                command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self._home,
                limit=MAX_STREAM_LINE + 1,  # readline's bound: a line and its newline
            )
        except OSError as exc:
            raise TransportError(self.host, f"cannot start bash: {exc.strerror}") from exc

    async def run(
        self,
        command: str,
        *,
        input: str | None = None,
        timeout: float | None = None,
        max_output: int = MAX_OUTPUT_BYTES,
    ) -> CommandResult:
        """Run a command to completion, keeping at most ``max_output`` bytes of stdout and
        of stderr: past that its process group is killed (``CommandResult.truncated``)."""
        cap = OutputCap(max_output)
        proc = await self._spawn(command)
        assert proc.stdin and proc.stdout and proc.stderr

        async def read(stream: asyncio.StreamReader, name: str) -> None:
            while chunk := await stream.read(STREAM_CHUNK):
                if not cap.add(name, chunk):
                    kill_group(proc)  # stop it at the cap, and all it started
                    return

        async def finish() -> int:
            await asyncio.gather(
                _feed(proc.stdin, input), read(proc.stdout, "stdout"), read(proc.stderr, "stderr")
            )
            return await proc.wait()

        try:
            returncode = await within(finish(), timeout)
        except asyncio.TimeoutError as exc:
            raise TransportError(
                self.host, f"command timed out after {timeout:g} s: {command[:60]}"
            ) from exc
        finally:
            if proc.returncode is None:  # timed out or cancelled: nothing may outlive it
                kill_group(proc)
                with contextlib.suppress(Exception):
                    await within(proc.wait(), 2)
        # Stopped at the cap: how it would have ended is unknown (as over SSH).
        return cap.result(None if cap.over or returncode < 0 else returncode)

    async def stream_lines(self, command: str, *, input: str | None = None) -> AsyncIterator[str]:
        """Yield a long-lived command's stdout lines until it exits."""
        async with self._streaming(command, input) as stdout:
            while True:
                try:
                    raw = await stdout.readline()
                except ValueError as exc:  # asyncio's "chunk exceeds the limit"
                    raise overlong_line(self.host) from exc
                if not raw:
                    return
                yield raw.decode(errors="replace").rstrip("\n")

    async def stream_bytes(
        self,
        command: str,
        *,
        input: str | None = None,
        window: int | None = None,
    ) -> AsyncIterator[bytes]:
        """Yield a long-lived command's stdout as raw chunks until it exits (``window``:
        nothing is in flight on this machine)."""
        async with self._streaming(command, input) as stdout:
            while chunk := await stdout.read(STREAM_CHUNK):
                yield chunk

    @contextlib.asynccontextmanager
    async def _streaming(
        self, command: str, input: str | None
    ) -> AsyncIterator[asyncio.StreamReader]:
        """Start ``command`` with ``input`` on stdin, hand over its
        stdout, then check its exit status (TransportError when it failed); killed if the
        reader stops early."""
        proc = await self._spawn(command)
        assert proc.stdin and proc.stdout and proc.stderr

        # Written alongside the reading, as the SSH transport does: a command that prints
        # before it reads all of stdin never blocks on a full pipe.
        writing = asyncio.ensure_future(_feed(proc.stdin, input))
        try:
            yield proc.stdout
            status = await proc.wait()
            if status != 0:
                err = (await proc.stderr.read()).decode(errors="replace").strip().splitlines()
                raise CommandFailed(
                    self.host,
                    f"command exited with status {status}: {err[-1] if err else 'no message'}",
                    status,
                )
        finally:
            writing.cancel()
            if proc.returncode is None:
                kill_group(proc)
                with contextlib.suppress(Exception):
                    await within(proc.wait(), 2)

    def _path(self, path: str) -> str:
        """``~/x`` and relative paths resolve against HOME, as they do on an SSH box."""
        if path == "~" or path.startswith("~/"):
            path = path[2:]
        return os.path.join(self._home, path)  # an absolute path replaces the home part

    async def stat(self, path: str) -> FileStat | None:
        """The file's size, mtime and inode; None when it does not exist."""
        try:
            st = await asyncio.to_thread(os.stat, self._path(path))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return _file_stat(st)

    async def open_reader(
        self,
        path: str,
        *,
        block_size: int | None = None,
        max_requests: int | None = None,
        lane: int = 0,
    ) -> LocalFileReader:
        """An open file descriptor: it keeps reading the same file after a rename.
        ``block_size``: bytes per read in ``blocks``; ``max_requests``: nothing is in
        flight on this machine (reads are sequential); ``lane``: no sessions here either."""
        for name, value in (("block_size", block_size), ("max_requests", max_requests)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, not {value}")
        fd = await asyncio.to_thread(os.open, self._path(path), os.O_RDONLY | os.O_CLOEXEC)
        return LocalFileReader(fd, block_size or LOCAL_BLOCK)

    async def open_lanes(self, lanes: Iterable[int]) -> None:
        """Nothing to start on this machine (see ``Transport.open_lanes``)."""

    async def lane_round_trip(self, lane: int) -> float | None:
        """No link: nothing to wait for (see ``Transport.lane_round_trip``)."""
        return 0.0

    async def put_file(
        self,
        source: Path,
        path: str,
        *,
        mode: int,
        on_bytes: Callable[[int], None] | None = None,
    ) -> None:
        """Transport.put_file on this machine: O_EXCL|O_NOFOLLOW on a temporary name,
        fchmod to ``mode``, then link to ``path`` (which, unlike rename, never replaces)."""
        mode = put_mode(mode)
        target = self._path(path)
        temp = temp_name(target, secrets.token_hex(4))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with source.open("rb") as local:  # noqa: ASYNC230 - opening is quick; reads go to a thread
            fd = await asyncio.to_thread(os.open, temp, flags, mode)
            try:
                try:
                    while data := await asyncio.to_thread(local.read, PUT_CHUNK):
                        await asyncio.to_thread(_write_all, fd, data)
                        if on_bytes is not None:
                            on_bytes(len(data))
                    os.fchmod(fd, mode)
                finally:
                    os.close(fd)
                await asyncio.to_thread(os.link, temp, target, follow_symlinks=False)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(temp)

    async def forward_port(self, remote_port: int, *, local_port: int = 0) -> PortForward:
        """Never: this machine's ports are reached directly (TransportError says where)."""
        raise TransportError(
            self.host,
            f"{self.host} is this machine: no tunnel is needed",
            f"open http://{FORWARD_LISTEN_HOST}:{remote_port}/ directly",
        )

    async def close(self) -> None:
        return None


LOCAL_BLOCK = 1 << 20  # bytes per pread in LocalFileReader.blocks, by default


class LocalFileReader:
    """A FileReader over a local file descriptor (positional reads, so no shared seek)."""

    def __init__(self, fd: int, block_size: int = LOCAL_BLOCK) -> None:
        self._fd: int | None = fd
        self._block_size = block_size

    def _require(self) -> int:
        if self._fd is None:
            raise ValueError("reader is closed")
        return self._fd

    async def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``; ``b""`` at or past the end."""
        fd = self._require()
        if length <= 0:
            return b""
        return await asyncio.to_thread(os.pread, fd, length, offset)

    async def blocks(self, offset: int, length: int) -> AsyncIterator[tuple[int, bytes]]:
        """``[offset, offset + length)`` in order, one pread of ``block_size`` at a time in
        a thread; fewer bytes only at end of file."""
        if offset < 0 or length < 0:
            raise ValueError(f"blocks({offset}, {length}): a negative offset or length")
        pos, stop = offset, offset + length
        while pos < stop:
            want = min(self._block_size, stop - pos)
            data = await asyncio.to_thread(os.pread, self._require(), want, pos)
            if not data:
                return
            yield pos, data
            pos += len(data)

    async def fstat(self) -> FileStat:
        """The open file's attributes."""
        return _file_stat(await asyncio.to_thread(os.fstat, self._require()))

    async def close(self) -> None:
        """Close the descriptor; safe to call twice."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _file_stat(st: os.stat_result) -> FileStat:
    return FileStat(
        size=st.st_size,
        mtime=st.st_mtime_ns / 1e9,
        inode=st.st_ino,
        regular=stat.S_ISREG(st.st_mode),
    )
