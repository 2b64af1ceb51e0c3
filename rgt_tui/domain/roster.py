"""Roster reconciliation: does every queue cell have results in the pulled copy?

A cell writes into its own output directory, ``{out}`` = ``<durable_dir>/<name>``
(``domain.queue_file.render_command``). In the pulled copy that is the pull root holding
``durable_dir`` (its local label) followed by the part of ``durable_dir`` below that
root and the cell name. When no pull root holds ``durable_dir`` (custom ``pull`` roots),
any folder named after the cell counts. A cell is present only when that folder holds at
least one artifact that verified by loading (torch, safetensors, JSON) — a log alone or
a file checked by hash only does not show the run produced results (principle 3).

Pure: manifest and check results in, verdict out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rgt_tui.domain.manifest import Manifest
from rgt_tui.domain.units import plural


@dataclass(frozen=True)
class RosterCheck:
    """Which cells have verified results, and why the others do not."""

    expected: tuple[str, ...]
    present: tuple[str, ...]
    missing: tuple[tuple[str, str], ...]  # (cell name, why)

    @property
    def complete(self) -> bool:
        return not self.missing


def output_prefixes(manifest: Manifest, durable_dir: str, name: str) -> tuple[str, ...]:
    """Local folder(s), relative to the host folder, where cell ``name``'s outputs land."""
    durable = durable_dir.rstrip("/") or "/"
    found = []
    for root in manifest.roots:
        for base in {root.given.rstrip("/") or "/", root.path.rstrip("/") or "/"}:
            if durable == base:
                below = ""
            elif durable.startswith(base.rstrip("/") + "/"):
                below = durable[len(base.rstrip("/")) + 1 :]
            else:
                continue
            inner = f"{below}/{name}" if below else name
            found.append(manifest.local_relpath(root.index, inner))
    return tuple(dict.fromkeys(found))


def in_outputs(path: str, name: str, prefixes: Sequence[str]) -> bool:
    """Whether local ``path`` is one of cell ``name``'s outputs: under one of its output
    folders (``output_prefixes``), or, with none known, in a folder named after the cell."""
    if prefixes:
        return any(path.startswith(pre + "/") for pre in prefixes)
    return name in path.split("/")[:-1]


def reconcile(
    cells: Sequence[str],
    manifest: Manifest,
    durable_dir: str,
    statuses: Mapping[str, str],
) -> RosterCheck:
    """Check each cell against the pulled files (``statuses``: local path → check status)."""
    present, missing = [], []
    paths = list(statuses)
    for name in dict.fromkeys(cells):
        prefixes = output_prefixes(manifest, durable_dir, name)
        inside = [p for p in paths if in_outputs(p, name, prefixes)]
        where = " or ".join(prefixes) if prefixes else f"a folder named {name}"
        verified = [p for p in inside if statuses[p] == "verified"]
        if verified:
            present.append(name)
        elif not inside:
            missing.append((name, f"no output directory ({where}) in the pulled copy"))
        else:
            missing.append(
                (
                    name,
                    f"{where} holds {plural(len(inside), 'file')} but none loaded as an artifact",
                )
            )
    return RosterCheck(tuple(dict.fromkeys(cells)), tuple(present), tuple(missing))
