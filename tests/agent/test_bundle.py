"""The bundler: the on-box programs are small modules joined into the one source a box's
bare python3 runs from stdin (``rgt_tui.agent.bundle``).

What it refuses is shown on small module sets given by name (``bundle``'s ``read``);
what it makes of the real package is run, here and under the oldest python3 present.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import FIXTURES
from support.machine import oldest_python3

import rgt_tui.agent
from rgt_tui.agent import agent_source, manifest_source
from rgt_tui.agent.bundle import (
    BANNER,
    MANIFEST_ENTRY,
    OLDEST_PYTHON,
    PROBE_ENTRY,
    BundleError,
    bundle,
)

AGENT_DIR = Path(rgt_tui.agent.__file__).parent
PROBE_MODULES = sorted(
    "probe." + p.stem for p in (AGENT_DIR / "probe").glob("*.py") if p.stem != "__init__"
)


def banners(source: str) -> list[str]:
    """The modules a bundle holds, in order, from their banner lines."""
    prefix = BANNER.format("").rstrip()
    return [
        line[len(prefix) :].split(" ")[0] for line in source.splitlines() if line.startswith(prefix)
    ]


def from_dict(modules: dict[str, str]):
    """A ``read`` for ``bundle`` over in-memory modules (dotted name -> source)."""
    return modules.__getitem__


# ---------------------------------------------------------------------------------------
# The real programs


def test_the_probe_bundle_holds_every_probe_module_once_with_the_loop_last():
    source = agent_source()
    held = banners(source)
    assert sorted(m for m in held if m.startswith("probe.")) == PROBE_MODULES
    assert sorted(held) == sorted([*PROBE_MODULES, "box_id"])  # no manifest scan in it
    assert held[-1] == PROBE_ENTRY and len(held) == len(set(held))
    # Every top-level function and class of every module appears once.
    for name in held:
        tree = ast.parse((AGENT_DIR / (name.replace(".", "/") + ".py")).read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                keyword = "class" if isinstance(node, ast.ClassDef) else "def"
                found = re.findall(rf"^{keyword} {node.name}\b", source, re.M)
                assert len(found) == 1, (name, node.name)


def test_the_manifest_bundle_shares_the_id_and_the_secret_list():
    held = banners(manifest_source())
    assert held == ["box_id", "no_follow", "secret_paths", MANIFEST_ENTRY]


@pytest.mark.parametrize("entry", [PROBE_ENTRY, MANIFEST_ENTRY])
def test_a_bundle_is_python36_with_no_relative_import_left(entry):
    source = bundle(entry)
    tree = ast.parse(source, feature_version=OLDEST_PYTHON)
    compile(source, f"<{entry}>", "exec")
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert not re.search(r"^\s*from \.", source, re.M)
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    modules = {a.name for n in imports for a in n.names} | {
        getattr(n, "module", "") for n in imports
    }
    assert not {m for m in modules if m and m.split(".")[0] in ("rgt_tui", "__future__")}
    # One __main__ block: the entry's, at the very end.
    mains = [n for n in tree.body if isinstance(n, ast.If) and "__name__" in ast.unparse(n.test)]
    assert len(mains) == 1 and mains[0] is tree.body[-1]


def _run_bare(python: str, source: str, *args: str, cwd: Path) -> list[dict]:
    """``python -I -u - ARGS`` with the source on stdin, from a folder with no package in
    reach: isolated mode drops PYTHONPATH, the script's folder and the user's site."""
    proc = subprocess.run(
        [python, "-I", "-u", "-", *args],
        input=source,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd)},
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _fixture_args(tmp_path: Path) -> list[str]:
    tree = FIXTURES / "cgroup_v2_limited"
    return [
        "--count", "1", "--interval", "0", "--no-gpu", "--no-box-id", "--mount", str(tmp_path),
        "--sys-root", str(tree / "sys"), "--proc-root", str(tree / "proc"), "--queue-dir", "",
    ]  # fmt: skip


def _comparable(sample: dict) -> dict:
    # The time and the free bytes of a live file system move between two runs.
    return {k: v for k, v in sample.items() if k not in ("t", "disks", "hostname")}


def test_the_bundle_runs_with_no_package_and_samples_as_the_package_does(tmp_path):
    """The bundle under a bare, isolated python3 gives the sample the package itself
    gives when run as a module here."""
    (bundled,) = _run_bare(sys.executable, agent_source(), *_fixture_args(tmp_path), cwd=tmp_path)
    packaged = subprocess.run(
        [sys.executable, "-m", "rgt_tui.agent.probe.loop", *_fixture_args(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    (local,) = [json.loads(line) for line in packaged.stdout.splitlines()]
    assert _comparable(bundled) == _comparable(local)
    assert bundled["cgroup"]["version"] == 2 and bundled["errors"] == []


def test_both_bundles_run_on_the_oldest_python3_here(tmp_path):
    python, version = oldest_python3()
    (sample,) = _run_bare(python, agent_source(), *_fixture_args(tmp_path), cwd=tmp_path)
    assert sample["v"] == 1 and sample["errors"] == [], version
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.txt").write_text("a")
    lines = _run_bare(python, manifest_source(), "--root", str(tmp_path / "runs"), cwd=tmp_path)
    files = [line for line in lines if line["type"] == "file"]
    assert [f["path"] for f in files] == ["a.txt"], version


def test_every_agent_module_is_small_and_imports_as_a_package():
    import importlib

    for path in sorted(AGENT_DIR.rglob("*.py")):
        assert len(path.read_text().splitlines()) <= 400, path
        rel = path.relative_to(AGENT_DIR).with_suffix("")
        name = ".".join(("rgt_tui.agent", *rel.parts)).removesuffix(".__init__")
        importlib.import_module(name)


# ---------------------------------------------------------------------------------------
# What the bundler refuses (small module sets)


def test_modules_are_joined_in_dependency_order_with_their_imports_removed():
    modules = {
        "main": "import os\nfrom .b import B\nfrom .a import (\n    A,\n)\n\n"
        "if __name__ == '__main__':\n    print(A + B)\n",
        "a": "import os\nA = 1\n",
        "b": "from .a import A\nB = A + 1\n",
    }
    source = bundle("main", read=from_dict(modules))
    assert banners(source) == ["a", "b", "main"]
    assert "from ." not in source and "    A,\n" not in source
    out = subprocess.run(
        [sys.executable, "-"], input=source, capture_output=True, text=True, check=True
    )
    assert out.stdout == "3\n"


@pytest.mark.parametrize(
    ("main", "others", "message"),
    [
        ("from .nowhere import x\n", {}, r"no module rgt_tui\.agent\.nowhere \(imported by m\)"),
        ("from . import a\n", {"a": "X = 1\n"}, r"rgt_tui/agent/m\.py:1: write 'from \.module"),
        ("from .a import X as Y\n", {"a": "X = 1\n"}, r"m\.py:1: no 'as' or '\*'"),
        ("from .a import *\n", {"a": "X = 1\n"}, r"m\.py:1: no 'as' or '\*'"),
        ("from .a import Y\n", {"a": "X = 1\n"}, r"m\.py:1: a binds no 'Y'"),
        ("from ..a import X\n", {"a": "X = 1\n"}, r"m\.py:1: \.\.a leaves rgt_tui/agent/"),
        ("def f():\n    from .a import X\n", {"a": "X = 1\n"}, r"m\.py:2: .*top level"),
        ("import os; from .a import X\n", {"a": "X = 1\n"}, r"m\.py:1: .*lines of its own"),
        ("from rgt_tui.domain import x\n", {}, r"m\.py:1: imports rgt_tui, which no box has"),
        ("import rgt_tui.agent\n", {}, r"m\.py:1: imports rgt_tui"),
        ("from __future__ import annotations\n", {}, r"m\.py:1: a __future__ import"),
        ("from .a import X\n", {"a": "from .m import Z\nX = 1\n"}, r"import cycle: m -> a -> m"),
        ("from .a import X\n\ndef X2():\n    pass\nX = 2\n", {"a": "X = 1\n"}, r"'X' is also bound"),
        ("from .a import X\n", {"a": "X = 1\nif __name__ == '__main__':\n    pass\n"}, r"a\.py:2: a __main__ block outside"),
        ("x = f'{1=}'\n", {}, r"f-string '=' \(Python 3\.8\) at line 7"),
        ("def f(a, /):\n    pass\n", {}, r"not Python 3\.6"),
    ],
)  # fmt: skip
def test_a_module_the_bundle_would_break_is_refused_by_name_and_line(main, others, message):
    read = from_dict({"m": main, **others})
    with pytest.raises(BundleError, match=message):
        bundle("m", read=read)


def test_two_modules_defining_one_name_are_refused_but_shared_imports_are_not():
    shared = {"m": "import os\nfrom .a import A\nfrom .b import B\n", "b": "import os\nB = 2\n"}
    bundle("m", read=from_dict({**shared, "a": "import os\nA = 1\n"}))
    with pytest.raises(BundleError, match=r"rgt_tui/agent/b\.py: 'helper' is also bound in a"):
        bundle(
            "m",
            read=from_dict(
                {
                    **shared,
                    "a": "A = 1\ndef helper():\n    pass\n",
                    "b": "B = 2\ndef helper():\n    pass\n",
                }
            ),
        )
