"""A teardown recorded by hand (no teardown command), over a real loopback box, real
files and the real journal (over 450 lines on purpose: every case runs on the one
``ready`` fixture, a box pulled, verified and confirmed):

- the teardown is recorded only when the name is typed again after the instructions
  (the TUI's second box, the command line's second prompt, or ``--destroyed HOST``), and
  only for the box that was confirmed;
- a confirmation is void once the box was worked on after it: a check that saw a cell
  run, a launch of the box's group, cells appended to that group's queue file.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest
from support.fleet_files import set_host_key
from support.gate_box import QUEUE, Setup, write_queue
from support.pulls import fast

from rgt_tui.domain.config import HostWatch
from rgt_tui.fsutil import file_lock
from rgt_tui.services.box.identity import box_still_answers
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.pull import pull_host
from rgt_tui.services.records import pull_lock_path
from rgt_tui.services.runtime.locks import HostLocks
from rgt_tui.services.teardown import BoxMismatch, confirmed_at, record_manual_teardown
from rgt_tui.services.teardown.by_hand import changed_since, record_destroyed
from rgt_tui.services.verify.run import verify_host
from rgt_tui.services.watch.drivers.periodic_pull import BUSY_RETRY_S, PullScheduler
from rgt_tui.transport import open_transport

# --- without a command: recorded only after the name is typed again -------------------


async def test_manual_teardown_is_recorded_only_after_the_second_typed_name(ready: Setup) -> None:
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    assert not outcome.ran and not outcome.recorded and "destroys" in outcome.instructions
    # The box as the provider's console shows it: its address (hour s25b #5).
    assert f"The box is the one you reach at {ready.host.ssh} (the fleet file's ssh for box1)" in (
        outcome.instructions
    )
    assert ready.journal.load("box1").torn_down_at is None  # shown what to do, nothing yet
    confirmed = outcome.report.box
    with pytest.raises(ValueError):
        record_manual_teardown(ready.journal, ready.host, "box2", confirmed)
    assert ready.journal.load("box1").torn_down_at is None
    jh = record_manual_teardown(ready.journal, ready.host, "box1", confirmed)
    (record,) = jh.teardowns
    assert jh.torn_down_at == record.at and record.manual and record.box_id == confirmed.box_id


async def test_a_confirmation_is_void_for_a_manual_teardown_once_the_box_was_worked_on(
    ready: Setup,
) -> None:
    """Hour s24a #1: confirmed at 08:34, then cells launched and appended there; later
    ``--destroyed`` recorded the box as torn down and its new checkpoints were never
    pulled. A queue file changed since, or a check since that found the gate locked,
    voids the confirmation for the record."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    confirmed = outcome.report.box
    # A file written on the box after the confirmation: the next check finds it unpulled.
    (ready.box.root / "results" / "cellA" / "late.json").write_text('{"acc": 1}')
    assert not (await ready.check()).ready_but_confirmation
    with pytest.raises(BoxMismatch) as refused:
        record_manual_teardown(ready.journal, ready.host, "box1", confirmed)
    why = str(refused.value)
    assert "no longer holds: since then, a check at" in why and "found its gate locked" in why
    assert "nothing was recorded" in why and "rgt-tui teardown box1` again" in why
    assert ready.journal.load("box1").torn_down_at is None

    # Pulled and confirmed again: the record goes through; a queue file edited after
    # the new confirmation voids it again (a cell appended there).
    await ready.pull_and_verify()
    outcome = await ready.confirm()
    assert outcome.report.unlocked, outcome.report.conditions
    # The file saved again with the same cells (an editor, a #moved-to line): no work.
    later = time.time() + 5  # past the confirmation, whatever the file system's clock
    write_queue(ready, QUEUE)
    os.utime(Path(ready.host.queue), (later, later))
    jh = ready.journal.load("box1")
    assert changed_since(jh, ready.host, ready.journal.directory, confirmed_at(jh)) == ""
    # A cell appended there: the confirmation did not know it.
    write_queue(ready, QUEUE + "configs/cellZ.yaml train 1\n")
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "its queue file holds cells the confirmation did not know (cellZ)" in " ".join(
        cli.stderr.split()
    ), cli.stderr
    assert ready.journal.load("box1").torn_down_at is None


async def test_a_manual_teardown_is_recorded_only_for_the_box_that_was_confirmed(
    ready: Setup,
) -> None:
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    confirmed = outcome.report.box
    assert not outcome.ran and confirmed == ready.journal.load("box1").box
    # While the user destroys it by hand, a box re-created under the name is seen (by the
    # TUI, another command line...): the journal's box is now that one.
    (ready.box.root / ".rgt" / "box-id").unlink()
    assert (await ready.check()).is_new_box
    with pytest.raises(BoxMismatch) as refused:
        record_manual_teardown(ready.journal, ready.host, "box1", confirmed)
    assert confirmed.short() in str(refused.value) and "nothing was recorded" in str(refused.value)
    jh = ready.journal.load("box1")
    assert jh.teardowns == [] and [h.teardowns for h in jh.history] == [[]]
    # --destroyed records only for the journal's box, and only once a typed confirmation
    # opened its gate: the new box was never confirmed.
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "never opened by a typed confirmation" in cli.stderr
    # A box gone outside rgt-tui can never be checked: the way out is said (h472 #3).
    said = " ".join(cli.stderr.split())
    assert "remove its [[hosts]] entry to stop counting it" in said, said
    assert f"box {jh.box.short()}" in cli.stdout  # it says which box it would have been
    jh = ready.journal.load("box1")
    assert jh.teardowns == [] and jh.torn_down_at is None


async def test_destroyed_refuses_when_no_box_was_ever_identified(
    make_loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    setup = Setup(await make_loopback_fleet(1), tmp_path)
    cli = await setup.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 1 and "no box has been identified" in cli.stderr
    assert setup.journal.load("box1").teardowns == []


async def test_cli_manual_teardown_asks_for_the_name_again(ready: Setup) -> None:
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    term = ready.terminal("teardown", "box1")
    await term.expect("to tear it down: ")
    term.type("box1")
    await term.expect("type its name (box1) again")
    shown = term.out.decode()
    assert "Do this by hand now" in shown and "keeps billing until you have destroyed it" in shown
    assert "cost" not in shown.replace("its cost is no longer counted", "")
    term.type("not-yet")
    code, out, err = await term.finish()
    assert code == 1 and "NOT recorded as torn down" in err
    assert ready.journal.load("box1").torn_down_at is None

    no_tty = await ready.cli("teardown", "box1", "--confirm", "box1")
    assert no_tty.returncode == 1 and "--destroyed box1" in no_tty.stderr
    assert ready.journal.load("box1").torn_down_at is None
    wrong = await ready.cli("teardown", "box1", "--destroyed", "box2")
    assert wrong.returncode == 1 and ready.journal.load("box1").torn_down_at is None
    # Hour s45a #2 on the command line: the box still answers, so it is not destroyed,
    # whatever is typed; one connection asks (the TUI knows from its telemetry).
    answering = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert answering.returncode == 1, answering.stdout + answering.stderr
    said = " ".join(answering.stderr.split())
    assert (
        f"box1 still answers: box {ready.journal.load('box1').box.short()} took a connection"
        in said
    )
    assert "NOT recorded as torn down" in said and "Checking that box1" in answering.stdout
    # The way to record it once it is gone is named (h546 #1: nowhere).
    assert said.endswith("once it no longer answers: rgt-tui teardown box1 --destroyed box1")
    assert ready.journal.load("box1").torn_down_at is None
    await ready.box.stop()  # destroyed: nothing answers
    done = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert done.returncode == 0 and "recorded as torn down" in done.stdout
    jh = ready.journal.load("box1")
    assert jh.torn_down_at is not None and f"box {jh.box.short()}" in done.stdout


async def test_ctrl_c_at_the_name_prompt_ends_its_line_and_says_nothing_was_done(
    ready: Setup,
) -> None:
    """Ctrl-C where the name is typed: the prompt's line is ended and the command says
    what it left (a user's hour saw a bare ``^C`` and the shell's prompt on its line)."""
    term = ready.terminal("teardown", "box1")
    await term.expect("to tear it down: ")
    term.proc.send_signal(signal.SIGINT)  # what the terminal sends for Ctrl-C
    code, out, err = await term.finish()
    assert code == 130, out + err
    assert out.endswith("to tear it down: \n"), repr(out[-80:])
    assert "box1: interrupted; rgt-tui ran no teardown command and recorded nothing" in err
    assert ready.journal.load("box1").torn_down_at is None


async def test_ctrl_c_after_acknowledgements_says_they_stay_recorded(ready: Setup) -> None:
    """The --ack-* cells are recorded before the question: "recorded nothing" was false
    (a user's hour found the gate open but for the name afterwards)."""
    term = ready.terminal("teardown", "box1", "--ack-missing", "cellB")
    await term.expect("to tear it down: ")
    term.proc.send_signal(signal.SIGINT)
    code, out, err = await term.finish()
    assert code == 130, out + err
    said = "box1: interrupted; rgt-tui ran no teardown command; the 1 acknowledgement"
    assert said in err and "(cellB) stay recorded" in err, err
    assert "recorded nothing" not in err
    assert ready.journal.load("box1").torn_down_at is None


async def test_cli_manual_teardown_typed_twice_at_the_terminal(ready: Setup) -> None:
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    term = ready.terminal("teardown", "box1")
    await term.expect("to tear it down: ")
    term.type("box1")
    await term.expect("again to record it")
    assert ready.journal.load("box1").torn_down_at is None  # not before the second name
    await ready.box.stop()  # destroyed by hand: nothing answers
    term.type("box1")
    code, out, err = await term.finish()
    assert code == 0, out + err
    assert "recorded as torn down (destroyed by hand)" in out
    assert ready.journal.load("box1").torn_down_at is not None


# --- a confirmation is void once the box was worked on since -------------------------


async def test_a_later_check_that_saw_a_cell_running_voids_the_confirmation(ready: Setup) -> None:
    """Review s24 #1: a check's CellsRunning comes after its Rescanned, at the same time:
    judged at the Rescanned, "locked: idle (running: lr04)" went unseen."""
    from rgt_tui.domain.teardown_gate import CellsRunning, Rescanned

    set_host_key(ready.loopback.hosts_file, "teardown", None)
    await ready.confirm()
    jh = ready.journal.load("box1")
    opened = confirmed_at(jh)
    assert opened is not None
    assert changed_since(jh, ready.host, ready.journal.directory, opened) == ""
    await ready.check()  # a real check since: all holds but the name
    jh = ready.journal.load("box1")
    assert changed_since(jh, ready.host, ready.journal.directory, opened) == ""
    at = next(t for t, e in reversed(jh.events) if isinstance(e, Rescanned))
    assert at > opened
    jh.events.append((at, CellsRunning(("lr04",))))  # what that check also saw
    said = changed_since(jh, ready.host, ready.journal.directory, opened)
    assert "found its gate locked (" in said and said.endswith("idle)"), said


async def test_a_pull_since_the_confirmation_that_found_files_not_here_voids_it(
    ready: Setup,
) -> None:
    """Spot hour s43 #1: after the typed confirmation the cell saved a checkpoint, a pull
    listed it and was cut short, and ``--destroyed`` recorded the box torn down: the file
    was on the box only. The pull's records since, read with no connection (the box may
    be gone), void the confirmation until verify finds the file here."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    assert outcome.report.unlocked, outcome.report.conditions
    late = ready.box.root / "results" / "cellA" / "step_900.bin"
    late.write_bytes(b"checkpoint" * 1000)
    async with open_transport(ready.host) as t:  # a pull from another window: no verify
        await pull_host(ready.host, ready.fleet.results_dir, t)
    await ready.loopback.box("box1").stop()  # the box is being destroyed: nothing answers
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    said = " ".join(cli.stderr.split())
    assert "a pull listed files the box wrote after it, not verified here (" in said, said
    assert "(cellA/step_900.bin: `rgt-tui verify box1`, which needs no box, counts " in said
    assert "nothing was recorded" in said
    assert ready.journal.load("box1").torn_down_at is None
    # Verified here (the copy is whole): nothing the box wrote is lost, the record holds.
    report = await verify_host(ready.host, ready.fleet.results_dir, transport=None)
    assert report.ok, report.problems
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert ready.journal.load("box1").torn_down_at is not None


async def test_a_check_locked_only_by_a_pull_not_verified_yet_is_settled_by_the_verify(
    ready: Setup,
) -> None:
    """s44 spot hour #1: after the confirmation the box wrote a file, another window pulled
    it, and the open TUI checked the gate then (locked: not verified yet). The box was
    destroyed, the copy verified here, and --destroyed was refused for good: that locked
    check could never be replaced. The records since it are judged with it."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    (ready.box.root / "results" / "cellA" / "late.bin").write_bytes(b"w" * 4096)
    async with open_transport(ready.host) as t:
        await pull_host(ready.host, ready.fleet.results_dir, t)
    report = await ready.check()  # the TUI's re-check after that pull: locked
    assert {c.key for c in report.conditions if not c.ok} >= {"pulled", "verified"}
    await ready.loopback.box("box1").stop()  # destroyed by hand
    with pytest.raises(BoxMismatch) as refused:  # not verified yet: refused
        await record_destroyed(ready.fleet, ready.host, ready.journal, "box1", outcome.report.box)
    assert "found its gate locked (" in str(refused.value)
    report = await verify_host(ready.host, ready.fleet.results_dir, transport=None)
    assert report.ok, report.problems
    jh = await record_destroyed(ready.fleet, ready.host, ready.journal, "box1", outcome.report.box)
    assert jh.torn_down_at is not None


async def test_entries_a_pull_since_could_not_copy_void_the_confirmation(ready: Setup) -> None:
    """Review s44 #2: a checkpoint the box wrote after the confirmation under a name this
    machine cannot take, or a link out of its root, is on the box only: the pull since
    refused it, and ``--destroyed`` recorded the box torn down all the same."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    cell = ready.box.root / "results" / "cellA"
    fd = os.open(os.fsencode(cell) + b"/step_950\xff.pt", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"w" * 1000)
    os.close(fd)
    (cell / "step_900.pt").symlink_to("/etc/hostname")
    async with open_transport(ready.host) as t:
        await pull_host(ready.host, ready.fleet.results_dir, t)
    await ready.loopback.box("box1").stop()
    with pytest.raises(BoxMismatch) as refused:
        await record_destroyed(ready.fleet, ready.host, ready.journal, "box1", outcome.report.box)
    why = str(refused.value)
    assert "a pull found entries on the box it could not copy here, new since (" in why, why
    assert "step_950" in why and "step_900.pt" in why
    assert ready.journal.load("box1").torn_down_at is None


async def test_a_verify_since_that_found_a_file_missing_voids_the_confirmation(
    ready: Setup,
) -> None:
    """Review s44 #6: after the confirmation a file of the local copy changed (its size
    kept) and a verify (it needs no box) said so; the record went through, the pulled
    file then on the box only."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    await ready.loopback.box("box1").stop()
    folder = Path(ready.fleet.results_dir) / "box1"
    changed = next(folder.rglob("cellB/metrics.json"))
    changed.write_bytes(changed.read_bytes().replace(b"0.9", b"0.1"))  # same size
    report = await verify_host(ready.host, ready.fleet.results_dir, transport=None)
    assert not report.ok
    seen = ready.journal.load("box1").last_seen
    with pytest.raises(BoxMismatch) as refused:
        await record_destroyed(ready.fleet, ready.host, ready.journal, "box1", outcome.report.box)
    why = str(refused.value)
    assert "a verify since found files missing or failing here (cellB/metrics.json)" in why, why
    jh = ready.journal.load("box1")
    assert jh.torn_down_at is None
    # Its records, read with no connection, say nothing of when the box was last seen
    # (review s44 #8: "seen" just now, the box gone).
    assert jh.last_seen == seen


async def test_a_pulled_file_deleted_here_since_the_confirmation_refuses_the_record(
    ready: Setup,
) -> None:
    """s44 spot hour #9: after the confirmation a pulled checkpoint was moved away here,
    and --destroyed recorded the box torn down at once: no check since had re-hashed the
    copy. Each file the last pull listed is looked for (a stat, not a re-hash)."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    await ready.confirm()
    folder = Path(ready.fleet.results_dir) / "box1"
    gone = next(folder.rglob("cellA/metrics.json"))
    gone.rename(ready.tmp / "elsewhere.json")
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    said = " ".join(cli.stderr.split())
    assert "lacks files the last pull listed" in said and "cellA/metrics.json" in said, said
    assert ready.journal.load("box1").torn_down_at is None
    (ready.tmp / "elsewhere.json").rename(gone)  # put back: recorded once it is gone
    await ready.box.stop()
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 0, cli.stdout + cli.stderr


async def test_destroyed_waits_for_a_pull_that_is_running(ready: Setup) -> None:
    """Review s44 #5: a pull's manifest is recorded once the box hashed every file; while
    it hashes a checkpoint written since, no record names it, and the record went
    through. A pull holding the folder's lock refuses it, and it is not recorded."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    folder = Path(ready.fleet.results_dir) / "box1"
    with file_lock(pull_lock_path(folder), 0):  # what a pull in another window holds
        cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "a pull of box1 is running" in " ".join(cli.stderr.split()), cli.stderr
    assert ready.journal.load("box1").torn_down_at is None
    jh = await record_destroyed(ready.fleet, ready.host, ready.journal, "box1", outcome.report.box)
    assert jh.torn_down_at is not None  # the pull over: nothing changed, it is recorded


async def test_a_check_while_a_pull_runs_says_so_not_pull_again(ready: Setup) -> None:
    """h491 #5: while the TUI pulled, `teardown --check` said nothing of it and sent the
    user to `rgt-tui pull box1`, which answered "another pull of box1 is running"."""
    folder = Path(ready.fleet.results_dir) / "box1"
    (next(folder.rglob("metrics.json"))).unlink()  # as a pull part-way leaves it
    with file_lock(pull_lock_path(folder), 0):  # what a pull in another window holds
        report = await ready.check()
    assert not report.unlocked
    assert report.problems[0].startswith(f"a pull of box1 into {folder} is running on this machine")
    assert not any("pull again" in p for p in report.problems), report.problems
    after = await ready.check()  # the pull over: the copy's own words again
    assert any("lacks files the manifest lists" in p for p in after.problems), after.problems


async def test_a_local_check_since_the_confirmation_that_found_a_file_gone_voids_it(
    ready: Setup,
) -> None:
    """A check after the confirmation whose re-scan failed (the box is gone, or down) voids
    nothing by itself; its re-hash of the local copy finding a pulled file missing here
    does: that file may now be on the box only."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    await ready.loopback.box("box1").stop()
    assert not (await ready.check()).unlocked  # the re-scan failed: that alone voids nothing
    jh = ready.journal.load("box1")
    assert changed_since(jh, ready.host, ready.journal.directory, confirmed_at(jh)) == ""
    folder = Path(ready.fleet.results_dir) / "box1"
    (next(folder.rglob("metrics.json"))).unlink()
    await ready.check()
    with pytest.raises(BoxMismatch) as refused:
        record_manual_teardown(ready.journal, ready.host, "box1", outcome.report.box)
    why = str(refused.value)
    assert "a check of the local copy at " in why and "found files missing or changed" in why
    assert "metrics.json" in why
    assert ready.journal.load("box1").torn_down_at is None


GROUP_QUEUE = "configs/cellP.yaml train 1\n"


def _add_group(setup: Setup) -> Path:
    """Make box1 rank 0 of group pair (box2, never reached, rank 1), with a queue file of
    its own; returns that file."""
    queue = setup.tmp / "pair.txt"
    queue.write_text(GROUP_QUEUE)
    with setup.loopback.hosts_file.open("a") as f:
        f.write(
            '\n[[hosts]]\nname = "box2"\nssh = "root@127.0.0.1:9"\n\n'
            '[[groups]]\nname = "pair"\nhosts = ["box1", "box2"]\n'
            f"queue = {json.dumps(str(queue))}\n"
            'run = "torchrun --nnodes {nnodes} --node-rank {node_rank} train.py {out}"\n'
        )
    return queue


async def test_a_launch_of_the_boxs_group_voids_its_confirmation(ready: Setup) -> None:
    """Review s24 #4: a [[groups]] launch is recorded under the group's name, so one that
    ran on this box after its confirmation left ``--destroyed`` free to record it."""
    from rgt_tui.services.queue.launch_acks import RECORD_VERSION, acks_path
    from rgt_tui.services.records import atomic_write_json

    _add_group(ready)
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    jh = ready.journal.load("box1")
    opened = confirmed_at(jh)
    assert opened is not None
    fleet = load_fleet(ready.loopback.hosts_file)
    groups = fleet.groups_of("box1")
    assert [group.name for group in groups] == ["pair"]
    assert changed_since(jh, ready.host, ready.journal.directory, opened, groups) == ""
    record = {"version": RECORD_VERSION, "host": "pair", "pid": 7, "at": opened + 60, "acks": []}
    atomic_write_json(ready.journal.directory / acks_path(fleet, "pair").name, record)
    assert changed_since(jh, ready.host, ready.journal.directory, opened) == ""
    said = changed_since(jh, ready.host, ready.journal.directory, opened, groups)
    assert said.startswith("a launch of its group pair at "), said
    with pytest.raises(BoxMismatch) as refused:
        record_manual_teardown(ready.journal, ready.host, "box1", outcome.report.box, groups=groups)
    assert "a launch of its group pair at" in str(refused.value)
    assert ready.journal.load("box1").torn_down_at is None


async def test_a_pull_of_the_boxs_group_since_that_lists_files_not_verified_voids_it(
    ready: Setup,
) -> None:
    """Review s44 #10: a group's pull keeps what it takes from a rank's box in a folder of
    the group's, so one after the box's confirmation that listed a file the box wrote
    since, not verified here, voided nothing: the record went through. Verified, it holds."""
    _add_group(ready)
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    assert outcome.report.unlocked, outcome.report.conditions
    fleet = ready.fleet
    groups = fleet.groups_of("box1")
    (ready.box.root / "results" / "cellA" / "late.json").write_text('{"acc": 1}')
    # The group's pull, not verified yet (as a periodic pull cut off before its verify).
    async with open_transport(fleet.host("pair")) as t:
        assert (await pull_host(fleet.host("pair"), fleet.results_dir, t)).ok
    assert (fleet.results_dir / "pair" / "cellA" / "late.json").exists()
    jh = ready.journal.load("box1")
    opened = confirmed_at(jh)
    assert opened is not None
    directory = ready.journal.directory
    # Without the results folder (the call as it was) nothing is said.
    assert changed_since(jh, ready.host, directory, opened, groups) == ""
    said = changed_since(jh, ready.host, directory, opened, groups, fleet.results_dir)
    assert said.startswith("a pull of its group pair listed files on it not verified here ("), said
    assert "late.json" in said and "`rgt-tui verify pair`" in said
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "a pull of its group pair listed files" in " ".join(cli.stderr.split())
    assert ready.journal.load("box1").torn_down_at is None
    # Verified (here, with no box): its files are; the group's roster (a cell it never
    # ran) is the group's matter, not this box's. Nothing voids the confirmation.
    verified = await ready.cli("verify", "pair")
    assert "files: 1 hash-only, 3 verified" in verified.stdout, verified.stdout
    assert changed_since(jh, ready.host, directory, opened, groups, fleet.results_dir) == ""
    # A pull of the group running: its listing of this box is not written yet (review
    # s45 #2), so the record waits for it, as for the box's own pull.
    with file_lock(pull_lock_path(fleet.results_dir / "pair"), 0):
        cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode != 0 and "a pull of its group pair is running" in cli.stderr, cli.stderr
    assert ready.journal.load("box1").torn_down_at is None
    await ready.box.stop()
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert ready.journal.load("box1").torn_down_at is not None


async def test_cells_appended_to_the_boxs_groups_queue_file_void_its_confirmation(
    ready: Setup,
) -> None:
    """Review s25 #9: the group's queue file is the group's, not the box's, so cells
    appended there after the box's confirmation (work for every rank) did not void it:
    only the group's launch did. A ``#moved-to`` line a move writes there adds no work,
    and voids nothing."""
    queue = _add_group(ready)
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    assert outcome.report.unlocked, outcome.report.conditions
    # A cell appended to the group's queue file: the confirmation did not know it.
    queue.write_text(GROUP_QUEUE + "configs/cellQ.yaml train 1\n")
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    said = " ".join(cli.stderr.split())
    assert "no longer holds: since then, the queue file pair.txt of its group pair holds " in said
    assert "cells the confirmation did not know (cellQ)" in said, said
    assert ready.journal.load("box1").torn_down_at is None

    # Confirmed again, the confirmation knows cellQ; a move of it out of the group's file
    # (its line rewritten '#moved-to', the file saved later) is no work for the box.
    outcome = await ready.confirm()
    assert outcome.report.unlocked, outcome.report.conditions
    queue.write_text(GROUP_QUEUE + "#moved-to box3: configs/cellQ.yaml train 1\n")
    later = time.time() + 5  # past the confirmation, whatever the file system's clock
    os.utime(queue, (later, later))
    jh = ready.journal.load("box1")
    groups = ready.fleet.groups_of("box1")
    assert changed_since(jh, ready.host, ready.journal.directory, confirmed_at(jh), groups) == ""
    await ready.box.stop()
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert ready.journal.load("box1").torn_down_at is not None


async def test_a_confirmation_kept_before_its_groups_cells_were_is_not_voided_by_them(
    ready: Setup,
) -> None:
    """Review s26 #1: a rank box confirmed by an rgt-tui that kept no group cells, then
    destroyed by hand: its groups' cells all read as unknown, which voided the
    confirmation of a box whose name can no longer be typed (it is gone). Such a
    confirmation is not compared with the group's file, as before."""
    queue = _add_group(ready)
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    assert outcome.report.unlocked, outcome.report.conditions
    # The journal as the older rgt-tui wrote it: no group_cells key in the typed event.
    path = ready.journal.path("box1")
    data = json.loads(path.read_text())
    typed = [e for _, e in data["events"] if e.get("type") == "ConfirmationTyped"]
    assert typed and all("group_cells" in e for e in typed)
    for event in typed:
        del event["group_cells"]
    path.write_text(json.dumps(data))
    queue.write_text(GROUP_QUEUE)  # the group's file as it was: its cells known or not
    await ready.box.stop()
    cli = await ready.cli("teardown", "box1", "--destroyed", "box1")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert ready.journal.load("box1").torn_down_at is not None


async def test_periodic_pulls_wait_for_an_opened_gate_and_go_on_once_it_no_longer_holds(
    ready: Setup,
) -> None:
    """s35 resume hour #1: a launch after the typed name voided the confirmation, yet the
    periodic pulls stayed off for 15 minutes ("a teardown is running"), and the preempted
    cell then had no verified checkpoint to resume from."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    outcome = await ready.confirm()
    assert confirmed_at(ready.journal.load("box1")) is not None, outcome.report.conditions
    host = replace(ready.host, watch=HostWatch(pull_every_s=600.0))
    fleet = replace(ready.fleet, hosts=(host,))
    connections = FleetConnections(fleet.hosts)
    scheduler = PullScheduler(
        fleet, connections, emit=lambda e: None, journal=lambda: ready.journal,
        options=fast(), poll_s=0.05, locks=HostLocks(),
    )  # fmt: skip
    manifest = fleet.results_dir / "box1" / ".rgt" / "manifest.json"
    try:
        taken = manifest.stat().st_mtime_ns
        assert await scheduler.pull_once(host) == BUSY_RETRY_S  # the user destroys it now
        assert "a teardown is running" in scheduler.last["box1"]
        # The box worked on since (a file the next check finds unpulled): the confirmation
        # no longer holds, no teardown goes on, and the pulls do.
        (ready.box.root / "results" / "cellA" / "late.json").write_text('{"acc": 1}')
        assert not (await ready.check()).ready_but_confirmation
        assert await scheduler.pull_once(host) != BUSY_RETRY_S, scheduler.last
        assert manifest.stat().st_mtime_ns != taken
        assert (fleet.results_dir / "box1" / "cellA" / "late.json").exists()
    finally:
        await connections.close_all()


async def test_box_still_answers_names_only_the_confirmed_box(ready: Setup) -> None:
    """The command line's check before a record by hand: the confirmed box answering
    refuses it; another box under the name (its id new) or none at all does not."""
    set_host_key(ready.loopback.hosts_file, "teardown", None)
    confirmed = (await ready.confirm()).report.box
    said = await box_still_answers(ready.host, confirmed)
    assert said is not None and f"box {confirmed.short()} took a connection" in said
    # A mistake on this side is not the box's absence (h462 #1: a missing identity_file
    # recorded a box that still answered): it cannot be told, and says why.
    set_host_key(ready.loopback.hosts_file, "identity_file", str(ready.tmp / "no-such-key"))
    said = await box_still_answers(ready.host, confirmed)
    assert said is not None and said.startswith("cannot tell whether box1 is destroyed: "), said
    assert "no-such-key" in said and "nothing was recorded" in said, said
    set_host_key(ready.loopback.hosts_file, "identity_file", str(ready.loopback.client_key))
    (ready.box.root / ".rgt" / "box-id").unlink()  # re-created under the name: a new id
    assert await box_still_answers(ready.host, confirmed) is None
    await ready.box.stop()  # its port refuses: what a destroyed box does
    assert await box_still_answers(ready.host, confirmed) is None
