"""`add`'s pull-folders answer refuses a run template typed one question late (hour s17b
#13e): it was written to hosts.toml as a relative pull folder, and the pull refused it
later without the line."""

from __future__ import annotations

import pytest

from rgt_tui.services.fleet.add_keys import AddRefused, read_pull


def test_a_run_template_is_no_pull_folder_and_folders_still_are(tmp_path) -> None:
    fleet = tmp_path / "hosts.toml"
    with pytest.raises(AddRefused) as refused:
        read_pull("python3 train.py --config {cfg} --out {out}", "~/runs", fleet)
    assert "holds {cfg}, a run template's field" in str(refused.value), refused.value
    assert read_pull("~/runs, /workspace/out", "~/runs", fleet) == ("~/runs", "/workspace/out")
