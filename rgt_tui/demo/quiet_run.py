"""The demo's one box that needs the user: a training run whose log goes quiet.

``rgt-tui demo`` launches box1's queue as it starts. Its first cell is a real training
run (the demo workload, ``train.py``) with one very long epoch: it prints its start
lines, then nothing until the epoch ends — over an hour later — while it writes a
checkpoint every few seconds. That is U43's "frozen log": the run is alive and the
reflex is to kill it. Nothing is staged: the telemetry agent finds the running cell
from the queue's records on the box and the ``log.silent`` rule fires on what it sees,
as it would on a rented box. The demo's fleet file sets a short ``log_silent_minutes``
(a real threshold, written in the file) so the alert shows within about a minute.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from pathlib import Path

from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.demo.workload_setup import DEMO_CELLS, DemoCell, install_workload
from rgt_tui.domain.config import Fleet
from rgt_tui.domain.errors import TransportError
from rgt_tui.services.queue.launch import LaunchResult, QueueError, launch, plan_launch
from rgt_tui.transport import transport_for

log = logging.getLogger("rgt_tui.demo")

QUIET_BOX = "box1"
# 100 000 steps in one epoch, 0.05 s each: the epoch line comes after ~1.5 h; a
# checkpoint every 100 steps (~5 s).
QUIET_CELL = DemoCell(
    "long_epoch",
    "reconstruction",
    1,
    {"steps_per_epoch": 100_000, "checkpoint_every": 100, "step_sleep_s": 0.05},
)
# Minutes of log silence before log.silent fires (the default is 10).
DEMO_LOG_SILENT_MINUTES = 0.5


def prepare_quiet_box(loopback: LoopbackFleet) -> list[str]:
    """Give box1 the long cell first in its queue and write the demo's threshold into
    the fleet file; returns box1's cell names in queue order. Call after ``start()``."""
    assert loopback.queue_dir is not None, "the demo fleet is started with workload=True"
    box = loopback.box(QUIET_BOX)
    names = install_workload(
        box.root, box.name, loopback.queue_dir / f"{box.name}.txt", (QUIET_CELL, *DEMO_CELLS)
    )
    hosts = loopback.hosts_file.read_text(encoding="utf-8")
    loopback.hosts_file.write_text(
        "# The demo's threshold: short, so box1's quiet cell is flagged within a minute.\n"
        "[fleet.thresholds]\n"
        f"log_silent_minutes = {DEMO_LOG_SILENT_MINUTES}\n\n" + hosts,
        encoding="utf-8",
    )
    return names


async def launch_quiet_run(fleet: Fleet) -> LaunchResult | None:
    """Launch box1's queue through the product's own launch service; None (logged) when
    it cannot start — the demo then runs without it."""
    host = fleet.host(QUIET_BOX)
    transport = transport_for(host)
    try:
        plan = await plan_launch(fleet, host, transport)
        if not plan.ok:
            log.warning("demo: box1's queue was not launched: %s", "; ".join(plan.problems))
            return None
        return await launch(plan, transport)
    except (QueueError, TransportError) as exc:
        log.warning("demo: box1's queue was not launched: %s", exc)
        return None
    finally:
        await transport.close()


def stop_quiet_run(result: LaunchResult | None) -> None:
    """End a run the demo started with ``nohup`` (its runner leads its own process group
    under setsid); a tmux run ends with the demo's tmux server."""
    if result is None or result.detach != "nohup":
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(result.pid, signal.SIGTERM)


def quiet_cell_dir(loopback: LoopbackFleet) -> Path:
    """Where the quiet cell writes its checkpoints (its ``{out}``)."""
    return loopback.box(QUIET_BOX).root / "results" / f"{QUIET_BOX}_{QUIET_CELL.suffix}"
