"""``bench_pull.py --link compress``: does compressing the small files' tar stream pay (U15)?

A text-heavy set (``--text-files`` JSON-lines and log files of 5-200 KB, 2,000 by
default, made once under ``--dir``) is served by the bench's private sshd and pulled by
``rgt-tui pull --compress off|on|auto`` (its command line only) through
``scripts/far_link.py`` at each link: near (4 ms / 1 Gbit/s), 100 ms / 400 Mbit/s and
200 ms / 1 Gbit/s. Each mode runs ``--repeat`` times per link, in turn (the order
rotates each round); the table shows each mode's median seconds, its runs, and the
bytes the relay carried from the box (``down_bytes``: everything on the wire, the
handshake and manifest included), and which codec the pull's summary names.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

TEXT_LINKS = (("near", 4.0, 1000.0), ("b", 100.0, 400.0), ("a", 200.0, 1000.0))
MODES = ("off", "on", "auto")
CODEC = re.compile(r"tar stream (\S+)(?: -1)?: ")


def text_set(root: Path, files: int) -> int:
    """JSON lines and logs of 5-200 KB (made once; seeded): their bytes."""
    spec = root / ".spec"
    if spec.exists() and spec.read_text() == str(files):
        return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and p != spec)
    rng = random.Random(42)
    total = 0
    for i in range(files):
        size = rng.randint(5, 200) * 1024
        lines, n = [], 0
        while n < size:
            if i % 2:
                line = json.dumps(
                    {"step": len(lines), "loss": rng.random(), "lr": 3e-4 * rng.random(),
                     "acc": round(rng.random(), 4), "split": "train"}
                )  # fmt: skip
            else:
                line = (
                    f"2026-01-01 12:{len(lines) % 60:02d}:00 INFO epoch {len(lines) // 100} "
                    f"step {len(lines)} loss={rng.random():.5f} grad_norm={rng.random() * 3:.4f}"
                )
            lines.append(line)
            n += len(line) + 1
        path = root / f"cell{i // 100}" / (f"m{i}.jsonl" if i % 2 else f"l{i}.log")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines))
        total += path.stat().st_size
    spec.write_text(str(files))
    return total


def run_compress(ctx, args) -> list[str]:  # noqa: ANN001 - bench_pull's Bench
    """The table per link; returns one summary line per link."""
    import bench_pull as bp

    data = ctx.base / "box" / f"text-{args.text_files}"
    total = text_set(data, args.text_files)
    print(f"data set: {args.text_files} JSON-lines/log files, {total / 1e6:.1f} MB (text)")
    ctx.touch = bp.touch_size(total)
    lines = []
    for label, rtt_ms, rate_mbit in TEXT_LINKS:
        link = bp.FarLink(ctx.base, ctx.sshd.port, rtt_ms, rate_mbit, args)
        ctx.sshd.alias_ports.append(link.port)
        ctx.sshd.start()
        times = {m: [] for m in MODES}
        wire = {m: [] for m in MODES}
        codec = {m: "?" for m in MODES}
        try:
            for round_ in range(args.repeat):
                for mode in MODES[round_ % 3 :] + MODES[: round_ % 3]:
                    before = link.stats()
                    command = [*ctx.command("rgt-tui pull", link.port, data), "--compress", mode]
                    seconds, out = bp.timed_output(command, ctx.touch)
                    wire[mode].append(link.stats()["down_bytes"] - before["down_bytes"])
                    times[mode].append(seconds)
                    found = CODEC.search(out)
                    codec[mode] = found[1] if found else "?"
        finally:
            link.stop()
        print(f"link ({label}): {rtt_ms:.0f} ms round trip, {rate_mbit:.0f} Mbit/s")
        for mode in MODES:
            med = bp.median(times[mode])
            print(
                f"  --compress {mode:<4} {codec[mode]:<12} {med:6.2f} s  wire "
                f"{bp.median(wire[mode]) / 1e6:6.1f} MB  runs: "
                + ", ".join(f"{v:.2f}" for v in times[mode])
            )
        off, on, auto = (bp.median(times[m]) for m in MODES)
        lines.append(
            f"compress: link ({label}) {rtt_ms:.0f} ms / {rate_mbit:.0f} Mbit/s: off {off:.2f} s "
            f"{bp.median(wire['off']) / 1e6:.1f} MB, on {on:.2f} s "
            f"{bp.median(wire['on']) / 1e6:.1f} MB, auto ({codec['auto']}) {auto:.2f} s"
        )
        print(lines[-1], flush=True)
    return lines
