"""Ctrl-C while `rgt-tui` is still importing ends quietly with 130 (hour s17b #4): the
imports take 0.5–3 s on a slow machine, and a traceback through them was what a user saw
after the first Ctrl-C they tried. A real SIGINT, sent by the process to itself in the
middle of importing the command table (an import hook, so not a matter of timing), then
the console script's own entry."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import importlib.abc, os, signal, sys

class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "rgt_tui.cli.table":  # deep in the command line's imports
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
from rgt_tui.entry import main
sys.exit(main())
"""


def test_ctrl_c_during_the_imports_exits_130_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, "status"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout == "", done.stdout


def test_python_m_runs_the_command_line_through_the_guard() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rgt_tui", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.startswith("rgt-tui "), done
