"""The on-box programs and how to launch them.

The telemetry agent (``probe/``) and the pull's manifest scan (``manifest.py``, with
``box_id.py`` and ``secret_paths.py``, which both programs share) are stdlib-only modules
never imported on a box: ``bundle.py`` joins each program into one source, the transport
runs ``agent_command(...)`` (``python3 -u - ARGS``) and writes ``agent_source()`` to the
channel's stdin. The agent prints one JSON sample per line; ``rgt_tui.domain.snapshot``
reads them.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from rgt_tui.agent.bundle import MANIFEST_ENTRY, PROBE_ENTRY, bundled_source


def agent_source() -> str:
    """Return the telemetry agent's source, as sent over the channel's stdin (the bundle
    of ``probe/``, built once per process)."""
    return bundled_source(PROBE_ENTRY)


def manifest_source() -> str:
    """Return the manifest scan's source, as sent over the channel's stdin."""
    return bundled_source(MANIFEST_ENTRY)


def agent_command(
    mounts: Iterable[str],
    interval: float,
    count: int = 0,
    extra_args: Iterable[str] = (),
    *,
    out_root: str | None = None,
    tracker_patterns: Iterable[str] = (),
) -> str:
    """Build the remote shell command that runs the agent from stdin.

    ``out_root``: the host's durable_dir, under which each queue cell writes its own
    ``<out_root>/<cell>`` (the run template's ``{out}``): the agent watches the running
    cell's there. Every word is ``shlex.quote``d: paths come from hosts.toml and go
    through the remote shell, so a space or ``$(...)`` in one must stay a literal path.
    ``tracker_patterns``: the host's tracker run-line regexes (U35); the agent reports
    whether the running cell's log printed one.
    """
    words = ["python3", "-u", "-", "--interval", repr(float(interval)), "--count", str(int(count))]
    for mount in mounts:
        words += ["--mount", str(mount)]
    if out_root:
        words += ["--out-root", str(out_root)]
    for pattern in tracker_patterns:
        words += ["--tracker-pattern", str(pattern)]
    words += [str(arg) for arg in extra_args]
    return " ".join(shlex.quote(word) for word in words)
