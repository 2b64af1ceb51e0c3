"""Read a ``tar`` stream from the box without extracting it: many small files per round trip.

The box runs GNU tar on the names the pull asks for; this reader only ever hands out the
bytes of members that are regular files, that were asked for (once each), and whose size
is the manifest's. Anything else — a link, a folder, a name not asked for, a size that
is not the promised one, a long-name header over ``NAME_CAP``, a damaged header — stops
the stream with the reason (a ``Refused`` event): no byte beyond a promised size is ever
handed out, and nothing is buffered but one 512-byte header (or one capped long name).

Pure: ``TarReader.feed`` takes bytes and returns events; the copy stage writes them.
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass

BLOCK = 512
NAME_CAP = 64 << 10  # the longest GNU long-name record accepted


@dataclass(frozen=True)
class Start:
    name: str  # as asked for (no leading "./")


@dataclass(frozen=True)
class Data:
    chunk: memoryview  # the next bytes of the current member (a view of the fed bytes)


@dataclass(frozen=True)
class End:
    name: str


@dataclass(frozen=True)
class Refused:
    name: str | None  # the member it is about, when known
    reason: str
    # The member is the file asked for, at another size than the manifest's: it changed
    # since it was listed (a log still being written grows). Not a lie to fail it for:
    # the copy takes it the SFTP way, which reads the listed size and checks its hash.
    resized: bool = False


Event = Start | Data | End | Refused


class TarReader:
    """A push parser for GNU tar: ``feed`` bytes as they come, act on the events."""

    def __init__(self, wanted: dict[str, int]) -> None:
        self.wanted = dict(wanted)  # name -> manifest size, removed once received
        self.finished = False  # the archive's end was read (or a refusal stopped it)
        self._buf = bytearray()  # a header, or a long name, being gathered
        self._need = BLOCK  # bytes ``_buf`` must reach before it is parsed
        self._long: bytes | None = None  # the GNU long name for the next header
        self._gathering_name = 0  # the long name's length while its blocks are gathered
        self._member: str | None = None
        self._left = 0  # data bytes of the current member still to come
        self._pad = 0  # padding after them

    def feed(self, data: bytes | memoryview) -> list[Event]:
        view, i, events = memoryview(data), 0, []
        while i < len(view) and not self.finished:
            if self._left:
                n = min(self._left, len(view) - i)
                events.append(Data(view[i : i + n]))
                self._left -= n
                i += n
                if not self._left:
                    events.append(End(self._member))  # type: ignore[arg-type]
                continue
            if self._pad:
                n = min(self._pad, len(view) - i)
                self._pad -= n
                i += n
                continue
            n = min(self._need - len(self._buf), len(view) - i)
            self._buf += view[i : i + n]
            i += n
            if len(self._buf) == self._need:
                block, self._buf, self._need = bytes(self._buf), bytearray(), BLOCK
                events += self._parse(block)
        return events

    def _parse(self, block: bytes) -> list[Event]:
        if self._gathering_name:
            self._long, self._gathering_name = block[: self._gathering_name], 0
            return []
        if block.count(0) == BLOCK:
            self.finished = True  # the end-of-archive marker
            return []
        try:
            info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        except tarfile.HeaderError as exc:
            return self._refuse(None, f"damaged tar header ({exc})")
        if info.type == tarfile.GNUTYPE_LONGNAME:
            if not 0 < info.size <= NAME_CAP:
                return self._refuse(None, f"a long name of {info.size} bytes (cap {NAME_CAP})")
            self._gathering_name = info.size
            self._need = -(-info.size // BLOCK) * BLOCK
            return []
        name = info.name
        if self._long is not None:
            name = self._long.rstrip(b"\0").decode("utf-8", "surrogateescape")
            self._long = None
        name = name.removeprefix("./")
        if not info.isreg():
            return self._refuse(name, "not a regular file on the box any more")
        expected = self.wanted.pop(name, None)
        if expected is None:
            return self._refuse(name, "sent by the box without being asked for")
        if info.size != expected:
            why = f"the box sent {info.size} bytes, the manifest says {expected}: it changed"
            return self._refuse(name, why, resized=True)
        self._member, self._left, self._pad = name, info.size, -info.size % BLOCK
        return [Start(name)] if info.size else [Start(name), End(name)]

    def _refuse(self, name: str | None, reason: str, *, resized: bool = False) -> list[Event]:
        self.finished = True
        return [Refused(name, reason, resized)]
