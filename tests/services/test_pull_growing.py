"""A file still being written on the box (a training log in ``{out}``) while it is hashed:
pulled as it was up to the size it had when hashed, never refused, and the next pull
brings the rest, and only the rest (issue ux-e 13). Real loopback boxes; the writer is a process of its own
appending as a training run does."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import MIB
from support.pulls import box_results, fast, host_of, pull
from support.waiting import wait_for

from rgt_tui.cli.pull import format_pull_result
from rgt_tui.content.pull_view import pull_result_lines
from rgt_tui.services.records import load_manifest
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import transport_for

# Appends a log line batch every millisecond (~4 MB/s): a run's log, written without pause.
WRITER = """
import sys, time
with open(sys.argv[1], "ab", buffering=0) as f:
    n = 0
    while True:
        f.write(b"".join(b"step %09d loss 0.%06d\\n" % (n + i, i) for i in range(128)))
        n += 128
        time.sleep(0.001)
"""


@pytest.fixture
def growing_log(make_loopback_fleet) -> Iterator:  # noqa: ANN001
    """(fleet, log path): a 24 MiB log on box1 with a process appending to it."""
    made: list[subprocess.Popen] = []

    async def start():  # type: ignore[no-untyped-def]
        fleet = await make_loopback_fleet(1)
        log = box_results(fleet) / "alpha" / "train.log"
        log.parent.mkdir(parents=True)
        log.write_bytes(b"warm-up line of a long run\n" * (24 * MIB // 27))
        start_size = log.stat().st_size
        made.append(subprocess.Popen([sys.executable, "-c", WRITER, str(log)]))  # noqa: ASYNC220
        # Writing before the pull starts: on a loaded machine the writer's interpreter
        # took longer to start than the scan to hash the file, which then was not growing.
        await wait_for(lambda: log.stat().st_size > start_size, 60, "the writer to append")
        return fleet, log

    start.writers = made  # type: ignore[attr-defined]  # a test may stop them first
    yield start
    for proc in made:
        proc.kill()
        proc.wait()


async def pull_while_growing(fleet, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A pull that saw the log grow while the box hashed it. The window is the box's own
    (from the walk's stat of the file to its open for hashing): on a loaded machine the
    writer may not append inside it, and that pull then takes the file whole, not growing
    (a fresh-clone CI run failed so). Pulled again until one sees it grow: a wait for what
    the test needs, bounded by tries, not by time."""
    for _ in range(30):
        result = await pull(host_of(fleet), tmp_path, options=fast())
        assert result.ok, format_pull_result(result)
        if result.growing:
            return result
    raise AssertionError("no pull in 30 saw the log grow while it was hashed")


def _prefix_sha(path: Path, size: int) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read(size)).hexdigest()


async def test_a_log_still_being_written_is_pulled_as_hashed_and_the_next_pull_brings_more(
    growing_log, tmp_path
):
    fleet, log = await growing_log()
    first = await pull_while_growing(fleet, tmp_path)
    local = tmp_path / "box1" / "alpha" / "train.log"
    assert first.ok, format_pull_result(first)  # never refused, never "NOT COMPLETE"
    assert not first.manifest.refused
    ((path, size),) = first.growing
    assert path == "alpha/train.log" and size == local.stat().st_size >= 24 * MIB // 27 * 27
    # Exactly the box's first bytes, as they were when hashed: the file is longer by now.
    assert log.stat().st_size > size
    assert hashlib.sha256(local.read_bytes()).hexdigest() == _prefix_sha(log, size)
    (entry,) = load_manifest(tmp_path / "box1").entries
    assert entry.growing and entry.size == size  # the record says so, for verify
    summary = format_pull_result(first)
    assert "GROWING   alpha/train.log: still being written on the box; pulled up to" in summary
    assert "REFUSED" not in summary and "MISSING" not in summary
    tab = "\n".join(line.plain for line in pull_result_lines(first))  # the Pulls tab's words
    assert "GROWING   alpha/train.log: still being written on the box; pulled up to" in tab

    second = await pull(host_of(fleet), tmp_path, options=fast())
    assert second.ok, format_pull_result(second)
    # Still growing when the box hashed it again, or not on a loaded machine (the writer
    # may not append inside the hash's window: a fresh-clone CI run failed so): either
    # way the copy here is the box's first bytes, and more of them than before.
    more = local.stat().st_size
    assert more > size and all(grown == more for _, grown in second.growing), second.growing
    assert hashlib.sha256(local.read_bytes()).hexdigest() == _prefix_sha(log, more)
    # Only the rest crossed the wire: the first copy began the part (it crossed whole
    # again before, for a log a pull every quarter hour paid for in full each time).
    (pulled,) = second.pulled
    assert pulled.resumed_from == size, (pulled.resumed_from, size)
    assert second.bytes_received <= more - size + MIB, (second.bytes_received, more, size)
    # The first copy began the second: nothing set aside (a copy per pull would pile up).
    replaced = tmp_path / "box1" / ".rgt" / "replaced"
    assert not replaced.exists() or not list(replaced.rglob("train.log*"))
    assert "REPLACED" not in format_pull_result(second)

    # verify: the copy is what the box hashed (hash-only, a log); the re-scan says the log
    # is still being written, never that it is new on the box.
    transport = transport_for(host_of(fleet))
    try:
        report = await verify_host(host_of(fleet), tmp_path, transport=transport, roster=[])
    finally:
        await transport.close()
    assert [c.status for c in report.checks] == ["hash-only"]
    flags = {f.kind: f.detail for f in report.flags}
    assert "remote-added" not in flags
    # Its words follow what the latest pull saw (h601 #1: on a loaded machine the second
    # pull may not see it grow, and verify then says it changed since the manifest).
    said = flags["remote-changed"]
    if second.growing:
        assert said.startswith("still being written on the box: pulled up to"), said
    else:
        assert said.startswith("changed on the box since the manifest"), said


async def test_a_log_rewritten_rather_than_grown_is_pulled_again_whole(growing_log, tmp_path):
    """The last pull took the file while it was written, and the box then wrote a new,
    longer file in its place: the part starts as the old copy, the hash of the whole says
    it is not this file, and it is pulled again from zero; the old copy is set aside."""
    fleet, log = await growing_log()
    first = await pull_while_growing(fleet, tmp_path)
    assert first.ok and first.growing, format_pull_result(first)
    local = tmp_path / "box1" / "alpha" / "train.log"
    old = local.read_bytes()
    for proc in growing_log.writers:  # the run ended; another wrote the file anew
        proc.kill()
        proc.wait()
    rewritten = b"a new run, a new log\n" * (2 * len(old) // 21)
    log.write_bytes(rewritten)

    again = await pull(host_of(fleet), tmp_path, options=fast())
    assert again.ok, format_pull_result(again)
    assert local.read_bytes() == rewritten and not again.growing
    (pulled,) = again.pulled
    assert pulled.resumed_from == 0 and pulled.replaced is not None  # from zero; kept aside
    assert (tmp_path / "box1" / pulled.replaced).read_bytes() == old
