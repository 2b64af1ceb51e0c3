"""The checkpoints in given cell folders on the box, now: what a retry would set aside.

A retry renames a cell's ``{out}`` aside, so the run starts over without the checkpoint
a resume would go on from (``services.queue.control``); its dialog says so when there
is one. The files are found by the disk audit's own walk (``disk_ctl.sh audit``, its
``cell`` records: ``*.pt``, ``*.pth``, ``*.ckpt``, ``*.safetensors``, bounded by a
timeout, on one file system, no link followed), and counted as checkpoints by
``domain.checkpoints`` (torch.save's ``*.tmp`` leftovers are not).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace

from rgt_tui.domain.checkpoints import is_checkpoint
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_state import DONE
from rgt_tui.services.disk.audit import DiskError, disk_refusal, run_disk_ctl
from rgt_tui.services.queue.control import RetryPlan
from rgt_tui.services.queue.verified_checkpoint import failed_verify, newest_verified
from rgt_tui.transport.base import Transport

LOOK_SECONDS = 10  # each folder's walk on the box stops after this


async def checkpoints_in(
    host: str, transport: Transport, folders: Sequence[str], *, seconds: int = LOOK_SECONDS
) -> dict[str, tuple[str, ...]]:
    """Each of ``folders`` (absolute, as the box names them) that holds a checkpoint →
    its checkpoints' paths relative to it, newest first (the box's text: escape it to
    show it). A folder that is not there, or holds none, is left out. DiskError when the
    box refuses; TransportError when it does not answer."""
    if not folders:
        return {}
    payload = "".join(f"cell\t{folder}\0" for folder in folders)
    await transport.connect()
    result = await run_disk_ctl(
        transport, "audit", seconds, 1, 1, input=payload, timeout=seconds * len(folders) + 30
    )
    error = disk_refusal(host, result, "the checkpoint look")
    if error is not None:
        raise error
    return parse_checkpoints(result.stdout, folders)


async def with_checkpoints(
    plan: RetryPlan, fleet: Fleet, host: HostConfig, transport: Transport
) -> RetryPlan:
    """``plan`` with the checkpoints its cells' {out} folders hold now (a retry sets
    them aside; the dialog and ``rgt-tui queue retry`` say a resume would go on from
    them instead), and which of them the last verify here did not pass. A look the box
    refuses or does not answer leaves ``plan`` as it is: what the retry does is still
    said, only the checkpoint is not named."""
    outs = {out: c.name for c, out in zip(plan.cells, plan.outs, strict=True) if out != "-"}
    try:
        found = await checkpoints_in(host.name, transport, list(outs))
    except (DiskError, TransportError):
        return plan
    checkpoints = tuple((outs[o], files[0]) for o, files in found.items())
    failed = await asyncio.to_thread(_failed_verify, fleet, host, checkpoints)
    # A group is looked at on rank 0's box alone, and the worker a script saves from may
    # run on any box of it: none found there is no "no checkpoint" (h531 #6).
    looked = host.group is None or bool(checkpoints)
    return replace(plan, checkpoints=checkpoints, failed_verify=failed, checkpoints_looked=looked)


def _failed_verify(
    fleet: Fleet, host: HostConfig, checkpoints: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, str, str], ...]:
    """(cell, status, newest verified) for each checkpoint the last verify did not pass
    (``RetryPlan.failed_verify``). Reads the records."""
    failed = []
    for cell, rel in checkpoints:
        status = failed_verify(fleet, host, cell, rel)
        if status is not None:
            # This host's own: the advice names a copy "set aside here by a pull" (review
            # s45 #3), which the origin's is not.
            good = newest_verified(fleet, host, cell, resumed_from_origin=False)
            failed.append((cell, status, good.path if good is not None else ""))
    return tuple(failed)


def checkpoint_notes(
    plan: RetryPlan, resume: Callable[[str], str]
) -> list[tuple[str, str, str | None]]:
    """For each cell whose {out} holds a checkpoint: its name, what the plan does with the
    checkpoint, and what to do instead, if anything. A retry sets it aside and starts
    over; for a cell that did not finish, ``resume(name)`` says in the caller's words
    (the dialog's button, the command line) how to go on from it instead. A resume
    (``plan.resume``) goes on from it. A checkpoint the last verify here did not pass is
    named with its verdict and the newest one that did. The checkpoint's name is the
    box's text: escape it to show it."""
    cells = {c.name: c for c in plan.cells}
    failed = {name: (status, good) for name, status, good in plan.failed_verify}
    notes: list[tuple[str, str, str | None]] = []
    for name, checkpoint in plan.checkpoints:
        cell = cells.get(name)
        if cell is None:
            continue
        if name in failed:
            # A resume would load a file that does not load (hour s23b #6).
            status, good = failed[name]
            done = (
                "the resume would load it"
                if plan.resume
                else "a retry sets it aside and does not resume from it; a resume would load it"
            )
            warning = (
                f"Its {{out}} holds a checkpoint ({checkpoint}) that failed the last verify "
                f"here ({status}): {done}."
            )
            if good == checkpoint:  # the copy a pull set aside before the damaged one
                # came (verify's ``earlier``): the same name said twice read as the
                # damaged file (hour s24c #6).
                advice = (
                    f"Your earlier copy of {checkpoint}, set aside here by a pull, loads: a "
                    "move to another box resumes from it (rgt-tui queue move)."
                )
            elif good:
                advice = (
                    f"The newest checkpoint of it that verified here is {good}: a move to "
                    "another box resumes from that (rgt-tui queue move)."
                )
            else:
                advice = "No checkpoint of it verified here: starting over is what is left."
            notes.append((name, warning, advice))
            continue
        if plan.resume:
            notes.append(
                (
                    name,
                    f"It resumes from {checkpoint}, the newest checkpoint in its {{out}}, if its run loads its latest one.",
                    None,
                )
            )
            continue
        warning = (
            f"Its {{out}} holds a checkpoint ({checkpoint}): a retry sets it aside and starts over."
        )
        advice = None
        if cell.status != DONE:
            advice = (
                f"To resume from it instead: {resume(name)} — its {{out}} is kept as it "
                "is, and no done cell runs again."
            )
        notes.append((name, warning, advice))
    return notes


def parse_checkpoints(text: str, folders: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The audit's ``root`` and ``ckpt`` records as ``checkpoints_in`` returns them (pure)."""
    resolved: dict[int, str] = {}
    found: dict[int, list[tuple[float, str]]] = {}
    for rec in text.split("\0"):
        key, _, rest = rec.partition("\t")
        try:
            if key == "root":
                idx, _, path = rest.split("\t", 2)
                resolved[int(idx)] = path.rstrip("/")
            elif key == "ckpt":
                idx, mtime, _, _, _, path = rest.split("\t", 5)
                found.setdefault(int(idx), []).append((float(mtime), path))
        except ValueError:
            continue  # a garbled record from a strange box is dropped, never trusted
    out: dict[str, tuple[str, ...]] = {}
    for idx, files in found.items():
        root = resolved.get(idx)
        if root is None or not 0 <= idx < len(folders):
            continue
        rels = [
            path[len(root) + 1 :]
            for _, path in sorted(files, reverse=True)
            if path.startswith(root + "/") and is_checkpoint(path)
        ]
        if rels:
            out[folders[idx]] = tuple(rels)
    return out
