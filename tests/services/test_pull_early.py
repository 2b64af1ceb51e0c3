"""Copies that start on the walk's listing while the box still hashes (issue 33).

The box is a real loopback box running the real scan; ``HeldScan`` only holds back the
scan's lines after its ``listed`` line (as a box still hashing a large result set would)
and, for the lying-box cases, edits the ``entry`` lines the box printed.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable

import pytest
from support import MIB
from support.machine import tmpfs
from support.pulls import box_results, fast, host_of, pull, random_file, sha
from support.waiting import wait_for

from rgt_tui.services.pull import NotEnoughSpace, PullError, pull_host
from rgt_tui.services.pull.budget import Bandwidth
from rgt_tui.services.records import pulled_path
from rgt_tui.transport import transport_for
from rgt_tui.transport.base import Transport


class HeldScan:
    """The pull's transport, with the results scan's hashes held back until ``release``."""

    def __init__(
        self,
        inner: Transport,
        edit: Callable[[dict], dict] | None = None,
        extra: tuple[dict, ...] = (),
        *,
        cut: bool = False,
        tar_stalls_after: int | None = None,
    ) -> None:
        self.inner = inner
        self.edit = edit  # an entry line's object -> what the box prints instead
        self.extra = extra  # entry lines the box adds to its listing
        self.cut = cut  # the scan's output ends at the release (its python died mid-hash)
        self.tar_stalls_after = tar_stalls_after  # bytes of the tar stream, then silence
        self.released = asyncio.Event()
        self.listed = asyncio.Event()
        self.tar_stalled = asyncio.Event()

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)

    async def stream_lines(self, command: str, **kw: object):  # type: ignore[no-untyped-def]
        held = "--list-first" in command
        async for line in self.inner.stream_lines(command, **kw):
            if held and self.edit is not None and '"type": "entry"' in line:
                line = json.dumps(self.edit(json.loads(line)), sort_keys=True)
            if held and '"type": "listed"' in line:
                for entry in self.extra:
                    yield json.dumps(entry, sort_keys=True)
            yield line
            if held and '"type": "listed"' in line:
                self.listed.set()
                await self.released.wait()
                if self.cut:
                    return

    async def stream_bytes(self, command: str, **kw: object):  # type: ignore[no-untyped-def]
        sent, limit = 0, self.tar_stalls_after
        async for chunk in self.inner.stream_bytes(command, **kw):
            if limit is None or not command.startswith("tar "):
                yield chunk
                continue
            for at in range(0, len(chunk), 4096):  # a slow far link: a little at a time
                yield chunk[at : at + 4096]
                sent += 4096
                if sent >= limit:
                    self.tar_stalled.set()
                    await asyncio.Event().wait()  # the stream stays open, silent


async def _pull_held(host, results, held: HeldScan, **kw):  # type: ignore[no-untyped-def]
    try:
        return await pull_host(host, results, held, **kw)  # type: ignore[arg-type]
    finally:
        await held.inner.close()


async def test_copies_start_while_the_box_hashes_and_count_only_after_its_hashes(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    big = random_file(res / "ckpt" / "best.pt", 6 * MIB)
    for i in range(3):
        (res / f"eval_{i}.json").write_text(json.dumps({"i": i}))
    host = host_of(fleet)
    held = HeldScan(transport_for(host))
    seen = []
    pulling = asyncio.ensure_future(
        _pull_held(
            host, tmp_path, held, options=fast(progress_interval_s=0), on_progress=seen.append
        )
    )
    dest = tmp_path / "box1"
    # Every byte of the checkpoint is here (in its part) while the box has not yet told
    # a single hash: the copy did not wait for the hashing.
    part = dest / ".rgt" / "parts" / "ckpt" / "best.pt.part"
    await wait_for(lambda: part.exists() and part.stat().st_size == 6 * MIB, 30, "early copy")
    assert not held.released.is_set() and not pulling.done()
    assert any(p.phase == "pulling" and "still hashing" in p.message for p in seen)
    # ...and nothing counts before its hash: not installed, not recorded.
    assert not (dest / "ckpt" / "best.pt").exists() and not (dest / "eval_0.json").exists()
    assert not pulled_path(dest).exists()

    held.released.set()
    result = await asyncio.wait_for(pulling, 60)
    assert result.ok and len(result.pulled) == 4
    assert sha(dest / "ckpt" / "best.pt") == big
    assert json.loads((dest / "eval_2.json").read_text()) == {"i": 2}
    assert not part.exists()


async def test_a_listing_that_is_not_the_manifest_counts_for_nothing(make_loopback_fleet, tmp_path):
    """A box whose walk lists a file smaller than it then hashes (it grew), one larger
    (it shrank, or was rewritten), and a file it never hashes (gone by then): the grown
    file's early bytes stay and only the rest comes (its hash decides), the shrunk one's
    early part is dropped and it is pulled as the manifest lists it; the third is
    neither pulled nor failed."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    grown = random_file(res / "grown.pt", 3 * MIB)
    shrunk = random_file(res / "shrunk.pt", 1 * MIB)
    (res / "small.json").write_text("{}")

    def grew(entry: dict) -> dict:
        listed = {"grown.pt": 2 * MIB, "shrunk.pt": 1 * MIB + 4096}.get(entry["path"])
        return entry if listed is None else {**entry, "size": listed}

    ghost = {"type": "entry", "n": 99, "root": 0, "path": "ghost.pt", "size": 2 * MIB}
    ghost.update(mtime=1.0, mode=0o644)
    host = host_of(fleet)
    held = HeldScan(transport_for(host), grew, (ghost,))
    held.released.set()  # nothing held back: the listing's lies alone are the test
    result = await _pull_held(host, tmp_path, held, options=fast())
    dest = tmp_path / "box1"
    assert result.ok, result.failed
    assert sorted(f.path for f in result.pulled) == ["grown.pt", "shrunk.pt", "small.json"]
    assert sha(dest / "grown.pt") == grown and sha(dest / "shrunk.pt") == shrunk
    # Each file's bytes crossed once: the grown file's first 2 MiB were not fetched again
    # (they were, before: 5 MiB for its 3), the shrunk file's part was read to its end.
    assert result.bytes_received <= 4 * MIB + 64 * 1024, result.bytes_received
    assert not (dest / "ghost.pt").exists() and not result.failed
    assert not list((dest / ".rgt" / "parts").rglob("*.part"))


async def test_a_drop_while_the_box_hashes_resumes_the_early_copies_from_their_parts(
    make_loopback_fleet, tmp_path
):
    """The connection drops while early copies run and the box has told no hash yet: the
    pull reconnects, scans again, and resumes each early file from its part."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    big = random_file(res / "ckpt" / "best.pt", 24 * MIB)
    (res / "metrics.json").write_text('{"acc": 1}')
    host = host_of(fleet)
    held = HeldScan(transport_for(host))
    slow = Bandwidth.from_mbit(80)
    pulling = asyncio.ensure_future(
        # 80 Mbit/s: the 24 MiB take about 2.5 s, so the drop comes mid-file.
        _pull_held(host, tmp_path, held, options=fast(lanes_per_file=1, budget=slow))
    )
    part = tmp_path / "box1" / ".rgt" / "parts" / "ckpt" / "best.pt.part"
    await wait_for(lambda: part.exists() and part.stat().st_size >= 4 * MIB, 30, "early bytes")
    await held.inner.close()  # the link goes: the early copy and the held scan both fail
    held.released.set()  # the scan after the reconnect is not held
    result = await asyncio.wait_for(pulling, 60)
    assert result.ok and sha(tmp_path / "box1" / "ckpt" / "best.pt") == big
    (pulled,) = [f for f in result.pulled if f.path == "ckpt/best.pt"]
    assert pulled.resumed_from >= 4 * MIB
    assert json.loads((tmp_path / "box1" / "metrics.json").read_text()) == {"acc": 1}


async def test_a_box_lost_while_it_hashes_keeps_the_parts_and_a_rerun_resumes(
    make_loopback_fleet, tmp_path
):
    """The box goes away for good before it has told any hash: the pull fails with what
    the early copies did (nothing counted, the parts kept), and the next pull resumes."""
    fleet = await make_loopback_fleet(1)
    digest = random_file(box_results(fleet) / "last.pt", 24 * MIB)
    host, box = host_of(fleet), fleet.box("box1")
    held = HeldScan(transport_for(host))
    slow = Bandwidth.from_mbit(80)
    pulling = asyncio.ensure_future(
        _pull_held(host, tmp_path, held, options=fast(max_attempts=2, budget=slow))
    )
    part = tmp_path / "box1" / ".rgt" / "parts" / "last.pt.part"
    await wait_for(lambda: part.exists() and part.stat().st_size >= 4 * MIB, 30, "early bytes")
    await box.stop()
    held.released.set()  # the scan's stream meets the lost connection too
    with pytest.raises(PullError, match="lost the connection") as caught:
        await asyncio.wait_for(pulling, 60)
    assert caught.value.result is not None and caught.value.result.pulled == ()
    # Where the parts are, as Ctrl-C's message says it (s36 faults #5).
    assert f"partial files are kept in {part.parent}/" in str(caught.value), caught.value
    kept = part.stat().st_size
    assert 4 * MIB <= kept < 24 * MIB and not (tmp_path / "box1" / "last.pt").exists()

    await box.start()
    result, sent = await pull(host, tmp_path, options=fast(), counted=True)
    (done,) = result.pulled
    assert result.ok and done.resumed_from == kept and sent == 24 * MIB - kept
    assert sha(tmp_path / "box1" / "last.pt") == digest


async def _small_files_mid_tar(make_loopback_fleet, tmp_path, **held):  # type: ignore[no-untyped-def]
    """A pull whose early tar stream has brought a few whole small files (waiting at the
    install gate) and stalls, while the box's hashes are held back."""
    fleet = await make_loopback_fleet(1)
    for i in range(10):
        (box_results(fleet) / f"f{i}.bin").write_bytes(bytes([i]) * 20_000)
    host = host_of(fleet)
    box = HeldScan(transport_for(host), tar_stalls_after=70_000, **held)
    pulling = asyncio.ensure_future(_pull_held(host, tmp_path, box, options=fast()))
    await asyncio.wait_for(box.tar_stalled.wait(), 30)
    return box, pulling


async def test_ctrl_c_while_the_box_hashes_ends_the_pull_at_once(make_loopback_fleet, tmp_path):
    box, pulling = await _small_files_mid_tar(make_loopback_fleet, tmp_path)
    pulling.cancel()  # Ctrl-C: the parts waiting at the install gate must not hold it up
    done, _ = await asyncio.wait({pulling}, timeout=10)
    box.released.set()
    assert done and pulling.cancelled()
    assert not (tmp_path / "box1" / "f0.bin").exists()  # nothing unchecked installed


async def test_a_scan_cut_off_while_parts_wait_at_the_gate_fails_the_pull(
    make_loopback_fleet, tmp_path
):
    box, pulling = await _small_files_mid_tar(make_loopback_fleet, tmp_path, cut=True)
    box.released.set()  # the box's output ends before its last line: no manifest
    done, _ = await asyncio.wait({pulling}, timeout=10)
    assert done
    with pytest.raises(PullError, match="did not finish"):
        pulling.result()
    assert not (tmp_path / "box1" / "f0.bin").exists()


async def test_a_box_that_listed_files_smaller_is_checked_for_space_again(
    make_loopback_fleet, tmp_path
):
    """The early copies start because the listing fits; the manifest then says a file is
    20 MiB, not the 1 MiB listed, on an 8 MiB disk: refused before anything lands."""
    fleet = await make_loopback_fleet(1)
    random_file(box_results(fleet) / "big.pt", 20 * MIB)
    host = host_of(fleet)

    def smaller(entry: dict) -> dict:
        return {**entry, "size": MIB}

    held = HeldScan(transport_for(host), smaller)
    held.released.set()
    with tmpfs(tmp_path / "disk", "8m") as disk:
        with pytest.raises(NotEnoughSpace) as caught:
            await _pull_held(host, disk, held, options=fast())
        # What is left by the manifest: the file's 20 MiB less what its part holds.
        assert 19 * MIB <= caught.value.remaining <= 20 * MIB
        assert not (disk / "box1" / "big.pt").exists()
        assert (
            not pulled_path(disk / "box1").exists()
            or "big.pt" not in pulled_path(disk / "box1").read_text()
        )


async def test_a_huge_file_over_an_earlier_copy_is_refused_on_the_listing(
    make_loopback_fleet, tmp_path
):
    """h616 #3: a file pulled before is now far larger on the box than this disk can hold
    (a 15 TB sparse file). rgt-tui's own copy here, at another size, is replaced whatever
    the box's hash, so the refusal comes from the listing, while the box still hashes;
    it waited for the box to hash every byte (hours) to say the same."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    huge = res / "huge_sparse.bin"
    first = random_file(huge, 100)
    (res / "small.json").write_text("{}")
    host = host_of(fleet)
    with tmpfs(tmp_path / "disk") as disk:
        assert (await pull(host, disk, options=fast())).ok
        os.truncate(huge, 15 * 10**12)  # no bytes on the box's disk; hours to hash
        held = HeldScan(transport_for(host))  # the box's hashes never come
        pulling = asyncio.ensure_future(_pull_held(host, disk, held, options=fast()))
        try:
            await wait_for(pulling.done, 60, "the pull to end without the box's hashes")
        finally:
            pulling.cancel()  # when it waits for them: the test has failed already
            await asyncio.gather(pulling, return_exceptions=True)
        with pytest.raises(NotEnoughSpace) as caught:
            pulling.result()
        assert held.listed.is_set() and not held.released.is_set()  # on the listing
        error = caught.value
        assert error.remaining == 15 * 10**12 and "nothing was pulled" in error.message
        assert "huge_sparse.bin alone is 14T" in error.message, error.message
        assert sha(disk / "box1" / "huge_sparse.bin") == first  # the copy here untouched
