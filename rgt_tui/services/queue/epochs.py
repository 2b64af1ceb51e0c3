"""Epochs that mean what the line says (U32): a host default must not silently override
the ``epochs`` a cell's own config declares.

A queue line without epochs, under a run template with a bare ``{epochs}``, passes the
host's default. Where that cell's config file (read on the box: it is the file the
command will read) declares ``epochs: 50`` and the default is 20, the flag silently
wins; the launch plan then warns, naming the cell, both values, the file and line, and
the two fixes. One round trip reads every such config (``scripts/cfg_epochs.sh``): only
the first ``MAX_BYTES`` of each regular file, at most ``MAX_FILES`` files, the matching
lines cut short — the box's answer is bounded and parsed as hostile text.
"""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Sequence
from dataclasses import dataclass

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_file import QueueCell, template_parts
from rgt_tui.domain.text import is_digits
from rgt_tui.services.box_script import run_box_script, script_text
from rgt_tui.transport import Transport

MAX_BYTES = 256 << 10  # of each config file read on the box
MAX_FILES = 100  # config files read for one plan
MAX_OUTPUT = 256 << 10  # the box's whole answer (3 lines of 200 bytes a file fit well)
TIMEOUT_S = 30.0

# The value of an epochs key on one line the box returned: ``epochs: 50``, ``epochs = 50``,
# ``"epochs": 50``, ``epochs=50`` (a quoted or commented value too).
_VALUE = re.compile(r"""^\s*["']?epochs["']?\s*[:=]\s*["']?(\d{1,9})\b""")
# The stretch of the template that carries {epochs}, flag included: ``--epochs {epochs}``.
_FLAG = re.compile(r"(?:-{1,2}[\w.-]+[ =])?\S*\{epochs\}\S*")


@dataclass(frozen=True)
class Declared:
    """An epochs value a config file declares, and where."""

    value: int
    line: int


def default_fills(template: str, cell: QueueCell) -> bool:
    """Whether the cell's command gets the host's default epochs: the line gives none and
    the template has a bare (not bracketed) ``{epochs}``."""
    if cell.epochs_given:
        return False
    return any(
        field == "epochs"
        for part in template_parts(template)
        if not part.optional
        for _, field, _, _ in string.Formatter().parse(part.text)
    )


async def epochs_warnings(
    host: HostConfig,
    cells: Sequence[tuple[int, QueueCell]],
    transport: Transport,
    workdir: str,
) -> list[str]:
    """Warnings for the cells (``(index, cell)``) whose host default overrides an epochs
    their config declares; a config that cannot be read is a note, never an error.
    ``workdir`` is the host's workdir resolved on the box (relative cfgs start there)."""
    if host.run is None:
        return []
    checked = [(i, c) for i, c in cells if default_fills(host.run, c)]
    if not checked:
        return []
    paths = list(dict.fromkeys(c.cfg for _, c in checked))
    notes = []
    if len(paths) > MAX_FILES:
        notes.append(
            f"{len(paths) - MAX_FILES} more config files were not read to check their "
            f"epochs (at most {MAX_FILES} are read for one plan)"
        )
        paths = paths[:MAX_FILES]
    try:
        found, states = await _read_declared(transport, workdir, paths)
    except TransportError as exc:
        why = exc.message
        return [
            f"could not read the cells' config files on {host.name} to check their epochs: {why}"
        ]
    flag = _flag(host.run)
    warnings = []
    for index, cell in checked:
        state = states.get(cell.cfg)
        if state in ("special", "unreadable"):
            what = "is not a regular file" if state == "special" else "cannot be read"
            notes.append(
                f"cell {index} {cell.name}: {cell.cfg} {what} on {host.name}, so its epochs "
                "could not be checked"
            )
            continue
        declared = [d for d in found.get(cell.cfg, ()) if d.value != cell.epochs]
        if declared:
            warnings.append(_warning(index, cell, declared[0], flag))
    return warnings + notes


def _warning(index: int, cell: QueueCell, declared: Declared, flag: str) -> str:
    passed = flag.replace("{epochs}", str(cell.epochs))
    line = f"{shlex.quote(cell.cfg)} {shlex.quote(cell.task)} {declared.value}"
    return (
        f"cell {index} {cell.name}: the host's default epochs {cell.epochs} ({passed}) "
        f"overrides epochs: {declared.value} in {cell.cfg} (line {declared.line}) — give the "
        f"line its epochs ({line}), or make the flag optional in the run template: [{flag}]"
    )


def _flag(template: str) -> str:
    """``--epochs {epochs}``: how the template passes epochs (for the bracket advice)."""
    match = _FLAG.search(template)
    return match.group() if match else "{epochs}"


async def _read_declared(
    transport: Transport, workdir: str, paths: list[str]
) -> tuple[dict[str, list[Declared]], dict[str, str]]:
    """Per config path, the epochs it declares and its state (ok, missing, special, ...)."""
    await transport.connect()
    result = await run_box_script(
        transport,
        script_text("cfg_epochs.sh"),
        "cfg_epochs",
        workdir,
        MAX_BYTES,
        input="".join(p + "\n" for p in paths),
        timeout=TIMEOUT_S,
        max_output=MAX_OUTPUT,
    )
    found: dict[str, list[Declared]] = {}
    states: dict[str, str] = {}
    for text in result.stdout.splitlines():
        kind, _, rest = text.partition("\t")
        number, _, value = rest.partition("\t")
        if not is_digits(number) or int(number) >= len(paths):
            continue
        path = paths[int(number)]
        if kind == "file":
            states[path] = value
        elif kind == "epochs":
            where, _, line = value.partition(":")
            match = _VALUE.match(line)
            if is_digits(where) and match:
                found.setdefault(path, []).append(Declared(int(match.group(1)), int(where)))
    return found, states
