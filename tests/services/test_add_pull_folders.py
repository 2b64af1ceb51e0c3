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


def test_a_relative_folder_is_refused_as_the_fleet_file_refuses_it(tmp_path) -> None:
    """A relative durable_dir or pull folder names two places on the box (a run's workdir,
    ssh's home): add asks again rather than writing it (s36 acts hour #1)."""
    from rgt_tui.services.fleet.add_keys import read_folder

    fleet = tmp_path / "hosts.toml"
    with pytest.raises(AddRefused) as refused:
        read_folder("durable_dir", "relative/results", "~", fleet)
    assert refused.value.field == "durable_dir"
    assert '"relative/results" is relative' in str(refused.value), refused.value
    assert 'e.g. "~/relative/results"' in str(refused.value)
    with pytest.raises(AddRefused) as pulled:
        read_pull("~/runs, out", "~/runs", fleet)
    assert pulled.value.field == "pull" and '"out" is relative' in str(pulled.value)
    assert read_folder("durable_dir", "$HOME/runs", "~", fleet) == "$HOME/runs"
