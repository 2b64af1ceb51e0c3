"""verify's words agree with themselves (a user's hour): a file a flag names is not also
counted "nothing to look at"; with nothing listed, the counts are not said twice; and
"6 problems" says how many of them are the roster line's cells."""

from __future__ import annotations

import dataclasses
import os

from support.pulls import box_results, fast, host_of, pull

from rgt_tui.domain.roster import RosterCheck
from rgt_tui.services.verify.report import format_report
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import transport_for


async def test_verify_counts_each_file_once_and_says_what_the_problems_are(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet) / "cellA"
    _raw_bin(res / "ckpt.bin")
    (res / "metrics.json").write_text('{"loss": 1}')
    await pull(host_of(fleet), tmp_path, options=fast())

    from rgt_tui.content.pull_view import verify_lines  # the TUI's Pulls tab

    clean_report = await verify_host(host_of(fleet), tmp_path, roster=[])
    clean = format_report(clean_report)
    assert "not listed" not in clean, clean  # nothing listed: the first line counts them
    tab = [line.plain for line in verify_lines(clean_report)]
    assert not any("not listed" in line for line in tab), tab

    # The box's copy changes after the pull (a running cell writing its metrics).
    (res / "metrics.json").write_text('{"loss": 0.5, "step": 2}')
    os.utime(res / "metrics.json", (2e9, 2e9))
    transport = transport_for(host_of(fleet))
    try:  # with the box's transport: verify re-scans it for changes
        report = await verify_host(host_of(fleet), tmp_path, transport=transport, roster=[])
    finally:
        await transport.close()
    text = format_report(report)
    assert "remote-changed" in text and "cellA/metrics.json" in text, text
    # ckpt.bin alone needs no look; metrics.json is the flag's, not "nothing to look at".
    assert "  not listed: 1 hash-only (nothing to look at" in text, text
    # One problem is not "the first" of anything (a user's hour).
    assert len(report.problems) == 1 and "; the first:" not in text, text
    assert text.splitlines()[-1].startswith("NOT VERIFIED: 1 problem: "), text

    # Two cells still running: counted among the problems, said to be the roster's.
    roster = RosterCheck(
        expected=("cellA", "cellB", "cellC"),
        present=("cellA",),
        missing=(("cellB", "running"), ("cellC", "running")),
        unfinished=(("cellB", "running"), ("cellC", "running")),
    )
    problems = (*report.problems, "cell cellB missing: running", "cell cellC missing: running")
    both = dataclasses.replace(report, roster=roster, problems=problems)
    verdict = format_report(both).splitlines()[-1]
    assert verdict.startswith("NOT VERIFIED: 3 problems (2 cells of them on the roster line);")
    tab = [line.plain for line in verify_lines(both)]
    assert "✖ NOT VERIFIED: 3 problems (2 cells of them on the roster line)" in tab, tab
    # The flagged file once: its flag line, not again under the verdict.
    assert sum("metrics.json" in line for line in tab) == 1, tab


async def test_verify_while_a_pull_runs_says_so_and_records_nothing(make_loopback_fleet, tmp_path):
    """Another process's pull holds the folder's lock: verify said "left by an interrupted
    pull" of its parts and recorded NOT VERIFIED for the gate (a user's hour)."""
    from rgt_tui.fsutil import file_lock
    from rgt_tui.services.records import records_dir, verification_path

    fleet = await make_loopback_fleet(1)
    _raw_bin(box_results(fleet) / "cellA" / "ckpt.bin")
    await pull(host_of(fleet), tmp_path, options=fast())
    folder = tmp_path / "box1"
    record = verification_path(folder)
    before = record.read_bytes() if record.exists() else None
    with file_lock(records_dir(folder) / "pull.lock", 0):  # as a running pull holds it
        report = await verify_host(host_of(fleet), tmp_path, roster=[])
    assert not report.ok
    assert report.problems == (
        f"a pull of box1 into {folder} is running: nothing was verified or recorded; "
        "verify once it ends",
    )
    assert (record.read_bytes() if record.exists() else None) == before
    assert (await verify_host(host_of(fleet), tmp_path, roster=[])).ok  # once it ended


def _raw_bin(path) -> None:  # type: ignore[no-untyped-def]
    """3,000 bytes of raw data, hash-only: a fixed first byte, since random bytes start
    like a pickle (0x80) once in 256 runs and then rightly count as a torch file that
    does not load (a CI run met it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"RAW" + os.urandom(2997))
