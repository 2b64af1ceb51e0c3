# rgt-tui preflight: run on the box by the RUN's own interpreter (`<interpreter> -`, this
# program on stdin, in the host's workdir), so what it reports is what a cell will see.
# Standard library only, Python 3.8+ (a rented box's Python can be old), and it never
# raises: every failure becomes text in its answer. It prints two lines, each
# "RGT-PREFLIGHT <kind> <json>": the interpreter first (so a torch import that kills the
# process still leaves that), then torch. rgt_tui/services/preflight.py reads them.
import json
import os
import platform
import sys
import warnings

MAX_TEXT = 600  # a box's exception text can be any size; the report shows one line of it


def clip(text):
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def emit(kind, data):
    sys.stdout.write("RGT-PREFLIGHT " + kind + " " + json.dumps(data) + "\n")
    sys.stdout.flush()


def described(exc):
    return clip(type(exc).__name__ + ": " + str(exc))


def torch_facts():
    facts = {"importable": False}
    try:
        import torch
    except Exception as exc:  # ImportError, and an OSError from a broken CUDA library
        facts["error"] = described(exc)
        return facts
    facts["importable"] = True
    facts["version"] = clip(getattr(torch, "__version__", "?"))
    try:
        cuda = torch.version.cuda
        facts["cuda"] = None if cuda is None else clip(cuda)
    except Exception as exc:
        facts["cuda"] = None
        facts["cuda_error"] = described(exc)
    # torch says why CUDA is unusable only in a warning ("The NVIDIA driver on your system
    # is too old (found version 11040)"): keep the first few.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            facts["available"] = bool(torch.cuda.is_available())
        except Exception as exc:
            facts["available"] = False
            facts["available_error"] = described(exc)
        try:
            facts["device_count"] = int(torch.cuda.device_count())
        except Exception as exc:
            facts["device_count"] = 0
            facts["count_error"] = described(exc)
    facts["warnings"] = [clip(w.message) for w in caught[:3]]
    return facts


def main():
    emit(
        "python",
        {
            "version": platform.python_version(),
            "executable": clip(sys.executable),
            "prefix": clip(sys.prefix),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        },
    )
    try:
        facts = torch_facts()
    except BaseException as exc:  # whatever torch does on import, the answer still comes
        facts = {"importable": False, "error": described(exc)}
    emit("torch", facts)


main()
