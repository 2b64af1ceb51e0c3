"""fsutil.sync_files: the pull's one way to make parts durable before they are renamed."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rgt_tui.fsutil import sync_files


def _open_written(path: Path, data: bytes) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.write(fd, data)
    return fd


def test_files_on_two_file_systems_are_each_synced(tmp_path: Path) -> None:
    # /dev/shm is a tmpfs on Linux: a second file system beside tmp_path's.
    other = Path("/dev/shm")
    assert os.stat(other).st_dev != os.stat(tmp_path).st_dev
    here = _open_written(tmp_path / "a", b"x" * 10_000)
    there_path = other / f"rgt-sync-{os.getpid()}"
    there = _open_written(there_path, b"y" * 10_000)
    try:
        sync_files([here, there, here])
        assert os.pread(here, 3, 0) == b"xxx" and os.pread(there, 3, 0) == b"yyy"
    finally:
        os.close(here)
        os.close(there)
        there_path.unlink()


def test_a_descriptor_that_is_not_open_is_an_error_not_a_silent_success(tmp_path: Path) -> None:
    fd = _open_written(tmp_path / "a", b"x")
    os.close(fd)
    with pytest.raises(OSError) as caught:
        sync_files([fd])
    assert caught.value.errno == errno.EBADF


def test_nothing_to_sync_is_nothing_done() -> None:
    sync_files([])
