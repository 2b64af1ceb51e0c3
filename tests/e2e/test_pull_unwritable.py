"""A results folder that cannot be written (here: below a file, which even root cannot
write into; a read-only mount or another user's folder fail the same way) stops the pull
with one line naming the folder and the fix — no traceback, for one host or ``--all``,
and nothing is asked of the box (a user's hour: a read-only mount printed six)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.cli import exit_codes, main


def _fleet(tmp_path: Path) -> Path:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.json").write_text('{"ok": 1}')
    (tmp_path / "plain-file").write_text("not a folder")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[fleet]\nresults_dir = "{tmp_path / "plain-file" / "res"}"\n'
        f'[[hosts]]\nname = "one"\nssh = "local"\npull = ["{tmp_path / "a"}"]\n'
        f'[[hosts]]\nname = "two"\nssh = "local"\npull = ["{tmp_path / "b"}"]\n'
    )
    return hosts


def test_one_host_is_told_which_folder_and_the_fix(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = _fleet(tmp_path)
    assert main(["pull", "one", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    folder = tmp_path / "plain-file" / "res" / "one"
    assert f"one: cannot write to {folder}: Not a directory; nothing was pulled" in err, err
    assert "fix: make that folder writable, or set results_dir under [fleet]" in err, err


def test_pull_all_names_every_host_once_without_a_traceback(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = _fleet(tmp_path)
    assert main(["pull", "--all", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "never retrieved" not in out + err, out + err
    for name in ("one", "two"):
        folder = tmp_path / "plain-file" / "res" / name
        assert f"cannot write to {folder}: Not a directory" in out + err, out + err
