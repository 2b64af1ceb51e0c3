"""U15: the small files' tar stream is compressed on the box when it pays, and every file
still arrives byte-identical with the box's SHA-256 (loopback boxes, real tar/zstd/gzip)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from support.pulls import box_results, fast, host_of, pull, random_file, sha

from rgt_tui.services.pull.budget import Bandwidth
from rgt_tui.services.pull.tar_squeeze import MIN_TEXT_BYTES


def text_set(root: Path, files: int = 120) -> int:
    """JSON lines and logs of 5-60 KB, as a run writes them; returns their bytes."""
    rng = random.Random(7)
    total = 0
    for i in range(files):
        size = rng.randint(5, 60) * 1024
        if i % 2:
            rows, n = [], 0
            while n < size:
                row = json.dumps({"step": len(rows), "loss": rng.random(), "tag": "train"})
                rows.append(row)
                n += len(row) + 1
            text = "\n".join(rows)
            path = root / "metrics" / f"cell{i}.jsonl"
        else:
            text = "\n".join(
                f"epoch {j // 50} step {j} loss={rng.random():.5f} it/s={rng.uniform(5, 9):.2f}"
                for j in range(size // 48)
            )
            path = root / "logs" / f"cell{i}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        total += path.stat().st_size
    assert total >= MIN_TEXT_BYTES
    return total


def path_without_zstd(bin_dir: Path) -> Path:
    """A folder for a box's PATH: every program of this machine's but zstd."""
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            target, link = Path(folder) / name, bin_dir / name
            if not name.startswith("zstd") and not link.exists() and os.access(target, os.X_OK):
                link.symlink_to(target)
    return bin_dir


def slow_link() -> Bandwidth:
    """A 40 Mbit/s budget: a link slower than either codec (what a far box is)."""
    return Bandwidth.from_mbit(40.0)


async def test_a_text_heavy_stream_is_compressed_and_arrives_identical(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    total = text_set(res)
    host = host_of(fleet)

    result, wire = await pull(
        host, tmp_path / "local", options=fast(budget=slow_link()), counted=True
    )

    assert result.ok and len(result.pulled) == 120
    [stream] = result.tar_streams
    assert stream.codec in ("zstd", "gzip") and "slower than" in stream.reason
    # Fewer bytes crossed the wire than the files hold: at least 2× fewer for this text.
    assert wire == stream.wire and wire * 2 < total <= stream.tar
    for path in res.rglob("*"):
        if path.is_file():
            got = tmp_path / "local" / "box1" / path.relative_to(res)
            assert got.read_bytes() == path.read_bytes()
    by_path = {e.path: e.sha256 for e in result.manifest.entries}
    assert {f.path: f.sha256 for f in result.pulled} == by_path  # the box's, end to end
    assert all(sha(tmp_path / "local" / "box1" / p) == h for p, h in by_path.items())


async def test_a_checkpoint_only_stream_is_not_compressed(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    sizes = 0
    for i in range(6):
        random_file(res / "ckpt" / f"step{i}.pt", 600 << 10)
        sizes += 600 << 10
    host = host_of(fleet)

    result, wire = await pull(
        host, tmp_path / "local", options=fast(budget=slow_link()), counted=True
    )

    assert result.ok and len(result.pulled) == 6
    [stream] = result.tar_streams
    assert stream.codec == "none" and "not text-heavy" in stream.reason
    assert wire == stream.wire == stream.tar > sizes  # plain tar: the files and headers


async def test_a_box_without_zstd_falls_back_to_gzip(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    box = fleet.box("box1")
    box.extra_env["PATH"] = str(path_without_zstd(tmp_path / "box-bin"))
    res = box_results(fleet)
    total = text_set(res, files=60)
    host = host_of(fleet)

    result, wire = await pull(
        host, tmp_path / "local", options=fast(budget=slow_link()), counted=True
    )

    assert result.ok and len(result.pulled) == 60
    [stream] = result.tar_streams
    assert stream.codec == "gzip"
    assert wire * 2 < total
    assert all(f.sha256 == e.sha256 for f, e in zip(
        sorted(result.pulled, key=lambda f: f.path),
        sorted(result.manifest.entries, key=lambda e: e.path),
        strict=True,
    ))  # fmt: skip


async def test_compress_off_sends_plain_tar(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    total = text_set(res, files=40)
    host = host_of(fleet)

    result, wire = await pull(
        host,
        tmp_path / "local",
        options=fast(budget=slow_link(), compress="off"),
        counted=True,
    )

    assert result.ok
    [stream] = result.tar_streams
    assert stream.codec == "none" and wire > total
