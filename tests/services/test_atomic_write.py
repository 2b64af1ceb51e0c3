"""The one atomic write (rgt_tui.fsutil), as every writer of a local file uses it: the
file keeps its mode, a symlink keeps naming the file, a failed check leaves the old file
whole and no temporary beside it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from rgt_tui.fsutil import replacing
from rgt_tui.services.records import atomic_write_json
from rgt_tui.themes import save_theme


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_record_rewritten_keeps_its_mode_and_a_symlink_keeps_naming_it(tmp_path: Path):
    real = tmp_path / "elsewhere" / "verification.json"
    real.parent.mkdir()
    real.write_text("{}\n")
    real.chmod(0o640)
    link = tmp_path / "verification.json"
    link.symlink_to(real)
    atomic_write_json(link, {"ok": True})
    assert link.is_symlink() and json.loads(real.read_text()) == {"ok": True}
    assert _mode(real) == 0o640
    assert [p.name for p in real.parent.iterdir()] == ["verification.json"]


def test_the_settings_file_keeps_its_mode(tmp_path: Path):
    save_theme("nord", tmp_path)
    settings = next(tmp_path.iterdir())
    assert _mode(settings) == 0o600  # new: private
    settings.chmod(0o644)
    save_theme("dracula", tmp_path)
    assert _mode(settings) == 0o644
    assert json.loads(settings.read_text())["theme"] == "dracula"


def test_a_refused_check_leaves_the_old_file_whole_and_no_temporary(tmp_path: Path):
    path = tmp_path / "hosts.toml"
    path.write_text("old\n")
    with pytest.raises(ValueError), replacing(path, "new\n") as temp:
        assert temp.read_text() == "new\n" and temp.parent == tmp_path
        raise ValueError("would not load")
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hosts.toml"]
