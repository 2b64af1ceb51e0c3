"""How long verify's loader takes for many small checkpoints: one worker for the run
(requests over stdin) against a new worker per file, and loading in this process.

    .venv/bin/python scripts/bench_verify_loader.py [--files 50] [--python PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402

from rgt_tui.services.verify.loader import VerifyLoader  # noqa: E402


def make_checkpoints(folder: Path, count: int) -> list[Path]:
    """``count`` small checkpoints, each a state dict of a few tensors (~20 KB)."""
    paths = []
    for i in range(count):
        path = folder / f"cell{i:03d}.pt"
        torch.manual_seed(i)
        torch.save({"w": torch.randn(64, 64), "b": torch.randn(64), "step": i}, path)
        paths.append(path)
    return paths


def one_worker(paths: list[Path], python: str | None) -> float:
    start = time.perf_counter()
    with VerifyLoader(python) as loader:
        for path in paths:
            status, detail = loader.check("torch", path, path.stat().st_size)
            assert status == "verified", detail
    return time.perf_counter() - start


def worker_per_file(paths: list[Path], python: str | None) -> float:
    start = time.perf_counter()
    for path in paths:
        with VerifyLoader(python) as loader:
            status, detail = loader.check("torch", path, path.stat().st_size)
            assert status == "verified", detail
    return time.perf_counter() - start


def in_process(paths: list[Path]) -> float:
    start = time.perf_counter()
    for path in paths:
        torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--python", default=None, help="the worker's interpreter")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_checkpoints(Path(tmp), args.files)
        rows = {
            "one worker, requests over stdin": lambda: one_worker(paths, args.python),
            "a new worker per file": lambda: worker_per_file(paths, args.python),
            "in this process (no limits)": lambda: in_process(paths),
        }
        print(f"{args.files} checkpoints, {args.repeat} runs each, torch {torch.__version__}")
        for name, run in rows.items():
            times = [run() for _ in range(args.repeat)]
            median = statistics.median(times)
            print(
                f"  {name:<32} median {median:7.2f} s  ({median / args.files * 1000:7.1f} ms/file)"
                f"  runs: {', '.join(f'{t:.2f}' for t in times)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
