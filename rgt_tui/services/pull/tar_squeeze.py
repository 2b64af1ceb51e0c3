"""Compress the small files' ``tar`` stream on the box when it pays (U15), and undo it here.

When it pays: compressing on the box and inflating here run beside the wire, so a
compressed stream is faster only while the link is slower than the box's compressor,
and smaller only for text. Measured on a shared 2-core machine, on 2,000 JSON/log files
(docs/pulls.md): ``zstd -1`` reads about 150 MB/s and shrinks them 4.7×, ``gzip -1``
about 35 MB/s and 3.7×; random bytes (a checkpoint) do not shrink at all. So:

- only a text-heavy stream is compressed: at least half of its bytes, and 1 MiB, in
  files whose names say text (``TEXT_SUFFIXES``); checkpoints, arrays, images and
  archives never count as text;
- only when the stream's channel is slower than the codec (with a margin): one SSH
  channel moves about ``PER_RTT_BYTES`` per round trip (its window), so its rate is
  estimated from the round trip, measured by two SFTP stats, and from the bandwidth
  budget (``--bwlimit``), whichever is lower. A near box (4 ms) and a 100 ms one are
  not compressed (measured: it lost there); a 200 ms one is, by zstd; gzip only under
  a bandwidth limit of about 60 Mbit/s or a round trip over ~0.5 s;
- zstd when both the box and this machine have it (this machine inflates it with its
  own ``zstd -d``: Python 3.11 has no zstd), else gzip (everywhere; ``zlib`` here). The
  box picks, by ``command -v``, in the one command; the stream's first bytes say which.

The SHA-256 of every file is still taken on the bytes written here, after inflating:
compression changes what crosses the wire, never what is checked. A hostile stream
gains nothing: only the codecs offered are inflated, in bounded pieces, and the tar
reader stops at anything it did not ask for.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import shlex
import shutil
import zlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.units import fmt_bytes

TEXT_SUFFIXES = frozenset(
    [
        ".json",
        ".jsonl",
        ".ndjson",
        ".log",
        ".txt",
        ".csv",
        ".tsv",
        ".yaml",
        ".yml",
        ".out",
        ".err",
        ".md",
        ".xml",
        ".html",
        ".toml",
        ".ini",
        ".cfg",
        ".py",
        ".sh",
    ]
)
# Already compressed, or numbers that do not shrink: never counted as text (the last
# suffix decides: ``metrics.jsonl.gz`` is a .gz).
NEVER_SUFFIXES = frozenset(
    [
        ".pt",
        ".pth",
        ".ckpt",
        ".safetensors",
        ".npy",
        ".npz",
        ".bin",
        ".gz",
        ".tgz",
        ".zst",
        ".xz",
        ".bz2",
        ".zip",
        ".7z",
        ".png",
        ".jpg",
        ".jpeg",
        ".webp",
        ".gif",
        ".mp4",
        ".parquet",
        ".h5",
    ]
)
TEXT_SHARE = 0.5  # of the stream's bytes, in text files
MIN_TEXT_BYTES = 1 << 20  # less saves under a round trip's worth: not worth a codec
# One channel (the tar stream's) moves about half its 8 MiB window per round trip:
# asyncssh re-opens the window at half (transport/ssh.py, WINDOW_BYTES).
PER_RTT_BYTES = 4 << 20
# The tar bytes per second a compressed stream keeps up with, box to here (compress,
# wire, inflate), set from bench_pull --link compress: on a shared 2-core machine zstd -1
# lost at 100 ms / 400 Mbit/s (16.3 s against 14.5 s plain) and won at 200 ms (9.5-10.6 s
# against 16.6 s), so the line sits between those links' estimates (42 and 21 MB/s).
# gzip -1 reads text about 4× slower than zstd -1 (36 against 158 MB/s measured here).
CODEC_RATE = {"zstd": 40e6, "gzip": 10e6}
MARGIN = 0.8
LEVEL = {"zstd": "zstd -1 -q -c", "gzip": "gzip -1 -c"}
MAGIC = {"zstd": b"\x28\xb5\x2f\xfd", "gzip": b"\x1f\x8b"}
PIECE = 1 << 16  # inflated bytes handed to the tar reader at once (a bomb stays bounded)
MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class Squeeze:
    """What the box is offered for one stream: codecs, preferred first (none: plain
    tar), and why, for the pull's summary."""

    codecs: tuple[str, ...]
    reason: str


def is_text(name: str) -> bool:
    """Whether a file's name says it holds text (which shrinks 3-5× at level 1)."""
    suffix = posixpath.splitext(name.lower())[1]
    return suffix in TEXT_SUFFIXES and suffix not in NEVER_SUFFIXES


def text_bytes(files: Iterable[tuple[str, int]]) -> tuple[int, int]:
    """(bytes in text files, bytes in all) of ``(name, size)`` pairs."""
    text = total = 0
    for name, size in files:
        total += size
        if is_text(name):
            text += size
    return text, total


def text_heavy(files: Iterable[tuple[str, int]]) -> bool:
    """At least ``TEXT_SHARE`` of the bytes, and ``MIN_TEXT_BYTES``, are in text files."""
    text, total = text_bytes(files)
    return text >= MIN_TEXT_BYTES and text >= TEXT_SHARE * total


def choose(
    files: Iterable[tuple[str, int]],
    *,
    mode: str = "auto",
    rtt_s: float | None,
    limit_bps: float | None,
    zstd_here: bool,
) -> Squeeze:
    """Which codecs to offer the box for a stream of ``files`` (pure).

    ``rtt_s``: the measured round trip (None: not measured, as for this machine);
    ``limit_bps``: the bandwidth budget in bytes/s; ``zstd_here``: this machine can
    inflate zstd. ``mode`` "on" offers both whatever the files and link, "off" none.
    """
    usable = ("zstd", "gzip") if zstd_here else ("gzip",)
    if mode == "off":
        return Squeeze((), "off (--compress off)")
    if mode == "on":
        return Squeeze(usable, "on (--compress on)")
    text, total = text_bytes(files)
    if text < TEXT_SHARE * total:
        return Squeeze((), f"not text-heavy ({text * 100 // max(total, 1)} % text)")
    if text < MIN_TEXT_BYTES:  # text-heavy, yet too little of it (ux-i 8: "99 % text")
        return Squeeze(
            (), f"too little to pay: {fmt_bytes(text)} of text, compressed only from "
            f"{fmt_bytes(MIN_TEXT_BYTES)} of text up"
        )  # fmt: skip
    rates = []
    if rtt_s is not None and rtt_s > 0:
        rates.append((PER_RTT_BYTES / rtt_s, f"{rtt_s * 1000:.0f} ms round trip"))
    if limit_bps is not None:
        rates.append((limit_bps, "the bandwidth limit"))
    if not rates:
        return Squeeze((), "the link is this machine")
    rate, why = min(rates)
    codecs = tuple(c for c in usable if rate < MARGIN * CODEC_RATE[c])
    mb = f"~{rate / 1e6:.0f} MB/s by {why}"
    if not codecs:
        return Squeeze((), f"the link ({mb}) outruns the codec")
    return Squeeze(codecs, f"the link ({mb}) is slower than {codecs[0]} -1")


def tar_command(root: str, codecs: tuple[str, ...]) -> str:
    """The box's command: GNU tar of the names on stdin, through the first offered codec
    the box has (``command -v``), else plain. "./" keeps a name starting with "-" from
    reading as an option; --no-recursion: a name that became a folder is sent as one
    (and refused), never its contents."""
    tar = (
        "tar --format=gnu --no-recursion --hard-dereference -C "
        f"{shlex.quote(root)} --null -T - -cf -"
    )
    if not codecs:
        return tar
    branches = [f"command -v {c} >/dev/null 2>&1; then {tar} | {LEVEL[c]}" for c in codecs]
    return "if " + "; elif ".join(branches) + f"; else {tar}; fi"


def zstd_here() -> str | None:
    """This machine's zstd, which inflates a zstd stream (None: offer gzip only)."""
    return shutil.which("zstd")


@dataclass
class StreamStats:
    """One stream's bytes: on the wire and as tar (for the summary and the bench)."""

    codec: str = "none"
    wire: int = 0
    tar: int = 0


async def inflated(
    host: str,
    wire: AsyncIterator[bytes],
    codecs: tuple[str, ...],
    stats: StreamStats,
) -> AsyncIterator[bytes]:
    """The tar bytes of ``wire``: inflated by the offered codec its first bytes name,
    else as they came. A damaged stream raises TransportError (what it did not bring
    goes by SFTP, as when tar fails)."""
    head = b""
    async for chunk in wire:
        head += chunk
        if len(head) >= 4:
            break
    codec = next((c for c in codecs if head.startswith(MAGIC[c])), "none")
    stats.codec = codec
    if codec == "gzip":
        pieces = _gunzip(host, head, wire)
    elif codec == "zstd":
        pieces = _unzstd(host, head, wire)
    else:
        pieces = _plain(head, wire)
    async with contextlib.aclosing(pieces):
        async for piece in pieces:
            stats.tar += len(piece)
            yield piece


async def _plain(head: bytes, wire: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if head:
        yield head
    async for chunk in wire:
        yield chunk


async def _gunzip(host: str, head: bytes, wire: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    inflate = zlib.decompressobj(wbits=31)  # gzip's header and trailer

    async def chunks() -> AsyncIterator[bytes]:
        yield head
        async for chunk in wire:
            yield chunk

    try:
        async for chunk in chunks():
            data = inflate.decompress(chunk, PIECE)
            while data:
                yield data
                data = inflate.decompress(inflate.unconsumed_tail, PIECE)
            if inflate.eof:
                return  # tar's end is inside; anything after the member is ignored
    except zlib.error as exc:
        raise TransportError(host, f"the box's gzip stream is damaged ({exc})") from exc


async def _unzstd(host: str, head: bytes, wire: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """zstd -d here, fed from the wire while its output is read (so neither pipe fills)."""
    program = zstd_here()
    if program is None:  # offered only when present: gone since
        raise TransportError(host, "zstd is no longer on this machine")
    proc = await asyncio.create_subprocess_exec(
        program, "-d", "-c", "-q",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def feed() -> None:
        try:
            proc.stdin.write(head)
            await proc.stdin.drain()
            async for chunk in wire:
                proc.stdin.write(chunk)
                await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # zstd stopped on a damaged stream: its status says so below
        finally:
            proc.stdin.close()

    feeding = asyncio.ensure_future(feed())
    try:
        while data := await proc.stdout.read(PIECE):
            yield data
        await feeding  # a lost connection first: the pull reconnects and resumes
        if await proc.wait() != 0:
            why = (await proc.stderr.read(4096)).decode(errors="replace").strip()
            raise TransportError(
                host, f"the box's zstd stream is damaged ({why or 'zstd -d failed'})"
            )
    finally:
        if not feeding.done():
            feeding.cancel()
            await asyncio.gather(feeding, return_exceptions=True)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
