"""The pull manifest: the on-box script on real files, and the pure domain around it."""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import shlex
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from support.machine import oldest_python3

from rgt_tui.domain.manifest import (
    Manifest,
    ManifestEntry,
    ManifestError,
    PullRoot,
    compare,
    manifest_from_json,
    manifest_to_json,
)
from rgt_tui.domain.manifest_names import root_labels, unsafe_path_reason
from rgt_tui.domain.manifest_parse import parse_manifest_lines
from rgt_tui.services.manifest import manifest_command, manifest_source


def run_script(source: str, argv: list[str], python: str = sys.executable) -> list[str]:
    """Run an on-box script the way the transport does (source on stdin), C locale."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C", "LC_ALL": "C"}
    proc = subprocess.run(
        [python, "-S", "-u", "-", *argv],
        input=source.encode(),
        capture_output=True,
        env=env,
        check=True,
    )
    return proc.stdout.decode("ascii").splitlines()


def make_tree(root: Path, outside: Path) -> None:
    (root / "run 1" / "ünï cödé").mkdir(parents=True)
    (root / "run 1" / "ünï cödé" / "best model.pt").write_bytes(b"weights" * 1000)
    (root / "metrics.json").write_text('{"acc": 1}')
    (root / "empty.log").write_bytes(b"")
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("not yours")
    os.symlink(outside, root / "escape")  # a folder outside the root
    os.symlink(outside / "secret.txt", root / "escape.txt")
    os.symlink("metrics.json", root / "latest.json")  # stays inside: a link, not data
    os.symlink("nowhere", root / "dangling")
    os.mkfifo(root / "pipe")


def test_script_lists_hashes_and_refuses_by_name(tmp_path):
    root, outside = tmp_path / "results", tmp_path / "outside"
    make_tree(root, outside)
    lines = run_script(manifest_source(), ["--root", str(root), "--root", str(tmp_path / "gone")])
    m = parse_manifest_lines("box", lines)
    by_path = {e.path: e for e in m.entries}
    weights = root / "run 1" / "ünï cödé" / "best model.pt"
    assert set(by_path) == {"run 1/ünï cödé/best model.pt", "metrics.json", "empty.log"}
    entry = by_path["run 1/ünï cödé/best model.pt"]
    assert entry.sha256 == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert entry.size == weights.stat().st_size and entry.mtime == weights.stat().st_mtime
    refused = {r.path: r.reason for r in m.refused}
    assert "leaves the pull root" in refused["escape"] and str(outside) in refused["escape"]
    assert "leaves the pull root" in refused["escape.txt"]
    assert "broken symlink" in refused["dangling"]
    assert "not a regular file (fifo)" in refused["pipe"]
    assert refused["."].startswith("pull root") and "no such folder" in refused["."]
    assert [(ln.path, ln.target) for ln in m.links] == [("latest.json", "metrics.json")]
    # Nothing from outside the root was read: its content appears in no entry.
    assert all("secret" not in e.path for e in m.entries)
    assert m.taken_at <= m.finished_at


def test_script_is_python36_and_runs_there(tmp_path):
    """The grammar is 3.6's, and the oldest python3 here (3.6 on the dev image) scans as
    this one does."""
    source = manifest_source()
    ast.parse(source, feature_version=(3, 6))
    assert "from __future__ import annotations" not in source
    root = tmp_path / "r"
    make_tree(root, tmp_path / "outside")
    oldest, _ = oldest_python3()
    old = parse_manifest_lines("box", run_script(manifest_source(), ["--root", str(root)], oldest))
    new = parse_manifest_lines("box", run_script(manifest_source(), ["--root", str(root)]))
    assert compare(old, new).unchanged and len(old.entries) == 3


def test_no_hash_rescan_notices_changes(tmp_path):
    root = tmp_path / "r"
    make_tree(root, tmp_path / "outside")
    before = parse_manifest_lines("box", run_script(manifest_source(), ["--root", str(root)]))
    (root / "metrics.json").write_text('{"acc": 2, "more": true}')
    (root / "new.pt").write_bytes(b"x")
    (root / "empty.log").unlink()
    after = parse_manifest_lines(
        "box", run_script(manifest_source(), ["--root", str(root), "--no-hash"])
    )
    assert not after.hashed and all(e.sha256 is None for e in after.entries)
    diff = compare(before, after)
    assert [e.path for e in diff.added] == ["new.pt"]
    assert [e.path for e in diff.removed] == ["empty.log"]
    assert [new.path for _, new in diff.changed] == ["metrics.json"]
    assert not diff.unchanged and "changed: metrics.json" in diff.describe()


def test_command_quotes_roots_and_carries_the_scan_on_one_line():
    command = manifest_command(["/data/my runs", "$(touch /tmp/pwned)"], hash_files=False)
    words = shlex.split(command)
    assert words[:4] == ["python3", "-S", "-u", "-c"] and "\n" not in command
    assert words[5:] == ["--root", "/data/my runs", "--root", "$(touch /tmp/pwned)", "--no-hash"]
    # The program is the bundled scan, whole (zlib'd and base64'd into one line).
    packed = words[4].split("b64decode('")[1].split("'")[0]
    assert zlib.decompress(base64.b64decode(packed)).decode() == manifest_source()
    stdin = manifest_command(["/r"], inline=False)
    assert shlex.split(stdin) == ["python3", "-S", "-u", "-", "--root", "/r"]


def test_cut_off_output_is_never_a_manifest():
    lines = [
        json.dumps({"type": "start", "v": 1, "taken_at": 1.0}),
        json.dumps({"type": "root", "index": 0, "given": "/r", "path": "/r", "error": None}),
        json.dumps(
            {"type": "file", "root": 0, "path": "a", "size": 1, "mtime": 1.0, "sha256": "x"}
        ),
    ]
    with pytest.raises(ManifestError, match="did not finish"):
        parse_manifest_lines("box", lines)
    with pytest.raises(ManifestError):
        parse_manifest_lines("box", ["not json"])


def test_unsafe_paths_from_the_box_are_refused():
    done = {"type": "done", "taken_at": 1.0, "finished_at": 2.0}
    lines = [
        {"type": "start", "v": 1, "taken_at": 1.0},
        {"type": "root", "index": 0, "given": "/r", "path": "/r", "error": None},
        *(
            {"type": "file", "root": 0, "path": p, "size": 1, "mtime": 1.0, "sha256": "5" * 64}
            for p in ("../../etc/passwd", "/abs", "a/./b", "ok/file", ".rgt/manifest.json")
        ),
        done,
    ]
    m = parse_manifest_lines("box", [json.dumps(x) for x in lines])
    assert [e.path for e in m.entries] == ["ok/file"]
    assert {r.path for r in m.refused} == {
        "../../etc/passwd",
        "/abs",
        "a/./b",
        ".rgt/manifest.json",
    }
    assert unsafe_path_reason("a/b c/ü.pt") is None


def test_root_labels_and_local_layout():
    assert root_labels(["~/results"]) == ("",)
    assert root_labels(["/workspace/runs", "/data/runs/", "~", "/", "/x/ckpt"]) == (
        "runs-1", "runs-2", "root3", "root4", "ckpt",
    )  # fmt: skip
    roots = (PullRoot(0, "/a/runs", "/a/runs", "runs"), PullRoot(1, "/b", "/b", "b"))
    m = Manifest("h", roots, (ManifestEntry(1, "x/y.pt", 3, 1.0, "s"),))
    assert m.local_relpath(1, "x/y.pt") == "b/x/y.pt"
    assert m.display(0, "z") == "/a/runs/z"
    assert manifest_from_json(json.loads(json.dumps(manifest_to_json(m)))) == m
    assert m.digest == manifest_from_json(manifest_to_json(m)).digest


def test_compare_matches_roots_by_path_and_ignores_order():
    e1, e2 = ManifestEntry(0, "a", 1, 1.0, "h1"), ManifestEntry(1, "b", 2, 2.0, "h2")
    old = Manifest("h", (PullRoot(0, "/x", "/x", "x"), PullRoot(1, "/y", "/y", "y")), (e1, e2))
    swapped = Manifest(
        "h",
        (PullRoot(0, "/y", "/y", "y"), PullRoot(1, "/x", "/x", "x")),
        (ManifestEntry(1, "a", 1, 1.0, "h1"), ManifestEntry(0, "b", 2, 2.0, "h2")),
    )
    assert compare(old, swapped).unchanged
    same_stat_new_hash = Manifest("h", old.roots, (e1, ManifestEntry(1, "b", 2, 2.0, "other")))
    assert [n.sha256 for _, n in compare(old, same_stat_new_hash).changed] == ["other"]


def test_the_manifest_keeps_walk_order_totals_first_and_each_files_mode(tmp_path):
    root = tmp_path / "results"
    modes = {"a/big.bin": 0o600, "a/small.txt": 0o644, "b/run.sh": 0o755, "c.txt": 0o640}
    for rel, mode in modes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(os.urandom(2 << 20 if rel == "a/big.bin" else 10))
        os.chmod(root / rel, mode)
    lines = run_script(manifest_source(), ["--root", str(root)])
    objs = [json.loads(line) for line in lines]
    kinds = [o["type"] for o in objs]
    assert kinds.index("listed") < kinds.index("file")  # totals before any hashing
    listed = objs[kinds.index("listed")]
    assert listed["files"] == 4 and listed["bytes"] == (2 << 20) + 30
    whole = parse_manifest_lines("box", lines)
    assert [e.path for e in whole.entries] == ["c.txt", "a/big.bin", "a/small.txt", "b/run.sh"]
    assert {e.path: e.mode for e in whole.entries} == modes
