"""One call of a box's control script: ``rgt_tui/scripts/queue_ctl.sh`` and its answers.

Every remote step of the queue (and of credentials, code sync, VRAM) goes through
``queue_ctl.sh``, sent whole as ``bash -c <script> queue_ctl VERB ARGS`` (arguments
shell-quoted; payloads on stdin, never on a command line); a refusal comes back as
``refused<TAB>CODE<TAB>DETAIL`` and is read here once. The runner scripts ship inside the
package and are deployed under ``~/.rgt/bin/`` by content hash
(``run_queue.<sha256[:12]>.sh``), so a queue already running keeps reading the exact bytes
it started with (U2, principle 6).
"""

from __future__ import annotations

import hashlib
import shlex

from rgt_tui.domain.text import printable
from rgt_tui.services.box_script import script_text
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
    command = " ".join(
        ["bash", "-c", shlex.quote(script_text("queue_ctl.sh")), "queue_ctl", verb]
        + [shlex.quote(str(a)) for a in args]
    )
    return await transport.run(command, input=input, timeout=CTL_TIMEOUT_S)


def refusal(host: str, result: CommandResult) -> QueueError | None:
    """The box's ``refused<TAB>CODE<TAB>DETAIL`` answer as a QueueError, or an error for a
    failed command; None when the command succeeded."""
    flood = result.overflow("the box's queue control")
    if flood is not None:  # cut short: its answer cannot be trusted
        return QueueError(host, flood)
    for line in result.stdout.splitlines():
        if line.startswith("refused\t"):
            _, code, detail = (line.split("\t", 2) + ["", ""])[:3]
            return QueueError(host, printable(detail, None), code=printable(code, 40))  # box text
    if result.exit_status != 0:
        err = result.stderr.strip().splitlines()
        return QueueError(
            host,
            f"the box's queue control exited with {result.exit_status}: "
            f"{printable(err[-1]) if err else 'no message'}",
        )
    return None
