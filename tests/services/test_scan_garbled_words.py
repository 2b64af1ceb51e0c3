"""Text the box prints before the scan's output is named as such, with the fix on the
box (h618 #6), over a real loopback box whose python3 greets first (as a shell startup
file that echoes does): verify said "could not re-scan the box: box1: manifest line is
not JSON" with no way on, and the gate "check again once box1 answers" of a box that
answers. ``greeting_box``: that box, pulled, verified and checked before it greets."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.cli import arun
from support.teardown_ui import results_on_box

GREETING = "Welcome to box1! Have fun."
FIX = "`python3 -c pass` must print nothing: remove the text a shell startup file"


async def _cli(fleet, tmp_path: Path, *args: str):  # type: ignore[no-untyped-def]
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(fleet.hosts_file)}
    return await arun(*args, env=env, cwd=tmp_path)


def _greeting_python(folder: Path) -> Path:
    """A python3 that prints a line first, then runs the real one."""
    folder.mkdir()
    real = shutil.which("python3")
    script = folder / "python3"
    script.write_text(f"#!/bin/sh\necho '{GREETING}'\nexec {real} \"$@\"\n")
    script.chmod(0o755)
    return folder


async def greeting_box(make_loopback_fleet, tmp_path: Path):  # type: ignore[no-untyped-def]
    """box1, pulled, verified and checked (its box identified), then greeting first."""
    fleet = await make_loopback_fleet(1)
    results_on_box(fleet.box("box1").root)
    assert (await _cli(fleet, tmp_path, "pull", "box1")).returncode == 0
    assert (await _cli(fleet, tmp_path, "verify", "box1")).returncode == 0
    assert (await _cli(fleet, tmp_path, "teardown", "box1", "--check")).returncode == 0
    fleet.box("box1").extra_path.append(_greeting_python(tmp_path / "bin"))
    return fleet


async def test_verify_and_the_gate_name_the_boxs_own_text_and_its_fix(
    make_loopback_fleet, tmp_path
):
    fleet = await greeting_box(make_loopback_fleet, tmp_path)
    verified = await _cli(fleet, tmp_path, "verify", "box1")
    out = " ".join(verified.stdout.split())
    assert verified.returncode == 1, out
    assert (
        "could not re-scan the box: the box answers, but text came before its scan's output "
        f"('{GREETING}'): the box's python3, or a shell startup file there (~/.bashrc, "
        "~/.zshenv), prints it — in a shell on the box"
    ) in out, out
    assert "then verify again" in out and "box1: manifest line" not in out, out

    check = await _cli(fleet, tmp_path, "teardown", "box1", "--check")
    lines = check.stdout.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("  [ ] rescan"))
    assert "cannot re-scan the box: the box answers, but text came before" in lines[at]
    fix = " ".join(lines[at + 1].split())
    assert fix.startswith(f"→ in a shell on the box (`rgt-tui shell box1`), {FIX}"), fix
    assert fix.endswith("then `rgt-tui teardown box1 --check`") and "once the box" not in fix
    # The checklist's problem line says the same, not "check again once box1 answers".
    problem = next(x for x in lines if x.startswith("  ! cannot re-scan the box"))
    assert "text came before" in problem and "once box1 answers" not in problem, problem
