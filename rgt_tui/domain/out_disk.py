"""A failed cell's disk, as ``diagnose`` reads it (U6, pure): the file system under the
cell's ``{out}`` (``df -Pk``'s size, free and mount), and the log's ENOSPC line if any.

A run that fills its disk does not always say so: Python's ``OSError: [Errno 28] No
space left on device`` does, but torch's checkpoint writer fails with ``unexpected pos
6144 vs 6038`` and the cell ends "by itself". The disk's state at the diagnosis is the
other witness: full now, it was most likely full when the save failed (s36 acts hour #3).
"""

from __future__ import annotations

from dataclasses import dataclass

from rgt_tui.domain.text import is_digits, printable
from rgt_tui.domain.units import fmt_bytes

# Full: less free than this, or than 1 % of the disk, whichever is more (a checkpoint
# is rarely smaller; a 2 TB disk at 99 % still has 20 GB and may not be the cause).
FULL_FLOOR_KIB = 64 * 1024


@dataclass(frozen=True)
class OutDisk:
    """``df -Pk`` of the folder under a cell's ``{out}``."""

    size_kib: int
    avail_kib: int
    mount: str  # the box's text, printable

    @property
    def full(self) -> bool:
        return self.avail_kib < max(FULL_FLOOR_KIB, self.size_kib // 100)

    def said(self) -> str:
        """``/workspace is 100% used (12.0 KiB free of 50.0 MiB)``."""
        used = 100 - (100 * self.avail_kib // self.size_kib if self.size_kib else 0)
        return (
            f"{self.mount} is {used}% used ({fmt_bytes(self.avail_kib * 1024)} free of "
            f"{fmt_bytes(self.size_kib * 1024)})"
        )


def parse_out_disk(row: str) -> OutDisk | None:
    """``SIZE_KIB AVAIL_KIB MOUNT`` (the probe's ``outdf`` line) as an OutDisk; None when
    it is not that shape (the box's text)."""
    size, _, rest = row.partition(" ")
    avail, _, mount = rest.partition(" ")
    if not (is_digits(size) and is_digits(avail) and mount):
        return None
    return OutDisk(int(size), int(avail), printable(mount, 200))


def disk_full_words(disk: OutDisk | None, nospace: str) -> str | None:
    """Why a failed cell's disk is the likely cause, in words; None when nothing says so."""
    if nospace:
        where = f"; {disk.said()} now" if disk is not None else ""
        return f"its log says the disk was full ({nospace}){where}"
    if disk is not None and disk.full:
        return (
            f"the disk under its outputs is full: {disk.said()} — a save that fills it fails, "
            "often with an error that does not say so (torch: 'unexpected pos')"
        )
    return None
