"""Whether a periodic pull is news: told when it brings something the user has not heard.

A run that rewrites its checkpoint each epoch makes every periodic pull bring "1 changed
result file", with the same verdict and the same standing problems: told each time, it
was 48 notices a day per box at the default 30 min cadence, and a standing refusal (a
secret skipped by name) came back as a warning with every one (a user's hour, s36 watch
#3). A pull is told when it brings a new file, when its verdict or its problems differ
from the last told for the host, or when the earlier copies ``.rgt/replaced/`` keeps
reach the next power of two (1, 2, 4, 8 … copies, counted by the pull itself): the disk
those copies fill is still told as it grows, at fewer and fewer notices (never deleted by
rgt-tui, so growth is what matters, s34 CLI #1). What is not told is still on the
scheduler's status line (``PullScheduler.last``), with why.

Memory is per process: a restarted ``watch`` tells the first pull of each host again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PullNews:
    """What one periodic pull of a host would tell."""

    new_files: int  # files that were not here before (not newer copies)
    verdict: str  # "VERIFIED", or "NOT VERIFIED: …"
    problems: tuple[str, ...]  # the notice's bullets
    copies: int = 0  # earlier copies .rgt/replaced/ holds after it (0: none set aside)


def copies_step(copies: int) -> int:
    """The power-of-two step ``copies`` has reached: 0 → -1, 1 → 0, 2–3 → 1, 4–7 → 2 …"""
    return copies.bit_length() - 1


def unheard(news: PullNews, told: PullNews | None) -> str | None:
    """Why ``news`` is not worth a notice after ``told`` (the last told for its host), in
    words for the status line; None: tell it."""
    if (
        told is None
        or news.new_files
        or (news.verdict, news.problems)
        != (
            told.verdict,
            told.problems,
        )
    ):
        return None
    if copies_step(news.copies) > copies_step(told.copies):
        return None
    following = 1 << (copies_step(news.copies) + 1)
    return (
        "not notified: only newer copies of files already told, the same verdict and "
        f"problems; notified again at {following} earlier copies, a new file or a new problem"
    )
