"""The record of files a reclaim left with one copy here (``services.reclaimed``): kept
per box, merged, and refused with the file named when it is damaged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rgt_tui.services.reclaimed import (
    ReclaimedFile,
    load_reclaimed,
    reclaimed_path,
    record_reclaimed,
)


def _file(local: str) -> ReclaimedFile:
    return ReclaimedFile(local, f"/box/results/{local}", 3, 1.5, "ab" * 32, "verified")


def test_files_are_kept_per_box_and_merged(tmp_path: Path) -> None:
    record_reclaimed(tmp_path, "box-a", [_file("cellA/m.json")])
    record_reclaimed(tmp_path, "box-a", [_file("cellB/m.json")])
    record_reclaimed(tmp_path, "box-b", [_file("other.json")])
    assert [f.local for f in load_reclaimed(tmp_path, "box-a")] == ["cellA/m.json", "cellB/m.json"]
    # Another box under the same name (re-created) has none of them; no box, none.
    assert [f.local for f in load_reclaimed(tmp_path, "box-b")] == ["other.json"]
    assert load_reclaimed(tmp_path, "box-c") == () and load_reclaimed(tmp_path, None) == ()


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        json.dumps({"boxes": {"box-a": {"x": {"remote": "r"}}}}),
        json.dumps({"boxes": []}),
        # A path that would reach outside the host's folder is not the record's to name.
        json.dumps(
            {"boxes": {"box-a": {"/etc/passwd": {**_file("x").__dict__, "local": "/etc/passwd"}}}}
        ),
        json.dumps(
            {"boxes": {"box-a": {"a/../../x": {**_file("x").__dict__, "local": "a/../../x"}}}}
        ),
        json.dumps({"boxes": {"box-a": {"x": {**_file("x").__dict__, "status": "corrupt"}}}}),
    ],
)
def test_a_damaged_record_is_named_never_read_as_empty(tmp_path: Path, text: str) -> None:
    reclaimed_path(tmp_path).parent.mkdir(parents=True)
    reclaimed_path(tmp_path).write_text(text)
    with pytest.raises(ValueError, match=r"reclaimed\.json"):
        load_reclaimed(tmp_path, "box-a")
