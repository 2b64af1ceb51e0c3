"""Whether an existing file named as a new host's queue reads as one (``rgt-tui add`` and
the add screen; issue 43's launch keys).

A file named by a slip of the completion — a training script, a config, a checkpoint, an
SSH key — was written into the fleet file and refused only at the first launch. Refused
here, with its first problem's line: a file that does not parse as a queue (a launch
refuses it; a key's lines are never shown: ``read_queue_file``), one whose lines read as a
YAML mapping (``lr: 0.001``), and another host's queue file (every cell would run on
both); and by its name, made or not, a config's, a script's or a checkpoint's. Its configs are not looked for: where they are
depends on the run template (``cd src && …``), asked after the queue, on ``~``, and on
what the box makes itself — launch and ``queue check`` say it with all of that (review
h494 #2: a check here refused real queues), so ``requirements.txt``, which parses, is
left to them.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from rgt_tui.domain.config import Fleet
from rgt_tui.services.fleet.append import AddRefused
from rgt_tui.services.queue.check import display_path, read_queue_file

# A queue file is a few lines of text; anything longer is another file named by mistake.
MAX_QUEUE_BYTES = 1 << 20
FORMAT = "one cell per line: <config> <task> [epochs]"
# Files a queue file is not, by their name: a config or a script named by a slip parses
# as queue lines (`lr: 0.001` is a config `lr:` and a task), and was then held back from
# every sync, which removed it from the boxes (h553 #2).
NOT_A_QUEUE = {
    ".yaml": "a config", ".yml": "a config", ".json": "a config", ".toml": "a TOML file",
    ".cfg": "a config", ".ini": "a config", ".py": "a Python script", ".sh": "a shell script",
    ".ipynb": "a notebook", ".pt": "a checkpoint", ".pth": "a checkpoint",
    ".safetensors": "a checkpoint", ".ckpt": "a checkpoint",
}  # fmt: skip


def fleet_queues(fleet: Fleet | None) -> dict[Path, str]:
    """Each queue file the fleet's hosts name (resolved) → the host naming it."""
    if fleet is None:
        return {}
    return {h.queue.resolve(): h.name for h in fleet.hosts if h.queue is not None}


def refuse_unfit_queue(value: str, where: Path, *, others: Mapping[Path, str]) -> None:
    """AddRefused (``field`` queue) when the existing file ``where`` (``value`` as typed)
    does not read as this host's queue (see the module docstring); a missing or
    unreadable file is let through (``create_queue_file`` offers one; launch says why),
    unless its name is a config's or a script's (it would be made one: h555 #3)."""
    # By its name, made or not: `queue check` reads such a file's lines as cells, so the
    # fix is another name, not that check (h555 #3: it named no line).
    kind = NOT_A_QUEUE.get(where.suffix.lower())
    if kind is not None:
        raise AddRefused(
            f"queue: {value} is {kind} by its name, not a queue file (a list of configs to run)",
            f"name your queue file ({FORMAT}), such as queues/HOST.txt; `none`: no queue yet",
            field="queue",
        )
    try:
        size = where.stat().st_size if where.is_file() else None
    except OSError:
        return
    if size is None:
        return
    shown = shlex.quote(display_path(where))
    fix = f"fix it (rgt-tui queue check {shown} names every line) or name your queue file ({FORMAT}); `none`: no queue yet"
    owner = others.get(where.resolve())
    if owner is not None:
        raise AddRefused(
            f"queue: {value} is {owner}'s queue file already: every cell of it would run on both",
            f"give this host its own queue file ({FORMAT})",
            field="queue",
        )
    if size > MAX_QUEUE_BYTES:
        raise AddRefused(
            f"queue: {value} is {size:,} bytes, not a queue file (a few lines of text)",
            fix,
            field="queue",
        )
    parsed = read_queue_file(where, host=None, default_epochs=1).parsed
    if parsed.problems:
        first = parsed.problems[0]
        more = len(parsed.problems) - 1
        raise AddRefused(
            f"queue: {value} does not read as a queue file: line {first.line or 1}: "
            f"{first.message}" + (f" (and {more} more)" if more else ""),
            fix,
            field="queue",
        )
    # Lines that parse, one of them a YAML key read as a config.
    keyed = next((c for c in parsed.cells if c.cfg.endswith(":")), None)
    if keyed is not None:  # `lr: 0.001`: a YAML mapping under another name
        raise AddRefused(
            f"queue: {value} does not read as a queue file: line {keyed.line}: "
            f"{keyed.cfg!r} is a YAML key, not a config path",
            f"name your queue file ({FORMAT}), such as queues/HOST.txt; `none`: no queue yet",
            field="queue",
        )
