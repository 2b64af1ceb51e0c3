"""Bounds a box meets in the manifest scan and the pull: a scan that stalls is stopped,
naming the host, what waited and the fix; a flood of empty lines meets the line cap; a
crafted size is refused by name; a refused or empty pull exits 1; nothing pulled is
wider than the box's mode or the user's umask.

The hostile boxes are loopback boxes whose ``python3`` (first on their PATH) is a script
of the test's own."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import arun
from support.controller_host import LoopHost
from support.pulls import box_results, fast, host_of, pull, random_file
from support.waiting import wait_for

from rgt_tui.domain.manifest import ManifestError
from rgt_tui.domain.manifest_parse import MAX_LINES
from rgt_tui.services.manifest import ScanStalled, take_manifest
from rgt_tui.services.pull import PullError
from rgt_tui.transport import transport_for

START = json.dumps({"type": "start", "v": 1, "taken_at": 1.0, "box_id": "a" * 32})
STALLS = f"printf '%s\\n' '{START}'\nexec sleep 60\n"  # one line, then nothing


@pytest.fixture
async def hostile(make_loopback_fleet, tmp_path):  # type: ignore[no-untyped-def]
    """(fleet, python3): ``python3(body)`` makes the box's python3 read its stdin, then
    run the shell ``body``."""
    fleet = await make_loopback_fleet(1)
    bin_dir = tmp_path / "hostile-bin"
    bin_dir.mkdir()
    fleet.box("box1").extra_path.append(bin_dir)

    def python3(body: str) -> None:
        script = bin_dir / "python3"
        script.write_text(f"#!/bin/sh\ncat > /dev/null\n{body}")
        script.chmod(0o755)

    return fleet, python3


def _hosts_file(fleet, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """The fleet file with ``results_dir`` under the test's folder."""
    hosts = tmp_path / "hosts.toml"
    text = fleet.hosts_file.read_text()
    hosts.write_text(f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n\n{text}')
    return hosts


def _scan_text(res: Path, *files: str) -> str:
    """A complete scan of ``res`` whose file lines are ``files`` (raw text)."""
    lines = [
        START,
        json.dumps({"type": "root", "index": 0, "given": str(res), "path": str(res)}),
        *files,
        json.dumps({"type": "done", "taken_at": 1.0, "finished_at": 2.0}),
    ]
    return "".join(line + "\n" for line in lines)


def _printing(tmp_path: Path, text: str) -> str:
    """A python3 body that prints ``text`` (kept in a file beside the test)."""
    out = tmp_path / "scan.out"
    out.write_text(text)
    return f"exec cat '{out}'\n"


# -- a scan that stalls -------------------------------------------------------------------


async def test_a_scan_that_prints_one_line_then_sleeps_is_stopped_with_the_fix(hostile):
    fleet, python3 = hostile
    python3(STALLS)
    host = host_of(fleet)
    transport = transport_for(host)
    try:
        await transport.connect()
        started = time.monotonic()
        with pytest.raises(ScanStalled) as caught:
            await asyncio.wait_for(take_manifest(host, transport, stall_timeout_s=1), 50)
        # Stopped by the 1 s bound, well before the scan's 60 s sleep would end it (a cap
        # a busy machine meets).
        assert time.monotonic() - started < 30
        # The connection is still good: only the scan was stopped.
        assert (await transport.run("echo still here")).stdout.strip() == "still here"
    finally:
        await transport.close()
    text = str(caught.value)
    assert text.startswith("box1: the box's file scan (listing and hashing ")
    assert "printed nothing for 1 s" in text
    assert "stuck mount" in text and "df" in text and "--stall-timeout" in text


async def test_the_real_scan_ticks_through_a_long_hash_and_is_not_a_stall(
    make_loopback_fleet,
):
    """The box's own script prints a tick every 0.2 s while it hashes, so a bound of 2 s
    passes a hash that takes longer than that (4 GiB of a sparse file, about 11 s here),
    with room for a loaded machine."""
    fleet = await make_loopback_fleet(1)
    big = box_results(fleet) / "big.bin"
    big.parent.mkdir(parents=True, exist_ok=True)
    with open(big, "wb") as f:  # noqa: ASYNC230
        f.truncate(4 << 30)  # sparse: no disk, the box reads zeros
    host = host_of(fleet)
    transport = transport_for(host)
    try:
        await transport.connect()
        started = time.monotonic()
        manifest = await take_manifest(host, transport, stall_timeout_s=2.0)
        took = time.monotonic() - started
    finally:
        await transport.close()
    assert [e.size for e in manifest.entries] == [4 << 30]
    assert took > 2.0  # longer than the bound in all, and never stopped


async def test_a_pull_whose_scan_stalls_fails_within_its_stall_timeout(hostile, tmp_path):
    fleet, python3 = hostile
    random_file(box_results(fleet) / "a.bin", 100)
    python3(STALLS)
    started = time.monotonic()
    with pytest.raises(PullError) as caught:
        await asyncio.wait_for(pull(host_of(fleet), tmp_path, options=fast(stall_timeout_s=1)), 60)
    assert time.monotonic() - started < 30
    assert "the box's file scan" in caught.value.message and "stuck mount" in (
        caught.value.fix or ""
    )
    assert not (tmp_path / "box1" / "a.bin").exists()


async def test_cli_pull_and_verify_stop_a_stalled_scan_with_the_host_named(hostile, tmp_path):
    fleet, python3 = hostile
    random_file(box_results(fleet) / "a.bin", 100)
    hosts = _hosts_file(fleet, tmp_path)
    done = await arun("pull", "box1", "--hosts", hosts, timeout=60)
    assert done.returncode == 0, done.stderr  # pulled with the box's own scan
    python3(STALLS)
    started = time.monotonic()
    stalled = await arun("pull", "box1", "--hosts", hosts, "--stall-timeout", "1", timeout=60)
    assert stalled.returncode == 1 and time.monotonic() - started < 30
    assert "rgt-tui pull: box1: the box's file scan" in stalled.stderr
    assert "fix:" in stalled.stderr and "Traceback" not in stalled.stderr
    verify = await arun("verify", "box1", "--hosts", hosts, "--stall-timeout", "1", timeout=60)
    assert verify.returncode == 1, verify.stdout
    assert "could not re-scan the box: box1: the box's file scan" in verify.stdout
    assert "Traceback" not in verify.stderr


async def test_a_stalled_scan_ends_the_tui_pull_job(hostile, tmp_path):
    """The TUI's job runner: the pull (its stall bound: PullOptions' 30 s) ends with the
    reason, and the host is no longer busy."""
    from rgt_tui.controllers.jobs import JobRunner
    from rgt_tui.services.connections import FleetConnections
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.services.runtime.locks import HostLocks

    fleet, python3 = hostile
    random_file(box_results(fleet) / "a.bin", 100)
    python3(STALLS)
    config = load_fleet(_hosts_file(fleet, tmp_path))
    connections = FleetConnections(config.hosts)
    host = LoopHost()
    runner = JobRunner(host, config, connections, locks=HostLocks())
    try:
        runner.request("box1", "pull")
        assert runner.state("box1").running == "pull"
        await wait_for(lambda: not runner.state("box1").running, 90, "the pull job to end")
        message, fix = runner.state("box1").pull_error or ("", "")
        assert "the box's file scan" in message and "stuck mount" in fix
    finally:
        await host.drain()
        await connections.close_all()


# -- every line counts ------------------------------------------------------------------


async def test_a_flood_of_empty_lines_meets_the_line_cap_fast(hostile, tmp_path):
    fleet, python3 = hostile
    flood = tmp_path / "flood.out"
    flood.write_text(START + "\n" + "\n" * (MAX_LINES + 10))
    python3(f"exec cat '{flood}'\n")
    host = host_of(fleet)
    transport = transport_for(host)
    try:
        await transport.connect()
        # The cap's own words, not the stall watch's: the flood was cut at the line cap
        # (a wall-clock bound here failed on a loaded CI machine: 65 s of 60).
        with pytest.raises(
            ManifestError, match=rf"box1: the box.s scan printed over {MAX_LINES:,}"
        ):
            await asyncio.wait_for(take_manifest(host, transport), 120)
    finally:
        await transport.close()


# -- crafted sizes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "why"),
    [("\u00b2", "is not valid JSON"), ("9" * 5000, "absurd size from the box (<a number of 5000")],
    ids=["superscript-two", "5000-digits"],
)
async def test_cli_pull_refuses_a_crafted_size_by_name_without_a_traceback(
    hostile, tmp_path, size, why
):
    fleet, python3 = hostile
    res = box_results(fleet)
    good = random_file(res / "good.bin", 300)
    lines = [
        json.dumps({"type": "file", "n": 0, "root": 0, "path": "good.bin", "size": 300,
                    "mtime": 1.0, "sha256": good}),
        '{"type": "file", "n": 1, "root": 0, "path": "crafted.bin", "size": ' + size
        + ', "mtime": 1.0, "sha256": "' + good + '"}',
    ]  # fmt: skip
    python3(_printing(tmp_path, _scan_text(res, *lines)))
    done = await arun("pull", "box1", "--hosts", _hosts_file(fleet, tmp_path), timeout=60)
    # Refused by name as any lie of the box is (verify flags it); the honest file lands,
    # and the pull is not complete: a file under the root did not come.
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    # Said once, with its fix (h491 #11: a REFUSED line said it first, without one).
    [missing] = [ln for ln in done.stdout.splitlines() if "crafted.bin" in ln]
    assert missing.startswith(f"  MISSING   {res}/crafted.bin: refused (") and why in missing
    assert (tmp_path / "res" / "box1" / "good.bin").exists()  # the honest file still landed


# -- exit statuses ----------------------------------------------------------------------


async def test_cli_pull_exits_1_when_a_pull_root_is_not_on_the_box(make_loopback_fleet, tmp_path):
    from support.fleet_files import set_host_key

    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    random_file(res / "a.bin", 100)
    gone = fleet.box("box1").root / "gone"
    hosts = _hosts_file(fleet, tmp_path)
    set_host_key(hosts, "pull", [str(res), str(gone)])  # type: ignore[arg-type]
    done = await arun("pull", "box1", "--hosts", hosts, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    # The root itself, not "{gone}/." (hour s34 CLI #5).
    assert f"MISSING   pull root {gone}: no such folder" in done.stdout
    assert "REFUSED" not in done.stdout  # said once, as MISSING with its fix (h491 #11)
    assert "NOT COMPLETE" in done.stdout and "every file of the manifest" not in done.stdout
    assert (tmp_path / "res" / "box1" / "results" / "a.bin").exists()  # the rest landed


async def test_cli_pull_exits_1_for_a_refused_result_never_for_a_secret(
    make_loopback_fleet, tmp_path
):
    """A result file the box holds under a name that cannot be written here (a control
    character) makes the pull incomplete: exit 1, never "every file ... is here", in the
    summary, the TUI's record of it and verify, each naming the file and the fix (rename
    it on the box, pull again). A secret under the same root is skipped by rule: shown,
    never a shortfall, so once the name is fixed the pull is complete."""
    from rgt_tui.content.recorded_view import recorded_pull_lines
    from rgt_tui.services.recorded_results import read_recorded

    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    random_file(res / "good.bin", 100)
    weird = res / "hostile" / "[red]weird \x1b[31m\x07.txt"
    random_file(weird, 50)
    (res / ".netrc").write_text("machine x login u password p\n")
    hosts = _hosts_file(fleet, tmp_path)
    done = await arun("pull", "box1", "--hosts", hosts, timeout=60)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    shown = f"{res}/hostile/[red]weird \\x1b[31m\\x07.txt"  # escaped, never raw
    assert "\x1b" not in out and "REFUSED" not in out  # said once, as MISSING (h491 #11)
    assert f"MISSING   {shown}: refused (unsafe path from the box: control character" in out
    assert "rename it on the box to a plain name, then pull again" in out
    assert f"SKIPPED   {res}/.netrc: skipped by rule: secret (.netrc)" in out
    assert ".netrc" not in "".join(ln for ln in out.splitlines() if "MISSING" in ln)
    assert "NOT COMPLETE" in out and "every file of the manifest" not in out
    recorded = read_recorded(tmp_path / "res" / "box1").pull
    assert recorded is not None and not recorded.complete and recorded.here == recorded.files
    tab = "\n".join(line.plain for line in recorded_pull_lines(recorded, 0.0))
    assert "NOT COMPLETE: 1 file refused on the box" in tab and "pull complete" not in tab
    assert "rename it on the box to a plain name, then pull again" in tab
    verified = await arun("verify", "box1", "--hosts", hosts, "--offline", timeout=120)
    assert verified.returncode == 1 and "rename it on the box to a plain name" in verified.stdout

    weird.rename(res / "hostile" / "weird.txt")  # settled on the box as the fix says
    again = await arun("pull", "box1", "--hosts", hosts, timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "every file of the manifest (2) is here" in again.stdout
    assert f"SKIPPED   {res}/.netrc" in again.stdout and "MISSING" not in again.stdout
    recorded = read_recorded(tmp_path / "res" / "box1").pull
    assert recorded is not None and recorded.complete


async def test_cli_pull_exits_1_when_the_box_lists_no_file(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    box_results(fleet).mkdir(parents=True, exist_ok=True)  # there, and empty
    done = await arun("pull", "box1", "--hosts", _hosts_file(fleet, tmp_path), timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "MISSING   nothing was pulled: the box lists no file under" in done.stdout


# -- nothing widens ---------------------------------------------------------------------


@pytest.fixture
def umask_077() -> Iterator[None]:
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


async def test_pulled_files_keep_the_users_umask(make_loopback_fleet, tmp_path, umask_077):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    for name, size in (("small.json", 100), ("large.pt", 2 << 20)):
        random_file(res / name, size)
        os.chmod(res / name, 0o644)
    random_file(res / "run.sh", 100)
    os.chmod(res / "run.sh", 0o755)
    result = await pull(host_of(fleet), tmp_path, options=fast())
    assert result.ok
    modes = {p.name: p.stat().st_mode & 0o7777 for p in (tmp_path / "box1").iterdir()}
    assert modes == {"small.json": 0o600, "large.pt": 0o600, "run.sh": 0o700, ".rgt": 0o700}
