"""Which of a cell's pulled files is a checkpoint, which is the newest, and its step.

A resume move (``services.queue.resume``) pushes a cell's pulled-and-verified files to
another box; the run's load-latest-on-start (``docs/spot.md``) then resumes from the
newest checkpoint among them. This module decides, from names and records alone, what
counts as a checkpoint and what step it holds:

- a checkpoint is a file a loader knows as one (torch, safetensors), or one whose name
  says so (``ckpt``, ``checkpoint``), never an unfinished write (``*.tmp``, ``*.part``) or
  a JSON/text file (a sidecar, metrics, a log);
- its step comes from its name (``step-1200.pt``, ``ckpt_iter800``, ``epoch3.ckpt``) or,
  else, from a sidecar beside it (``<stem>.json`` holding ``{"step": N}``) — trusted only
  when the sidecar names the checkpoint's SHA-256 and it is the one verified here, so a
  sidecar pulled from another write than its checkpoint says nothing.

Pure: names, sizes and hashes in, choices out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from rgt_tui.domain.artifacts import is_leftover, kind_of

_NOT_CHECKPOINT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".txt", ".log", ".csv", ".md", ".yaml")
_NAMED = re.compile(r"ckpt|checkpoint", re.IGNORECASE)
# "step-1200", "iter_800", "it800", "epoch3", "ep12", "checkpoint-500", "global_step1200".
_STEP = re.compile(
    r"(?:global_step|step|iter|it|epoch|ep|ckpt|checkpoint)[-_=]?(\d{1,12})(?!\d)", re.IGNORECASE
)
SIDECAR_SUFFIX = ".json"


@dataclass(frozen=True)
class CellFile:
    """One pulled file of a cell: where it is here and in the cell's ``{out}``, what the
    manifest says of it, and whether it may be pushed (``why``: why not)."""

    local: str  # relative to <results_dir>/<host>/
    rel: str  # relative to the cell's {out}
    size: int
    mtime: float  # the box's clock, from the manifest
    sha256: str
    why: str = ""  # "" = pulled, verified and unchanged here

    @property
    def good(self) -> bool:
        return not self.why


def is_checkpoint(rel: str) -> bool:
    """Whether ``rel`` names a checkpoint (see the module docstring)."""
    name = PurePosixPath(rel).name
    lower = name.lower()
    if is_leftover(lower) or lower.endswith(_NOT_CHECKPOINT_SUFFIXES):
        return False
    return kind_of(lower) in ("torch", "safetensors") or bool(_NAMED.search(lower))


def step_in_name(rel: str) -> int | None:
    """The step a checkpoint's file name carries (the last number a step word gives)."""
    found = _STEP.findall(PurePosixPath(rel).name)
    return int(found[-1]) if found else None


def recency(mtime: float, rel: str) -> tuple[float, int, str]:
    """How two checkpoints order, newest last: by the box's mtime, then (a tie: files
    touched together, copied with one mtime) by the step their names carry, the file's
    own or, failing that, its step folder's (``checkpoint-500/model.safetensors``), then
    by name. Names alone put ``step-9.pt`` after ``step-15.pt`` (h541 #2). Only a step
    folder counts, never another folder on the way (a cell named ``sweep_ep50`` is no
    step 50: review h544 #5), so the order is one whatever folder ``rel`` starts from."""
    path = PurePosixPath(rel)
    step = step_in_name(path.name)
    if step is None and _STEP.fullmatch(path.parent.name):
        step = step_in_name(path.parent.name)
    return (mtime, -1 if step is None else step, rel)


def sidecar_of(rel: str) -> str:
    """Where a checkpoint's sidecar would be: ``<dir>/<stem>.json``."""
    p = PurePosixPath(rel)
    return str(p.with_name(p.stem + SIDECAR_SUFFIX))


def step_folders_left_out(files: list[CellFile]) -> list[CellFile]:
    """``files`` with every file of a step folder (``checkpoint-500/``: its name a step
    word and number) left out when a file right in it is not pushed: such a folder is one
    checkpoint (a Hugging Face Trainer's weights, optimizer, scheduler and trainer_state,
    whatever their names), and a target given its good files without its damaged weights
    resumes from a folder it cannot load (review h524 #6)."""
    broken: dict[str, str] = {}
    for f in files:
        folder, _, name = f.rel.rpartition("/")
        # Its whole name a step word and number (``checkpoint-500``, ``epoch3``), not a
        # run folder whose name merely holds one (``run-ckpt1``: review h526 #3).
        if not f.good and _STEP.fullmatch(folder.rpartition("/")[2]):
            broken.setdefault(folder, name)
    if not broken:
        return files
    out = []
    for f in files:
        folder = next((d for d in broken if f.rel.startswith(d + "/")), None)
        if f.good and folder is not None:
            f = replace(
                f,
                why=f"in {folder}/, whose {broken[folder]} is not pushed: a checkpoint "
                "folder goes whole or not at all",
            )
        out.append(f)
    return out


def unpushed_sidecars_left_out(files: list[CellFile]) -> list[CellFile]:
    """``files`` with the sidecar of each checkpoint that is not pushed (damaged,
    changed, not verified) left out too: beside the checkpoints pushed it would name a
    step whose file is not there, and a script that resumes from its newest sidecar
    would look for it (h523 #2). A checkpoint pushed as its earlier copy keeps its name,
    so its sidecar is not left out here (``resume._sidecar_left_out`` checks that one)."""
    pushed = {f.rel for f in files if f.good and is_checkpoint(f.rel)}
    kept = {sidecar_of(rel) for rel in pushed}  # ckpt.pt and ckpt.safetensors share one
    unpushed = {
        sidecar_of(f.rel): f.rel
        for f in files
        if not f.good and is_checkpoint(f.rel) and f.rel not in pushed
    }
    unpushed = {side: rel for side, rel in unpushed.items() if side not in kept}
    return [
        replace(f, why=f"the sidecar of {unpushed[f.rel]}, which is not pushed")
        if f.good and f.rel in unpushed
        else f
        for f in files
    ]


def sidecar_step(text: str, checkpoint_sha256: str) -> int | None:
    """The step a sidecar's JSON gives, only when it names ``checkpoint_sha256`` (so it
    was written for this very checkpoint); None otherwise or when it is not such JSON."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("sha256") != checkpoint_sha256:
        return None
    step = data.get("step")
    return step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None


def newest_checkpoint(files: Iterable[CellFile]) -> CellFile | None:
    """The newest good checkpoint (``recency``)."""
    good = [f for f in files if f.good and is_checkpoint(f.rel)]
    return max(good, key=lambda f: recency(f.mtime, f.rel), default=None)


def damaged_checkpoints(files: Iterable[CellFile]) -> list[CellFile]:
    """Checkpoints that must not be pushed (each has its ``why``)."""
    return [f for f in files if not f.good and is_checkpoint(f.rel)]


def newer_left_out(files: Iterable[CellFile], chosen: CellFile | None) -> list[CellFile]:
    """Checkpoints that must not be pushed and are newer than ``chosen`` (all of them when
    there is none), newest first: the steps a resume from ``chosen`` does not have."""
    after = recency(chosen.mtime, chosen.rel) if chosen is not None else None
    left = [
        f for f in damaged_checkpoints(files) if after is None or recency(f.mtime, f.rel) > after
    ]
    return sorted(left, key=lambda f: recency(f.mtime, f.rel), reverse=True)


def left_out_words(f: CellFile) -> str:
    """``step-22.pt (verify found it corrupt)``: a checkpoint left out and why, short."""
    return f"{f.rel} ({f.why.split(': ', 1)[0].split(' — ', 1)[0]})"
