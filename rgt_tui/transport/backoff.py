"""Capped exponential backoff with full jitter, as a pure schedule."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Delay before reconnect attempt n (1-based): random in [base/2, min(cap, base·2^(n-1))].

    The jitter keeps 50 hosts that dropped together (a laptop waking up) from
    reconnecting in lockstep; the floor keeps the first retry from being instant.
    """

    base: float = 1.0
    cap: float = 30.0
    factor: float = 2.0

    def ceiling(self, attempt: int) -> float:
        return min(self.cap, self.base * self.factor ** max(0, attempt - 1))

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        high = self.ceiling(attempt)
        low = min(high, self.base / 2)
        return (rng or random).uniform(low, high)
