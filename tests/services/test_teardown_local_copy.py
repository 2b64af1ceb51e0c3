"""The gate re-checks the local copy when the name is typed (issue 26), over real boxes:

- a pulled-and-verified box whose local copy is then deleted, or changed in place with
  the same size, or replaced by a link, is refused at the confirmation: the teardown
  command never runs, and the checklist names the file and says to pull again;
- a pull afterwards puts it right, and the gate unlocks again;
- the same over OpenSSH's own sshd;
- a teardown command past its time is killed with everything it started;
- a refusal names its real cause (another box answering), and the checklist's words
  agree with verify's (a missing cell) and name what settles each locked line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.fleet_files import set_host_key
from support.gate_box import Setup
from support.waiting import wait_for

from rgt_tui.cli.teardown import format_checklist
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.pull import pull_host
from rgt_tui.services.teardown import GateLocked, check_gate, confirm_and_tear_down
from rgt_tui.services.teardown.command import run_teardown_command
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import open_transport


@pytest.fixture
async def ready(ready: Setup) -> Setup:
    """box1 pulled and verified, its teardown command writing a marker (conftest's
    ``ready``), and its local line says what was re-hashed."""
    setup = ready
    report = await setup.check()
    local = next(c for c in report.conditions if c.key == "local")
    assert local.ok and "3/3 files re-hashed" in local.evidence and "matches" in local.evidence
    return setup


def _local(report) -> str:  # type: ignore[no-untyped-def]
    return next(c.evidence for c in report.conditions if c.key == "local")


def _copy(setup: Setup) -> Path:
    return setup.fleet.results_dir / "box1"


def _overwrite_in_place(target: Path) -> None:
    """One byte changed in place: same inode, same size, and its mtime set back."""
    before = target.stat()
    data = bytearray(target.read_bytes())
    data[-2] = ord("X") if data[-2] != ord("X") else ord("Y")
    with open(target, "r+b") as f:
        f.write(data)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))


async def _refused(setup: Setup) -> GateLocked:
    with pytest.raises(GateLocked) as refused:
        await setup.confirm()
    assert not setup.marker.exists(), "the teardown command ran"
    assert setup.journal.load("box1").teardowns == []
    return refused.value


async def test_a_deleted_local_copy_refuses_and_runs_nothing(ready: Setup) -> None:
    (_copy(ready) / "cellB" / "metrics.json").unlink()
    refused = await _refused(ready)
    assert "local" in str(refused) and "MISSING cellB/metrics.json" in str(refused)
    assert refused.report is not None and "pull again" in " ".join(refused.report.problems)
    # Missing, not changed: it said "a file changed here is moved away first" of a pull cut
    # short, where nothing had changed (s36 faults #6).
    said = " ".join(refused.report.problems)
    assert "lacks files the manifest lists (a pull cut short, or files removed here" in said
    assert "a file changed here" not in said, said
    # The checklist (`teardown --check`) names it too, with the command that settles it.
    check = await ready.cli("teardown", "box1", "--check")
    assert check.returncode == 1
    assert "[ ] local" in check.stdout and "MISSING cellB/metrics.json" in check.stdout
    assert "→ run `rgt-tui pull box1`" in check.stdout

    # The whole copy gone: every file named missing, still refused.
    for path in _copy(ready).rglob("*"):
        if path.is_file() and ".rgt" not in path.parts:
            path.unlink()
    assert "MISSING" in _local((await _refused(ready)).report)

    # Pulling again puts the copy back; the gate opens and the command runs.
    await ready.pull_and_verify()
    outcome = await ready.confirm()
    assert outcome.ran and outcome.ok and outcome.recorded
    assert ready.marker.read_text() == "destroyed\n"


async def test_a_local_file_changed_in_place_with_the_same_size_refuses(ready: Setup) -> None:
    target = _copy(ready) / "cellA" / "metrics.json"
    before = target.stat()
    _overwrite_in_place(target)
    assert target.stat().st_ino == before.st_ino and target.stat().st_size == before.st_size
    refused = await _refused(ready)
    assert "CHANGED cellA/metrics.json: its SHA-256 differs" in str(refused)
    assert refused.report is not None and not refused.report.unlocked
    assert "a file changed here is moved away first" in " ".join(refused.report.problems)
    # Pulling again must see the change too (its record vouched by size and mtime alone,
    # which this edit kept): the file is a conflict, left alone, and the pull not complete.
    async with open_transport(ready.host) as t:
        result = await pull_host(ready.host, ready.fleet.results_dir, t)
    assert not result.ok
    assert [path for path, _ in result.conflicts] == ["cellA/metrics.json"], result.conflicts


async def test_a_link_in_place_of_a_pulled_file_is_changed_never_followed(ready: Setup) -> None:
    copy = _copy(ready)
    outside = ready.tmp / "outside.txt"
    outside.write_bytes((copy / "notes.txt").read_bytes())  # the very same bytes
    (copy / "notes.txt").unlink()
    (copy / "notes.txt").symlink_to(outside)
    refused = await _refused(ready)
    assert "CHANGED notes.txt" in str(refused) and "link" in str(refused)


async def test_the_local_copy_is_rechecked_over_openssh(openssh_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = openssh_server
    marker = tmp_path / "destroyed"
    (server.workdir / "results" / "run.json").write_text('{"loss": 0.5}')
    (server.workdir / "results" / "weights.bin").write_bytes(b"\x01" * 4096)
    set_host_key(server.hosts_file, "teardown", f"echo destroyed > {marker}", host="real1")
    fleet = load_fleet(server.hosts_file)
    host = fleet.host("real1")
    journal = Journal(journal_dir(server.hosts_file))
    async with open_transport(host) as t:
        await pull_host(host, fleet.results_dir, t)
        report = await verify_host(host, fleet.results_dir, transport=t)
        assert report.ok, report.problems
        assert (await check_gate(fleet, host, t, journal)).ready_but_confirmation
    weights = next((fleet.results_dir / "real1").rglob("weights.bin"))
    weights.write_bytes(b"\x02" * 4096)  # same size, other bytes
    async with open_transport(host) as t:
        with pytest.raises(GateLocked) as refused:
            await confirm_and_tear_down(fleet, host, journal, "real1", t, cwd=tmp_path)
    assert "CHANGED" in str(refused.value) and "weights.bin" in str(refused.value)
    assert not marker.exists() and journal.load("real1").teardowns == []
    # The pull keeps a changed file it did not write (never overwrites): moved away, the
    # pull fetches it again and the gate opens.
    weights.rename(tmp_path / "weights.bin.damaged")
    async with open_transport(host) as t:
        await pull_host(host, fleet.results_dir, t)
        assert (await verify_host(host, fleet.results_dir, transport=t)).ok
        outcome = await confirm_and_tear_down(fleet, host, journal, "real1", t, cwd=tmp_path)
    assert outcome.ok and outcome.recorded and marker.exists()


# --- a teardown command past its time ---------------------------------------------------


def _gone(pid: int) -> bool:
    """No such process, or only its zombie (killed; its reaper may be slow)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def test_a_command_past_its_time_is_killed_with_all_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = f"sh -c 'sleep 1000 & echo $! > {pids}; sleep 1000'"
    result = await run_teardown_command(command, tmp_path, timeout_s=1.0)
    assert result.timed_out and result.status is not None and result.status < 0
    assert "timed out after 1 s" in result.output and "provider's console" in result.output
    child = int(pids.read_text())
    await wait_for(lambda: _gone(child), 60, f"the background child {child} to be killed")


async def test_a_timed_out_teardown_is_not_recorded_and_says_what_may_have_happened(
    ready: Setup,
) -> None:
    pids = ready.tmp / "pids"
    set_host_key(
        ready.loopback.hosts_file, "teardown", f"sh -c 'sleep 1000 & echo $! > {pids}; wait'"
    )
    async with open_transport(ready.host) as t:
        outcome = await confirm_and_tear_down(
            ready.fleet, ready.host, ready.journal, "box1", t, cwd=ready.tmp, timeout_s=1.0
        )
    assert outcome.ran and outcome.timed_out and not outcome.ok and not outcome.recorded
    assert "half-destroyed" in outcome.output
    child = int(pids.read_text())
    await wait_for(lambda: _gone(child), 60, f"the background child {child} to be killed")
    jh = ready.journal.load("box1")
    assert jh.torn_down_at is None and [t.ok for t in jh.teardowns] == [False]


async def test_a_command_that_exits_leaving_a_child_is_not_a_timeout(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # The shell exits at once; its child keeps the output open for a long while.
    command = f"sleep 1000 & echo $! > {pids}; echo done"
    result = await run_teardown_command(command, tmp_path, timeout_s=30.0)
    assert not result.timed_out and result.status == 0 and "done" in result.output
    os.kill(int(pids.read_text()), 9)  # ours to clean up: it was left on purpose


# --- refusals and words that agree --------------------------------------------------


async def test_a_refusal_names_another_box_answering_not_the_typing(ready: Setup) -> None:
    (ready.box.root / ".rgt" / "box-id").unlink()  # a new box under the name meanwhile
    refused = await _refused(ready)
    text = str(refused)
    assert "a new box answers under this name" in text, text
    assert "type 'box1' to confirm" not in text.split(";")[0]


async def test_verify_and_the_checklist_agree_and_locked_lines_name_their_fix(
    ready: Setup,
) -> None:
    queue = ready.tmp / "queue.txt"
    queue.write_text(queue.read_text() + "configs/cellC.yaml train 1\n")
    verified = await ready.cli("verify", "box1")
    assert verified.returncode == 1 and "NOT VERIFIED: 1 problem" in verified.stdout
    check = await ready.cli("teardown", "box1", "--check")
    assert check.returncode == 1
    line = next(ln for ln in check.stdout.splitlines() if " verified " in ln)
    assert "[x] verified" in line and "what was pulled verified;" in line, check.stdout
    assert "NOT VERIFIED is only for 1 cell without verified results (cellC)" in line, check.stdout
    assert "verify reported no problem" not in check.stdout
    assert "locked: roster" in check.stdout
    assert "→ a missing cell that never ran: `rgt-tui launch box1` to run it;" in check.stdout
    assert "one not wanted: `rgt-tui teardown box1 --ack-missing cellC`" in check.stdout
    text = format_checklist(await ready.check())
    assert "--ack-missing cellC" in text


def _verified(report) -> tuple[bool, str]:  # type: ignore[no-untyped-def]
    condition = next(c for c in report.conditions if c.key == "verified")
    return condition.ok, condition.evidence


async def test_a_pull_that_finds_nothing_new_keeps_the_verification_and_a_change_does_not(
    ready: Setup,
) -> None:
    """A user's hour: a pull that fetched nothing (a periodic pull after the queue ended,
    or p pressed again) took a new manifest and undid the verification: the gate relocked
    with "the verification record is of an earlier pull". The same files with the same
    hashes stay verified; a file written on the box since is not."""
    async with open_transport(ready.host) as t:
        again = await pull_host(ready.host, ready.fleet.results_dir, t)
    assert again.ok and not again.pulled, again  # nothing new
    report = await ready.check()
    assert _verified(report) == (True, "verify reported no problem"), report.conditions
    assert report.ready_but_confirmation, report.conditions

    (ready.box.root / "results" / "cellB" / "late.json").write_text('{"late": 1}')
    async with open_transport(ready.host) as t:
        await pull_host(ready.host, ready.fleet.results_dir, t)
    ok, why = _verified(await ready.check())
    assert not ok and "the verification record is of an earlier pull" in why, why
