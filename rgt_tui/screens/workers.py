"""The one way the UI runs per-host background work (STYLE.md's worker convention)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from textual.dom import DOMNode
from textual.worker import Worker


def run_host_worker(
    node: DOMNode, work: Coroutine[Any, Any, Any], kind: str, host: str
) -> Worker[Any]:
    """Run ``work`` as the only ``kind`` job for ``host``: a newer one cancels the older,
    and a failure is reported by the job itself rather than taking the app down."""
    return node.run_worker(
        work, name=f"{kind}:{host}", group=f"{kind}:{host}", exclusive=True, exit_on_error=False
    )
