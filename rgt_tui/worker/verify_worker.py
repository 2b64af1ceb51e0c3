"""Loads pulled files for verify in a process of its own, under memory limits.

Run as ``PYTHON verify_worker.py`` by ``rgt_tui.services.verify.loader``; the standard
library and torch only (Python 3.9+), since PYTHON may be the user's training environment
without rgt-tui. A file that is huge, damaged or hostile can then exhaust or crash this
process, never verify or the TUI: the parent kills it at its deadline and starts another.

Protocol: one JSON object a line. This process says hello first::

    {"hello": 1, "python": str, "python_version": str, "pid": int, "memory_limit": bool}

then answers each request on stdin, in order, with the request's ``id``:

- ``{"op": "torch"}`` imports torch: ``{"torch": version | null, "file": str | null,
  "problem": str | null}`` (problem: why checkpoints must not be loaded with it);
- ``{"op": "load", "kind": "torch" | "json" | "jsonl", "path": str, "memory": int | null}``:
  ``{"outcome": "loaded" | "corrupt" | "unsafe" | "unverifiable" | "memory", "detail": str}``.
  ``memory`` is how far the address space may grow while loading (RLIMIT_AS); after a
  ``memory`` outcome this process exits, so the next file gets a fresh one.

Checkpoints are only ever opened with ``torch.load(weights_only=True, mmap=True)``: a pickle
naming a global outside torch's allow-list is refused (``unsafe``), never executed. torch's
safe loader refuses a damaged pickle in the same words ("Unsupported operand 0" for a
zeroed byte), so a refusal is called ``unsafe`` only when the pickle is well formed and the
refusal names code (a global, a call, an instruction that builds an object); otherwise the
file is ``corrupt``.

Just past 450 lines on purpose: it runs as one file in the user's own Python (the
standard library and torch only), so its loaders and the words for what they find cannot
be split into modules that Python would have to import.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import pickle
import pickletools
import platform
import re
import sys
import warnings
import zipfile

PROTOCOL = 1
# torch before 2.6 could run code from a weights_only=True load (CVE-2025-32434).
MIN_TORCH = (2, 6)
PRERELEASES_SAFE_FROM = (2, 8)
# Counting tensors walks the loaded object; a checkpoint that is a huge Python list
# must not turn a count into minutes of work.
MAX_VISITS = 1_000_000
ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since 1.6; older files are bare pickles
# Errors that say the file could not be read, not that its content is damaged (torch
# raises EINVAL and others for a cut-short zip).
UNREADABLE = (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EISDIR, errno.EIO)
OOM_WORDS = ("can't allocate memory", "cannot allocate memory", "bad_alloc", "out of memory")


def main() -> int:
    """Serve requests from stdin until it closes."""
    # The protocol gets its own descriptor; fd 1 then points at stderr, so anything torch
    # or its C++ code prints cannot be taken for a reply.
    replies = os.fdopen(os.dup(1), "w", encoding="ascii")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    warnings.simplefilter("ignore")  # torch warns about pickles and numpy; verdicts matter
    _first_to_go()
    send(
        replies,
        {
            "hello": PROTOCOL,
            "python": sys.executable,
            "python_version": platform.python_version(),
            "pid": os.getpid(),
            "memory_limit": _vm_size() is not None,
        },
    )
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        reply = handle(request)
        reply["id"] = request.get("id")
        send(replies, reply)
        if reply.get("outcome") == "memory":
            return 3  # whatever the failed load left behind goes with this process
    return 0


def send(stream, message: dict) -> None:
    """Write one reply line and flush it."""
    stream.write(json.dumps(message, ensure_ascii=True) + "\n")
    stream.flush()


def handle(request: dict) -> dict:
    """The reply to one request."""
    op = request.get("op")
    if op == "torch":
        info = torch_info()
        names = request.get("safe_globals") or []
        if info["torch"] is not None and info["problem"] is None and names:
            info["globals_problem"] = allow_globals(names)
        return info
    if op != "load":
        return {"outcome": "unverifiable", "detail": f"unknown request {op!r}"}
    kind, path = request.get("kind"), request.get("path")
    loader = {"torch": load_torch, "json": load_json, "jsonl": load_jsonl}.get(kind)
    if loader is None or not isinstance(path, str):
        return {"outcome": "unverifiable", "detail": f"unknown kind {kind!r}"}
    try:
        with memory_limit(request.get("memory")):
            outcome, detail = loader(path)
    except RecursionError:
        outcome, detail = "unverifiable", nested_too_deep()
    except Exception as exc:  # a damaged file raises anything; name it
        if out_of_memory(exc):
            outcome, detail = "memory", first_line(exc)
        elif isinstance(exc, OSError) and exc.errno in UNREADABLE:
            outcome, detail = "unverifiable", f"cannot read it: {exc.strerror or exc}"
        else:
            outcome, detail = "corrupt", first_line(exc)
    return {"outcome": outcome, "detail": detail}


def torch_info() -> dict:
    """Import torch and say which one it is, and whether it is safe to load with."""
    try:
        import torch
    except Exception as exc:  # a broken install raises more than ImportError
        return {"torch": None, "file": None, "problem": first_line(exc)}
    version = str(getattr(torch, "__version__", "unknown"))
    problem = None
    if not torch_is_safe(version):
        problem = (
            f"torch {version} is older than 2.6: its weights_only loader can run code "
            "(CVE-2025-32434)"
        )
    return {"torch": version, "file": getattr(torch, "__file__", None), "problem": problem}


# The functions a checkpoint may name once allowed: numpy's array and scalar rebuilders
# (torch's own docs allow them for numpy values in a checkpoint), which build data and
# call nothing. Any other function is refused, whatever the fleet file says.
DATA_REBUILDERS = frozenset({
    "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
    "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar", "_codecs.encode",
})  # fmt: skip


# Classes whose building runs no code of its own though it is not plain Python data
# (C constructors, or a constructor that only sets attributes): a C constructor is not
# safe by being C (mmap.mmap maps a file), so these are named one by one.
DATA_CLASSES = frozenset({
    "argparse.Namespace", "collections.OrderedDict", "collections.defaultdict",
    "collections.Counter", "collections.deque", "datetime.date", "datetime.datetime",
    "datetime.time", "datetime.timedelta", "datetime.timezone", "decimal.Decimal",
    "fractions.Fraction", "uuid.UUID", "pathlib.Path", "pathlib.PosixPath",
    "pathlib.PurePath", "pathlib.PurePosixPath", "pathlib.PureWindowsPath",
    "pathlib.WindowsPath", "numpy.ndarray", "numpy.dtype",
})  # fmt: skip
# What loading calls on an allowed class: the class (REDUCE: __new__ and __init__),
# __new__ (NEWOBJ), __setstate__ or __setattr__ (BUILD, which first looks the former up:
# __getattr__ / __getattribute__), __setitem__ (SETITEMS), append and extend (APPENDS).
BUILD_HOOKS = ("__new__", "__init__", "__setstate__", "__setattr__", "__getattr__",
               "__getattribute__", "__setitem__", "append", "extend")  # fmt: skip


def code_of_its_own(cls: type) -> str | None:
    """Why building ``cls`` from a checkpoint would run code of its own — its constructor
    or a hook loading calls, written in Python by its module (``timeit.Timer`` execs its
    setup text, ``zipfile.ZipFile`` opens a file for writing: review h594 #1) —, or None:
    every hook is Python's own (``object``, ``dict``…), generated by ``dataclasses`` or
    ``namedtuple`` (they only set fields), an ``Enum``'s value lookup, or ``cls`` is one
    of ``DATA_CLASSES``."""
    import enum

    if f"{cls.__module__}.{cls.__qualname__}" in DATA_CLASSES:
        return None
    plain = {"builtins", "enum"} if issubclass(cls, enum.Enum) else {"builtins", "abc"}
    if type(cls).__module__ not in plain:
        return f"its metaclass {type(cls).__qualname__} decides how it is built"
    hooks = (*BUILD_HOOKS, "__post_init__", "_missing_")
    for name in hooks:
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or owner.__module__ in plain:
            continue
        hook = vars(owner)[name]
        hook = getattr(hook, "__func__", hook)  # a staticmethod's (namedtuple's __new__)
        if getattr(hook, "__module__", None) in plain:
            continue  # Python's own, set on the class (an Enum's __new__ is enum's)
        code = getattr(hook, "__code__", None)
        generated = code is not None and code.co_filename == "<string>"  # dataclass, namedtuple
        if not (generated and name in ("__new__", "__init__", "__setattr__")):
            return f"its {name} ({owner.__module__}.{owner.__qualname__}) is code of its own"
    return None


def allow_globals(names: list) -> str | None:
    """Let checkpoints name these ``module.Name`` globals (``[fleet] verify_safe_globals``,
    the user's own list); why one cannot be found or allowed, or None. Only classes whose
    building runs no code of their own (``code_of_its_own``), and ``DATA_REBUILDERS``: a
    function a checkpoint names is called when it loads, so allowing ``timeit.timeit`` ran
    the box's code here (h591 #1), and so did the class ``timeit.Timer``."""
    import difflib
    import importlib

    import torch

    found = []
    for name in names:
        parts = str(name).split(".")
        obj = None
        hint = ""
        for cut in range(len(parts) - 1, 0, -1):  # the longest importable module first
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except Exception:
                continue
            owner = ".".join(parts[:cut])
            try:
                for attr in parts[cut:]:
                    owner, obj = f"{owner}.{attr}", getattr(obj, attr)
            except AttributeError:
                # A typo'd class name: the module's own names offer the close one (a
                # user's hour read the same bare refusal for every checkpoint).
                close = difflib.get_close_matches(attr, dir(obj), n=1)
                hint = f" ({owner} has no {attr}" + (
                    f"; did you mean {owner}.{close[0]}?)" if close else ")"
                )
                obj = None
            break
        if obj is None:
            return f"{name} cannot be imported{hint}"
        if not isinstance(obj, type) and name not in DATA_REBUILDERS:
            return (
                f"{name} is {'a function' if callable(obj) else 'no class'}, not a data class: "
                "a checkpoint that names it has it called when loaded (code run on this "
                "machine), so it is never allowed"
            )
        own = code_of_its_own(obj) if isinstance(obj, type) else None
        if own is not None:
            return (
                f"{name} is no plain data class: {own}, which loading a checkpoint that "
                "names it would run on this machine, so it is never allowed"
            )
        found.append(obj)
    torch.serialization.add_safe_globals(found)
    return None


def torch_is_safe(version: str) -> bool:
    """Whether ``version`` is a torch with the fix: 2.6.0 or newer, and no pre-release of
    2.6 or 2.7 (nightlies of those were built before the fix could have landed)."""
    match = re.match(r"(\d+)\.(\d+)(?:\.\d+)?(.*)$", version.split("+", 1)[0])
    if match is None:
        return False
    major_minor = (int(match.group(1)), int(match.group(2)))
    prerelease = re.search(r"a|b|rc|dev", match.group(3)) is not None
    if prerelease and major_minor < PRERELEASES_SAFE_FROM:
        return False
    return major_minor >= MIN_TORCH


def load_torch(path: str) -> tuple[str, str]:
    """Load a checkpoint with ``weights_only=True``; mapped, so its size costs no memory."""
    info = torch_info()
    if info["problem"] is not None or info["torch"] is None:
        return "unverifiable", f"not loaded: {info['problem'] or 'no torch'}"
    import torch

    with open(path, "rb") as f:
        # The old (non-zip) format cannot be mapped; it is still loaded weights_only.
        mapped = f.read(4) == ZIP_MAGIC
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True, mmap=mapped)
    except pickle.UnpicklingError as exc:
        text = str(exc)
        if "weights only" in text.lower() or "weights_only" in text:
            return refusal(path, mapped, text)
        return "corrupt", first_line(exc)
    tensors, values = count_tensors(obj, torch.Tensor)
    crc = ""
    if mapped:
        # A mapped load reads no tensor bytes: each record is read against the CRC-32
        # torch wrote for it (h511 #6: 64 bytes changed inside a tensor loaded).
        # Saved with torch.serialization.set_crc32_options(False), every record's CRC-32
        # is 0: nothing to check against (review h514 #3: such a file read as corrupt).
        try:
            with zipfile.ZipFile(path) as archive:
                written = any(i.CRC for i in archive.infolist() if i.file_size)
                bad = archive.testzip() if written else None
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            return "corrupt", f"its archive cannot be read through: {first_line(exc)}"
        if bad is not None:
            return "corrupt", f"record {bad!r} does not match the CRC-32 torch wrote for it"
        crc = (
            ", every record's CRC-32 checked"
            if written
            else "; saved without CRC-32s, so its records' bytes were not checked"
        )
    else:  # the old format carries no CRC-32s: said as for a zip saved without (h515 #4)
        crc = "; the old format holds no CRC-32s, so its tensors' bytes were not checked"
    return (
        "loaded",
        f"loaded with torch {info['torch']} (weights_only{crc}): {tensors} "
        f"tensor{'s' if tensors != 1 else ''}, {values:,} values",
    )


def load_json(path: str) -> tuple[str, str]:
    """Parse a JSON document."""
    with open(path, encoding="utf-8") as f:
        try:
            json.load(f)
        except ValueError as exc:  # UnicodeDecodeError included
            return "corrupt", f"invalid JSON: {exc}"
    return "loaded", "parsed as JSON"


def load_jsonl(path: str) -> tuple[str, str]:
    """Parse JSON lines: every non-blank line must parse."""
    records = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                json.loads(raw.decode("utf-8"))
            except RecursionError:
                return "unverifiable", f"line {number}: {nested_too_deep()}"
            except ValueError as exc:
                return "corrupt", f"invalid JSON on line {number}: {exc}"
            records += 1
    return "loaded", f"parsed {records} JSON lines"


def nested_too_deep() -> str:
    """The name for JSON deeper than the parser goes (it recurses once per level)."""
    return (
        "JSON nested deeper than the parser allows (about "
        f"{sys.getrecursionlimit()} levels, Python's recursion limit)"
    )


def count_tensors(obj, tensor_type) -> tuple[int, int]:
    """(tensors, values) in a loaded checkpoint, walking dicts and sequences, iteratively."""
    count = values = visits = 0
    stack = [obj]
    while stack and visits < MAX_VISITS:
        item = stack.pop()
        visits += 1
        if isinstance(item, tensor_type):
            count += 1
            values += item.numel()
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return count, values


# Pickle instructions that name or build code; torch's safe loader refuses these
# ("Unsupported operand N") in a well-formed pickle that needs code to load.
CODE_OPCODES = {op.code.encode("latin-1")[0] for op in pickletools.opcodes if op.name in (
    "INST", "OBJ", "EXT1", "EXT2", "EXT4", "GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD",
)}  # fmt: skip
# torch.save's legacy (non-zip) format: five pickles, then the raw storages.
LEGACY_PICKLES = 5
MAX_PICKLE_BYTES = 256 << 20  # a larger pickle is not walked (the load's verdict stands)


def refusal(path: str, zipped: bool, text: str) -> tuple[str, str]:
    """The outcome of a weights_only refusal: ``unsafe`` only for a well-formed pickle
    refused for naming code; a pickle that breaks off is damaged, not hostile."""
    reason = unsafe_reason(text)
    damage = pickle_damage(path, zipped)
    if damage is not None:
        return "corrupt", f"{damage}; torch: {reason}"
    plain = None if zipped else plain_pickle(path)
    if plain is not None:
        # Not truncated, not being saved (hour s19a #13): a pickle.dump file, which no
        # torch.load reads; unpickling it could run code, so nothing here loads it.
        what = "a plain pickle (pickle.dump), not a torch checkpoint"
        if plain:
            return "unsafe", f"needs arbitrary code to load; not executed: {what}, naming {plain}"
        return "unverifiable", (
            f"{what}: not loaded (unpickling can run code) — save it with torch.save or "
            "safetensors to have it verified"
        )
    if names_code(text):
        return "unsafe", "needs arbitrary code to load; not executed: " + reason
    return "corrupt", f"torch's safe loader refused it: {reason}"


def names_code(text: str) -> bool:
    """Whether torch's refusal is about code: a global, a call, or an instruction naming one."""
    if "GLOBAL" in text or "reduce for" in text or "add_safe_globals" in text:
        return True
    operand = re.search(r"Unsupported operand (\d+)", text)
    return operand is not None and int(operand.group(1)) in CODE_OPCODES


def pickle_damage(path: str, zipped: bool):
    """Where the checkpoint's pickle stops being a pickle, or None (well formed, or
    not walked). Walked with pickletools, which reads instructions and runs none."""
    try:
        if zipped:
            with zipfile.ZipFile(path) as archive:
                name = next(
                    (n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "data.pkl"), None
                )
                if name is None or archive.getinfo(name).file_size > MAX_PICKLE_BYTES:
                    return None
                stream, count = io.BytesIO(archive.read(name)), 1
        else:
            with open(path, "rb") as f:
                stream, count = io.BytesIO(f.read(MAX_PICKLE_BYTES)), LEGACY_PICKLES
    except zipfile.BadZipFile as exc:  # "Bad CRC-32 for file 'c/data.pkl'"
        return f"the archive's checksum does not match its pickle ({exc})"
    except Exception:  # unreadable here though torch read it: no verdict to add
        return None
    size = len(stream.getbuffer())
    for _ in range(count):
        if stream.tell() >= size:  # a plain pickle.dump file holds one
            break
        try:
            for _op, _arg, _pos in pickletools.genops(stream):
                pass
        except Exception as exc:  # genops says where: "at position 57, opcode ... unknown"
            text = str(exc).strip().splitlines()
            return f"not a well-formed pickle ({text[0] if text else type(exc).__name__})"
    return None


# torch.save's legacy format opens with a pickle of this number (torch.serialization).
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def plain_pickle(path: str):
    """None for a legacy torch file (its first pickle is torch's magic number) or one not
    walked; else the code its pickle names ("" for none), read with pickletools, which
    runs nothing."""
    try:
        with open(path, "rb") as f:
            stream = io.BytesIO(f.read(MAX_PICKLE_BYTES))
        ops = list(pickletools.genops(stream))
    except Exception:
        return None
    if any(arg == LEGACY_MAGIC for _op, arg, _pos in ops):
        return None
    names, strings = [], []
    for op, arg, _ in ops:
        if op.name in ("GLOBAL", "INST") and isinstance(arg, str):
            names.append(arg.replace(" ", "."))
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            names.append(".".join(strings[-2:]))  # the module and name pushed before it
        elif isinstance(arg, str):
            strings.append(arg)
    code = any(op.code.encode("latin-1")[0] in CODE_OPCODES for op, _, _ in ops)
    # The box's bytes: only name characters, and not many of them.
    shown = [re.sub(r"[^\w.]", "?", n)[:80] for n in dict.fromkeys(names)][:3]
    return (", ".join(shown) or "a global") if code else ""


def unsafe_reason(text: str) -> str:
    """The line of torch's long message that names the refused global."""
    for line in text.splitlines():
        if "GLOBAL" in line or "Unsupported" in line:
            # torch's advice after the name (add_safe_globals) is not the user's to follow
            # here: the fix verify adds names the fleet key that does it.
            return line.split(" was not an allowed global", 1)[0].strip()
    return text.strip().splitlines()[0] if text.strip() else "refused by weights_only"


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else 'no message'}"


def out_of_memory(exc: BaseException) -> bool:
    """Whether an error means an allocation failed (Python's, torch's C++ or a mapping)."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    text = str(exc).lower()
    return any(word in text for word in OOM_WORDS)


@contextlib.contextmanager
def memory_limit(extra):
    """Cap the address space at its size now plus ``extra`` bytes while loading one file."""
    size = _vm_size() if isinstance(extra, int) and extra > 0 else None
    if size is None:
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = size + extra
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _vm_size():
    """This process's address-space size in bytes (Linux), or None where unknown."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _first_to_go() -> None:
    """Ask Linux's out-of-memory killer to take this process before any other."""
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")


if __name__ == "__main__":
    sys.exit(main())
