"""CRLF line endings where they break a Linux box (U26, GEN4): a shell script saved on
Windows fails there with ``$'\\r': command not found`` or ``set: -: invalid option``, a
``#!`` line ending in ``\\r`` names an interpreter that does not exist, and a config or
queue file read line by line carries a ``\\r`` into every value. Python source is left
alone (its universal newlines read CRLF fine) unless it starts with ``#!``.

Which files count (``crlf_kind``) and the ``crlf`` preflight check made of what was found
(``crlf_check``); the scan itself is the sync listing's (it reads every file anyway). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from rgt_tui.domain.preflight import Check
from rgt_tui.domain.units import plural

SHELL_SUFFIXES = (".sh", ".bash")
CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".conf", ".env")
SHOWN = 5


def crlf_kind(name: str, head: bytes) -> str:
    """What ``name`` is, if a CRLF in it would break it on the box ("" if not a kind
    that breaks): ``head`` is the file's first bytes (its ``#!`` line)."""
    lower = name.lower()
    if lower.endswith(SHELL_SUFFIXES):
        return "shell script"
    if head.startswith(b"#!"):
        return "script (#! line)"
    if lower.endswith(CONFIG_SUFFIXES):
        return "config file"
    return ""


def has_crlf(data: bytes, carried_cr: bool = False) -> bool:
    """Whether ``data`` (a chunk; ``carried_cr``: the previous chunk ended in ``\\r``)
    holds a CRLF line ending."""
    return b"\r\n" in data or (carried_cr and data.startswith(b"\n"))


def crlf_check(host: str, found: Sequence[tuple[str, str]], checked: str) -> Check:
    """The ``crlf`` check: ``found`` is (file, kind) per CRLF file, ``checked`` says what
    was looked at ("the code tree ~/proj (120 files) and the queue file q.txt")."""
    if not found:
        return Check("crlf", True, f"no CRLF line endings in {checked}")
    names = [f"{path} ({kind})" for path, kind in found[:SHOWN]]
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    files = " ".join(_quoted(path) for path, _ in found[:SHOWN])
    # What breaks, by what was found: bash's own error only where a script is among them
    # (h553 #1: said of a queue file alone).
    scripts = any(kind not in ("config file", "queue file") for _, kind in found)
    breaks = (
        "on the box bash fails with $'\\r': command not found"
        if scripts
        else "a line read on the box carries a \\r into its last value"
    )
    return Check(
        "crlf",
        False,
        f"{plural(len(found), 'file')} with Windows (CRLF) line endings: {', '.join(names)}{more} — "
        f"{breaks} (U26, GEN4)",
        f"convert them here: dos2unix {files} (or sed -i 's/\\r$//' FILE), then rgt-tui sync "
        f"{host}; to stop git writing CRLF: git config core.autocrlf input, and "
        "'*.sh text eol=lf' in .gitattributes",
    )


def _quoted(path: str) -> str:
    safe = all(c.isalnum() or c in "._-/+@%:," for c in path)
    return path if safe and path else "'" + path.replace("'", "'\\''") + "'"
