"""Classes a test checkpoint holds (test_verify_globals), imported by the verify worker
as a user's own package would be: ``tests`` on its PYTHONPATH."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Settings:
    """A run's settings: building it only sets its fields."""

    lr: float = 0.01


@dataclass
class Checked:
    """A dataclass that runs code of its own when built."""

    lr: float = 0.01

    def __post_init__(self) -> None:
        self.lr = float(self.lr)
