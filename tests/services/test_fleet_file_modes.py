"""The fleet file holds teardown commands and their API keys: ``add`` never makes a copy
of it that others may read, not even for the moment before it is narrowed."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from rgt_tui.fsutil import new_temp
from rgt_tui.services.fleet.add_host import NewHost, read_target
from rgt_tui.services.fleet.append import add_to_fleet

FLEET = '[[hosts]]\nname = "a"\nssh = "root@198.51.100.1"\nteardown = "curl -H key:SECRET x"\n'


@pytest.fixture
def open_umask() -> Iterator[None]:
    """Umask 000: whatever a file is created with is what it gets."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("original", [None, 0o600, 0o640])
def test_the_temp_copy_has_its_final_mode_before_a_byte_is_written(
    tmp_path: Path, open_umask: None, original: int | None
):
    fd, _ = new_temp(tmp_path / "hosts.toml", original or 0o600)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    assert st.st_size == 0  # nothing written yet...
    assert stat.S_IMODE(st.st_mode) == (original or 0o600)  # ...and already this narrow


def test_a_new_fleet_file_is_0600_and_an_old_one_keeps_its_mode(tmp_path: Path, open_umask: None):
    target = read_target("root@198.51.100.1").target
    fresh = tmp_path / "fresh.toml"
    add_to_fleet(NewHost("b", target, "generic-ssh"), fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600  # was 0666 under this umask
    kept = tmp_path / "kept.toml"
    kept.write_text(FLEET)
    kept.chmod(0o600)
    add_to_fleet(NewHost("b", target, "generic-ssh"), kept)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
