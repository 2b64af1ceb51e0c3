"""Before the demo opens: can its training runs start at all?

The demo's workload (``workload/train.py``) trains with PyTorch, run by this interpreter
(``workload_setup.workload_run_template``). rgt-tui itself never needs torch, so a plain
``pip install -e .`` (``make run``) has none: without this check every cell of box1's
queue dies at once with ``ModuleNotFoundError: No module named 'torch'`` and the promised
quiet-run alert never comes. So the demo asks first, and names the one command that
fixes it: ``make demo`` in a checkout whose ``.venv`` this is (it installs the pinned CPU
build), else pip on this interpreter with PyTorch's CPU index (never a CUDA build's
gigabytes for a demo).
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_REQUIREMENT = "torch>=2.6"  # pyproject's [torch] extra (weights_only loads are safe)


def checkout_root() -> Path | None:
    """The rgt-tui checkout this package runs from (an editable install), or None."""
    root = Path(__file__).resolve().parents[2]
    makefile = root / "Makefile"
    if makefile.is_file() and (root / "pyproject.toml").is_file():
        return root
    return None


def torch_fix(python: str, prefix: str, checkout: Path | None) -> str:
    """The one command that gives the demo's interpreter torch."""
    if checkout is not None and Path(prefix).resolve() == (checkout / ".venv").resolve():
        return f"cd {shlex.quote(str(checkout))} && make demo"
    return f"{shlex.quote(python)} -m pip install '{TORCH_REQUIREMENT}' --index-url {CPU_INDEX}"


def missing_torch_message(python: str, prefix: str, checkout: Path | None) -> str:
    """What the demo prints when its workload's interpreter has no torch."""
    return (
        "rgt-tui demo: the demo's training runs need PyTorch, and the Python that runs "
        f"them ({python}) has no torch — every cell would fail at once "
        "(ModuleNotFoundError: No module named 'torch').\n"
        "rgt-tui itself never needs torch; only the demo's workload does. Fix, then run "
        "the demo again:\n"
        f"  {torch_fix(python, prefix, checkout)}"
    )


def workload_problem() -> str | None:
    """None when this interpreter (the demo workload's) can import torch; else the
    message naming the fix. ``find_spec`` looks without importing (torch takes seconds
    to import); a torch that is present but broken still shows, as the failed cell's
    reason on its pane."""
    if importlib.util.find_spec("torch") is not None:
        return None
    return missing_torch_message(sys.executable, sys.prefix, checkout_root())
