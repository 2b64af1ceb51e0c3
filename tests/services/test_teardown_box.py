"""The gate is the law, over real loopback boxes, real files and the real journal:

- the re-scan that unlocks is taken after the name is typed: a box gone at confirmation
  refuses (service, and the command line waiting at its prompt), nothing runs;
- every fact belongs to a box: a box re-created under a torn-down box's name (new
  ``~/.rgt/box-id``, or a new host key) has a closed gate and is not torn down, and the
  old box's facts are history;
- acknowledgements name a cell of the host's queue, or are refused with the list;
- every problem verify names keeps the gate locked and is named in the checklist;
- the TUI's writers and command-line runs write the journal at once and lose nothing.

Every case stands on ``support.gate_box.Setup`` (a box with pulled and verified
results, its journal and command-line helpers) and the ``ready`` fixture
(``tests/services/conftest.py``). A teardown recorded by hand, and what voids its
confirmation: ``test_teardown_manual.py``.

Over 450 lines on purpose: one real box, queue and journal fixture (support.gate_box)
serves every condition of the gate; split, each file would rebuild it.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import asyncssh
import pytest
from support.gate_box import QUEUE, Setup, write_queue

from rgt_tui.domain.teardown_gate import MissingCellAcknowledged, RunningAcknowledged
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.teardown import (
    BoxMismatch,
    GateLocked,
    GateReport,
    StillToRun,
    UnknownCellError,
    acknowledge,
    check_gate,
    queue_cells,
)
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import open_transport


def _condition(report: GateReport, key: str):  # type: ignore[no-untyped-def]
    return next(c for c in report.conditions if c.key == key)


# --- the re-scan that unlocks is taken after the name is typed ----------------------


async def test_box_gone_at_confirmation_refuses_and_runs_nothing(ready: Setup) -> None:
    await ready.box.stop()  # between the check (ready) and the typed name
    with pytest.raises(GateLocked) as refused:
        await ready.confirm()
    assert "rescan" in str(refused.value) and "cannot re-scan" in str(refused.value)
    at_confirmation = refused.value.report  # the checklist of that moment, for the TUI
    assert at_confirmation is not None and not _condition(at_confirmation, "rescan").ok
    assert not ready.marker.exists()
    jh = ready.journal.load("box1")
    assert jh.teardowns == [] and jh.torn_down_at is None
    # The journal keeps no stale match either: a check without the box says locked.
    assert not (await ready.check()).ready_but_confirmation

    await ready.box.start()  # back: the same confirmation now runs, after its re-scan
    outcome = await ready.confirm()
    assert outcome.ran and outcome.ok and outcome.recorded
    assert ready.marker.read_text() == "destroyed\n"


async def test_cli_waiting_at_the_prompt_refuses_when_the_box_is_gone(ready: Setup) -> None:
    term = ready.terminal("teardown", "box1")
    await term.expect("Type the host's name (box1)")
    assert "[x] rescan" in term.out.decode()  # it was ready when the prompt came up
    await ready.box.stop()  # the user takes their time; the box goes away meanwhile
    term.type("box1")
    code, out, err = await term.finish()
    assert code == 1, out + err
    assert "refused" in err and "cannot re-scan" in err and "nothing was torn down" in err
    assert not ready.marker.exists()
    assert ready.journal.load("box1").torn_down_at is None


async def test_cli_ctrl_d_at_the_prompt_says_nothing_was_typed(ready: Setup) -> None:
    """Ctrl-D at the name's question is not "no terminal" (a user's hour read that)."""
    term = ready.terminal("teardown", "box1")
    await term.expect("Type the host's name (box1)")
    os.write(term.master, b"\x04")  # the terminal's end of input, at the start of a line
    code, out, err = await term.finish()
    assert code == 1, out + err
    assert "refused: no name typed; nothing was torn down" in err, err
    assert out.endswith("tear it down: \n"), out  # the refusal starts a line of its own
    assert "no terminal" not in err
    assert not ready.marker.exists()
    assert ready.journal.load("box1").torn_down_at is None


async def test_check_rescans_now_and_an_earlier_rescan_never_counts(ready: Setup) -> None:
    await ready.box.stop()
    gone = await ready.cli("teardown", "box1", "--check")
    assert gone.returncode == 1 and "ready" not in gone.stdout
    assert "[ ] rescan" in gone.stdout and "cannot re-scan the box" in gone.stdout


# --- every fact belongs to a box ----------------------------------------------------


async def _new_host_key(setup: Setup) -> None:
    """Re-create the box with a new host key (the same disk): known_hosts holds the new one."""
    await setup.box.stop()
    setup.box.host_key = asyncssh.generate_private_key("ssh-ed25519")
    await setup.box.start()
    setup.loopback.known_hosts.write_text(setup.box.known_hosts_line + "\n")


@pytest.mark.parametrize("recreate", ["box-id", "host-key"])
async def test_a_new_box_under_a_torn_down_name_is_closed_and_not_torn_down(
    ready: Setup, recreate: str
) -> None:
    torn = await ready.cli("teardown", "box1", "--confirm", "box1")
    assert torn.returncode == 0, torn.stdout + torn.stderr
    old = ready.journal.load("box1")
    assert old.torn_down_at is not None and old.box is not None

    # A box rented again under the same name, with the very same files on it.
    if recreate == "box-id":
        (ready.box.root / ".rgt" / "box-id").unlink()
    else:
        await _new_host_key(ready)
    check = await ready.cli("teardown", "box1", "--check")
    assert check.returncode == 1, check.stdout
    assert "ready" not in check.stdout and "already recorded as torn down" not in check.stdout
    assert "a new box answers as box1" in check.stdout and "history:" in check.stdout
    assert "[ ] manifest" in check.stdout and "of another box" in check.stdout

    jh = ready.journal.load("box1")
    assert jh.torn_down_at is None and jh.box is not None and not jh.box.same_box(old.box)
    (history,) = jh.history
    assert history.box == old.box and history.torn_down_at == old.torn_down_at
    assert history.events == old.events  # the old facts, kept readable
    # Nothing of the old box counts even after the new box's own re-scan matched it.
    report = await ready.check()
    assert not report.ready_but_confirmation and report.torn_down_at is None


async def test_the_new_boxs_own_pull_and_verify_open_its_gate(ready: Setup) -> None:
    from rgt_tui.services.pull import PullError

    (ready.box.root / ".rgt" / "box-id").unlink()
    assert not (await ready.check()).ready_but_confirmation
    # Its pull is refused while the folder holds the earlier box's copy (h619 #2: that
    # copy was set aside file by file); moved away as the refusal says, it pulls.
    with pytest.raises(PullError, match="holds the pulled copy of another"):
        await ready.pull_and_verify()
    folder = ready.fleet.results_dir / "box1"
    folder.rename(folder.with_name("box1-earlier"))
    await ready.pull_and_verify()
    report = await ready.check()
    assert report.ready_but_confirmation and report.box == ready.journal.load("box1").box
    assert not report.is_new_box and len(report.history) == 1


# --- a re-scan's own refusals and links -----------------------------------------------


def _escaping_link(setup: Setup) -> str:
    os.symlink("/etc", setup.box.root / "results" / "escape")  # refused: leaves the root
    return "refused by the re-scan: escape"


def _inner_link(setup: Setup) -> str:
    os.symlink("cellA/metrics.json", setup.box.root / "results" / "latest.json")
    return "new link: latest.json -> cellA/metrics.json"


@pytest.mark.parametrize("make_change", [_escaping_link, _inner_link])
async def test_a_rescan_refusing_or_linking_what_the_pull_did_not_keeps_it_locked(
    ready: Setup, make_change
) -> None:  # type: ignore[no-untyped-def]
    named = make_change(ready)
    report = await ready.check()
    assert not report.ready_but_confirmation
    manifest = _condition(report, "manifest")
    assert not manifest.ok and named in manifest.evidence, manifest
    check = await ready.cli("teardown", "box1", "--check")
    assert check.returncode == 1 and named in check.stdout, check.stdout
    with pytest.raises(GateLocked):
        await ready.confirm()
    assert not ready.marker.exists()


def test_the_rescans_refusals_reach_the_gate_from_a_parsed_manifest():
    """The reviewer's case: a re-scan that could not list a folder, or a name that is not
    UTF-8, matched the manifest all the same."""
    from rgt_tui.domain import teardown_gate as g
    from rgt_tui.domain.manifest_parse import parse_manifest_lines
    from rgt_tui.services.teardown import manifest_event, rescan_event

    def lines(extra, sha):  # type: ignore[no-untyped-def]
        return [
            json.dumps(x)
            for x in (
                {"type": "start", "v": 1, "box_id": "a" * 32, "taken_at": 100.0},
                {"type": "root", "index": 0, "given": "~/runs", "path": "/root/runs"},
                {"type": "file", "root": 0, "path": "ckpt.pt", "size": 10, "mtime": 50.0}
                | ({"sha256": sha} if sha else {}),
                *extra,
                {"type": "done", "taken_at": 100.0, "finished_at": 101.0},
            )
        ]

    manifest = parse_manifest_lines("h", lines([], "ab" * 32))
    denied = {"type": "refused", "root": 0, "path": "cell7", "reason": "cannot list: denied"}
    rescan = parse_manifest_lines("h", lines([denied], None))
    state = g.apply(g.GateState("h", box_id="a" * 32), manifest_event(manifest))
    state = g.apply(state, rescan_event(rescan, 200.0, box_id="a" * 32))
    assert not state.rescan_matches and "refused by the re-scan: cell7" in (
        state.invalidated_by or ""
    )


def test_format_checklist_prints_the_boxs_text_escaped(tmp_path: Path) -> None:
    from rgt_tui.cli.teardown import format_checklist
    from rgt_tui.domain import teardown_gate as g
    from rgt_tui.profiles import profile as load_profile

    fleet = tmp_path / "hosts.toml"
    fleet.write_text('[[hosts]]\nname = "box1"\nssh = "root@10.0.0.1"\npull = ["~/r"]\n')
    host = load_fleet(fleet).host("box1")
    payload = "\x1b]0;pwned\x07\x1b[2J\nfake line"
    state = g.apply(g.GateState("box1", box_id="a" * 32), g.RescanFailed(payload))
    report = GateReport(
        host,
        load_profile(host.profile),
        state,
        (*g.conditions(state), g.Condition("extra", False, payload)),
        (f"cannot re-scan the box: {payload}",),
    )
    text = format_checklist(report)
    assert "\x1b" not in text and "\x07" not in text and "fake line" in text
    assert all(not line.startswith("fake line") for line in text.splitlines())
    assert "\\x1b]0;pwned\\x07" in text


def test_the_checklist_after_an_acknowledgement_keeps_the_live_only_lines(tmp_path) -> None:
    """h473 #2: a group's line (read live, never recorded) was dropped from the checklist
    shown after an acknowledgement, which could then read "ready". Pure: two reports."""
    from rgt_tui.cli.teardown import with_live_lines
    from rgt_tui.domain import teardown_gate as g
    from rgt_tui.profiles import profile as load_profile

    fleet = tmp_path / "hosts.toml"
    fleet.write_text('[[hosts]]\nname = "box1"\nssh = "root@10.0.0.1"\n')
    host = load_fleet(fleet).host("box1")
    profile = load_profile(host.profile)
    state = g.GateState("box1", box_id="a" * 32)
    confirmed = g.Condition("confirmed", False, "not typed yet")
    live = GateReport(host, profile, state, (
        g.Condition("rescan", False, "new: late.json"),
        g.Condition("roster", False, "missing: cellC"),
        g.Condition("group", False, "cell x of group pair runs on this box"),
        confirmed,
    ), ())  # fmt: skip
    after = GateReport(host, profile, state, (
        g.Condition("rescan", False, "no matching re-scan"),
        g.Condition("roster", True, "missing: cellC (acknowledged)"),
        confirmed,
    ), ())  # fmt: skip
    shown = with_live_lines(after, live)
    assert [(c.key, c.ok, c.evidence) for c in shown.conditions] == [
        ("rescan", False, "new: late.json"),  # the live check's
        ("roster", True, "missing: cellC (acknowledged)"),  # the acknowledgement's
        ("group", False, "cell x of group pair runs on this box"),  # live only: kept
        ("confirmed", False, "not typed yet"),
    ]
    assert not shown.ready_but_confirmation


# --- acknowledgements name a cell of the queue ----------------------------------------


async def test_an_unknown_cell_acknowledgement_is_refused_with_the_cells(ready: Setup) -> None:
    before = ready.journal.load("box1").events
    with pytest.raises(UnknownCellError) as err:
        acknowledge(
            ready.journal, "box1", missing=("NOPE",), cells=queue_cells(ready.host), box=None
        )
    assert err.value.known_cells == ("cellA", "cellB")
    assert ready.journal.load("box1").events == before

    cli = await ready.cli("teardown", "box1", "--ack-missing", "NOPE")
    assert cli.returncode == 2
    assert "no cell named 'NOPE'" in cli.stderr and "cellA, cellB" in cli.stderr
    assert "nothing was acknowledged" in cli.stderr
    assert ready.journal.load("box1").events == before

    ok = await ready.cli("teardown", "box1", "--ack-missing", "cellB", "--check")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # Said, with --check too (hour s19a #7: it was recorded without a word).
    assert "recorded for this box in the journal: cellB accepted as missing" in ok.stdout
    acked = [e for _, e in ready.journal.load("box1").events]
    assert MissingCellAcknowledged("cellB") in acked


async def test_an_acknowledgement_counts_only_for_the_box_it_was_made_for(ready: Setup) -> None:
    seen = (await ready.check()).box
    (ready.box.root / ".rgt" / "box-id").unlink()  # another box under the name meanwhile
    now = (await ready.check()).box
    assert now is not None and not now.same_box(seen)
    with pytest.raises(BoxMismatch) as refused:
        acknowledge(ready.journal, "box1", missing=("cellB",), cells=("cellA", "cellB"), box=seen)
    assert "nothing was acknowledged" in str(refused.value)
    assert not any(
        isinstance(e, MissingCellAcknowledged) for _, e in ready.journal.load("box1").events
    )
    # The command line identifies the box answering before it records the acknowledgement.
    await ready.box.stop()
    gone = await ready.cli("teardown", "box1", "--ack-missing", "cellB")
    assert gone.returncode == 1 and "nothing was acknowledged" in gone.stderr, gone.stderr
    assert not any(
        isinstance(e, MissingCellAcknowledged) for _, e in ready.journal.load("box1").events
    )
    await ready.box.start()
    ok = await ready.cli("teardown", "box1", "--ack-missing", "cellB")
    jh = ready.journal.load("box1")
    assert MissingCellAcknowledged("cellB") in [e for _, e in jh.events], ok.stdout + ok.stderr
    assert jh.box == now and f"box {now.short()}" in ok.stdout


# --- every verify problem keeps it locked -------------------------------------------


def _leftover(setup: Setup) -> str:
    (setup.box.root / "results" / "cellA" / "step.tmp").write_text("half")
    return "step.tmp"


def _refused(setup: Setup) -> str:
    os.symlink("/etc", setup.box.root / "results" / "escape")
    return "escape"


def _unreadable(setup: Setup) -> str:
    (setup.box.root / "results" / "cellB" / "broken.json").write_text('{"acc": ')
    return "broken.json"


def _roster_problem(setup: Setup) -> str:
    write_queue(setup, QUEUE + "configs/bad line with too many fields here\n")
    return "queue file problems"


@pytest.mark.parametrize(
    # (No stray part of a file the box does not list: a pull that runs to its end
    # removes those since h591 #2; a part left after the pull is verify's "unfinished"
    # flag, tests/services/test_verify.py.)
    "make_problem",
    [_leftover, _refused, _unreadable, _roster_problem],
)
async def test_every_verify_problem_keeps_it_locked_and_is_named(ready: Setup, make_problem):  # type: ignore[no-untyped-def]
    name = make_problem(ready)
    report = await ready.pull_and_verify(expect_ok=False)
    assert any(name in p for p in report.problems), report.problems
    gate = await ready.check()
    assert not gate.ready_but_confirmation
    verified = _condition(gate, "verified")
    assert not verified.ok and name in verified.evidence, verified


async def test_a_failed_rescan_in_verify_keeps_it_locked(ready: Setup) -> None:
    async with open_transport(ready.host) as t:
        await ready.box.stop()
        report = await verify_host(ready.host, ready.fleet.results_dir, transport=t)
    assert not report.ok
    await ready.box.start()
    gate = await ready.check()  # the box is back and unchanged; verify's record is not
    verified = _condition(gate, "verified")
    assert not gate.ready_but_confirmation and "could not re-scan" in verified.evidence


async def test_a_missing_cell_is_the_rosters_and_its_acknowledgement_opens_it(ready: Setup) -> None:
    write_queue(ready, QUEUE + "configs/cellC.yaml train 1\n")
    await ready.pull_and_verify(expect_ok=False)  # cellC has no results
    gate = await ready.check()
    assert [c.key for c in gate.conditions if not c.ok] == ["roster", "confirmed"]
    acknowledge(
        ready.journal, "box1", missing=("cellC",), cells=queue_cells(ready.host), box=gate.box
    )
    assert (await ready.check()).ready_but_confirmation


async def test_a_check_with_an_acknowledgement_says_what_the_live_re_scan_found(
    ready: Setup,
) -> None:
    """h472 #1: `teardown --check --ack-missing X` printed the checklist from the records
    alone: a box written to since the pull read "no matching re-scan … once the box
    answers", of a box that had just answered, and the new file went unnamed."""
    write_queue(ready, QUEUE + "configs/cellC.yaml train 1\n")
    await ready.pull_and_verify(expect_ok=False)  # cellC has no results
    (ready.box.root / "results" / "cellA" / "late.json").write_text("{}")
    out = await ready.cli("teardown", "box1", "--ack-missing", "cellC", "--check")
    said = " ".join((out.stdout + out.stderr).split())
    assert out.returncode == 1, said
    assert "recorded for this box in the journal: cellC accepted as missing" in said, said
    assert "cellA/late.json" in said and "once the box answers" not in said, said
    assert "[x] roster" in said, said  # the acknowledgement settled its own line


# --- concurrent writers -----------------------------------------------------------------


async def test_tui_writers_and_cli_runs_at_once_lose_no_event(ready: Setup) -> None:
    """Threads do what the TUI's workers do (acknowledge, observe the box, check the
    gate), for as long as command-line runs acknowledge and check at the same time."""
    cells = ("cellA", "cellB")
    jh = ready.journal.load("box1")
    assert jh.box is not None
    counts = [0, 0]
    stop = threading.Event()
    errors: list[BaseException] = []

    def tui_writer(k: int) -> None:
        try:
            i = 0
            while i < 10 or not stop.is_set():
                cell = cells[(k + i) % 2]
                # (Missing only: nothing runs, and a cell not running is not accepted
                # as running, h551 #1.)
                acknowledge(ready.journal, "box1", missing=(cell,), cells=cells, box=jh.box, now=i)
                ready.journal.observe_box("box1", jh.box, float(i))
                ready.journal.record("box1", float(i), MissingCellAcknowledged(f"t{k}-{i}"))
                i += 1
                counts[k] = i
                stop.wait(0.01)
        except BaseException as exc:  # reported below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=tui_writer, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    runs = await asyncio.gather(
        *(
            ready.cli("teardown", "box1", "--ack-missing", cells[k % 2], "--check")
            for k in range(3)
        ),
        ready.check(),
        ready.check(),
    )
    stop.set()
    for t in threads:
        await asyncio.to_thread(t.join)
    assert not errors, errors
    assert all(r.returncode == 0 for r in runs[:3]), [r.stdout + r.stderr for r in runs[:3]]
    events = [e for _, e in ready.journal.load("box1").events]
    tagged = {e.name for e in events if isinstance(e, MissingCellAcknowledged)} - set(cells)
    assert tagged == {f"t{k}-{i}" for k in range(2) for i in range(counts[k])}
    acks = [
        e
        for e in events
        if isinstance(e, (MissingCellAcknowledged, RunningAcknowledged)) and e.name in cells
    ]
    assert len(acks) == sum(counts) + 3  # every thread's and every command line's
    assert ready.journal.load("box1").box == jh.box


# --- the verification record, read whole ----------------------------------------------


def _record(of, **changes):  # type: ignore[no-untyped-def]
    record = {
        "version": 1,
        "ok": True,
        "problems": [],
        "manifest": {"digest": of.digest},
        "checks": [],
        "flags": [],
        "roster": {"expected": ["a", "b"], "present": ["a", "b"], "missing": []},
    }
    record.update(changes)
    return record


def test_verification_record_problems_become_one_named_condition():
    from rgt_tui.domain.manifest import Manifest
    from rgt_tui.domain.teardown_gate import VerificationRead
    from rgt_tui.services.teardown import verification_events

    m = Manifest("box1", (), (), box_id="a" * 32)

    def read(record):  # type: ignore[no-untyped-def]
        (v,) = [e for e in verification_events(record, m) if isinstance(e, VerificationRead)]
        return v

    assert read(_record(m)) == VerificationRead(True, ())
    unhashed = "cellB/data.bin: unverified — the manifest has no hash for it"
    assert read(_record(m, ok=False, problems=[unhashed])) == VerificationRead(False, (unhashed,))
    # ok claimed, yet a problem listed: the problem wins.
    assert not read(_record(m, ok=True, problems=[unhashed])).ok
    # ok denied with no problem listed: not ok all the same.
    assert not read(_record(m, ok=False)).ok
    # A missing cell is the roster's (acknowledgeable); anything beside it is not.
    roster = {"expected": ["a", "b"], "present": ["a"], "missing": [{"name": "b", "why": "gone"}]}
    only = _record(m, ok=False, problems=["cell b missing: gone"], roster=roster)
    # ...and the cells it was NOT VERIFIED for are kept, for the checklist to say so.
    assert read(only) == VerificationRead(True, (), ("b",))
    both = _record(m, ok=False, problems=["cell b missing: gone", unhashed], roster=roster)
    assert read(both) == VerificationRead(False, (unhashed,), ("b",))
    # Records of another pull, of another box, none, or garbled prove nothing.
    for record in (
        _record(m, manifest={"digest": "0" * 64}),
        _record(m, box_id="b" * 32),
        None,
        "unreadable: Expecting value",
        _record(m, checks=[{"no path": 1}]),
        _record(m, problems="none"),
    ):
        assert not read(record).ok, record


async def test_identify_box_names_the_box_answering_now(make_loopback_fleet) -> None:  # type: ignore[no-untyped-def]
    from rgt_tui.services.box.identity import identify_box

    loopback = await make_loopback_fleet(1)
    host = load_fleet(loopback.hosts_file).host("box1")
    async with open_transport(host) as t:
        first = await identify_box(host, t)
        assert first.host_key == t.host_key_fingerprint and first.host_key
    id_file = loopback.box("box1").root / ".rgt" / "box-id"
    assert id_file.read_text().strip() == first.box_id  # written on first contact
    id_file.unlink()  # the box re-created under the same name
    async with open_transport(host) as t:
        again = await identify_box(host, t)
    assert not again.same_box(first)


async def test_facts_about_no_box_are_shown_not_recorded(make_loopback_fleet, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A host no box ever answered for: the check says why, and the journal keeps nothing
    that would later pass for (or clutter the history of) the first box that answers."""
    setup = Setup(await make_loopback_fleet(1), tmp_path)
    await setup.box.stop()
    report = await setup.check()
    assert not report.ready_but_confirmation and report.box is None
    assert (
        not _condition(report, "box").ok
        and "cannot re-scan" in _condition(report, "rescan").evidence
    )
    jh = setup.journal.load("box1")
    assert jh.events == [] and jh.box is None
    await setup.box.start()
    report = await setup.check()
    assert report.box is not None and not report.is_new_box and report.history == ()


def _h1_report(tmp_path: Path, *, typed: bool = True) -> GateReport:
    """The gate of a host ``h1`` whose every fact holds (the name typed, or not yet)."""
    from support.gate import happy_events

    from rgt_tui.domain import teardown_gate as g
    from rgt_tui.profiles import profile as load_profile

    fleet = tmp_path / "hosts.toml"
    fleet.write_text('[[hosts]]\nname = "h1"\nssh = "root@10.0.0.1"\npull = ["~/r"]\n')
    host = load_fleet(fleet).host("h1")
    state = g.GateState("h1", box_id="b" * 32)
    for event in happy_events(box_id="b" * 32):
        if typed or not isinstance(event, g.ConfirmationTyped):
            state = g.apply(state, event)
    return GateReport(host, load_profile(host.profile), state, g.conditions(state), ())


def test_the_tabs_last_line_says_unlocked_once_the_name_is_typed(tmp_path: Path) -> None:
    """A user's hour: '✓ confirmed … typed' above 'ready: type 'box3' in the Confirm box
    below'. Every condition holding, the last line says unlocked, not what to type."""
    from rgt_tui.content.teardown_text import checklist_lines

    report = _h1_report(tmp_path)
    assert report.unlocked, [c for c in report.conditions if not c.ok]
    last = checklist_lines(report)[-1].plain
    assert last == "unlocked: 'h1' typed and the box re-scanned unchanged", last
    report = _h1_report(tmp_path, typed=False)  # the name not typed yet
    assert checklist_lines(report)[-1].plain.startswith("ready: type 'h1'")
    # In the box, not yet confirmed: Enter is what is left (h542 #10) ...
    typed = [line.plain for line in checklist_lines(report, typed=True)]
    assert typed[-1] == "ready: 'h1' typed below — Enter tears it down", typed[-1]
    assert any("'h1' typed below, not confirmed yet → Enter confirms it" in t for t in typed)
    # ... but not on a locked gate, where Enter re-checks (h545 #6).
    locked = replace(report, conditions=tuple(
        replace(c, ok=False, evidence="not pulled") if c.key == "pulled" else c
        for c in report.conditions
    ))  # fmt: skip
    assert not locked.ready_but_confirmation
    said = "\n".join(line.plain for line in checklist_lines(locked, typed=True))
    assert "typed below" not in said and "Enter confirms" not in said, said


def test_a_torn_down_box_that_still_answers_gets_no_all_clear(tmp_path: Path) -> None:
    """A user's hour: the box typed twice as destroyed by hand, then the same box
    answered (GEN1, in the Alerts tab), while the Teardown tab read every line ticked,
    "nothing left to confirm" and "its cost stops here"."""
    from rgt_tui.content.teardown_text import checklist_lines, outcome_lines
    from rgt_tui.services.teardown import TeardownOutcome

    report = _h1_report(tmp_path)
    gone = checklist_lines(report, torn_down=True)[-1].plain
    assert gone == "h1 is recorded as torn down: nothing left to confirm", gone
    still = checklist_lines(report, torn_down=True, still_answers=True)[-1].plain
    assert "STILL ANSWERS" in still and "nothing left to confirm" not in still, still
    by_hand = TeardownOutcome(False, False, None, "", "destroy it", recorded=True, report=report)
    said = " ".join(c.plain for c in outcome_lines(by_hand, True, "h1"))
    assert "its cost stops here" in said, said
    said = " ".join(c.plain for c in outcome_lines(by_hand, True, "h1", still_answers=True))
    assert "recorded as torn down" in said and "cost stops" not in said, said


async def test_a_second_entry_for_the_same_account_locks_both_gates(ready: Setup) -> None:
    """Hour s23b #2: a second entry for box1's login (no queue of its own) passed its
    gate and ran its teardown, destroying the box whose queue and results box1's gate
    counts. While both entries stand, neither gate opens; no acknowledgement settles it."""
    hosts = ready.loopback.hosts_file
    text = hosts.read_text()
    block = "[[hosts]]" + text.split("[[hosts]]", 1)[1]
    twin = block.replace('name = "box1"', 'name = "box5"', 1)
    twin = "\n".join(ln for ln in twin.splitlines() if not ln.startswith("queue ")) + "\n"
    hosts.write_text(text + "\n" + twin)
    fleet = load_fleet(hosts)
    for name in ("box1", "box5"):
        async with open_transport(fleet.host(name)) as t:
            report = await check_gate(fleet, fleet.host(name), t, ready.journal)
        account = _condition(report, "account")
        other = "box5" if name == "box1" else "box1"
        assert not account.ok and account.evidence.startswith(
            f"{other} logs in to the same account"
        ), account
        assert f"a teardown of {name} destroys {other}'s box too" in account.evidence
        assert not report.ready_but_confirmation
    said = await ready.cli("teardown", "box5", "--check")
    assert said.returncode != 0 and "remove one of the entries from the fleet file" in said.stdout
    refused = await ready.cli("teardown", "box5", "--confirm", "box5")
    assert refused.returncode != 0 and not ready.marker.exists(), refused.stdout
    hosts.write_text(text)  # one entry again: box1's gate holds all but the name
    assert (await ready.check()).ready_but_confirmation


async def test_a_box_watch_stopped_is_said_stopped_by_the_gate_and_the_pull(ready: Setup) -> None:
    """Hour s23a #6: after watch's autostop stopped the box, the gate's re-scan line and
    a pull said "connection refused … check the port in the provider's SSH command"."""
    import time

    from support.autostop import record_stop

    record_stop(ready.journal.directory, "box1", time.time() - 60)
    await ready.box.stop()
    gate = await ready.cli("teardown", "box1", "--check")
    said = " ".join(gate.stdout.split())
    assert gate.returncode != 0 and "box1 was stopped by watch at " in said, gate.stdout
    assert "start it from the provider to use it again" in said
    pulled = await ready.cli("pull", "box1")
    said = " ".join((pulled.stdout + pulled.stderr).split())
    assert pulled.returncode != 0 and "box1 was stopped by watch at " in said, said


async def test_the_same_box_under_another_spelling_locks_the_gates(ready: Setup) -> None:
    """Hour s23c #5: `localhost` for `127.0.0.1` is another account to the fleet file's
    words, so the account line missed it; the journals say both entries reached one box."""
    hosts = ready.loopback.hosts_file
    text = hosts.read_text()
    block = "[[hosts]]" + text.split("[[hosts]]", 1)[1]
    assert "127.0.0.1" in block
    twin = block.replace('name = "box1"', 'name = "box5"', 1).replace("127.0.0.1", "localhost")
    twin = "\n".join(ln for ln in twin.splitlines() if not ln.startswith("queue ")) + "\n"
    hosts.write_text(text + "\n" + twin)
    fleet = load_fleet(hosts)
    _trust_as_localhost(Path(fleet.host("box5").known_hosts or ""))
    async with open_transport(fleet.host("box5")) as t:
        report = await check_gate(fleet, fleet.host("box5"), t, ready.journal)
    account = _condition(report, "account")
    assert not account.ok and account.evidence.startswith("box1 reached the same box (box "), (
        account
    )
    assert "a teardown of box5 destroys box1's box too" in account.evidence
    async with open_transport(fleet.host("box1")) as t:
        report = await check_gate(fleet, fleet.host("box1"), t, ready.journal)
    assert _condition(report, "account").evidence.startswith("box5 reached the same box")
    assert not report.ready_but_confirmation


def _trust_as_localhost(known: Path) -> None:
    """The same box's key, trusted under its other name too."""
    assert known.is_file()
    lines = known.read_text().splitlines()
    spelled = [ln.replace("127.0.0.1", "localhost") for ln in lines]
    known.write_text("\n".join([*lines, *spelled]) + "\n")


async def test_a_torn_down_box_not_answering_is_said_torn_down(ready: Setup) -> None:
    """Hour s22c #5: commands on a torn-down host talked of a box that was down and of
    its port ("connection refused … check the port")."""
    done = await ready.confirm("box1")
    assert done.recorded, done
    await ready.box.stop()
    pulled = await ready.cli("pull", "box1")
    said = " ".join((pulled.stdout + pulled.stderr).split())
    assert pulled.returncode != 0 and "box1 was torn down (" in said, said
    assert "not answering is expected" in said


async def test_a_mistyped_confirmation_records_none_of_the_acknowledgements_with_it(
    ready: Setup,
) -> None:
    """Hour s24c #10: `--confirm box2 --ack-missing …` on box1 said "nothing was torn
    down" and kept the acknowledgements; with the gate locked the wrong name went unsaid."""
    write_queue(ready, QUEUE + "configs/cellC.yaml train 1\n")
    wrong = await ready.cli("teardown", "box1", "--confirm", "box2", "--ack-missing", "cellC")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "'box2' is not 'box1': nothing was checked, acknowledged or torn down" in (
        " ".join(wrong.stderr.split())
    ), wrong.stderr
    events = ready.journal.load("box1").events
    assert not [e for _, e in events if isinstance(e, MissingCellAcknowledged)]


async def test_a_cell_still_to_run_is_not_accepted_as_missing(ready: Setup) -> None:
    """Hour s25b #1: a stray Missing: accept on a cell pending in a running queue was
    recorded; the cell ran later, its results were lost, and the gate never asked again."""
    from rgt_tui.domain.teardown_gate import CellsRunning, QueueCellsSeen

    gate = await ready.check()

    def saw_the_queue_run(jh) -> bool:  # type: ignore[no-untyped-def]
        # What a check records of a queue running cellA, with cellB pending after it.
        unfinished = (("cellB", "pending", "pending (not started yet)"),)
        jh.events.append((time.time(), QueueCellsSeen(unfinished=unfinished)))
        jh.events.append((time.time(), CellsRunning(("cellA",))))
        return True

    ready.journal.update("box1", saw_the_queue_run)
    cells = queue_cells(ready.host)
    pending, running = "is pending on box1, in a queue that runs", "is running on box1"
    fits = {"cellB": "--ack-unfinished cellB", "cellA": "--ack-running cellA"}
    for cell, words in (("cellB", pending), ("cellA", running)):
        with pytest.raises(StillToRun) as refused:
            acknowledge(ready.journal, "box1", missing=(cell,), cells=cells, box=gate.box)
        assert f"{cell} {words}, as its last gate check read it" in str(refused.value)
        assert "nothing was acknowledged" in str(refused.value)
        # The acknowledgement that fits it is named (h491 #2: the pending cell's
        # --ack-unfinished, which the checklist offers, read as contradicting this).
        assert (
            f"To tear down without them, accept it as {'unfinished work' if cell == 'cellB' else 'running'} ({fits[cell]};"
            in str(refused.value)
        )
    events = [e for _, e in ready.journal.load("box1").events]
    assert not any(isinstance(e, MissingCellAcknowledged) for e in events)
    # The command line checks the box first (review s25 #7): it runs no queue, so the
    # refusal of an older check's facts does not repeat, and the acceptance is recorded.
    cli = await ready.cli("teardown", "box1", "--ack-missing", "cellB")
    assert "recorded for this box in the journal: cellB accepted as missing" in cli.stdout, (
        cli.stdout + cli.stderr
    )


async def test_only_a_cell_running_now_is_accepted_as_running(ready: Setup) -> None:
    """h551 #1: --ack-running of a pending (or done) cell was recorded by name, and held
    for the run that came later, which the gate then let be torn down running. Refused,
    with the acknowledgement that fits; a running cell's holds for its run."""
    from rgt_tui.domain.teardown_gate import CellsRunning
    from rgt_tui.services.teardown import NotRunningError

    gate = await ready.check()
    cells = queue_cells(ready.host)
    with pytest.raises(NotRunningError) as refused:
        acknowledge(ready.journal, "box1", running=("cellB",), cells=cells, box=gate.box)
    said = str(refused.value)
    assert "cellB is not running on box1" in said and "nothing was acknowledged" in said
    assert "Its running cells: none" in said and "the checklist asks nothing of it" in said
    assert not any(isinstance(e, RunningAcknowledged) for _, e in ready.journal.load("box1").events)

    # One the check saw still to run: the acknowledgement that fits it, by the TUI's
    # button too (h555 #4: "one still to run" was said of a done cell).
    from rgt_tui.domain.teardown_gate import QueueCellsSeen

    def saw_it_wait(jh) -> bool:  # type: ignore[no-untyped-def]
        waits = (("cellB", "pending", "pending (not started yet)"),)
        jh.events.append((time.time(), QueueCellsSeen(unfinished=waits)))
        return True

    ready.journal.update("box1", saw_it_wait)
    with pytest.raises(NotRunningError) as refused:
        acknowledge(ready.journal, "box1", running=("cellB",), cells=cells, box=gate.box)
    assert (
        "(it is pending: accept it as unfinished work (--ack-unfinished cellB; Unfinished: "
        "accept in the TUI))"
    ) in str(refused.value)

    def saw_it_run(jh) -> bool:  # type: ignore[no-untyped-def]
        jh.events.append((time.time(), CellsRunning(("cellB",), (("cellB", "1/100/"),))))
        return True

    ready.journal.update("box1", saw_it_run)
    acknowledge(ready.journal, "box1", running=("cellB",), cells=cells, box=gate.box)
    acks = [e for _, e in ready.journal.load("box1").events if isinstance(e, RunningAcknowledged)]
    assert acks == [RunningAcknowledged("cellB", "1/100/")]


async def test_a_box_where_nothing_ran_opens_once_every_cell_is_accepted(
    make_loopback_fleet, tmp_path: Path
) -> None:
    """Hour s34 TUI #1: a box where nothing ran held an empty result set, which is never a
    success, so the checklist sent the user to pull again forever while the box billed.
    With a queue, accepting each cell by name as having no results opens it; the pull and
    verify still say NOT COMPLETE / NOT VERIFIED, and nothing else gives way."""
    from support.fleet_files import set_host_key

    setup = Setup(await make_loopback_fleet(1), tmp_path)
    set_host_key(setup.loopback.hosts_file, "teardown", f"echo destroyed > {setup.marker}")
    for cell in ("cellA", "cellB"):  # nothing ran: no results on the box
        for f in (setup.box.root / "results" / cell).iterdir():
            f.unlink()
        (setup.box.root / "results" / cell).rmdir()
    (setup.box.root / "results" / "notes.txt").unlink()
    report = await setup.pull_and_verify(expect_ok=False)
    assert any("an empty result set is never a success" in p for p in report.problems)

    locked = await setup.check()
    assert {c.key for c in locked.conditions if not c.ok} >= {"roster", "confirmed"}
    assert "manifest" not in {c.key for c in locked.conditions if not c.ok}, locked.conditions
    manifest = next(c for c in locked.conditions if c.key == "manifest")
    assert "nothing to save if every cell is accepted as having none" in manifest.evidence
    cells = queue_cells(setup.host)
    acknowledge(setup.journal, "box1", missing=("cellA",), cells=cells, box=locked.box)
    assert not (await setup.check()).ready_but_confirmation  # cellB not accepted yet
    acknowledge(setup.journal, "box1", missing=("cellB",), cells=cells, box=locked.box)
    assert (await setup.check()).ready_but_confirmation
    await setup.confirm()
    assert setup.marker.read_text() == "destroyed\n"


async def test_an_empty_box_without_a_queue_stays_locked(make_loopback_fleet, tmp_path: Path):
    """No queue, no cell to accept: an empty result set still never counts (a pull root
    that names the wrong folder must not read as "everything saved")."""
    setup = Setup(await make_loopback_fleet(1), tmp_path)
    text = setup.loopback.hosts_file.read_text()
    setup.loopback.hosts_file.write_text(
        "\n".join(line for line in text.splitlines() if not line.startswith("queue ="))
    )
    for path in sorted((setup.box.root / "results").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    await setup.pull_and_verify(expect_ok=False)
    locked = await setup.check()
    assert {"manifest", "pulled", "verified"} <= {c.key for c in locked.conditions if not c.ok}


async def test_a_pulled_copy_beside_a_box_not_identified_yet_is_not_called_another_boxs(
    ready: Setup,
) -> None:
    """A fresh journal (the damaged one moved aside, as its message says) and the box down:
    the checklist called the pulled copy "of another box", sending the user to pull again
    a box that was down, for a copy of that very box (s36 faults #6)."""
    path = ready.journal.path("box1")
    path.rename(path.with_name(path.name + ".damaged"))
    await ready.box.stop()
    check = await ready.cli("teardown", "box1", "--check")
    assert check.returncode == 1, check.stdout
    said = " ".join(check.stdout.split())
    assert "of another box" not in said, said
    assert "box1's box is not identified yet (it has not answered here)" in said, said
    assert "check again once box1 answers" in said, said


async def test_another_entry_answering_with_this_boxs_host_key_is_named(ready: Setup) -> None:
    """h511 #2: a second login account on the same machine (its own ~/.rgt/box-id, the
    machine's host key) read "ready", and its teardown would destroy the other entry's
    unpulled results. Named under the checklist, not locked: boxes made from one image can
    share a key and be apart."""
    from rgt_tui.domain.box_identity import BoxIdentity

    async with open_transport(ready.host) as t:
        first = await check_gate(ready.fleet, ready.host, t, ready.journal)
    assert first.box is not None and first.box.host_key, first.box
    hosts = ready.loopback.hosts_file
    hosts.write_text(hosts.read_text() + '\n[[hosts]]\nname = "box1u"\nssh = "acct2@10.9.9.9"\n')
    fleet = load_fleet(hosts)
    ready.journal.observe_box("box1u", BoxIdentity("f" * 32, first.box.host_key), time.time())
    async with open_transport(ready.host) as t:
        report = await check_gate(fleet, fleet.host("box1"), t, ready.journal)
    said = " ".join(report.problems)
    assert "box1u (not verified here) answered with this box's host key" in said, said
    assert "most likely another login account on the same machine" in said
    assert all(c.key != "account" for c in report.conditions)  # a note, not a lock
