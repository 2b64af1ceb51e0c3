"""Two hosts of one fleet file on one login account share its ~/.rgt/queue (ux-c #1: two
Slurm partitions reached as `local`): a launch of either is refused, naming the other and
the fix, so neither runs, shows nor archives (--fresh) the other's queue."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.cli import exit_codes, main
from rgt_tui.domain.shared_account import sharing_account
from rgt_tui.services.fleet.file import load_fleet


def test_a_launch_on_an_account_another_host_uses_is_refused(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("configs/a.yaml t 1\n")
    (tmp_path / "b.txt").write_text("configs/b.yaml t 1\n")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "part-a"\nssh = "local"\nqueue = "a.txt"\nrun = "true {cfg}"\n'
        '[[hosts]]\nname = "part-b"\nssh = "local"\nqueue = "b.txt"\nrun = "true {cfg}"\n'
    )
    for fresh in ([], ["--fresh"]):
        code = main(["launch", "part-b", "--yes", *fresh, "--hosts", str(hosts)])
        out = capsys.readouterr()
        said = out.out + out.err
        assert code == exit_codes.EXIT_PROBLEMS, said
        assert "part-b and part-a log in to this machine (local)" in said, said
        assert "one account holds one queue (~/.rgt/queue)" in said
        assert "--fresh would archive part-a's queue" in said
    assert not (home / ".rgt" / "queue").exists()  # nothing was launched, nothing archived


def test_only_the_same_user_host_and_port_is_one_account(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "a"\nssh = "root@10.0.0.5:2222"\n'
        '[[hosts]]\nname = "b"\nssh = "root@10.0.0.5:2222"\n'
        '[[hosts]]\nname = "c"\nssh = "root@10.0.0.5:2223"\n'  # another port: another box
        '[[hosts]]\nname = "d"\nssh = "alice@10.0.0.5:2222"\n'  # another user
        '[[hosts]]\nname = "e"\nssh = "root@10.0.0.6"\n'
        '[[hosts]]\nname = "f"\nssh = "root@10.0.0.6:22"\n'  # port 22 said or not
    )
    fleet = load_fleet(hosts)
    shared = {h.name: sharing_account(fleet, h) for h in fleet.hosts}
    assert shared == {"a": ("b",), "b": ("a",), "c": (), "d": (), "e": ("f",), "f": ("e",)}
