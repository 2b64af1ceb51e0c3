"""How a pull reads large files from the box: reads in flight sized to the measured round
trip, and an SFTP session of its own for each file in flight."""

from __future__ import annotations

from pathlib import PurePosixPath

import asyncssh
from pull_support import MIB, box_results, fast, host_of, pull, random_file, sha

from rgt_tui.services.remote_file import MIN_READS, reads_in_flight

BLOCK = 256 << 10


def test_reads_in_flight_follow_the_round_trip() -> None:
    assert reads_in_flight(None, BLOCK, 16) == 16  # nothing measured: the most allowed
    assert reads_in_flight(0.0002, BLOCK, 16) == MIN_READS  # loopback: the floor
    # 20 ms: twice the round trip at 64 MB/s is 2.56 MB, ten reads of 256 KiB.
    assert reads_in_flight(0.02, BLOCK, 16) == 10
    assert reads_in_flight(0.3, BLOCK, 16) == 16  # a far box: the options' cap
    assert reads_in_flight(0.0002, BLOCK, 2) == 2  # a cap below the floor still holds


async def test_large_files_in_flight_each_use_a_session_of_their_own(
    make_loopback_fleet, tmp_path, monkeypatch
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    digests = {f"ckpt_{i}.pt": random_file(res / f"ckpt_{i}.pt", 3 * MIB + i) for i in range(3)}
    opened_on: dict[str, asyncssh.SFTPClient] = {}
    original = asyncssh.SFTPClient.open

    async def open_(self, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened_on[PurePosixPath(path).name] = self
        return await original(self, path, *args, **kwargs)

    monkeypatch.setattr(asyncssh.SFTPClient, "open", open_)
    result = await pull(host_of(fleet), tmp_path, options=fast(concurrency=3, stream_large=False))

    assert result.ok
    assert all(sha(tmp_path / "box1" / name) == d for name, d in digests.items())
    assert set(opened_on) == set(digests)
    assert len({id(client) for client in opened_on.values()}) == 3
