"""One call of a box's control script: ``rgt_tui/scripts/queue_ctl.sh`` and its answers.

Every remote step of the queue (and of credentials, code sync, VRAM) goes through
``queue_ctl.sh``, sent whole as ``bash -c <script> queue_ctl VERB ARGS`` (arguments
shell-quoted; payloads on stdin, never on a command line) by the one box-script call
(``box_script``), which also reads its ``refused<TAB>CODE<TAB>DETAIL`` answer. The runner scripts ship inside the
package and are deployed under ``~/.rgt/bin/`` by content hash
(``run_queue.<sha256[:12]>.sh``), so a queue already running keeps reading the exact bytes
it started with (U2, principle 6).
"""

from __future__ import annotations

import hashlib

from rgt_tui.services.box_script import box_refusal, run_box_script, script_text
from rgt_tui.transport import CommandResult, Transport

BOX_ROOT = "~/.rgt"  # for messages; the scripts resolve it as $HOME/.rgt on the box
CTL_TIMEOUT_S = 60.0  # a launch waits up to 5 s for the runner; the rest is headroom


class QueueError(Exception):
    """A queue operation was refused or failed; ``str()`` names the host and the fix."""

    def __init__(self, host: str, message: str, *, code: str = "") -> None:
        self.host = host
        self.message = message
        self.code = code  # the box's refusal code (running, changed, …) when it refused
        super().__init__(f"{host}: {message}")


def deployed_name(name: str) -> str:
    """``run_queue.sh`` → ``run_queue.<sha256[:12]>.sh``: the name it is deployed under."""
    digest = hashlib.sha256(script_text(name).encode("utf-8")).hexdigest()[:12]
    stem, _, ext = name.rpartition(".")
    return f"{stem}.{digest}.{ext}"


async def run_ctl(
    transport: Transport, verb: str, *args: str | int, input: str | None = None
) -> CommandResult:
    """Run one verb of queue_ctl.sh on the box (TransportError when unreachable)."""
    script = script_text("queue_ctl.sh")
    return await run_box_script(
        transport, script, "queue_ctl", verb, *args, input=input, timeout=CTL_TIMEOUT_S
    )


def refusal(host: str, result: CommandResult) -> QueueError | None:
    """The box's ``refused<TAB>CODE<TAB>DETAIL`` answer as a QueueError, or an error for a
    failed command; None when the command succeeded."""
    refused = box_refusal(result, "the box's queue control", limit=None)
    return None if refused is None else QueueError(host, refused.message, code=refused.code)
