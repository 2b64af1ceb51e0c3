"""Local writes for pulls: the O_DIRECT appender and the grouped sync, on real file systems."""

from __future__ import annotations

import errno
import hashlib
import os
import random

import pytest
from pull_support import tmpfs

from rgt_tui.services.durable import ALIGN, BUFFER, Appender, sync_files


def _chunks(data: bytes, rng: random.Random) -> list[bytes]:
    """``data`` cut at random places: SFTP blocks, a short last block, single bytes."""
    out, at = [], 0
    while at < len(data):
        n = rng.choice([1, 7, ALIGN - 1, ALIGN, ALIGN + 1, 255 * 1024, 1 << 20])
        out.append(data[at : at + n])
        at += n
    return out


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "plain"])
@pytest.mark.parametrize("existing", [0, 1, ALIGN - 1, ALIGN, 5000, 3 * ALIGN + 17])
def test_appender_writes_every_byte_once_in_order(tmp_path, direct, existing):
    rng = random.Random(existing)
    head = rng.randbytes(existing)
    body = rng.randbytes(BUFFER + 3 * 255 * 1024 + 1234)  # more than one buffer's worth
    path = tmp_path / "f.part"
    path.write_bytes(head)
    seen = hashlib.sha256()
    fd = os.open(path, os.O_WRONLY)
    file = Appender(path, fd, existing, direct=direct)
    assert file.direct == direct  # tmp_path is ext4 here and in CI, which has O_DIRECT
    pieces = _chunks(body, rng)
    for start in range(0, len(pieces), 5):  # batches of a few blocks, like the puller's
        file.append(pieces[start : start + 5], seen.update)
        assert file.pending < ALIGN or not direct
    file.close(sync=True)
    assert path.read_bytes() == head + body
    assert seen.hexdigest() == hashlib.sha256(body).hexdigest()
    assert file.offset == existing + len(body)


def test_abandon_keeps_what_arrived_for_a_resume(tmp_path):
    path = tmp_path / "f.part"
    path.touch()
    data = os.urandom(3 * ALIGN + 100)
    file = Appender(path, os.open(path, os.O_WRONLY), 0)
    file.append([data], lambda _: None)
    assert file.pending == 100  # the last, partial block waits for more
    file.abandon()
    assert path.read_bytes() == data


def test_full_disk_raises_enospc_and_keeps_the_written_part(tmp_path):
    with tmpfs(tmp_path / "disk", size="2m") as disk:
        path = disk / "big.part"
        path.touch()
        file = Appender(path, os.open(path, os.O_WRONLY), 0)
        data = os.urandom(4 << 20)
        with pytest.raises(OSError) as caught:
            file.append([data], lambda _: None)
        assert caught.value.errno == errno.ENOSPC
        file.abandon()
        kept = path.read_bytes()
        assert 0 < len(kept) < len(data) and data.startswith(kept)


def test_sync_files_syncs_a_group_and_reports_errors(tmp_path):
    fds = []
    for i in range(3):
        fd = os.open(tmp_path / f"f{i}", os.O_WRONLY | os.O_CREAT)
        os.write(fd, b"x" * 10)
        fds.append(fd)
    try:
        sync_files(fds)  # no error on a healthy disk
        sync_files([])
    finally:
        for fd in fds:
            os.close(fd)
    with pytest.raises(OSError):
        sync_files([fds[0]])  # closed now: EBADF, not silence
