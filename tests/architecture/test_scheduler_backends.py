"""Schedulers are backends (DESIGN.md; docs/schedulers.md): a host's backend is chosen in
one place, what it can do is asked of it as a capability, and nothing above it tests
which scheduler a host has."""

from __future__ import annotations

import re
from pathlib import Path

from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.scheduler import (
    Appendable,
    JobGated,
    Killable,
    Launchable,
    Retryable,
    Scheduler,
    Skippable,
    Stoppable,
    lacks,
)

ROOT = Path(__file__).resolve().parents[2] / "rgt_tui"
HOST = '[[hosts]]\nname = "c"\nssh = "me@login:22"\npull = ["/scratch/runs"]\n'
VERBS = (Launchable, Appendable, Stoppable, Killable, Retryable, Skippable)
# Where a host's scheduler may be looked at: the backends themselves and the config.
ALLOWED = ("services/queue/", "domain/config")
# Rooms above the backends: they ask the backend, never `host.slurm`.
ABOVE = ("cli", "controllers", "screens", "widgets", "content", "services")
SLURM_TEST = re.compile(r"\bhost\.slurm\b|\bplan\.slurm\b|\bsource\.slurm\b")


def host(extra: str = ""):
    return parse_fleet(Path("/f/hosts.toml"), HOST + extra, ["generic-ssh", "slurm"]).hosts[0]


def test_the_host_s_backend_is_chosen_in_one_place_and_says_what_it_can_do() -> None:
    box, slurm = backend_for(host()), backend_for(host('scheduler = "slurm"\n'))
    assert (box.name, slurm.name) == ("box runner", "Slurm")
    for backend in (box, slurm):
        assert isinstance(backend, Scheduler)
        assert all(isinstance(backend, verb) for verb in VERBS), backend.name
    # Only a scheduler whose jobs bill gates the teardown on them.
    assert isinstance(slurm, JobGated) and not isinstance(box, JobGated)
    assert (box.stops_without_runner, slurm.stops_without_runner) == (False, True)
    assert lacks(box, "cancel-jobs") == "c: cancel-jobs is not available on box runner hosts"


def test_nothing_above_the_backends_tests_which_scheduler_a_host_has() -> None:
    found = []
    for room in ABOVE:
        for path in sorted((ROOT / room).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(ALLOWED):
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if SLURM_TEST.search(line):
                    found.append(f"rgt_tui/{rel}:{n}: {line.strip()}")
    assert not found, "ask backend_for(host) for a capability instead:\n" + "\n".join(found)
