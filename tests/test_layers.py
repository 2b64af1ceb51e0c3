"""DESIGN.md layering: nothing below the UI imports Textual (checked in a fresh interpreter)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import rgt_tui

BELOW_UI = ("domain", "transport", "agent", "services")


def _modules() -> list[str]:
    names = []
    for layer in BELOW_UI:
        names.append(f"rgt_tui.{layer}")
        pkg = __import__(f"rgt_tui.{layer}", fromlist=["_"])
        names += [f"rgt_tui.{layer}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]
    # The loopback servers are below the UI too; demo.run is the command line's launcher.
    return [*names, "rgt_tui.demo.loopback", "rgt_tui.paths"]


def test_layers_below_ui_never_import_textual():
    modules = _modules()
    assert "rgt_tui.domain.health" in modules and "rgt_tui.services.telemetry" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"textual imported below the UI: {out.stdout}"


def test_the_check_itself_would_notice_textual():
    code = "import rgt_tui.app, sys; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr
    assert rgt_tui.__version__
