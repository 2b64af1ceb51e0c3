"""A cell's ``skip`` record on its box (queue move; ``services.queue.control`` re-exports
it). Apart from control because launch and append record skips too
(``services.queue.moved_skips``) and control's retry launches: one module below both."""

from __future__ import annotations

from rgt_tui.services.box_ctl import QueueError, refusal, run_ctl
from rgt_tui.transport import Transport

REASON_CHARS = 200  # a skip reason: one line, cut (the box cuts it again)


async def skip_cell(transport: Transport, host: str, name: str, reason: str) -> None:
    """Record ``skip <ts> <reason>`` in cell ``name``'s state on the box: no runner runs it
    there (it is logged as skipped and the queue goes on); views show it skipped, or
    ``moved`` when the reason starts so.

    The reason is one line, cut to 200 characters. QueueError (code ``running``) when the
    cell runs now on that box, or whatever else the box refused.
    """
    line = " ".join(reason.split())[:REASON_CHARS]
    await transport.connect()
    result = await run_ctl(transport, "skip", name, input=line + "\n")
    error = refusal(host, result)
    if error is not None:
        raise error
    if not result.stdout.startswith("skipped\t"):
        raise QueueError(
            host, f"the box did not confirm the skip of {name}: {result.stdout.strip()!r}"
        )
