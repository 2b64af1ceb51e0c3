"""One bandwidth budget for every pull of the process: a token bucket the copy awaits.

``pull --all`` pulls every host at once, and ``watch`` (or the TUI) pulls hosts on a
cadence while the user works: all of them share the one link this machine has, so
``--bwlimit`` / ``[fleet] pull_rate_mbit`` caps them together, not each. The copy calls
``take(n)`` after each piece arrives and before it asks for more; since the SFTP reader
asks for the next block only when the last is taken (``sftp_reads.parallel_blocks``) and
a tar stream is read as it is consumed, waiting here holds the box back too (SSH's
window), so the rate on the wire follows the budget after the first reads in flight.

No budget (``None`` rate) is never consulted: the copy checks ``options.budget is None``
and awaits nothing, so an unlimited pull pays not even a call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

# A quarter of a second of the rate may go at once: small enough that the measured rate
# of a pull of a few seconds stays within a few percent of the budget, large enough that
# each 255 KiB read does not wait on its own.
BURST_S = 0.25
# A budgeted large file is asked for in chunks of a tenth of a second of the rate (within
# the bounds below): fine enough that any 10 s window is within 1 % of the budget, and
# large enough at a high rate that a chunk's own work (a take, a read's setup) does not
# cap it: 255 KiB chunks reached 825 Mbit/s under a 1 Gbit/s limit here, 4 MiB the limit.
CHUNK_S = 0.1
MIN_CHUNK = 32 << 10
MAX_CHUNK = 4 << 20


class Bandwidth:
    """A token bucket of ``rate`` bytes per second shared by every caller of ``take``.

    Each call reserves its bytes' time on one timeline (``_free_at``, virtual scheduling):
    callers are served in the order they asked, whichever pull they belong to, and the
    sum of their bytes over any span stays within ``rate × span + burst``.
    """

    def __init__(
        self,
        rate_bytes_s: float,
        *,
        burst_s: float = BURST_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if not rate_bytes_s > 0:  # also NaN
            raise ValueError(f"a bandwidth budget must be more than 0 bytes/s, not {rate_bytes_s}")
        self.rate = float(rate_bytes_s)
        self.burst_s = burst_s
        self._clock = clock
        self._sleep = sleep
        self._free_at = clock()

    @classmethod
    def from_mbit(cls, mbit: float, **kw: object) -> Bandwidth:
        """A budget of ``mbit`` megabits per second (10^6 bits, as links are sold)."""
        return cls(mbit * 1e6 / 8, **kw)  # type: ignore[arg-type]

    @property
    def mbit(self) -> float:
        return self.rate * 8 / 1e6

    def set_rate(self, rate_bytes_s: float) -> None:
        """Change the rate (the fleet file changed): reservations from now on use it."""
        if not rate_bytes_s > 0:
            raise ValueError(f"a bandwidth budget must be more than 0 bytes/s, not {rate_bytes_s}")
        self.rate = float(rate_bytes_s)

    def chunk_bytes(self) -> int:
        """The bytes a budgeted copy asks for at once: ``CHUNK_S`` of the rate, within
        ``MIN_CHUNK`` and ``MAX_CHUNK``."""
        return max(MIN_CHUNK, min(MAX_CHUNK, int(self.rate * CHUNK_S)))

    async def take(self, nbytes: int, *, tick: Callable[[], object] | None = None) -> None:
        """Wait until ``nbytes`` more fit the budget (returns at once within the burst).

        ``tick`` is called at least every second of a long wait: the pull's stall watch
        must not take a wait for the budget (many hosts, a small budget) for a dead box.
        Cancelled while it waits, the bytes were never asked for: their time goes back
        to the timeline (a lost connection or a cancelled pull leaves no phantom
        reservations that would hold every later pull back).
        """
        now = self._clock()
        # An idle bucket saves up no more than the burst: a pull after a pause does not
        # get to send the pause's worth at once.
        start = max(self._free_at, now - self.burst_s)
        self._free_at = start + nbytes / self.rate
        until = self._free_at - self.burst_s
        try:
            while (delay := until - self._clock()) > 0:
                await self._sleep(min(delay, 1.0))
                if tick is not None:
                    tick()
        except asyncio.CancelledError:
            self._free_at -= nbytes / self.rate  # later callers' share, not this one's
            raise


_shared: Bandwidth | None = None


def shared_budget(mbit: float | None) -> Bandwidth | None:
    """The process's one budget at ``mbit`` Mbit/s (None: unlimited). Every caller in the
    process gets the same bucket, so periodic pulls, a ``p`` in the TUI and ``pull --all``
    share one link's worth; a new rate updates it in place."""
    global _shared
    if mbit is None:
        return None
    if _shared is None:
        _shared = Bandwidth.from_mbit(mbit)
    elif _shared.mbit != mbit:
        _shared.set_rate(mbit * 1e6 / 8)
    return _shared
