"""The loaded line names every failure and its fix by kind (h618 #4), over a real
loopback pull, verify and `teardown --check`: it named three of six failures with no
"and 3 more", and its fix, "fix or re-pull the files named", was wrong for a checkpoint
that would run code and for a verify_python without torch, which no pull settles."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path

import torch
from support.cli import arun
from support.pulls import box_results


class Payload:
    """Unpickling this would run a shell command (it is never unpickled)."""

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, ("true",))


async def _cli(fleet, tmp_path: Path, *args: str):  # type: ignore[no-untyped-def]
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(fleet.hosts_file)}
    return await arun(*args, env=env, cwd=tmp_path)


def _after(out: str, key: str) -> tuple[str, str]:
    """A checklist line and the fix under it, each on one line."""
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith(f"  [ ] {key}"))
    return lines[at], " ".join(lines[at + 1].split())


async def test_every_failure_is_counted_and_each_kind_has_its_fix(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    torch.save({"w": torch.ones(2)}, res / "good.pt")
    torch.save({"ns": argparse.Namespace(lr=0.1)}, res / "a_args.pt")  # a class to allow
    torch.save({"p": Payload()}, res / "b_evil.pt")  # code: never to be allowed
    good = (res / "good.pt").read_bytes()
    for name in ("c_cut.pt", "d_cut.pt", "e_cut.pt"):
        (res / name).write_bytes(good[: len(good) // 2])  # damaged on the box
    (res / "f_bad.json").write_text("{nope")
    assert (await _cli(fleet, tmp_path, "pull", "box1")).returncode == 0
    assert (await _cli(fleet, tmp_path, "verify", "box1")).returncode == 1

    check = await _cli(fleet, tmp_path, "teardown", "box1", "--check")
    line, fix = _after(check.stdout, "loaded")
    assert line.startswith("  [ ] loaded") and "1/7 loaded — FAILED a_args.pt: " in line, line
    assert line.endswith("(and 3 more: verify lists them all)"), line
    assert "fix or re-pull" not in fix.split("for f_bad.json")[0], fix
    assert "for a_args.pt: a file names a class torch does not allow" in fix, fix
    assert (
        "for b_evil.pt: loading it would run code, never done "
        "here, and a pull brings the same bytes: re-save it on the box as tensors and plain "
        "values (a state_dict), or remove it there (`rgt-tui shell box1`), then "
        "`rgt-tui pull box1` and `rgt-tui verify box1`"
    ) in fix, fix
    assert "for c_cut.pt, d_cut.pt, e_cut.pt: the box's own file is damaged" in fix
    assert "for f_bad.json: fix or re-pull the files named" in fix, fix

    # The same files, loaded by a python without torch: the interpreter is at fault.
    venv = tmp_path / "notorch"
    made = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "venv", "--without-pip", str(venv)]
    )
    assert made.returncode == 0
    hosts = fleet.hosts_file
    hosts.write_text(f'[fleet]\nverify_python = "{venv}/bin/python"\n\n' + hosts.read_text())
    assert (await _cli(fleet, tmp_path, "verify", "box1")).returncode == 1
    check = await _cli(fleet, tmp_path, "teardown", "box1", "--check")
    line, fix = _after(check.stdout, "loaded")
    assert "0/7 loaded" in line and "(and 4 more: verify lists them all)" in line, line
    assert fix.startswith(
        "→ for a_args.pt, b_evil.pt, c_cut.pt (and 3 more): no torch here can load it (a "
        "pull brings the same bytes): point [fleet] "
        "verify_python in the fleet file at a python with torch>=2.6"
    ), fix
