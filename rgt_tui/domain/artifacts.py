"""What kind of artifact a pulled file is, and the pure parts of checking it.

``kind_of`` picks the check a file gets from its name; ``check_safetensors_header``
validates a safetensors header against the file's size without any dependency; the
status words are shared by the verify service, its JSON record and the teardown gate.
"""

from __future__ import annotations

import json
import math
from pathlib import PurePosixPath

TORCH_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin")
JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
LEFTOVER_SUFFIXES = (".tmp", ".part")

# Check outcomes. Only VERIFIED and HASH_ONLY are good; HASH_ONLY is shown as such.
VERIFIED = "verified"  # hash matches the manifest and the file loaded / parsed
HASH_ONLY = "hash-only"  # hash matches; no loader for this type
UNSAFE = "unsafe"  # loading would need arbitrary code (a pickle with foreign globals)
CORRUPT = "corrupt"  # does not load / parse, or its hash differs from the manifest
NOT_VERIFIED = "not-verified"  # could not be checked: no hash, no torch, over a limit...
MISSING = "missing"  # listed in the manifest, absent from the local copy
GOOD_STATUSES = (VERIFIED, HASH_ONLY)

# safetensors dtypes and their width in bits (sub-byte float types pack tightly).
SAFETENSORS_DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}  # fmt: skip
# The reference implementation refuses headers above 100 MB; a bigger one is garbage.
SAFETENSORS_MAX_HEADER = 100_000_000

ZIP_MAGIC = b"PK\x03\x04"


def kind_of(path: str, head: bytes = b"") -> str:
    """``torch``, ``safetensors``, ``json``, ``jsonl`` or ``other``.

    A ``.bin`` file is treated as torch only when it starts like one (a zip or a pickle):
    plenty of ``.bin`` files are raw data, and calling those corrupt would be a false alarm.
    A file of any other name is torch when ``head`` (its first bytes, ``HEAD_BYTES``) is
    unmistakably a ``torch.save`` file (``is_torch_file``): ``model_best.pth.tar`` (the
    PyTorch ImageNet example's name) or ``ckpt_step_25`` were checked by hash only, so a
    truncated one passed (h511 #5).
    """
    name = PurePosixPath(path).name.lower()
    suffix = PurePosixPath(name).suffix
    if suffix == ".safetensors":
        return "safetensors"
    if suffix in JSON_SUFFIXES:
        return "json"
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in TORCH_SUFFIXES:
        if suffix == ".bin" and not looks_like_torch(head):
            return "other"
        return "torch"
    return "torch" if is_torch_file(head) else "other"


HEAD_BYTES = 512  # enough for a torch zip's first entry name
# torch.save's legacy (pickle) format: protocol 2, then its magic number as a long.
_LEGACY_TORCH = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"


def is_torch_file(head: bytes) -> bool:
    """Whether ``head`` is the start of a ``torch.save`` file: a zip whose first entry is
    ``<archive>/data.pkl``, or the legacy format's magic number. Any other zip (an
    ``.npz``, a dataset) or pickle is not."""
    if head.startswith(_LEGACY_TORCH):
        return True
    if not head.startswith(ZIP_MAGIC) or len(head) < 30:
        return False
    length = int.from_bytes(head[26:28], "little")
    return head[30 : 30 + length].endswith(b"/data.pkl")


def looks_like_torch(head: bytes) -> bool:
    """Whether the first bytes of a ``.bin`` look like a torch.save file: a zip, or a
    pickle whose first value is torch's magic number (at any protocol: 2 writes it right
    after the header, 4 after a frame). A first byte of 0x80 alone called 1 raw data file
    in 256 (nanoGPT's uint16 ``train.bin``, random bytes) a corrupt checkpoint (h563 #2)."""
    if head.startswith(ZIP_MAGIC) or (head[:1] == b"\x80" and _LEGACY_TORCH[2:] in head[:32]):
        return True
    # Any other pickle too, as a loader would read it (one that would run code is then
    # told unsafe, never run): protocol 4-5 open with a frame, 2-3 with a first opcode.
    # Random bytes start so about once in a million, not once in 256.
    proto, first = head[1:2], head[2:3]
    return head[:1] == b"\x80" and (
        (proto in (b"\x04", b"\x05") and first == b"\x95")
        or (proto in (b"\x02", b"\x03") and first != b"" and first in b"c}](\x8aKq")
    )


# Files whose emptiness is their content: a job's "done" marker (Hadoop/Spark's
# ``_SUCCESS``, ``DONE``, ``.gitkeep``, ``train.done``). A zero-byte one is no failed save.
# Known names only: an empty TensorFlow ``checkpoint``, DeepSpeed ``latest`` or a cut-off
# ``torch.save(..., "model")`` has no suffix either, and is a failed save (review s25 #3).
MARKER_NAMES = frozenset({
    "_success", "success", "_done", "done", "_complete", "complete", ".gitkeep", ".keep",
})  # fmt: skip
MARKER_SUFFIXES = (".done", ".ok", ".success", ".keep", ".flag", ".marker")


def is_marker(path: str) -> bool:
    """A file named like a marker (``MARKER_NAMES``, or a ``MARKER_SUFFIXES`` suffix):
    empty, it is complete. Any other zero-byte result is flagged: a save that wrote
    nothing."""
    name = PurePosixPath(path).name.lower()
    return name in MARKER_NAMES or PurePosixPath(name).suffix in MARKER_SUFFIXES


def is_leftover(path: str) -> bool:
    """A ``*.tmp`` or ``*.part`` file: an unfinished write (U6) or transfer."""
    return PurePosixPath(path).name.lower().endswith(LEFTOVER_SUFFIXES)


def check_safetensors_header(header: bytes, file_size: int) -> tuple[str, str] | None:
    """``(status, reason)`` when a safetensors file is not sound, else None.

    The status is CORRUPT, or NOT_VERIFIED for a dtype newer than this table or a header
    nested too deeply to parse (the file may be fine; calling it corrupt would be a false
    alarm).

    ``header`` is the file's first ``8 + N`` bytes (or fewer when the file is short).
    Checks: the 8-byte little-endian length fits the file; the header is a JSON object;
    every tensor's dtype is known, its shape is non-negative integers, and its
    ``data_offsets`` span exactly dtype × shape bytes; the tensors tile the data section
    with no gap or overlap and end exactly at the end of the file.
    """
    if file_size < 8 or len(header) < 8:
        return CORRUPT, f"too short for a safetensors file ({file_size} bytes)"
    n = int.from_bytes(header[:8], "little")
    if n > SAFETENSORS_MAX_HEADER or 8 + n > file_size:
        return CORRUPT, f"header length {n} does not fit in a {file_size}-byte file (truncated?)"
    if len(header) < 8 + n:
        return CORRUPT, "header cut short"
    try:
        meta = json.loads(header[8 : 8 + n].decode("utf-8"))
    except RecursionError:
        # Real headers are one level of objects; this deep it may still be JSON, unreadable here.
        return NOT_VERIFIED, "unverifiable: header JSON nested deeper than the parser allows"
    except (UnicodeDecodeError, ValueError) as exc:
        return CORRUPT, f"header is not JSON ({exc})"
    if not isinstance(meta, dict):
        return CORRUPT, "header is not a JSON object"
    data_len = file_size - 8 - n
    spans: list[tuple[int, int, str]] = []
    for name, info in meta.items():
        if name == "__metadata__":
            if not isinstance(info, dict):
                return CORRUPT, "__metadata__ is not an object"
            continue
        problem = _tensor_problem(name, info, data_len)
        if problem:
            return problem
        begin, end = info["data_offsets"]
        spans.append((begin, end, name))
    position = 0
    for begin, end, name in sorted(spans):
        if begin != position:
            what = "overlaps the previous one" if begin < position else "leaves a gap before it"
            return CORRUPT, f"tensor {name!r} at {begin} {what}"
        position = end
    if position != data_len:
        return (
            CORRUPT,
            f"tensors cover {position} bytes but the data section has {data_len} (truncated?)",
        )
    return None


def _tensor_problem(name: str, info: object, data_len: int) -> tuple[str, str] | None:
    if not isinstance(info, dict):
        return CORRUPT, f"tensor {name!r} entry is not an object"
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if dtype not in SAFETENSORS_DTYPE_BITS:
        return NOT_VERIFIED, f"tensor {name!r} has unknown dtype {dtype!r}"
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        return CORRUPT, f"tensor {name!r} has a bad shape {shape!r}"
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
    ):
        return CORRUPT, f"tensor {name!r} has bad data_offsets {offsets!r}"
    begin, end = offsets
    if not 0 <= begin <= end <= data_len:
        return (
            CORRUPT,
            f"tensor {name!r} data_offsets {offsets} fall outside the {data_len}-byte data",
        )
    expected = (math.prod(shape) * SAFETENSORS_DTYPE_BITS[dtype] + 7) // 8
    if end - begin != expected:
        return (
            CORRUPT,
            f"tensor {name!r} holds {end - begin} bytes; {dtype} × {shape} needs {expected}",
        )
    return None
