"""A pull's width follows the link (issue 44): on a near link one large file at a time
through one SFTP session (more only cost CPU on both ends), across a far one 4 files × 2
sessions (one session's window cannot fill it). The round trip is estimated from how
long the first SFTP session took to open; `--jobs N` keeps N whatever the link. Real
OpenSSH sshd, and a real relay adding delay (scripts/far_link.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import MIB
from support.far_relay import far_relay, relay_listening
from support.pulls import fast, random_file, sha
from support.sshd import OpenSshServer
from support.waiting import wait_for

from rgt_tui.cli.pull import format_pull_result
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.pull import PullOptions, pull_host
from rgt_tui.services.pull.width import copy_width
from rgt_tui.transport import transport_for


@pytest.mark.parametrize(
    ("rtt_ms", "width"),
    [(None, (4, 2)), (0, (1, 1)), (4, (1, 1)), (13, (1, 1)), (15, (2, 1)), (30, (3, 1)), (50, (4, 1)),
     (100, (4, 2)), (200, (4, 2))],
)  # fmt: skip
def test_the_width_is_what_the_round_trip_needs(rtt_ms: float | None, width: tuple) -> None:
    rtt = None if rtt_ms is None else rtt_ms / 1000
    assert copy_width(PullOptions(), rtt) == width


def test_a_chosen_width_is_kept_and_the_most_is_a_cap() -> None:
    assert copy_width(PullOptions(adapt_width=False), 0.0) == (4, 2)  # --jobs given
    assert copy_width(PullOptions(concurrency=2), 0.2) == (2, 2)
    assert copy_width(PullOptions(concurrency=1, lanes_per_file=1), 0.2) == (1, 1)


async def _pull(hosts: Path, out: Path, options: PullOptions):
    host = load_fleet(hosts).host("real1")
    transport = transport_for(host)
    try:
        return await pull_host(host, out, transport, options=options)
    finally:
        await transport.close()


async def test_a_near_box_is_pulled_narrow_and_a_far_one_wide(
    openssh_server: OpenSshServer, tmp_path: Path
) -> None:
    res = openssh_server.workdir / "results"
    digests = {f"c{i}.pt": random_file(res / f"c{i}.pt", 2 * MIB + i) for i in range(3)}

    adapt = fast(adapt_width=True)
    near = await _pull(openssh_server.hosts_file, tmp_path / "near", adapt)
    assert near.ok and near.width_rtt_s is not None
    # Narrow on a quiet machine ((1, 1): a session opens in a few ms here); a loaded one
    # can take longer to start sftp-server, and the estimate errs towards more sessions.
    assert near.width == copy_width(adapt, near.width_rtt_s)
    files, sessions = near.width
    upto = "up to " if files > 1 else ""
    assert f"  large files: {upto}{files} at a time, {sessions} SFTP session" in (
        format_pull_result(near)
    )
    # --jobs 3: three at once whatever the link.
    chosen = await _pull(openssh_server.hosts_file, tmp_path / "jobs", fast(concurrency=3))
    assert chosen.ok and chosen.width == (3, 2)

    with far_relay(openssh_server, 60) as hosts:  # 120 ms round trip
        await wait_for(lambda: relay_listening(hosts), 30, "the relay to listen")
        far = await _pull(hosts, tmp_path / "far", fast(adapt_width=True))
    assert far.ok and far.width == (4, 2), (far.width, far.width_rtt_s)
    assert far.width_rtt_s is not None and far.width_rtt_s >= 0.12
    assert far.width_rtt_s - near.width_rtt_s > 0.06  # the relay's 120 ms, seen
    for out in ("near", "jobs", "far"):
        assert all(sha(tmp_path / out / "real1" / n) == d for n, d in digests.items())
