"""Blocking checks of one local file: its SHA-256, and whether it loads as what it claims.

Every function here blocks (reads files, imports and runs torch); the verify service
calls them through ``asyncio.to_thread``. Torch checkpoints are only ever opened with
``weights_only=True``: a pickle that names a global outside torch's allow-list is reported
as unsafe and never executed (principle 3 asks for a load, not for running a stranger's
code). torch is optional: without it a checkpoint is "not verified", never "verified".
"""

from __future__ import annotations

import hashlib
import json
import pickle
import threading
import warnings
from pathlib import Path
from typing import Any

from rgt_tui.domain.artifacts import (
    CORRUPT,
    NOT_VERIFIED,
    UNSAFE,
    VERIFIED,
    check_safetensors_header,
)

HASH_BLOCK = 1 << 20
TORCH_MISSING = "not verified: torch not installed (pip install 'rgt-tui[torch]')"

_torch_lock = threading.Lock()
_torch_state: dict[str, Any] = {}


def sha256_file(path: Path, block: int = HASH_BLOCK) -> str:
    """SHA-256 hex of a file, read in blocks (hashlib releases the GIL on large updates)."""
    digest = hashlib.sha256()
    buf = bytearray(block)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            digest.update(view[:n])
    return digest.hexdigest()


def import_torch() -> Any | None:
    """The torch module, or None when it is not installed (imported once, thread-safely)."""
    with _torch_lock:
        if "module" not in _torch_state:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    import torch
            except ImportError:
                torch = None
            else:
                # torch warns about pickle protocols and numpy while loading; the verdict
                # is what matters here. (catch_warnings is not thread-safe, so set it once.)
                warnings.filterwarnings("ignore", category=UserWarning, module=r"torch(\.|$)")
            _torch_state["module"] = torch
        return _torch_state["module"]


def check_torch(path: Path) -> tuple[str, str]:
    """``(status, detail)`` for a torch checkpoint, loaded with ``weights_only=True``.

    ``mmap=True`` keeps a multi-gigabyte checkpoint from being read into memory; files in
    the old non-zip format cannot be mapped, so they are loaded again without it — still
    with ``weights_only=True``.
    """
    torch = import_torch()
    if torch is None:
        return NOT_VERIFIED, TORCH_MISSING
    try:
        try:
            obj = torch.load(str(path), map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc):
                raise
            obj = torch.load(str(path), map_location="cpu", weights_only=True, mmap=False)
        except TypeError as exc:
            if "mmap" not in str(exc):  # torch < 2.1 has no mmap argument
                raise
            obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        text = str(exc)
        if "weights only" in text.lower() or "weights_only" in text:
            return UNSAFE, "needs arbitrary code to load; not executed: " + _unsafe_reason(text)
        return CORRUPT, _first_line(exc)
    except MemoryError:
        return NOT_VERIFIED, "not verified: not enough memory to load it here"
    except Exception as exc:  # torch raises many types for a damaged file; all mean corrupt
        return CORRUPT, _first_line(exc)
    tensors, numel = _count_tensors(obj, torch)
    return VERIFIED, f"loaded with torch (weights_only): {tensors} tensors, {numel:,} values"


def _unsafe_reason(text: str) -> str:
    """The line of torch's long message that names the refused global."""
    for line in text.splitlines():
        if "GLOBAL" in line or "Unsupported" in line:
            return line.strip()
    return text.strip().splitlines()[0] if text.strip() else "refused by weights_only"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else 'no message'}"


def _count_tensors(obj: Any, torch: Any, depth: int = 0) -> tuple[int, int]:
    """(tensors, values) in a loaded checkpoint, walking dicts and sequences."""
    if isinstance(obj, torch.Tensor):
        return 1, obj.numel()
    if depth > 20:
        return 0, 0
    items: Any = ()
    if isinstance(obj, dict):
        items = obj.values()
    elif isinstance(obj, (list, tuple)):
        items = obj
    count = numel = 0
    for item in items:
        c, n = _count_tensors(item, torch, depth + 1)
        count, numel = count + c, numel + n
    return count, numel


def check_safetensors(path: Path, size: int) -> tuple[str, str]:
    """``(status, detail)`` for a safetensors file, from its header and the file size."""
    with open(path, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else 0
        header = head + (f.read(n) if 0 < n <= min(size, 100_000_000) else b"")
    problem = check_safetensors_header(header, size)
    if problem:
        return problem
    meta = json.loads(header[8:].decode("utf-8"))
    tensors = sum(1 for k in meta if k != "__metadata__")
    return VERIFIED, f"safetensors header and ranges consistent: {tensors} tensors"


def check_json(path: Path) -> tuple[str, str]:
    """``(status, detail)`` for a JSON document."""
    try:
        with open(path, encoding="utf-8") as f:
            json.load(f)
    except (ValueError, UnicodeDecodeError) as exc:
        return CORRUPT, f"invalid JSON: {exc}"
    return VERIFIED, "parsed as JSON"


def check_jsonl(path: Path) -> tuple[str, str]:
    """``(status, detail)`` for JSON lines: every non-blank line must parse."""
    records = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:
                return CORRUPT, f"invalid JSON on line {number}: {exc}"
            records += 1
    return VERIFIED, f"parsed {records} JSON lines"
