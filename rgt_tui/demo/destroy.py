"""The demo's stand-in for a provider's destroy: each demo box's fleet entry has a
``teardown`` command that leaves a file named after the box in ``destroy_dir``; the
demo stops that box as it appears, so it goes silent as a destroyed box does.

Without it every demo box was torn down by hand, and a box that still answers is not
destroyed (the TUI refuses the name typed again while its telemetry is connected): the
tour's last step could not be taken on a loopback box.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from pathlib import Path

from rgt_tui.demo.loopback import LoopbackFleet

POLL_S = 0.5
log = logging.getLogger(__name__)


def destroy_command(destroy_dir: Path, box: str) -> str:
    """The box's ``teardown`` command: a file named after it in ``destroy_dir``."""
    return f"touch {shlex.quote(str(destroy_dir / box))}"


async def stop_destroyed(loopback: LoopbackFleet, destroy_dir: Path) -> None:
    """Forever (cancel it): stop each box whose file its teardown command left."""
    stopped: set[str] = set()
    while True:
        for box in loopback.boxes:
            if box.name not in stopped and (destroy_dir / box.name).exists():
                stopped.add(box.name)
                try:
                    await box.stop()
                except Exception:  # one box's failure must not leave the others running
                    log.exception("demo: stopping %s for its teardown", box.name)
        await asyncio.sleep(POLL_S)
