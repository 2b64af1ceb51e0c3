"""A host's run of failed periodic pulls, kept beside the fleet's journal
(``<journal>/pull_failing/<host>.json``: when the failures began, the reason told, and
when it last failed), so ``watch`` restarted while a host's pulls still fail does not
tell the same failure again: its notification's key is the run's start, as before the
restart (hour s21a #9; watch.md: each event is told once across restarts).

Written at each failed periodic pull (one small file every few minutes while a host
fails), removed by the next one that comes through. A run whose last failure is older
than ``STALE_S`` (watch was stopped a while) is over: a failure then is told again.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from rgt_tui.services.records import atomic_write_json, read_json

STALE_S = 900.0  # three retries of a failing host (RETRY_S): a restart is quicker


def _path(journal: Path, host: str) -> Path:
    return journal / "pull_failing" / f"{host}.json"  # a checked host name


def told_failure(journal: Path, host: str, now: float | None = None) -> tuple[float, str] | None:
    """(when the failures began, the reason told) of the host's run of failures, when
    its last failure was less than ``STALE_S`` ago; None: none kept, or unreadable."""
    try:
        data = read_json(_path(journal, host))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    since, why, at = data.get("since"), data.get("why"), data.get("at")
    if not (_number(since) and _number(at) and isinstance(why, str)):
        return None
    if (time.time() if now is None else now) - at > STALE_S:
        return None
    return float(since), why


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def keep_failing(journal: Path, host: str, since: float, why: str) -> None:
    """Keep the run of failures (``why``: the reason told) as of now, this machine's
    clock; a full disk only loses the memory of it."""
    path = _path(journal, host)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, {"since": since, "why": why, "at": time.time()})


def forget_failing(journal: Path, host: str) -> None:
    """The host's pull came through: the next failure is a new run of them."""
    with contextlib.suppress(OSError):
        _path(journal, host).unlink(missing_ok=True)
