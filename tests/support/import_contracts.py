"""pyproject's import contracts checked by the real ``lint-imports`` on a copy of the
package, so a test can plant a violating import without touching the working tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from support import ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def copy_of_the_package(folder: Path) -> Path:
    """The package and its contracts, copied into ``folder``."""
    shutil.copytree(
        ROOT / "rgt_tui", folder / "rgt_tui", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", folder / "pyproject.toml")
    return folder


def contracts(folder: Path) -> dict[str, str]:
    """``lint-imports`` run on the copy in ``folder``: each contract's name -> KEPT / BROKEN."""
    ran = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=folder, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(folder)},  # the copy, not the installed tree
    )  # fmt: skip
    verdicts = {}
    for line in ran.stdout.splitlines():
        name, _, verdict = line.rpartition(" ")
        if verdict in ("KEPT", "BROKEN"):
            verdicts[name] = verdict
    assert verdicts, ran.stdout + ran.stderr
    assert (ran.returncode == 0) == ("BROKEN" not in verdicts.values()), ran.stdout
    return verdicts


def plant(path: Path, line: str) -> None:
    """Append ``line`` to the module at ``path`` (in a copy)."""
    path.write_text(path.read_text() + f"\n{line}  # planted\n")
