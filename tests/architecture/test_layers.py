"""DESIGN.md layering: nothing below the UI imports Textual, and only the transport (and the
demo's loopback servers) import asyncssh (checked in a fresh interpreter and in the source)."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import rgt_tui

BELOW_UI = ("domain", "transport", "agent", "services", "controllers")


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


# asyncssh belongs to the transport (DESIGN.md): only these modules may import it.
ASYNCSSH_ALLOWED = ("rgt_tui.transport.", "rgt_tui.demo.loopback")


def _all_modules() -> list[str]:
    """Every module of the package but ``__main__`` (importing it runs the command line)."""
    found = pkgutil.walk_packages(rgt_tui.__path__, "rgt_tui.")
    return sorted(m.name for m in found if not m.name.endswith(".__main__"))


def _asyncssh_importers(modules: list[str]) -> list[str]:
    """Import ``modules`` in a fresh interpreter, noting every ``import asyncssh...`` /
    ``from asyncssh... import`` statement that runs in an rgt_tui module, and where."""
    code = (
        "import builtins, importlib\n"
        "seen = set()\n"
        "real = builtins.__import__\n"
        "def spy(name, globals=None, locals=None, fromlist=(), level=0):\n"
        "    who = (globals or {}).get('__name__', '')\n"
        "    if level == 0 and name.split('.')[0] == 'asyncssh' and who.startswith('rgt_tui'):\n"
        "        seen.add(who)\n"
        "    return real(name, globals, locals, fromlist, level)\n"
        "builtins.__import__ = spy\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(','.join(sorted(seen)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]


def test_asyncssh_is_imported_only_by_the_transport_and_the_demo_servers():
    """Every module of the package imported (lazy imports inside functions are the
    static check's): the ones that import asyncssh are all allowed ones."""
    modules = _all_modules()
    assert "rgt_tui.app" in modules and "rgt_tui.transport.ssh" in modules
    importers = _asyncssh_importers(modules)
    assert "rgt_tui.transport.ssh" in importers  # the check sees imports at all
    bad = [m for m in importers if not m.startswith(ASYNCSSH_ALLOWED)]
    assert not bad, f"asyncssh imported outside the transport: {bad}"


def test_no_source_outside_the_transport_names_asyncssh_in_an_import():
    """The same rule over the source, imports inside functions included."""
    root = Path(rgt_tui.__file__).parent
    bad = []
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        if module.startswith(ASYNCSSH_ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            if any(n.split(".")[0] == "asyncssh" for n in names):
                bad.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert not bad, f"asyncssh imported outside the transport: {bad}"
