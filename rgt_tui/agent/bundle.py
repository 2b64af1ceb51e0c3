"""Join an on-box program's modules into the one source sent over the channel's stdin.

A box has only a stdlib python3, and each program arrives as ``python3 -u -`` with its
source on stdin: there is no package there to import from. So the programs are written as
small modules of this package that import one another only by ``from .module import
name, ...`` (``from ..module import`` for one shared at the top of ``rgt_tui/agent/``),
and ``bundle(entry)`` is those modules, each once, every module after the ones it imports,
with those import lines removed and the entry module last (its ``__main__`` block starts
the program). Locally the same modules import as an ordinary package (tests, and the
client code that reuses the field lists).

Refused, naming the module and line, because the bundle would break on the box or differ
from what the package does here: any other relative import (``from . import x``, an alias,
``*``, a module that is not in ``rgt_tui/agent/``, a name that module does not bind), a
relative import below the top level, an import of ``rgt_tui`` itself, ``from __future__``
(a future import must open a file, and 3.6 has no ``annotations``), an import cycle, a
top-level name bound differently by two modules (they share one namespace in the bundle),
a ``__main__`` block outside the entry, and a result that does not parse as Python 3.6
(or holds an f-string ``=``, 3.8, which the parser's ``feature_version`` lets through).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path

PACKAGE = "rgt_tui.agent"
PROBE_ENTRY = "probe.loop"  # the telemetry agent (rgt_tui/agent/probe/loop.py)
MANIFEST_ENTRY = "manifest"  # the pull's manifest scan (rgt_tui/agent/manifest.py)
OLDEST_PYTHON = (3, 6)  # the oldest python3 a box may run the programs on
BANNER = "# ---- rgt_tui.agent.{} "


class BundleError(ValueError):
    """A module the bundler cannot join safely; the message names the module and line."""


def read_module(name: str) -> str:
    """The source of ``rgt_tui.agent.<name>`` (dotted, e.g. ``probe.loop``)."""
    parts = name.split(".")
    parts[-1] += ".py"
    try:
        node = resources.files(PACKAGE)
        for part in parts:
            node = node.joinpath(part)
        return node.read_text(encoding="utf-8")
    except (AttributeError, TypeError):
        # A zipped or unusual install without the resources API: read beside this module.
        return Path(__file__).parent.joinpath(*parts).read_text(encoding="utf-8")


@functools.cache
def bundled_source(entry: str) -> str:
    """``bundle(entry)`` of the installed modules, built once per process."""
    return bundle(entry)


def bundle(entry: str, read: Callable[[str], str] = read_module) -> str:
    """The one source of the program whose ``__main__`` module is ``entry``.

    ``read`` gives a module's source by dotted name (the package's files by default).
    """
    trees: dict[str, tuple[str, ast.Module]] = {}
    order: list[str] = []
    strip: dict[str, list[ast.ImportFrom]] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in chain:
            raise BundleError(f"import cycle: {' -> '.join((*chain, name))}")
        try:
            source = read(name)
        except (OSError, KeyError) as exc:
            where = f" (imported by {chain[-1]})" if chain else ""
            raise BundleError(f"no module {PACKAGE}.{name}{where}: {exc}") from exc
        tree = ast.parse(source, filename=_filename(name))
        trees[name] = (source, tree)
        strip[name] = []
        for node, target in _local_imports(name, tree):
            visit(target, (*chain, name))
            bound = _bindings(trees[target][1])
            for alias in node.names:
                if alias.name not in bound:
                    raise BundleError(
                        f"{_filename(name)}:{node.lineno}: {target} binds no {alias.name!r}"
                    )
            strip[name].append(node)
        order.append(name)

    visit(entry, ())
    _check_one_namespace(order, trees, entry)
    parts = [
        "# rgt-tui on-box program, bundled by rgt_tui.agent.bundle from: "
        + ", ".join(order)
        + "\n# (the modules under rgt_tui/agent/ are the source; edit those, not this).\n"
    ]
    for name in order:
        source, _ = trees[name]
        parts.append("\n\n" + BANNER.format(name).ljust(88, "-") + "\n\n")
        parts.append(_without(source, strip[name], name))
    out = "".join(parts)
    _check_result(out, entry)
    return out


def _filename(name: str) -> str:
    return "rgt_tui/agent/" + name.replace(".", "/") + ".py"


def _local_imports(name: str, tree: ast.Module):
    """(node, dotted module) for each ``from .x import a, b`` of a module; refuse the rest."""
    package = name.split(".")[:-1]
    top = set(map(id, tree.body))
    found = []
    for node in ast.walk(tree):
        where = f"{_filename(name)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            if any(a.name.split(".")[0] == "rgt_tui" for a in node.names):
                raise BundleError(f"{where}: imports rgt_tui, which no box has")
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if node.module == "__future__":
                raise BundleError(f"{where}: a __future__ import cannot sit inside a bundle")
            if (node.module or "").split(".")[0] == "rgt_tui":
                raise BundleError(f"{where}: imports rgt_tui, which no box has")
            continue
        if id(node) not in top:
            raise BundleError(f"{where}: a relative import must be at the module's top level")
        if not node.module:
            raise BundleError(f"{where}: write 'from .module import name', not 'from . import'")
        if node.level - 1 > len(package):
            raise BundleError(f"{where}: {'.' * node.level}{node.module} leaves rgt_tui/agent/")
        if any(a.asname or a.name == "*" for a in node.names):
            raise BundleError(f"{where}: no 'as' or '*' in a bundled import (names are shared)")
        base = package[: len(package) - (node.level - 1)]
        found.append((node, ".".join([*base, node.module])))
    return found


def _bindings(tree: ast.Module) -> dict[str, str]:
    """Top-level names of a module and what binds each: an import's origin, or 'def'."""
    out: dict[str, str] = {}

    def add(stmts) -> None:
        for node in stmts:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                out[node.name] = "def"
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name):
                            out[sub.id] = "def"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    out[a.asname or a.name.split(".")[0]] = "import " + a.name
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                for a in node.names:
                    out[a.asname or a.name] = f"from {node.module} import {a.name}"
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    out[a.name] = "local"  # bound by the module that defines it
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for field in ("body", "orelse", "finalbody"):
                    add(getattr(node, field, []))
                for handler in getattr(node, "handlers", []):
                    add(handler.body)

    add(tree.body)
    return out


def _is_main_block(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def _check_one_namespace(order: list[str], trees: dict, entry: str) -> None:
    """Every top-level name means one thing across the bundle; only the entry runs main."""
    owner: dict[str, tuple[str, str]] = {}
    for name in order:
        tree = trees[name][1]
        for node in tree.body:
            if name != entry and _is_main_block(node):
                raise BundleError(
                    f"{_filename(name)}:{node.lineno}: a __main__ block outside the entry "
                    f"module ({entry}) would run in the middle of the bundle"
                )
        for bound, what in _bindings(tree).items():
            if what == "local":
                continue
            key = (name, what) if what == "def" else ("", what)
            if bound in owner and owner[bound] != key:
                first = owner[bound][0] or "an import"
                raise BundleError(
                    f"{_filename(name)}: {bound!r} is also bound in {first}; the bundled "
                    "modules share one namespace, so rename one of them"
                )
            owner[bound] = key


def _without(source: str, nodes: list[ast.ImportFrom], name: str) -> str:
    """The source with the lines of the given (top-level, whole-line) imports removed."""
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in nodes:
        end = node.end_lineno or node.lineno
        rest = lines[end - 1][node.end_col_offset :].strip() if node.end_col_offset else ""
        if node.col_offset != 0 or (rest and not rest.startswith("#")):
            raise BundleError(
                f"{_filename(name)}:{node.lineno}: put a bundled import on lines of its own"
            )
        drop.update(range(node.lineno - 1, end))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def _check_result(out: str, entry: str) -> None:
    """The bundle parses as the oldest python3's grammar and imports nothing relative."""
    # f-string "=" specifiers (3.8) pass some Pythons' feature_version check
    # (3.12 and later parse f-strings anew): look for them first.
    equals = re.search(r"\{[^{}]*=\}", out)
    if equals:
        line = out.count("\n", 0, equals.start()) + 1
        raise BundleError(
            f"the bundle of {entry} has an f-string '=' (Python 3.8) at line {line}: "
            "boxes run old python3"
        )
    try:
        tree = ast.parse(out, filename=f"<bundle of {entry}>", feature_version=OLDEST_PYTHON)
    except SyntaxError as exc:
        raise BundleError(
            f"the bundle of {entry} is not Python {OLDEST_PYTHON[0]}.{OLDEST_PYTHON[1]} "
            f"(line {exc.lineno}: {exc.msg}): boxes run old python3"
        ) from exc
    left = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    if left:
        raise BundleError(f"the bundle of {entry} still has relative imports at lines {left}")
