"""What a launch acknowledged, kept with the launch: its retries go ahead on it.

A failed preflight check acknowledged for a launch (``--ack``, the plan dialog's button)
is a decision about that queue on that box: a retry of one of its cells (which launches
the runner again when the queue stopped) must not ask again, and must show that it goes
ahead on it ("acknowledged at launch: gpu (…)"); the user can revoke it for the retry
(``--no-launch-acks``, the retry dialog's button). A new launch (``L``, ``launch``)
decides afresh: its own acknowledgements replace the record.

Kept on this machine, one JSON file per host beside the fleet's journal
(``<journal_dir>/<host>.launch-acks.json``), not on the box:

- a rented box is hostile input: an acknowledgement read back from the box would let
  the box waive its own failed checks;
- the TUI (across restarts) and the command line open the same folder
  (``paths.journal_dir``), as they do for the journal;
- the box's launch record is written by ``queue_ctl.sh`` under its lock; a second write
  beside it would be neither atomic with it nor trusted when read back.

The record names the launch it belongs to by the runner's pid, as the box's launch record
(``QueueView.launch``) has it: a queue launched since by hand or from another machine
never inherits it. Written atomically (``records.atomic_write_json``); the last launch
replaces the record before it, so no load–modify–save needs a lock. A record that cannot
be read applies nothing: the retry asks again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rgt_tui.domain.config import PREFLIGHT_CHECKS, Fleet
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.text import printable
from rgt_tui.paths import journal_dir
from rgt_tui.services.records import atomic_write_json
from rgt_tui.transport import Transport

if TYPE_CHECKING:
    from rgt_tui.services.queue.launch import LaunchPlan, LaunchResult


class Launchable(Protocol):
    """A backend's launch (``services.queue.scheduler.Launchable``; named here, not
    imported: the scheduler's types import the modules that import this one)."""

    async def launch(self, plan: LaunchPlan, transport: Transport) -> LaunchResult: ...


RECORD_VERSION = 1
DETAIL_CHARS = 120  # a check's failure, as the record keeps it to show beside its name


@dataclass(frozen=True)
class LaunchAcks:
    """The failed preflight checks a launch of ``host`` went ahead without, by name,
    each with its failure as preflight said it then (box text, made printable)."""

    host: str
    pid: int  # the launch's runner (a Slurm host: its array job id)
    acks: tuple[tuple[str, str], ...]  # (check, its failure then)
    at: float

    @property
    def names(self) -> tuple[str, ...]:
        """The acknowledged checks' names."""
        return tuple(name for name, _ in self.acks)

    def belongs_to(self, view: QueueView | None) -> bool:
        """Whether this is the record of the queue ``view`` shows: its latest launch is
        the one recorded (same runner pid)."""
        return view is not None and view.launch is not None and view.launch.pid == self.pid


def acks_path(fleet: Fleet, host: str) -> Path:
    """The host's launch-acknowledgements record in the fleet's state folder."""
    return _acks_file(journal_dir(fleet.path), host)


def _acks_file(directory: Path, host: str) -> Path:
    return directory / f"{host}.launch-acks.json"


def record_launch(fleet: Fleet, plan: LaunchPlan, result: LaunchResult) -> str:
    """Record what ``plan`` (now launched as ``result``) acknowledged for this launch;
    the host's ``preflight_ack`` stays in the fleet file. Returns "" or, when the record
    could not be written, why (the launch stands; its retries will ask again)."""
    report = plan.preflight
    acks = []
    for name in plan.acks:
        check = report.check(name) if report is not None else None
        acks.append([name, printable(check.detail if check else "", DETAIL_CHARS)])
    data = {
        "version": RECORD_VERSION, "host": plan.host, "pid": result.pid, "at": time.time(),
        "acks": acks,
    }  # fmt: skip
    path = acks_path(fleet, plan.host)
    try:
        atomic_write_json(path, data)
    except OSError as exc:
        return (
            f"could not record the launch's acknowledgements in {path} ({exc.strerror}): "
            "a retry will ask for them again"
        )
    return ""


def load_launch_acks(fleet: Fleet, host: str) -> LaunchAcks | None:
    """The host's last recorded launch acknowledgements; None when there is none or the
    record does not read as one (nothing is then acknowledged on its account)."""
    return load_launch_acks_in(journal_dir(fleet.path), host)


def load_launch_acks_in(directory: Path, host: str) -> LaunchAcks | None:
    """``load_launch_acks`` from the fleet's state folder ``directory`` (the journal's)."""
    try:
        data = json.loads(_acks_file(directory, host).read_text(encoding="utf-8"))
        if data.get("version") != RECORD_VERSION or data.get("host") != host:
            return None
        acks = tuple(
            (str(name), printable(str(detail), DETAIL_CHARS))
            for name, detail in data["acks"]
            if name in PREFLIGHT_CHECKS  # only a check's name acknowledges anything
        )
        return LaunchAcks(host, int(data["pid"]), acks, float(data["at"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def acks_line(acks: tuple[tuple[str, str], ...]) -> str:
    """``acknowledged at launch: gpu (no GPU: …), driver (…)`` (printable)."""
    shown = ", ".join(f"{name} ({detail})" if detail else name for name, detail in acks)
    return f"acknowledged at launch: {shown}"


async def launch_recorded(
    fleet: Fleet, backend: Launchable, plan: LaunchPlan, transport: Transport
) -> tuple[LaunchResult, str]:
    """The host's backend launches ``plan``, then its acknowledgements are recorded
    (``record_launch``): the result and "" or why the record could not be written (the
    launch stands)."""
    result = await backend.launch(plan, transport)
    return result, record_launch(fleet, plan, result)
