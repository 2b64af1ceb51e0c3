"""Take a host's manifest: run the on-box script over the connection and read its lines.

The script (``rgt_tui/agent/manifest.py``, bundled) travels in the command itself, so
nothing is installed on the box: ``python3 -S -u -c "<its source, zlib'd, base64>"
--root ...``. Not on stdin (as the telemetry agent is): stdin can only be written once
the box has answered the exec request, a round trip later, and on a far box (200 ms)
the scan's listing is what the whole pull waits for.
Every scan reports the box's id (``--box-id``), and the manifest carries the host key the
connection saw: a manifest belongs to one box (``rgt_tui.domain.box_identity``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import shlex
import zlib
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import replace

from rgt_tui.agent import manifest_source as _bundled_manifest_source
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.domain.manifest_parse import ManifestLimits, parse_manifest_lines
from rgt_tui.transport.base import Transport

# No line from the scan for this long: it is stuck, not slow (the script prints a tick
# line every second while it lists or hashes, and a stuck mount stops it, ticks and all).
SCAN_STALL_TIMEOUT_S = 60.0
_YIELD_EVERY = 1000  # lines read between two turns given back to the event loop


def manifest_source() -> str:
    """The text of the on-box manifest scan (``rgt_tui/agent/manifest.py`` bundled with
    the modules it shares with the telemetry agent)."""
    return _bundled_manifest_source()


@functools.cache
def _inline_program() -> str:
    """The scan as one ``python -c`` line: one line of base64 (9 KB), so no login shell
    meets a newline or a quote in it."""
    packed = base64.b64encode(zlib.compress(manifest_source().encode(), 9)).decode()
    return f"import base64,zlib;exec(zlib.decompress(base64.b64decode('{packed}')))"


def manifest_command(
    roots: Iterable[str],
    *,
    hash_files: bool = True,
    box_id: bool = False,
    list_first: bool = False,
    inline: bool = True,
) -> str:
    """The remote shell command that runs the script (its source inline, or on stdin).

    Every word is ``shlex.quote``d: pull roots come from hosts.toml and pass through the
    remote shell, so a space or ``$(...)`` in one must stay a literal path. ``box_id``: the
    scan also reports the box's id, creating ``~/.rgt/box-id`` once (``take_manifest``
    always asks; off by default so a bare run of the script writes nothing in a home).
    ``list_first``: every file is listed (size, mtime) before any is hashed. ``inline``
    (the default): the source is in the command; else it is read from stdin.
    """
    # -S: the script needs only the standard library, so no site-packages and none of
    # their .pth start-up hooks (16 ms per start here; more in a large conda environment).
    words = ["python3", "-S", "-u", *(["-c", _inline_program()] if inline else ["-"])]
    for root in roots:
        words += ["--root", str(root)]
    if not hash_files:
        words.append("--no-hash")
    if box_id:
        words.append("--box-id")
    if list_first:
        words.append("--list-first")
    return " ".join(shlex.quote(w) for w in words)


class ScanStalled(TransportError):
    """The box's file scan printed nothing for the stall timeout: it is stuck (a hung
    mount under a pull root, a hostile ``python3``), not slow. A TransportError, so every
    caller that reports an unreachable box reports this too, with ``fix``."""


async def take_manifest(
    host: HostConfig,
    transport: Transport,
    *,
    hash_files: bool = True,
    on_file: Callable[[int], None] | None = None,
    on_listing: Callable[[Manifest], None] | None = None,
    stall_timeout_s: float = SCAN_STALL_TIMEOUT_S,
) -> Manifest:
    """List and hash every file under the host's pull roots, on the box.

    ``on_file(files)`` is called as the listing grows, for progress. ``on_listing``, when
    given, is called once with every file the walk found (size and mtime, no SHA-256:
    ``parse_manifest_lines(listing=True)``) as soon as the walk ends, while the box goes
    on hashing; it is only a promise (the pull copies on it, and counts nothing until
    the complete manifest returned here agrees). The transport must
    be connected. Raises TransportError when the box cannot run the script (the message
    says why: no python3, a dropped connection), ScanStalled (a TransportError) when the
    scan prints no line for ``stall_timeout_s`` (it ticks every second while it works, so
    a long hash is not a stall), and ManifestError when its output is incomplete, over a
    cap or unusable.
    """
    lines: list[str] = []
    listed: list[str] | None = [] if on_listing is not None and hash_files else None
    limits = ManifestLimits(host.name)  # a hostile box cannot make this hold more
    files = 0

    def take(line: str) -> None:
        nonlocal files, listed
        limits.take(line)  # as received: an empty line counts too
        if not line.strip():
            return  # counted, never kept
        if listed is not None:  # the walk's own lines, until its "listed" line
            if '"type": "entry"' in line:
                listed.append(line)
                return
            if '"type": "listed"' in line:
                try:
                    listing = parse_manifest_lines(host.name, [*lines, *listed, line], listing=True)
                except ManifestError:
                    listing = None  # only a promise: the complete manifest decides alone
                listed = None
                if listing is not None:
                    on_listing(replace(listing, host_key=transport.host_key_fingerprint))
        lines.append(line)
        if on_file is not None and '"type": "file"' in line:  # sizes: the parser's alone
            files += 1
            on_file(files)

    command = manifest_command(
        host.pull, hash_files=hash_files, box_id=True, list_first=listed is not None
    )
    stream = transport.stream_lines(command)
    try:
        await _read_watched(host, stream, take, stall_timeout_s)
    except ScanStalled:
        raise
    except TransportError as exc:
        if "127" in exc.message:
            raise TransportError(
                host.name,
                "python3 not found on the box (the pull manifest needs it)",
                "install python3 on the box",
            ) from exc
        raise
    try:
        manifest = parse_manifest_lines(host.name, lines)
    except ManifestError:
        raise
    except Exception as exc:  # a garbled line from a strange box must not crash the caller
        raise ManifestError(f"{host.name}: unreadable manifest output ({exc})") from exc
    # The key this very connection was made with: the box's id alone could be copied
    # with a disk image; the two together say which machine the listing came from.
    return replace(manifest, host_key=transport.host_key_fingerprint)


async def _read_watched(
    host: HostConfig,
    stream: AsyncIterator[str],
    take: Callable[[str], None],
    stall_timeout_s: float,
) -> None:
    """``take`` every line of ``stream`` until it ends; ScanStalled when no line came for
    ``stall_timeout_s`` (the stream is closed, which ends the box's side).

    The reading runs as a task of its own and this one watches the time of its last line:
    a timer per line (``wait_for``) would cost a task each, and a scan has a million.
    """
    loop = asyncio.get_running_loop()
    last = loop.time()

    async def read() -> None:
        nonlocal last
        # aclosing: an error raised while reading (a garbled line) still ends the box's side.
        async with contextlib.aclosing(stream) as received:
            count = 0
            async for line in received:
                last = loop.time()
                take(line)
                count += 1
                if count % _YIELD_EVERY == 0:
                    # Lines already buffered come without a pause: let the UI draw.
                    await asyncio.sleep(0)

    reader = asyncio.ensure_future(read())
    try:
        while (left := last + stall_timeout_s - loop.time()) > 0:
            done, _ = await asyncio.wait({reader}, timeout=left)
            if done:
                return reader.result()  # its error, when it failed
    finally:
        if not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
    roots = ", ".join(host.pull) or "no pull roots"
    raise ScanStalled(
        host.name,
        f"the box's file scan (listing and hashing {roots}) printed nothing for "
        f"{stall_timeout_s:g} s; it was stopped",
        "a stuck mount under a pull root is the usual cause: run `df` and `ls` on those "
        "folders on the box; for a disk that is only slow, raise the bound "
        "(pull and verify: --stall-timeout)",
    )
