"""SFTP over an SSH connection: sessions by lane, file errors, and the file reader.

``SftpSessions`` is the SFTP half of ``ssh.SshTransport`` (which mixes it in and owns the
connection); ``SftpFileReader`` reads one open handle. Paths from callers go through
``sftp_path`` (SFTP does not expand ``~``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import secrets
import stat
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

import asyncssh

from rgt_tui.domain.text import printable
from rgt_tui.timeouts import within
from rgt_tui.transport.base import (
    PUT_CHUNK,
    FileStat,
    RangeReads,
    TransportError,
    checked_blocks,
    put_mode,
    temp_name,
)
from rgt_tui.transport.sftp_reads import default_in_flight, parallel_blocks, read_serially
from rgt_tui.transport.ssh_stream import describe as _describe
from rgt_tui.transport.ssh_stream import run_capped

# Bytes per SFTP read where the box states no limit (SFTP's own safe size).
SFTP_FALLBACK_BLOCK = 32 * 1024


class SftpSessions(RangeReads):
    """The SFTP sessions of one SSH connection, by lane, and the file reads over them.

    The transport that mixes this in sets ``host``, ``_sftp`` and ``_sftp_locks`` and
    provides ``_require`` (its live connection, or TransportError).
    """

    host: str
    # SFTP sessions by lane, each with the connection it belongs to.
    _sftp: dict[int, tuple[asyncssh.SFTPClient, asyncssh.SSHClientConnection]]
    _sftp_locks: dict[int, asyncio.Lock]
    # The quickest SFTP session start seen (seconds): the round trip's estimate.
    _session_open_s: float | None = None
    _require: Callable[[], asyncssh.SSHClientConnection]  # SshTransport's method
    # The shell's $HOME on a connection, for ``~`` paths (only once it said one).
    _home: tuple[str, asyncssh.SSHClientConnection] | None = None
    _home_lock: asyncio.Lock | None = None

    async def box_path(self, path: str) -> str:
        """``path`` as SFTP must be given it: ``~`` is the shell's $HOME, as the queue
        runner and every command read it. SFTP starts in the account's home from the
        password file, which a box's sshd (``SetEnv HOME=…``) or login may set apart:
        then ``~/.rgt/queue/queue.log`` was looked for in the wrong folder, and `logs`
        said the queue had never been launched (h522 #4). Asked once per connection
        (one at a time), and only for a ``~`` path; where the box cannot say now, SFTP's
        own start is used and the box is asked again next time (review h526 #4)."""
        if path != "~" and not path.startswith("~/"):
            return path
        conn = self._require()
        if self._home_lock is None:
            self._home_lock = asyncio.Lock()
        async with self._home_lock:
            if self._home is None or self._home[1] is not conn:
                home = await _shell_home(conn, self.host)
                self._home = (home, conn) if home else None
        if self._home is None:
            return sftp_path(path)
        home = self._home[0]
        return home if path == "~" else f"{home.rstrip('/')}/{path[2:]}"

    async def sftp(self, lane: int = 0) -> asyncssh.SFTPClient:
        """The connection's SFTP client for ``lane``, started on first use and shared.

        Lane 0 serves every caller; a caller may ask for a lane of its own: a separate
        session with its own server process on the box (one the box refuses shares an
        open one). A client belongs to the current connection: after a drop and
        ``connect()``, the next call starts a fresh one. Callers must not close it.
        For file work beyond ``stat``/``read_range``/``open_reader`` (resumable pulls), use
        it directly: pass paths through ``sftp_path()`` (SFTP does not expand ``~``) and map
        errors through ``file_error``.
        """
        conn = self._require()
        async with self._sftp_locks.setdefault(lane, asyncio.Lock()):
            held = self._sftp.get(lane)
            if held is not None and held[1] is conn:
                return held[0]
            try:
                # A file name that is not UTF-8 must fail neither a listing nor its own
                # opening: names round-trip as os.fsdecode/os.fsencode do here.
                began = time.monotonic()
                client = await conn.start_sftp_client(path_errors="surrogateescape")
                took = time.monotonic() - began
                known = self._session_open_s
                self._session_open_s = took if known is None else min(known, took)
            except (OSError, asyncssh.Error) as exc:
                if isinstance(exc, asyncssh.ChannelOpenError) and not conn.is_closed():
                    # The box allows no more sessions on this connection (sshd's
                    # MaxSessions, 10 by default): this lane shares another's.
                    client = await self._open_sftp(conn, lane)
                    if client is not None:
                        self._sftp[lane] = (client, conn)
                        return client
                if conn.is_closed():
                    # The connection went while this lane opened or waited (a drop, or
                    # a pull reconnecting): no refusal to wait out, no sshd advice.
                    raise TransportError(self.host, "connection lost") from exc
                raise TransportError(
                    self.host,
                    f"SFTP unavailable: {_describe(exc)}",
                    "enable the sftp subsystem in the box's sshd_config (Subsystem sftp ...)",
                ) from exc
            self._sftp[lane] = (client, conn)
            return client

    async def _open_sftp(
        self, conn: asyncssh.SSHClientConnection, refused: int
    ) -> asyncssh.SFTPClient | None:
        """An SFTP client already open on ``conn`` for a lane the box refused a session
        of its own; one still opening on another lane is waited for (lanes open at once,
        so the first refused may come before any is ready). None when there is none."""
        for _ in range(400):  # 20 s at most: a session opens in a few round trips
            if conn.is_closed():
                return None
            for client, owner in list(self._sftp.values()):
                if owner is conn:
                    return client
            opening = [n for n, lock in self._sftp_locks.items() if n != refused and lock.locked()]
            if not opening:
                return None
            await asyncio.sleep(0.05)
        return None

    def file_error(self, exc: BaseException, path: str) -> Exception:
        """The exception a file operation on ``path`` should raise for an SFTP failure.

        Missing file → FileNotFoundError, refused → PermissionError, other SFTP refusals
        → OSError, and anything that means the session is gone → TransportError (the
        SFTP client is then dropped so the next call starts a new one).
        """
        if isinstance(exc, (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath)):
            return FileNotFoundError(errno.ENOENT, f"no such file on {self.host}", path)
        if isinstance(exc, asyncssh.SFTPPermissionDenied):
            return PermissionError(errno.EACCES, f"permission denied on {self.host}", path)
        if isinstance(exc, asyncssh.SFTPError) and not isinstance(
            exc, (asyncssh.SFTPConnectionLost, asyncssh.SFTPNoConnection)
        ):
            # The box's words: one line (their newlines made fake lines in a notice).
            return OSError(errno.EIO, f"{self.host}: {printable(exc.reason, 200)}", path)
        self._sftp.clear()
        if isinstance(exc, TransportError):
            return exc
        if isinstance(exc, asyncssh.SFTPError):
            return TransportError(self.host, "connection lost")
        return TransportError(self.host, _describe(exc))

    async def stat(self, path: str) -> FileStat | None:
        """The file's size and mtime over SFTP (inode is None: SFTP v3 does not carry it)."""
        try:
            sftp = await self.sftp()
            attrs = await sftp.stat(await self.box_path(path))
        except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath):
            return None
        except (OSError, asyncssh.Error) as exc:
            raise self.file_error(exc, path) from exc
        return attrs_stat(attrs)

    async def open_reader(
        self,
        path: str,
        *,
        block_size: int | None = None,
        max_requests: int | None = None,
        lane: int = 0,
    ) -> SftpFileReader:
        """An open SFTP handle: like a local fd, it keeps reading the file after a rename.
        ``block_size`` (bytes per SFTP read; default the server's largest) and
        ``max_requests`` (reads in flight; default asyncssh's) shape ``blocks``: their
        product is what one file keeps in flight over the round trip. ``lane``: the SFTP
        session it goes through (``sftp``); each has its own channel window."""
        for name, value in (("block_size", block_size), ("max_requests", max_requests)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, not {value}")
        try:
            sftp = await self.sftp(lane)
            # block_size=0: asyncssh's parallel reader is off (its requests outlive a
            # read that is cut off); sftp_reads keeps them in flight instead.
            handle = await sftp.open(await self.box_path(path), "rb", block_size=0)
        except (OSError, asyncssh.Error) as exc:
            raise self.file_error(exc, path) from exc
        block = block_size or sftp.limits.max_read_len or SFTP_FALLBACK_BLOCK
        in_flight = max_requests or default_in_flight(block)
        return SftpFileReader(self, handle, path, block=block, in_flight=in_flight)

    async def lane_round_trip(self, lane: int) -> float | None:
        """A third of the quickest SFTP session start on this transport (channel open,
        subsystem request, SFTP version: three round trips; the box's own start of
        sftp-server counts too, so it errs long, towards more lanes). Waits for ``lane``
        (see ``Transport.lane_round_trip``); None when no session could open."""
        try:
            await self.sftp(lane)
        except TransportError:
            return None
        took = self._session_open_s
        return took / 3 if took is not None else None

    async def open_lanes(self, lanes: Iterable[int]) -> None:
        """Start the SFTP sessions of ``lanes`` now, all at once (a session costs about five
        round trips to start: a second at 200 ms), so readers find them ready. A failure
        is left for the reader that needs the lane to report."""
        await asyncio.gather(*(self.sftp(lane) for lane in lanes), return_exceptions=True)

    async def put_file(
        self,
        source: Path,
        path: str,
        *,
        mode: int,
        on_bytes: Callable[[int], None] | None = None,
    ) -> None:
        """Transport.put_file over SFTP (lane 0): an exclusive open of a temporary name
        (SFTP's EXCL: a symlink there is not followed), writes, fsetstat to ``mode``
        (past the box's umask, never wider), then a rename that must not replace."""
        mode = put_mode(mode)
        target = await self.box_path(path)
        temp = temp_name(target, secrets.token_hex(4))
        local = source.open("rb")  # noqa: ASYNC230 - opening is quick; reads go to a thread
        reading = False
        try:
            sftp = await self.sftp()
            if await sftp.exists(target) or await sftp.islink(target):
                raise FileExistsError(errno.EEXIST, f"already on {self.host}", path)
            handle = await sftp.open(temp, "xb", asyncssh.SFTPAttrs(permissions=mode))
            try:
                offset = 0
                while True:
                    reading = True
                    data = await asyncio.to_thread(local.read, PUT_CHUNK)
                    reading = False
                    if not data:
                        break
                    await handle.write(data, offset)
                    offset += len(data)
                    if on_bytes is not None:
                        on_bytes(len(data))
                await handle.chmod(mode)
            finally:
                with contextlib.suppress(Exception):
                    await within(handle.close(), 5)
            await sftp.rename(temp, target)
        except FileExistsError:
            raise
        except (OSError, asyncssh.Error) as exc:
            with contextlib.suppress(Exception):
                await (await self.sftp()).remove(temp)
            if reading:
                raise  # this machine's file could not be read: not the box's fault
            raise self.file_error(exc, path) from exc
        finally:
            local.close()


class SftpFileReader:
    """A FileReader over one open SFTP handle."""

    def __init__(
        self,
        transport: SftpSessions,
        handle: asyncssh.SFTPClientFile,
        path: str,
        *,
        block: int = 0,
        in_flight: int = 0,
    ) -> None:
        """``handle``: opened with ``block_size=0`` (one request per asyncssh read);
        ``block`` bytes per request and ``in_flight`` requests at once for ``blocks``."""
        self._transport = transport
        self._handle: asyncssh.SFTPClientFile | None = handle
        self._path = path
        self._block = block or SFTP_FALLBACK_BLOCK
        self._in_flight = in_flight or default_in_flight(self._block)

    async def _read_once(self, size: int, offset: int) -> bytes:
        """One SFTP read request; ``b""`` at the end of the file."""
        data = await self._require().read(size, offset)
        if len(data) > size:  # asyncssh passes on whatever the box answers
            raise TransportError(
                self._transport.host,
                f"{self._path}: the box answered a read badly ({len(data)} bytes for {size})",
            )
        return bytes(data)

    def _require(self) -> asyncssh.SFTPClientFile:
        if self._handle is None:
            raise ValueError("reader is closed")
        return self._handle

    async def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``; ``b""`` at or past the end."""
        self._require()
        if length <= 0:
            return b""
        try:
            return await read_serially(self._read_once, offset, length, self._block)
        except (OSError, asyncssh.Error) as exc:
            raise self._transport.file_error(exc, self._path) from exc

    async def blocks(self, offset: int, length: int) -> AsyncIterator[tuple[int, bytes]]:
        """``[offset, offset + length)`` with up to ``max_requests`` reads of ``block_size``
        in flight (``sftp_reads.parallel_blocks``: a short read asks again for the rest),
        pieces in any order, each checked (``checked_blocks``)."""
        self._require()
        if offset < 0 or length < 0:
            raise ValueError(f"blocks({offset}, {length}): a negative offset or length")
        if not length:
            return
        try:
            pieces = parallel_blocks(self._read_once, offset, length, self._block, self._in_flight)
            async for piece in checked_blocks(
                pieces,
                offset,
                length,
                host=self._transport.host,
                path=self._path,
                more_after=self._more_after,
            ):
                yield piece
        except (OSError, asyncssh.Error) as exc:
            raise self._transport.file_error(exc, self._path) from exc

    async def _more_after(self, end: int) -> bool:
        """Whether the file holds a byte at ``end`` (a short answer must be its end)."""
        return bool(await self._require().read(1, end))

    async def fstat(self) -> FileStat:
        """The open file's attributes (fstat on the handle, not stat on the path)."""
        try:
            return attrs_stat(await self._require().stat())
        except (OSError, asyncssh.Error) as exc:
            raise self._transport.file_error(exc, self._path) from exc

    async def close(self) -> None:
        """Close the handle; errors are ignored since the connection may be gone."""
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(Exception):
                await within(handle.close(), 5)


HOME_TIMEOUT_S = 20.0  # the box's answer to `printf %s "$HOME"`


async def _shell_home(conn: asyncssh.SSHClientConnection, host: str) -> str:
    """The box shell's $HOME, "" when it does not answer with one plain absolute path
    of text (the box's words: capped, one line, never shown; sent back to it only)."""
    try:
        done = await run_capped(
            conn, host, 'printf %s "$HOME"', input=None, timeout=HOME_TIMEOUT_S, max_output=4096
        )
    except TransportError:
        return ""
    home = done.stdout
    plain = home.startswith("/") and not any(c in home for c in "\n\r\0\ufffd")
    return home if plain and done.exit_status == 0 and not done.truncated else ""


def sftp_path(path: str) -> str:
    """A box path as SFTP wants it: relative paths resolve against the login HOME, so
    ``~/x`` becomes ``x`` (SFTP does not expand ``~``). Use it for raw ``sftp()`` calls."""
    if path == "~":
        return "."
    if path.startswith("~/"):
        return path[2:] or "."
    return path


def attrs_stat(attrs: asyncssh.SFTPAttrs) -> FileStat:
    """SFTP attributes as a FileStat (inode None: SFTP v3 does not carry it)."""
    mtime = float(attrs.mtime or 0) + (attrs.mtime_ns or 0) / 1e9
    regular = attrs.permissions is None or stat.S_ISREG(attrs.permissions)
    return FileStat(size=attrs.size or 0, mtime=mtime, inode=None, regular=regular)
