"""Helpers for the code-sync tests: local code trees (git and plain), the fleet-file keys
that point a host at one, and a PATH without a given tool."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

SYNC_RECORD = ".rgt-sync.record"  # what syncs installed, in the workdir (box_tree.py)


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` (identity given here: the test machine may have none)."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def write(root: Path, rel: str, text: str, *, executable: bool = False) -> Path:
    """Write ``root/rel`` (parents made); mode 0755 when ``executable``, else 0644."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755 if executable else 0o644)
    return path


def git_tree(root: Path) -> str:
    """A committed repository with an ignored folder, an ignored file and an executable;
    returns HEAD."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    write(root, ".gitignore", "data/\n*.log\n")
    write(root, "src/train.py", "print('train')\n")
    write(root, "src/model/net.py", "NET = 1\n")
    write(root, "run.sh", "#!/bin/sh\necho run\n", executable=True)
    write(root, "data/big.bin", "weights\n")
    write(root, "notes.log", "a log\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return git(root, "rev-parse", "HEAD")


def add_code(hosts_file: Path, code: Path, exclude: tuple[str, ...] = ()) -> None:
    """Give the last ``[[hosts]]`` block of ``hosts_file`` a ``code`` tree and excludes."""
    with hosts_file.open("a") as f:
        f.write(f"\ncode = {json.dumps(str(code))}\n")
        if exclude:
            f.write(f"code_exclude = {json.dumps(list(exclude))}\n")


def path_without(tool: str, into: Path) -> str:
    """A PATH holding every command of the current PATH except ``tool`` (links in
    ``into``): "this machine has no rsync" for a run, without touching the system."""
    into.mkdir(parents=True, exist_ok=True)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            link = into / name
            if name == tool or link.exists() or link.is_symlink():
                continue
            target = os.path.join(folder, name)
            if os.access(target, os.X_OK) and not os.path.isdir(target):
                link.symlink_to(target)
    return str(into)


def box_files(workdir: Path) -> set[str]:
    """Every file and symlink under ``workdir`` (relative), the queue's records and the
    sync record aside."""
    found = set()
    for top, dirs, names in os.walk(workdir):
        dirs[:] = [d for d in dirs if d != ".rgt"]
        for n in names:
            found.add(os.path.relpath(os.path.join(top, n), workdir))
    return found - {SYNC_RECORD}


def staging_left(workdir: Path) -> list[str]:
    """The sync's staging dirs left in ``workdir`` (its record is not one)."""
    return [p for p in os.listdir(workdir) if p.startswith(".rgt-sync.") and p != SYNC_RECORD]


async def older_sync(host: Any, transport: Any) -> None:
    """A sync as an earlier rgt-tui made it: no fleet file held back by its content (the
    test's own ``withhold`` is not passed: nothing is held back by path either)."""
    import pytest

    from rgt_tui.services.code_sync import listing, sync_code

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(listing, "reads_as_fleet_file", lambda path, rel: False)
        await sync_code(host, transport, method="sftp")
