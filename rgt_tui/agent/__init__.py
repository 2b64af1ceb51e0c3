"""The on-box telemetry agent and how to launch it.

``probe.py`` is a stdlib-only script that is never imported on the box: the transport
runs ``agent_command(...)`` (``python3 -u - ARGS``) and writes ``agent_source()`` to the
channel's stdin. It prints one JSON sample per line; ``rgt_tui.domain.snapshot`` reads them.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from importlib import resources

AGENT_FILE = "probe.py"


def agent_source() -> str:
    """Return the text of the agent script, as sent over the channel's stdin."""
    try:
        return resources.files(__package__).joinpath(AGENT_FILE).read_text(encoding="utf-8")
    except (AttributeError, FileNotFoundError, TypeError):
        # A zipped or unusual install without the resources API: read beside this module.
        from pathlib import Path

        return (Path(__file__).parent / AGENT_FILE).read_text(encoding="utf-8")


def agent_command(
    mounts: Iterable[str],
    interval: float,
    count: int = 0,
    extra_args: Iterable[str] = (),
    *,
    out_root: str | None = None,
) -> str:
    """Build the remote shell command that runs the agent from stdin.

    ``out_root``: the host's durable_dir, under which each queue cell writes its own
    ``<out_root>/<cell>`` (the run template's ``{out}``): the agent watches the running
    cell's there. Every word is ``shlex.quote``d: paths come from hosts.toml and go
    through the remote shell, so a space or ``$(...)`` in one must stay a literal path.
    """
    words = ["python3", "-u", "-", "--interval", repr(float(interval)), "--count", str(int(count))]
    for mount in mounts:
        words += ["--mount", str(mount)]
    if out_root:
        words += ["--out-root", str(out_root)]
    words += [str(arg) for arg in extra_args]
    return " ".join(shlex.quote(word) for word in words)
