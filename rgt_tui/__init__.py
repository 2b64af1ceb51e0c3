"""rgt-tui: a terminal fleet manager for rented GPU boxes."""

__version__ = "0.1.0"
