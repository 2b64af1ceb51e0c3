"""The fleet runtime: one monitor per host, the queue polls, the latest sample and
history per host, the torn-down override, the health and the events derived from them
(``runtime.FleetRuntime``), shared by the TUI and ``watch``."""
