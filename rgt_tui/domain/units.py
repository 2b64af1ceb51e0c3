"""Human-readable figures, shared by the command line and the widgets."""

from __future__ import annotations

import time


def fmt_bytes(n: float | None) -> str:
    """1536 → '1.5K'; binary units, one decimal below 10."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "K", "M", "G", "T", "P"):
        if abs(value) < 1024 or unit == "P":
            if unit == "B":
                return f"{value:.0f}B"
            return f"{value:.1f}{unit}" if abs(value) < 10 else f"{value:.0f}{unit}"
        value /= 1024
    return f"{value:.0f}P"


def fmt_count(n: float | None) -> str:
    """12345 → '12.3k' (inode counts)."""
    if n is None:
        return "?"
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}"


def fmt_took(seconds: float) -> str:
    """How long a command took: ``2.6s`` under a minute (``2s`` beside a copy stage of
    2.62 s read as a slip), else as ``fmt_duration``."""
    return f"{seconds:.1f}s" if seconds < 60 else fmt_duration(seconds)


def fmt_duration(seconds: float | None) -> str:
    """3725 → '1h02m'; 59 → '59s'."""
    if seconds is None:
        return "?"
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def fmt_pct(fraction: float | None) -> str:
    """0.934 → '93%'."""
    return "?" if fraction is None else f"{fraction * 100:.0f}%"


def plural(n: int, word: str, many: str | None = None, *, shown: str | None = None) -> str:
    """``1 file``, ``3 files``: the count and the word, agreeing. ``shown`` writes the
    count another way (``fmt_count``'s ``12.3k``, padded to a column); the word still
    agrees with ``n``."""
    return f"{n if shown is None else shown} {word if n == 1 else (many or word + 's')}"


def local_time(epoch: float | None) -> str:
    """Epoch seconds as this machine's local time, ``2026-01-01 12:00:00``."""
    if epoch is None:
        return "an unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
