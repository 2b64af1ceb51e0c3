"""`rgt-tui status` and a box recorded as torn down (ux-a #18): the same box still
answering is the forgotten-box cost leak (GEN1), said on its line and as a critical
alert (exit 3), never a plain "up"; a torn-down box that no longer answers is gone, as
it should be: no "UNREACHABLE", no exit 1.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from support.autostop import record_stop
from support.machine import closed_port

from rgt_tui.cli import exit_codes, main
from rgt_tui.controllers.ready_jobs import sync_job
from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.paths import journal_dir
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal, TeardownRecord


def _tear_down(hosts: Path, host: str, box_id: str, at: float) -> None:
    """``host``'s box ``box_id`` recorded as torn down at ``at`` (as `teardown` does)."""
    journal = Journal(journal_dir(hosts))
    journal.observe_box(host, BoxIdentity(box_id, None), at - 3600)
    journal.add_teardown(host, TeardownRecord(at, "true", 0, "", True, box_id=box_id))


def test_a_torn_down_box_that_still_answers_is_said_loudly_and_exits_3(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "box1"\nssh = "local"\n')
    assert main(["status", "--hosts", str(hosts)]) == exit_codes.EXIT_OK
    capsys.readouterr()
    box_id = (home / ".rgt" / "box-id").read_text().strip()  # written by the sample
    _tear_down(hosts, "box1", box_id, time.time() - 3600)

    assert main(["status", "--hosts", str(hosts)]) == exit_codes.EXIT_ALERTS
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("box1") and "TORN DOWN" in first and "BUT STILL ANSWERS" in first
    assert "[critical] recorded as torn down" in out and "(GEN1)" in out, out

    assert main(["status", "--hosts", str(hosts), "--json"]) == exit_codes.EXIT_ALERTS
    (report,) = json.loads(capsys.readouterr().out)
    assert report["torn_down_at"] is not None
    assert report["alerts"][0]["id"] == "teardown.still-answers"
    assert report["alerts"][0]["severity"] == "critical"


def test_another_box_under_a_torn_down_name_is_not_the_leak(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "box1"\nssh = "local"\n')
    _tear_down(hosts, "box1", "0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00", time.time() - 3600)
    assert main(["status", "--hosts", str(hosts)]) == exit_codes.EXIT_OK
    assert "STILL ANSWERS" not in capsys.readouterr().out


def test_a_torn_down_box_that_no_longer_answers_is_gone_not_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = tmp_path / "hosts.toml"
    with closed_port() as port:
        hosts.write_text(f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\n')
        _tear_down(hosts, "box1", "0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00", time.time() - 3600)
        assert main(["status", "--hosts", str(hosts)]) == exit_codes.EXIT_OK
    out = capsys.readouterr().out
    assert "torn down" in out and "no longer answers" in out and "UNREACHABLE" not in out, out


@pytest.mark.parametrize("command", [("logs",), ("disk",), ("vram",), ("preflight",)])
def test_a_command_on_a_torn_down_box_says_it_was_torn_down_not_its_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    """h462 #3: logs, disk, vram, preflight… on a box recorded as torn down said only
    "connection refused … check the port"; queue show, pull and status said why."""
    hosts = tmp_path / "hosts.toml"
    with closed_port() as port:
        hosts.write_text(f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\n')
        _tear_down(hosts, "box1", "0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00", time.time() - 3600)
        assert main([*command, "box1", "--hosts", str(hosts)]) != exit_codes.EXIT_OK
    err = " ".join(capsys.readouterr().err.split())
    assert "box1 was torn down (" in err and "not answering is expected" in err, err
    assert err.count("not answering is expected") == 1, err  # told once, not twice


def test_a_torn_down_box_bills_until_its_teardown_not_until_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Started 5 h ago at $2/h, torn down 3 h ago and silent since: $4 spent, as the
    TUI's pane says, not the $10 of a meter that kept counting."""
    hosts = tmp_path / "hosts.toml"
    now = time.time()
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now - 5 * 3600))
    with closed_port() as port:
        hosts.write_text(
            f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\n'
            f'cost_per_hour = 2.0\nstarted_at = "{started}"\n'
        )
        _tear_down(hosts, "box1", "0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00", now - 3 * 3600)
        assert main(["status", "--hosts", str(hosts), "--json"]) == exit_codes.EXIT_OK
    (report,) = json.loads(capsys.readouterr().out)
    assert report["cost_so_far"] == pytest.approx(4.0, abs=0.05), report


def test_launch_and_append_on_a_torn_down_host_are_refused(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ux-c #8, then hour s17b #1: work sent to a host recorded as torn down is refused
    (it only warned, and what ran there was left behind: pull --all and watch skip it)."""
    hosts = tmp_path / "hosts.toml"
    (tmp_path / "q.txt").write_text("")
    hosts.write_text(
        '[[hosts]]\nname = "box1"\nssh = "local"\nqueue = "q.txt"\nrun = "echo {cfg}"\n'
    )
    _tear_down(hosts, "box1", "0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00", time.time() - 3600)
    assert main(["queue", "append", "box1", "--hosts", str(hosts)]) != exit_codes.EXIT_OK
    err = capsys.readouterr().err
    assert "cannot append: box1 (box 0ld0ld0ld0ld" in err and "recorded as torn down" in err, err
    # The launch's plan refuses it, and says the way to use that box again.
    assert main(["launch", "box1", "--hosts", str(hosts)]) != exit_codes.EXIT_OK
    out = capsys.readouterr().out
    assert "REFUSED: box1 (box 0ld0ld0ld0ld" in out and "is recorded as torn down" in out, out
    assert "rename its [[hosts]] entry in place" in out, out
    # An empty queue is said as such (it read "outside the queue: … indices 0–0").
    assert "REFUSED: the queue of box1 has no cells: add lines to" in out, out


def test_a_box_watch_stopped_reads_stopped_not_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ux-b #2 in `status`: a box watch's autostop stopped, not answering since, is
    stopped as watch and the TUI say: no UNREACHABLE, no GEN8 or release-clock alert, and
    not exit 1 (a cron job would page for a box stopped on purpose)."""
    hosts = tmp_path / "hosts.toml"
    at = time.time() - 1800
    record_stop(journal_dir(hosts), "box1", at)
    with closed_port() as port:
        hosts.write_text(f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\n')
        assert main(["status", "--hosts", str(hosts)]) == exit_codes.EXIT_OK
        out = capsys.readouterr().out
        assert main(["status", "--hosts", str(hosts), "--json"]) == exit_codes.EXIT_OK
        (report,) = json.loads(capsys.readouterr().out)
    assert "box1" in out and "stopped by watch" in out and "UNREACHABLE" not in out, out
    assert report["stopped_at"] == pytest.approx(at) and report["alerts"] == []


def test_pull_all_leaves_a_torn_down_box_and_says_so(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user's hour: `pull --all` pulled the torn-down box3 without a word while
    `status` flagged it. --all leaves it, naming it and how to pull it anyway."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.json").write_text('{"ok": 1}')
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n'
        f'[[hosts]]\nname = "live"\nssh = "local"\npull = ["{tmp_path / "a"}"]\n'
        f'[[hosts]]\nname = "gone"\nssh = "local"\npull = ["{tmp_path / "b"}"]\n'
    )
    _tear_down(hosts, "gone", "c" * 32, time.time() - 60)
    assert main(["pull", "--all", "--hosts", str(hosts)]) == exit_codes.EXIT_OK
    out = capsys.readouterr().out
    assert "gone: skipped: recorded as torn down at " in out, out
    assert "(rgt-tui pull gone pulls it anyway)" in out
    assert (tmp_path / "res" / "live" / "m.json").exists()
    assert not (tmp_path / "res" / "gone").exists()


async def test_a_torn_down_box_that_answers_is_not_also_the_forgotten_box(
    billed_queue_fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    """s37 money hour #1: its line said TORN DOWN … BUT STILL ANSWERS, then GEN1's
    "queue finished … pull, verify and tear it down" under it. A real finished queue on a
    billed loopback box, forgotten after 1.2 s."""
    import asyncio

    from support.queues import wait_view

    from rgt_tui.domain.queue_state import FINISHED
    from rgt_tui.services.queue.launch import launch, plan_launch

    qf = billed_queue_fleet
    hosts = qf.loopback.hosts_file
    hosts.write_text("[fleet.thresholds]\nforgotten_minutes = 0.02\n\n" + hosts.read_text())
    qf.write_queue(f"{qf.cell_script('only', 'echo trained')} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    await asyncio.sleep(1.5)  # past forgotten_minutes (a figure of the rule, not a race)

    def alerts() -> list[str]:
        main(["status", "--hosts", str(hosts), "--json"])
        (report,) = json.loads(capsys.readouterr().out)
        return [a["id"] for a in report["alerts"]]

    assert "cost.forgotten" in await asyncio.to_thread(alerts)  # not torn down: forgotten
    box_id = (qf.root() / ".rgt" / "box-id").read_text().strip()
    _tear_down(hosts, "box1", box_id, time.time() - 3600)
    said = await asyncio.to_thread(alerts)
    assert said[0] == "teardown.still-answers" and "cost.forgotten" not in said, said


def test_sync_to_a_torn_down_box_that_still_answers_is_refused(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """s43 hour: `rgt-tui sync` (and y) sent the code to a box recorded as torn down,
    and said `already in sync`: code for a box nothing watches any more, and no word that
    it may still bill. Refused as a launch there is, with the GEN1 fix."""
    code, work = tmp_path / "code", tmp_path / "work"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[[hosts]]\nname = "box1"\nssh = "local"\ncode = "{code}"\nworkdir = "{work}"\n'
    )
    assert main(["status", "--hosts", str(hosts)]) == exit_codes.EXIT_OK
    box_id = (home / ".rgt" / "box-id").read_text().strip()
    _tear_down(hosts, "box1", box_id, time.time() - 3600)
    capsys.readouterr()
    assert main(["sync", "box1", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    err = capsys.readouterr().err
    assert "is recorded as torn down" in err and "(GEN1)" in err, err
    assert not (work / "train.py").exists()
    # y in the TUI: the same refusal, as its sync error.
    fleet = load_fleet(hosts)
    states: list[dict[str, Any]] = []
    connections = FleetConnections(fleet.hosts)
    try:
        asyncio.run(
            sync_job(
                fleet,
                fleet.host("box1"),
                connections.transport("box1"),
                lambda **c: states.append(c),
            )
        )
    finally:
        asyncio.run(connections.close_all())
    (error,) = [s["sync_error"] for s in states if s.get("sync_error")]
    assert "is recorded as torn down" in error[0], error
    assert not (work / "train.py").exists()


def test_append_on_a_torn_down_box_that_refuses_says_torn_down_not_its_port(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """h471 #2: the append connected first, so a destroyed box's refused port read "is sshd
    running on that port? — check the port", as the launch (asked first) did not."""
    hosts = tmp_path / "hosts.toml"
    (tmp_path / "q.txt").write_text("a.json t 1\n")
    with closed_port() as port:
        hosts.write_text(
            f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\nqueue = "q.txt"\n'
            'run = "echo {cfg}"\n'
        )
        _tear_down(hosts, "box1", "0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00", time.time() - 3600)
        assert main(["queue", "append", "box1", "--hosts", str(hosts)]) != exit_codes.EXIT_OK
    err = " ".join(capsys.readouterr().err.split())
    assert "cannot append: box1 (box 0ld0ld0ld0ld" in err and "recorded as torn down" in err, err
    assert "port" not in err, err
