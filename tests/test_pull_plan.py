"""Planning a pull against what is already in the local folder (real files, no box)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from rgt_tui.domain.manifest import Manifest, ManifestEntry, PullRoot
from rgt_tui.services import pull_local
from rgt_tui.services.pull_local import FilePlan, PulledRecord, plan_pull


def _entry(path: str, content: bytes) -> ManifestEntry:
    return ManifestEntry(0, path, len(content), 1.0, hashlib.sha256(content).hexdigest())


def _per_file(host_dir: Path, manifest: Manifest, record: PulledRecord) -> list[FilePlan]:
    """The plan as the per-file checks make it, for every entry (the reference)."""
    plans = []
    for e in manifest.entries:
        rel = manifest.local_relpath(e.root, e.path)
        part = pull_local.part_path(rel)
        plans.append(pull_local._plan_one(host_dir, manifest, e, rel, part, record, {}))
    return plans


def test_a_listed_folder_plans_exactly_as_the_per_file_checks(tmp_path, monkeypatch):
    """Files, parts, folders, files where folders go and look-alike names are all
    noticed, and a fresh folder costs no per-file look at the disk."""
    host = tmp_path / "box"
    contents = {f"run/{name}": name.encode() * 50 for name in ("same.pt", "other.pt", "new.pt")}
    contents |= {"run/resumed.pt": b"r" * 5000, "run/dir.pt": b"d", "Case.pt": b"c"}
    contents |= {"run/fresh/deep/a.json": b"{}", "file-in-the-way/x.json": b"[]"}
    manifest = Manifest(
        "box",
        (PullRoot(0, "~/results", "/root/results", ""),),
        tuple(_entry(p, c) for p, c in sorted(contents.items())),
    )
    (host / "run" / "dir.pt").mkdir(parents=True)  # a folder where a file goes
    (host / ".rgt" / "parts" / "run").mkdir(parents=True)
    (host / "run" / "same.pt").write_bytes(contents["run/same.pt"])
    (host / "run" / "other.pt").write_bytes(b"edited locally")
    (host / ".rgt" / "parts" / "run" / "resumed.pt.part").write_bytes(b"r" * 1234)
    (host / "case.pt").write_bytes(b"a look-alike name, not the same file here")
    (host / "file-in-the-way").write_bytes(b"a file where a folder goes")
    os.symlink("/etc/hostname", host / "run" / "new.pt")  # a symlink is never written through
    (host / ".rgt" / "parts" / "run" / "same.pt.part").write_bytes(b"left by a cut-off pull")

    expected = _per_file(host, manifest, PulledRecord())
    plan = plan_pull(host, manifest, None, PulledRecord())

    blocked = next(p for p in plan.files if p.local == "file-in-the-way/x.json")
    assert blocked.action == "conflict" and blocked.note.startswith("file-in-the-way is a file")
    assert [p for p in plan.files if p is not blocked] == [
        p for p in expected if p.local != blocked.local
    ]
    actions = {p.local: (p.action, p.resume_from) for p in plan.files}
    assert actions["run/same.pt"] == ("skip", 0)
    assert not (host / ".rgt" / "parts" / "run" / "same.pt.part").exists()  # useless now
    assert actions["run/other.pt"][0] == actions["run/dir.pt"][0] == "conflict"
    assert actions["run/new.pt"][0] == "conflict"
    assert actions["run/resumed.pt"] == ("pull", 1234)
    assert actions["run/fresh/deep/a.json"] == ("pull", 0)

    # A folder rgt-tui has not written to yet is planned from one listing, not per file.
    looked: list[str] = []
    original = pull_local._plan_one
    monkeypatch.setattr(pull_local, "_plan_one", lambda *a: looked.append(a[3]) or original(*a))
    plan_pull(host, manifest, None, PulledRecord())
    assert "run/fresh/deep/a.json" not in looked and "Case.pt" in looked
