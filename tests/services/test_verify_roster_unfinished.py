"""verify's roster counts as the teardown gate does (ux-a #9, ux-c #11): a cell whose run
is unfinished (failed, killed, interrupted, running) counts for none of the roster,
whatever of it verified, and is named the gate's way; verify no longer says "roster
complete" while the gate says 1/2. Over a real loopback queue box, `rgt-tui` in a
subprocess as a person runs it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from support.cli import arun
from support.fleet_files import set_host_key
from support.queues import SCRIPT_RUN, wait_view
from support.unfinished import FAILING, METRICS, launch_queue
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, FAILED


async def test_a_failed_cell_with_verified_files_is_not_counted_as_the_gate_has_it(
    make_queue_fleet, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    alpha = qf.cell_script("alpha", METRICS)
    flaky = qf.cell_script("flaky", FAILING)  # its metrics.json verifies, then it fails
    qf.write_queue(f"{alpha} t\n{flaky} t\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: [c.status for c in v.cells] == [DONE, FAILED], what="the end")
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(qf.loopback.hosts_file)}

    async def cli(*args: str):  # type: ignore[no-untyped-def]
        return await arun(*args, env=env, cwd=tmp_path)

    pulled = await cli("pull", "box1")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    for args, state in ((), "failed (exit 3)"), (("--offline",), "failed"):  # the pull's record
        verified = await cli("verify", "box1", *args)
        out = verified.stdout
        assert verified.returncode == 1, out + verified.stderr
        roster = "roster: 1 of 2 cells have verified results; unfinished or running, not "
        assert f"{roster}counted: flaky ({state})" in out, out
        assert "roster complete" not in out and "missing cell" not in out
        record = json.loads(
            (qf.fleet.results_dir / "box1" / ".rgt" / "verification.json").read_text()
        )
        assert record["roster"]["present"] == ["alpha"]
        assert record["roster"]["unfinished"] == [{"name": "flaky", "state": state}]

    checked = await cli("teardown", "box1", "--check")
    gate = checked.stdout
    assert (
        "1/2 cells have results" in gate
        and "not counted, each settled on its own line: flaky (unfinished)" in gate
    ), gate
    # verify's line for flaky is the roster's (left to the cell's own line), not a problem
    # that keeps the gate's verified line locked.
    (line,) = [
        x for x in gate.splitlines() if x.strip().startswith(("[x] verified", "[ ] verified"))
    ]
    assert line.strip().startswith("[x]"), gate


async def test_with_no_queue_file_here_the_boxs_own_records_are_the_roster(
    make_queue_fleet, tmp_path: Path
) -> None:
    """Hour s19a #2: an entry with no `queue` (a block re-added, a queue launched from
    another checkout) and a pull narrower than its durable_dir: verify said "no queue file;
    nothing to reconcile", VERIFIED, and the gate opened while a cell's results the box's
    records name were never pulled. Those records are the roster now."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    alpha, bravo = qf.cell_script("alpha", METRICS), qf.cell_script("bravo", METRICS)
    qf.write_queue(f"{alpha} t\n{bravo} t\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: [c.status for c in v.cells] == [DONE, DONE], what="the end")
    hosts = qf.loopback.hosts_file
    durable = qf.host().durable_dir
    set_host_key(hosts, "queue", None)
    lines = hosts.read_text().replace("\npull = ", "\n# pull = ")
    hosts.write_text(
        lines.replace('name = "box1"\n', f'name = "box1"\npull = ["{durable}/alpha"]\n')
    )
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(hosts)}

    pulled = await arun("pull", "box1", env=env, cwd=tmp_path)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    verified = await arun("verify", "box1", env=env, cwd=tmp_path)
    out = verified.stdout
    assert verified.returncode == 1, out + verified.stderr
    assert "nothing to reconcile" not in out and "VERIFIED: every file" not in out, out
    assert "roster: 1 of 2 cells have verified results" in out, out
    assert "missing cell  bravo" in out, out
    checked = await arun("teardown", "box1", "--check", env=env, cwd=tmp_path)
    assert checked.returncode != 0 and "1/2 cells have results" in checked.stdout, checked.stdout


async def test_a_pull_taken_while_a_cell_runs_says_so_beside_its_tick(
    make_queue_fleet, tmp_path: Path
) -> None:
    """Hour s19a #9: "every file … here with a matching SHA-256" read as safe while the
    running cell's checkpoint was half-written in place (verify then called it corrupt)."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    held = qf.cell_script("held", f"{METRICS} && sleep 120")
    qf.write_queue(f"{held} t\n")
    await launch_queue(qf)
    await wait_view(qf, lambda v: [c.status for c in v.cells] == ["running"], what="it to run")
    out = qf.host().durable_dir + "/held/metrics.json"
    await wait_for(lambda: Path(out).exists(), 60, "its metrics written")
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "RGT_HOSTS": str(qf.loopback.hosts_file)}
    pulled = await arun("pull", "box1", env=env, cwd=tmp_path)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert "RUNNING   cell held ran on the box at the pull: its files may still change" in (
        pulled.stdout
    ), pulled.stdout
    # The verdict, the line read last, says it too (hour s31 CLI #12).
    assert pulled.stdout.rstrip().splitlines()[-1] == (
        "every file of the manifest (1) is here with a matching SHA-256, as the box had them "
        "while cell held ran; next: pull again once it ends, then rgt-tui verify box1"
    ), pulled.stdout
    # The Pulls tab reads it from the records, as a pull from the command line left
    # them: "✓ pull complete" stood there alone (a user's hour, s42).
    from rgt_tui.content.recorded_view import PULLED_WHILE_RUNNING, recorded_pull_lines
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.services.recorded_results import read_recorded
    from rgt_tui.services.records import host_results_dir

    fleet = load_fleet(qf.loopback.hosts_file)
    recorded = read_recorded(host_results_dir(fleet.results_dir, qf.host())).pull
    assert recorded is not None and recorded.complete
    assert recorded.running.startswith("cell held ran on the box at the pull"), recorded
    shown = "\n".join(line.plain for line in recorded_pull_lines(recorded, time.time()))
    assert PULLED_WHILE_RUNNING in shown and "✓ pull complete" not in shown, shown


async def test_verify_says_a_cell_of_a_stopped_queue_never_ran_not_that_its_output_is_missing(
    make_queue_fleet,
):
    """h481 #12: after a stop, verify said "missing cell b: no output directory (…) in the
    pulled copy" of a cell that never started, read as results lost; while the queue ran
    it said "(pending)". It says the cell never ran and what runs it."""
    from support.queues import HOLD, stopped_after_hold
    from support.resume_cell import pull_verify

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    b = qf.cell_script("b", "echo ran")
    # The held cell writes its results first: it is present, b never ran.
    await stopped_after_hold(qf, f"{b} t 1\n", hold='mkdir -p "$2"; echo 1 > "$2/m.json"; ' + HOLD)
    report = await pull_verify(qf, "box1")
    assert report.roster is not None
    missing = dict(report.roster.missing)
    assert missing == {"b": "never ran: no queue runs it now — a launch from it runs it"}, missing
    assert "hold" in report.roster.present
    # Offline (the box gone), the pull's record of the queue lists no attempt of b: said
    # so, not "no output directory … in the pulled copy" (s48 note).
    from rgt_tui.services.verify.run import verify_host

    offline = await verify_host(qf.host("box1"), qf.fleet.results_dir, write_record=False)
    assert offline.roster is not None and "hold" in offline.roster.present
    assert dict(offline.roster.missing) == {
        "b": "the box's queue records, as a pull read them, list no attempt of it (it had not "
        "started, or its state could not be read then) — verify with the box reachable to "
        "know whether a queue runs it"
    }, offline.roster.missing
