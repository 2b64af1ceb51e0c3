"""The checkpoints in given cell folders on the box, now: what a retry would set aside.

A retry renames a cell's ``{out}`` aside, so the run starts over without the checkpoint
a relaunch would resume from (``services.queue.control``); its dialog says so when there
is one. The files are found by the disk audit's own walk (``disk_ctl.sh audit``, its
``cell`` records: ``*.pt``, ``*.pth``, ``*.ckpt``, ``*.safetensors``, bounded by a
timeout, on one file system, no link followed), and counted as checkpoints by
``domain.checkpoints`` (torch.save's ``*.tmp`` leftovers are not).
"""

from __future__ import annotations

from collections.abc import Sequence

from rgt_tui.domain.checkpoints import is_checkpoint
from rgt_tui.services.disk.audit import disk_refusal, run_disk_ctl
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
