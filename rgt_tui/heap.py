"""The collector's settings for a long-running process that holds a fleet (the TUI, and
`watch` once it runs).

Everything built before the fleet streams (imports, widgets, the fleet) lives as long as
the process: ``gc.freeze`` leaves it out of the full passes, which otherwise stalled a
keypress by ~50 ms a few times a minute at 100 hosts. Young objects are collected every
20,000 allocations, not 700: each host's sample leaves objects that live a while (its
history), and with the default a 500-host fleet ran ~28 full collections a minute, up to
0.2 s each (`scripts/bench_tui.py --synthetic --hosts 500 --seconds 180`: key p95 97 ->
55 ms, full collections 27.6 -> 1 a minute, RSS +8 MiB over 3 minutes; docs/benchmarks.md).
"""

from __future__ import annotations

import gc

YOUNG_ALLOCATIONS = 20_000


def settle_heap() -> None:
    """Freeze what exists now and collect the young generation less often."""
    gc.freeze()
    gc.set_threshold(YOUNG_ALLOCATIONS, *gc.get_threshold()[1:])
