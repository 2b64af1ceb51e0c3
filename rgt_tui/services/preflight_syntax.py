"""The ``syntax`` check: the Python scripts the run template names, compiled here, from
the code tree sync sends, before anything is launched.

A SyntaxError in ``train.py`` passed every other check and failed every cell of a Slurm
array at once, each allocation spent to print the same line (hour s18b #6). Compiling
costs nothing and needs no box. Only what can be found is checked: a script word of the
template (``python train.py {cfg}``, ``torchrun … src/train.py``) that is a file of the
host's ``code`` tree at that path, the tree being the workdir cells start in. It is
compiled by this machine's Python: one newer on the box may read syntax this one does
not, so the fix says to acknowledge ``syntax`` then.
"""

from __future__ import annotations

import platform
import re
import shlex
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.preflight import Check
from rgt_tui.domain.text import printable

_FIELD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
MAX_SCRIPTS = 3
MAX_BYTES = 4 << 20  # a script larger than this is no training script: not compiled


def scripts_of(run: str) -> list[str]:
    """The relative ``*.py`` words of a run template, in order (its fields blanked)."""
    try:
        words = shlex.split(_FIELD.sub("x", run))
    except ValueError:
        return []
    found = [w for w in words if w.endswith(".py") and not w.startswith(("/", "~", "$", "-"))]
    return list(dict.fromkeys(found))[:MAX_SCRIPTS]


def syntax_check(host: HostConfig) -> Check:
    """Compile the run template's scripts found in the code tree (blocking: a thread)."""
    code, run = host.ready.code, host.run
    if code is None:
        return Check("syntax", True, "no code key: the script lives on the box, not checked here")
    if run is None:  # each queue line is its own command (h543 #7: read "no code key")
        return Check("syntax", True, "no run template: the queue's own commands are not compiled")
    root = code.expanduser()
    scripts = scripts_of(run)
    if not scripts:
        return Check("syntax", True, "the run template names no .py script: nothing to compile")
    checked: list[str] = []
    for rel in scripts:
        path = root / rel
        if ".." in Path(rel).parts or not path.is_file() or path.is_symlink():
            continue
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            source = path.read_bytes()
        except OSError:
            continue
        try:
            compile(source, rel, "exec", dont_inherit=True)
        except SyntaxError as exc:
            where = f"{rel}:{exc.lineno}" if exc.lineno else rel
            return Check(
                "syntax",
                False,
                f"{printable(where)}: SyntaxError: {printable(exc.msg)} (compiled here from "
                f"{root}: every cell would fail on its first line)",
                f"fix it, then `rgt-tui sync {host.name}`; it was compiled with this "
                f"machine's Python {platform.python_version()}: if the box's newer Python "
                "reads it, acknowledge syntax",
            )
        except (ValueError, RecursionError) as exc:  # a NUL byte, nesting too deep
            return Check("syntax", False, f"{printable(rel)}: does not compile: {exc}",
                         f"fix it, then `rgt-tui sync {host.name}`")  # fmt: skip
        checked.append(rel)
    if not checked:
        # Not run, never "ok": a typo in the run template's path (trian.py) read "ok
        # syntax" and "ready", and every cell would die at once (a user's hour, s42).
        # Not failed either: the box may hold a script the tree does not.
        return Check(
            "syntax", True,
            f"{printable(', '.join(scripts))}: not a file of the code tree at that path "
            f"({root}): not checked — if the box lacks it too, every cell fails at once: "
            "is the run template's path right?",
            ran=False,
        )  # fmt: skip
    return Check("syntax", True, f"{', '.join(checked)} compile{'s' if len(checked) == 1 else ''}")
