"""Planning a pull against what is already in the local folder (real files, no box)."""

from __future__ import annotations

import hashlib
import os

from rgt_tui.domain.manifest import Manifest, ManifestEntry, ManifestLink, PullRoot
from rgt_tui.services.pull.local_tree import HostTree
from rgt_tui.services.pull.plan import PulledRecord, plan_pull


def _entry(path: str, content: bytes) -> ManifestEntry:
    return ManifestEntry(0, path, len(content), 1.0, hashlib.sha256(content).hexdigest())


def test_each_local_state_gets_its_action(tmp_path):
    """Files, parts, folders, files where folders go and links are all noticed."""
    host = tmp_path / "box"
    contents = {f"run/{name}": name.encode() * 50 for name in ("same.pt", "other.pt", "new.pt")}
    contents |= {"run/resumed.pt": b"r" * 5000, "run/dir.pt": b"d"}
    contents |= {"run/fresh/deep/a.json": b"{}", "file-in-the-way/x.json": b"[]"}
    contents |= {"linked/y.json": b"{}", "mine.pt": b"m", "mylinks/z.json": b"{}"}
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
    (host / "file-in-the-way").write_bytes(b"a file where a folder goes")
    os.symlink("/etc/hostname", host / "run" / "new.pt")  # the box's link, once
    os.symlink("/etc", host / "linked")  # a link where the box now has a folder
    os.symlink("/etc/hostname", host / "mine.pt")  # the user's own links
    os.symlink("/etc", host / "mylinks")
    # The last pull's manifest: the two links of the box it made here.
    last = Manifest(
        "box",
        manifest.roots,
        (),
        links=(ManifestLink(0, "run/new.pt", "x"), ManifestLink(0, "linked", "y")),
    )
    (host / ".rgt" / "parts" / "run" / "same.pt.part").write_bytes(b"left by a cut-off pull")

    tree = HostTree(host)
    try:
        plan = plan_pull(tree, manifest, last, PulledRecord())
    finally:
        tree.close()

    actions = {p.local: (p.action, p.resume_from) for p in plan.files}
    assert actions["run/same.pt"] == ("skip", 0)
    assert not (host / ".rgt" / "parts" / "run" / "same.pt.part").exists()  # useless now
    assert actions["run/other.pt"][0] == actions["run/dir.pt"][0] == "conflict"
    assert actions["file-in-the-way/x.json"][0] == "conflict"
    assert "file-in-the-way is a file" in next(
        p.note for p in plan.files if p.local == "file-in-the-way/x.json"
    )
    # Links are never read through: each the last pull made is replaced when the file or
    # folder lands; the user's own, where a file or a folder goes, are conflicts.
    assert actions["run/new.pt"] == ("pull", 0)
    assert actions["linked/y.json"] == ("pull", 0)
    notes = {p.local: p.note for p in plan.files}
    assert actions["mine.pt"][0] == actions["mylinks/z.json"][0] == "conflict"
    assert "a link is in the way and rgt-tui did not make it" in notes["mine.pt"]
    assert (
        "mylinks is a link rgt-tui did not make, where a folder must go" in notes["mylinks/z.json"]
    )
    assert actions["run/resumed.pt"] == ("pull", 1234)
    assert actions["run/fresh/deep/a.json"] == ("pull", 0)
    assert os.readlink(host / "linked") == "/etc"  # planning changes nothing
