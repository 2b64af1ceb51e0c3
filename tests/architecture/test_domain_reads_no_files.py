"""DESIGN.md: ``domain/`` is pure data and rules — no I/O. The fleet file is read by
``services.fleet.file``, the profile files by ``rgt_tui.profiles``; the domain is handed
their text and names. Checked in the source, so a file read planted in the domain fails."""

from __future__ import annotations

import ast
from pathlib import Path

import rgt_tui.domain

DOMAIN = Path(rgt_tui.domain.__file__).parent
# Calls that touch the file system (pathlib and os spellings), and the one loader that does.
FILE_CALLS = {
    "open", "read_text", "read_bytes", "write_text", "write_bytes", "is_file", "is_dir",
    "exists", "glob", "rglob", "iterdir", "stat", "lstat", "mkdir", "unlink", "listdir",
    "scandir", "walk",
}  # fmt: skip
IO_MODULES = ("rgt_tui.profiles", "rgt_tui.services", "rgt_tui.transport")


def file_io(source: str) -> list[str]:
    """Each file-system call or I/O-layer import in ``source``, as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in FILE_CALLS:
                found.append(f"{node.lineno}: {name}()")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(IO_MODULES):
            found.append(f"{node.lineno}: from {node.module}")
    return found


def test_no_domain_module_reads_a_file_or_imports_a_loader():
    modules = sorted(DOMAIN.glob("*.py"))
    assert {"config.py", "config_parse.py", "profiles.py"} <= {p.name for p in modules}
    bad = {p.name: io for p in modules if (io := file_io(p.read_text(encoding="utf-8")))}
    assert bad == {}, f"I/O in domain/: {bad}"


def test_the_check_itself_would_notice_a_file_read():
    planted = (
        "from pathlib import Path\n"
        "from rgt_tui.profiles import KNOWN_PROFILES\n"
        "def load(path):\n"
        "    return Path(path).read_text() if Path(path).is_file() else open(path).read()\n"
    )
    assert sorted(file_io(planted)) == [
        "2: from rgt_tui.profiles", "4: is_file()", "4: open()", "4: read_text()",
    ]  # fmt: skip
