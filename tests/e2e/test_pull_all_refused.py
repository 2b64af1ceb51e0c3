"""`pull --all` with a host that names no pull folders (its default would be the whole
home): the others are pulled, and its line's fix is the fleet file, not "re-run the same
pull (it resumes)", which cannot help (a user's hour)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.cli import exit_codes, main


def test_a_host_with_no_pull_folders_is_told_to_name_them(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "m.json").write_text('{"ok": 1}')
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n'
        f'[[hosts]]\nname = "live"\nssh = "local"\npull = ["{tmp_path / "a"}"]\n'
        '[[hosts]]\nname = "bare"\nssh = "local"\n'
    )
    assert main(["pull", "--all", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    out = capsys.readouterr().out
    assert "names no pull folders" in out, out
    assert "fix: name bare's pull folders in the fleet file" in out, out
    assert "re-run the same pull" not in out, out
    assert (tmp_path / "res" / "live" / "m.json").exists()
