"""Blocking checks of one local file done in this process: its SHA-256, safetensors headers.

These cost memory bounded by the file's format (a hash block; a safetensors header is at
most 100 MB), so they need no separate process. Checkpoints and JSON, whose parsing grows
with what the file says, are loaded by ``verify_loader`` in a process with limits.
The verify service calls these through ``asyncio.to_thread``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rgt_tui.domain.artifacts import VERIFIED, check_safetensors_header

HASH_BLOCK = 1 << 20


def sha256_file(path: Path, block: int = HASH_BLOCK) -> str:
    """SHA-256 hex of a file, read in blocks (hashlib releases the GIL on large updates)."""
    digest = hashlib.sha256()
    buf = bytearray(block)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            digest.update(view[:n])
    return digest.hexdigest()


def check_safetensors(path: Path, size: int) -> tuple[str, str]:
    """``(status, detail)`` for a safetensors file, from its header and the file size."""
    with open(path, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else 0
        header = head + (f.read(n) if 0 < n <= min(size, 100_000_000) else b"")
    problem = check_safetensors_header(header, size)
    if problem:
        return problem
    meta = json.loads(header[8:].decode("utf-8"))  # parsed once already: it is sound
    tensors = sum(1 for k in meta if k != "__metadata__")
    return VERIFIED, f"safetensors header and ranges consistent: {tensors} tensors"
