"""The box's scan against a folder swapped for a link while it runs (h563 #1): a run
re-pointing ``latest/``, or a box racing the scan toward its ``~/.ssh`` or ``/etc``. The
walk lists a folder, and hashing opens a file, only through the folder it found (device
and inode); what was swapped is refused by name, never read."""

from __future__ import annotations

import os
from pathlib import Path

from rgt_tui.agent import manifest as agent
from rgt_tui.domain.manifest_parse import parse_manifest_lines


def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A pull root with two result folders, and a secret outside it."""
    root = tmp_path / "results"
    for rel, data in {"aa/metrics.json": b"{}", "zz/id_ed25519": b"decoy!"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    outside = tmp_path / "keys"
    outside.mkdir()
    (outside / "id_ed25519").write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----")
    (outside / "config").write_bytes(b"Host *")
    return root, outside


def swap(folder: Path, to: Path) -> None:
    """What the race does: the folder moved away, a link to ``to`` in its place."""
    folder.rename(folder.with_name(folder.name + ".orig"))
    os.symlink(to, folder)


def scanned(capsys, root: Path, scanner: type[agent.Scanner], between=None):  # type: ignore[no-untyped-def]
    """The manifest of one root scanned by ``scanner`` (``between``: run after the walk,
    before the hashing), as the client parses it."""
    real = os.path.realpath(os.fsencode(root))
    agent.emit({"type": "start", "v": 1, "taken_at": 1.0})
    agent.emit({"type": "root", "index": 0, "given": str(root), "path": str(root), "error": None})
    s = scanner(0, real, True, [0])
    s.walk()
    if between is not None:
        between()
    s.finish(None)
    agent.emit({"type": "done", "taken_at": 1.0, "finished_at": 2.0, "files": 0, "bytes": 0})
    return parse_manifest_lines("box", capsys.readouterr().out.splitlines())


def test_a_folder_swapped_for_a_link_after_its_parent_was_listed_is_not_walked(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    root, outside = tree(tmp_path)

    class Racing(agent.Scanner):
        def list_folder(self, rel_dir, *args):  # type: ignore[no-untyped-def]
            super().list_folder(rel_dir, *args)
            if rel_dir == b"":  # the root listed, zz lstat'ed as a folder: now swapped
                swap(root / "zz", outside)

    m = scanned(capsys, root, Racing)
    assert {e.path for e in m.entries} == {"aa/metrics.json"}
    assert {r.path: r.reason for r in m.refused} == {"zz": agent.SWAPPED}


def test_a_file_whose_folder_was_swapped_after_the_walk_is_not_read(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root, outside = tree(tmp_path)
    m = scanned(capsys, root, agent.Scanner, between=lambda: swap(root / "zz", outside))
    assert {e.path for e in m.entries} == {"aa/metrics.json"}
    assert {r.path: r.reason for r in m.refused} == {
        "zz/id_ed25519": "its folder was " + agent.SWAPPED
    }


def test_a_file_replaced_in_place_after_the_walk_is_read_as_it_is_now(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    """torch.save writes a new file and renames it over the old one: a new inode in the
    same folder, a result like any other, hashed as it is now."""
    import hashlib

    root, _ = tree(tmp_path)
    fresh = root / "aa" / "tmp"

    def saved() -> None:
        fresh.write_bytes(b'{"acc": 2}')
        fresh.replace(root / "aa" / "metrics.json")

    m = scanned(capsys, root, agent.Scanner, between=saved)
    got = {e.path: e.sha256 for e in m.entries}
    assert got["aa/metrics.json"] == hashlib.sha256(b'{"acc": 2}').hexdigest()
    assert not m.refused


def test_a_file_swapped_for_a_link_after_the_walk_is_not_followed(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root, outside = tree(tmp_path)

    def linked() -> None:
        (root / "zz" / "id_ed25519").unlink()
        os.symlink(outside / "id_ed25519", root / "zz" / "id_ed25519")

    m = scanned(capsys, root, agent.Scanner, between=linked)
    assert {e.path for e in m.entries} == {"aa/metrics.json"}
    assert "cannot read" in {r.path: r.reason for r in m.refused}["zz/id_ed25519"]


def test_a_folder_above_a_file_swapped_after_the_walk_is_not_followed(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    """Not only the file's own folder: any step between it and the root (h564 #1 asked)."""
    root = tmp_path / "results"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "w.pt").write_bytes(b"weights")
    outside = tmp_path / "elsewhere"
    (outside / "b").mkdir(parents=True)
    (outside / "b" / "w.pt").write_bytes(b"someone else's")
    m = scanned(capsys, root, agent.Scanner, between=lambda: swap(root / "a", outside))
    assert m.entries == ()
    assert {r.path: r.reason for r in m.refused} == {"a/b/w.pt": "its folder was " + agent.SWAPPED}


def test_a_folder_above_the_root_swapped_before_the_walk_is_not_followed(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    """The root's realpath held no link when the scan began; a step of it swapped for a
    link to ~/.aws since is refused, not walked as the root (h564 #5)."""
    root = tmp_path / "home" / "work" / "exp"
    root.mkdir(parents=True)
    (root / "metrics.json").write_bytes(b"{}")
    aws = tmp_path / "home" / ".aws"
    (aws / "exp").mkdir(parents=True)
    (aws / "exp" / "credentials").write_bytes(b"aws_secret_access_key=k")

    class Racing(agent.Scanner):
        def walk(self) -> None:
            swap(tmp_path / "home" / "work", aws)
            super().walk()

    m = scanned(capsys, root, Racing)
    assert m.entries == ()
    assert {r.path: r.reason for r in m.refused} == {".": agent.SWAPPED}
