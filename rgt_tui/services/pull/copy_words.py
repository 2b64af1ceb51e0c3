"""How a pull's large files came, in words: the copy's width (``width``) and whether
they streamed through OpenSSH's ``ssh`` (``bulk``). One text for ``rgt-tui pull``'s
summary and the TUI's Pulls tab."""

from __future__ import annotations

from rgt_tui.services.pull.types import BULK_SSH, PullResult


def large_files_lines(result: PullResult) -> list[str]:
    """``large files: …`` and, when ssh was not used, why (nothing without large files)."""
    # The probed round trip where there was one: the better measure (``bulk.round_trip``).
    measured = result.bulk_rtt_s if result.bulk_rtt_s is not None else result.width_rtt_s
    rtt = rtt_text(measured)
    if result.bulk is not None and result.bulk.startswith(BULK_SSH):
        return [f"large files: {result.bulk}{rtt}"]  # all, all but some, or until one failed
    if result.width is None:
        return []
    lines = [f"large files: {width_text(result.width, measured)}"]
    if result.bulk is not None:
        lines.append(f"  not {BULK_SSH}: {result.bulk}")
    return lines


def width_text(width: tuple[int, int], rtt_s: float | None) -> str:
    """``1 at a time, 1 SFTP session each (round trip ~3 ms)``: the copy's width and why;
    ``up to 4 at a time`` where more than one (a pull of 2 files read "4 at a time")."""
    files, sessions = width
    each = "session each" if sessions == 1 else "sessions each"
    upto = "up to " if files > 1 else ""
    return f"{upto}{files} at a time, {sessions} SFTP {each}{rtt_text(rtt_s)}"


def rtt_text(rtt_s: float | None) -> str:
    """`` (round trip ~3 ms)``, or nothing when it was not measured."""
    if rtt_s is None:
        return ""
    return " (round trip under 1 ms)" if rtt_s < 0.0005 else f" (round trip ~{rtt_s * 1000:.0f} ms)"
