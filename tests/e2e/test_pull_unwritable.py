"""A results folder that cannot be written (below a file, which even root cannot write
into; a read-only mount or another user's folder) stops the pull with one line naming
what is in the way and the fix — no traceback, for one host or ``--all``, and nothing is
asked of the box (a user's hour: a read-only mount printed six tracebacks)."""

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
    folder, blocker = tmp_path / "plain-file" / "res" / "one", tmp_path / "plain-file"
    said = f"one: cannot write to {folder}: {blocker} is a file, not a folder; nothing was pulled"
    assert said in err, err
    assert "fix: move that file away, or set results_dir under [fleet]" in err, err


def test_pull_all_names_every_host_once_without_a_traceback(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = _fleet(tmp_path)
    assert main(["pull", "--all", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "never retrieved" not in out + err, out + err
    for name in ("one", "two"):
        folder = tmp_path / "plain-file" / "res" / name
        assert f"cannot write to {folder}: {tmp_path / 'plain-file'} is a file" in out, out


def test_a_records_folder_that_cannot_be_made_is_named_itself(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The host's folder is fine but its ``.rgt`` is in the way (a file here; a read-only
    ``.rgt`` alike): the message names ``.rgt``, not the writable folder above it."""
    hosts = _fleet(tmp_path)
    (tmp_path / "res" / "one").mkdir(parents=True)
    (tmp_path / "res" / "one" / ".rgt").write_text("in the way")
    hosts.write_text(
        hosts.read_text().replace(str(tmp_path / "plain-file" / "res"), str(tmp_path / "res"))
    )
    assert main(["pull", "one", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    err = capsys.readouterr().err
    assert f"{tmp_path / 'res' / 'one' / '.rgt'} is a file, not a folder" in err, err
