"""The pull names text the box prints before the scan's output, once, with the fix on
the box (h618 #6): it said "box1: box1: manifest line is not JSON: … fix: re-run the
pull", the host twice and a fix that runs into the same text again."""

from __future__ import annotations

from support.cli import arun
from test_scan_garbled_words import FIX, GREETING, greeting_box


async def test_the_pull_says_the_host_once_and_the_fix_on_the_box(make_loopback_fleet, tmp_path):
    fleet = await greeting_box(make_loopback_fleet, tmp_path)
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(fleet.hosts_file)}
    pulled = await arun("pull", "box1", env=env, cwd=tmp_path)
    err = pulled.stderr
    assert pulled.returncode == 1, pulled.stdout + err
    assert f"box1: manifest line is not JSON: '{GREETING}'" in err, err
    assert "box1: box1:" not in err and "re-run the pull" not in err, err
    assert f"fix: in a shell on the box (`rgt-tui shell box1`), {FIX}" in err, err
    assert err.rstrip().endswith("print it only in an interactive shell; then pull again"), err
