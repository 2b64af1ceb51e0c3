"""The pull's hashing and writing threads run below the event loop's priority (Linux)."""

from __future__ import annotations

import hashlib
import os
import threading

from pull_support import MIB, box_results, fast, host_of, pull, random_file, sha

from rgt_tui.services import pull_batch, pull_part
from rgt_tui.services.io_threads import WORKER_NICE, run_io


def _where() -> tuple[str, int]:
    """This thread's name and nice value (Linux: per thread)."""
    return threading.current_thread().name, os.getpriority(os.PRIO_PROCESS, 0)


async def test_io_threads_run_at_a_lower_priority_than_the_loop():
    loop_nice = _where()[1]
    name, nice = await run_io(_where)
    assert name.startswith("rgt-io")
    assert nice == min(19, loop_nice + WORKER_NICE)
    assert _where()[1] == loop_nice  # the loop's own thread is left as it was


async def test_a_pulls_hashing_and_writing_run_on_those_threads(
    make_loopback_fleet, tmp_path, monkeypatch
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    big = random_file(res / "ckpt" / "last.pt", 3 * MIB + 5)
    (res / "metrics.json").write_text('{"loss": 0.5}')
    threads: dict[str, set[str]] = {"part": set(), "batch": set()}
    append, check_write = pull_part.PartWriter._append, pull_batch._check_write

    def recording_append(self, chunks):  # noqa: ANN001
        threads["part"].add(_where()[0])
        return append(self, chunks)

    def recording_check_write(*args):  # noqa: ANN002
        threads["batch"].add(_where()[0])
        return check_write(*args)

    monkeypatch.setattr(pull_part.PartWriter, "_append", recording_append)
    monkeypatch.setattr(pull_batch, "_check_write", recording_check_write)

    result = await pull(host_of(fleet), tmp_path / "local", options=fast())

    dest = tmp_path / "local" / "box1"
    assert result.ok and len(result.pulled) == 2
    assert sha(dest / "ckpt" / "last.pt") == big
    want = hashlib.sha256(b'{"loss": 0.5}').hexdigest()
    assert hashlib.sha256((dest / "metrics.json").read_bytes()).hexdigest() == want
    assert threads["part"] and all(n.startswith("rgt-io") for n in threads["part"])
    assert threads["batch"] and all(n.startswith("rgt-io") for n in threads["batch"])
