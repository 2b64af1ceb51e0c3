"""The user's fleet is not the project's fixture: ``rgt-tui add`` in a checkout writes the
user's ``./hosts.toml`` (ignored by git) and never the shipped ``hosts.example.toml``,
which the tests read as committed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from support import ROOT
from support.cli import rgt

from rgt_tui.services.fleet.file import load_fleet, resolve_fleet_path


def test_add_in_a_checkout_writes_the_users_file_and_leaves_the_example(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    example = checkout / "hosts.example.toml"
    shutil.copy(ROOT / "hosts.example.toml", example)
    before = example.read_bytes()
    # A fresh clone has no fleet file of the user's: the app opens on this machine alone.
    assert resolve_fleet_path(None, {}, checkout) is None

    added = rgt("add", "local", "--name", "here", cwd=checkout, env={"HOME": str(tmp_path)})
    assert added.returncode == 0, added.stderr
    assert example.read_bytes() == before
    assert resolve_fleet_path(None, {}, checkout) == checkout / "hosts.toml"
    assert [h.name for h in load_fleet(checkout / "hosts.toml").hosts] == ["here"]


def test_git_ignores_the_users_fleet_and_keeps_the_example() -> None:
    def ignored(path: str) -> bool:
        check = subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, capture_output=True
        )
        assert check.returncode in (0, 1), check.stderr
        return check.returncode == 0

    assert ignored("hosts.toml")
    assert not ignored("hosts.example.toml")
    assert not ignored("tests/fixtures/hosts.toml")  # only the one at the root is the user's
