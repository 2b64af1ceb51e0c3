"""Ctrl-C while `rgt-tui` is still importing ends quietly with 130 (hour s17b #4): the
imports take 0.5–3 s on a slow machine, and a traceback through them was what a user saw
after the first Ctrl-C they tried. A real SIGINT, sent by the process to itself in the
middle of importing the command table (an import hook, so not a matter of timing), then
the console script's own entry."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = """
import importlib.abc, os, signal, sys

MODULE = os.environ["INTERRUPT_AT"]

class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == MODULE:  # deep in the command line's imports
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
from rgt_tui.entry import main
sys.exit(main())
"""


@pytest.mark.parametrize(
    ("module", "command"),
    # The table; then a command's own module, imported as its arguments are added (the
    # table names it lazily: review s25 #2).
    [("rgt_tui.cli.table", "status"), ("rgt_tui.cli.pull", "pull")],
)
def test_ctrl_c_during_the_imports_exits_130_without_a_traceback(module: str, command: str) -> None:
    env = {**os.environ, "INTERRUPT_AT": module}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, command, "--help"], capture_output=True, text=True,
        timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout == "", done.stdout


def test_python_m_runs_the_command_line_through_the_guard() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rgt_tui", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.startswith("rgt-tui "), done
