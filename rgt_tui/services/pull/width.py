"""How many large files a pull copies at once, and through how many SFTP sessions each:
as few as the link's round trip needs.

One SFTP session moves about ``PER_RTT_BYTES`` per round trip (its channel's window,
re-opened at half), so a far link needs several at once to be filled (200 ms: 8
sessions, 4 files × 2). On a near link one session already carries more than the link,
and every extra one only costs CPU on both ends: the box's sshd serves more channels at
once, and here more copies and hashes interleave. Measured on loopback (3 × 300 MiB,
``scripts/bench_pull.py``-style pulls, alternating): 4 files × 2 sessions 6.0–6.4 s and
4.4–4.8 CPU seconds here; 1 × 1 4.7–5.0 s (one run 7.6) and 3.6–3.9 CPU seconds.
"""

from __future__ import annotations

import math

from rgt_tui.services.pull.tar_squeeze import PER_RTT_BYTES
from rgt_tui.services.pull.types import PullOptions

# The rate the sessions together should be able to carry whatever the round trip
# (bytes/s): above most rented boxes' links (2.4 Gbit/s), so a width never caps a link.
FILL_RATE = 300e6


def copy_width(options: PullOptions, rtt_s: float | None) -> tuple[int, int]:
    """``(files at once, sessions per file)`` for a round trip of ``rtt_s`` seconds:
    enough sessions for ``FILL_RATE`` at ``PER_RTT_BYTES`` each per round trip, within
    ``options``' most (``concurrency`` × ``lanes_per_file``). The most when the round
    trip is unknown, or when the width was chosen (``--jobs``: ``adapt_width`` off)."""
    most = (options.concurrency, options.lanes_per_file)
    if rtt_s is None or not options.adapt_width:
        return most
    needed = math.ceil(FILL_RATE * rtt_s / PER_RTT_BYTES)
    sessions = max(1, min(options.concurrency * options.lanes_per_file, needed))
    files = min(options.concurrency, sessions)
    return files, min(options.lanes_per_file, math.ceil(sessions / files))
