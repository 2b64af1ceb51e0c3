"""The queue commands end to end: the real console entry point, exit codes, JSON."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
from pathlib import Path

from support.cli import Terminal, arun, rgt
from support.queues import GATE, SCRIPT_RUN, wait_view
from support.waiting import wait_for

from rgt_tui.domain.queue_state import FINISHED, RUNNING


def test_queue_check_exit_codes_json_and_duplicates(tmp_path):
    (tmp_path / "queues").mkdir()
    (tmp_path / "queues" / "a.txt").write_text(
        "# sweep\nconfigs/ablation/baseline.yaml reconstruction 20\nconfigs/x/no_aug.yaml recon\n"
    )
    (tmp_path / "queues" / "b.txt").write_text("configs/det/baseline.yaml detection 50\n")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[fleet]\ndefault_epochs = 30\n\n[[hosts]]\nname = "a"\nssh = "u@a.example"\nqueue = "queues/a.txt"\n'
        'run = "python t.py {cfg}"\nepochs = 12\n'
    )
    clean = rgt("queue", "check", "--hosts", str(hosts), "--json", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    cells = json.loads(clean.stdout)
    assert [(c["name"], c["epochs"], c["line"], c["host"]) for c in cells] == [
        ("baseline", 20, 2, "a"), ("no_aug", 12, 3, "a"),
    ]  # fmt: skip
    assert set(cells[0]) >= {"file", "line", "name", "cfg", "task", "epochs"}
    assert (
        cells[0]["file"] == "queues/a.txt" and cells[0]["cfg"] == "configs/ablation/baseline.yaml"
    )

    dup = rgt("queue", "check", "--hosts", str(hosts), "queues/b.txt", cwd=tmp_path)
    assert dup.returncode == 1
    assert "'baseline' is used 2 times: queues/a.txt:2 and queues/b.txt:1" in dup.stderr
    assert "3 cells in 2 queue files" in dup.stdout

    (tmp_path / "bad.txt").write_text("x.yaml recon 2 3\ny.yaml\n")
    bad = rgt("queue", "check", "--hosts", str(hosts), "bad.txt", cwd=tmp_path)
    assert bad.returncode == 1
    assert "bad.txt:1: too many fields" in bad.stderr and "bad.txt:2: missing task" in bad.stderr
    # CRLF parses, but the launch's crlf check fails it: said, by line, exit unchanged
    # (only `queue show`'s diff showed the \r: s36 faults #7).
    (tmp_path / "crlf.txt").write_bytes(b"x2.yaml recon 2\ny2.yaml recon\r\n")
    crlf = rgt("queue", "check", "--hosts", str(hosts), "crlf.txt", cwd=tmp_path)
    assert crlf.returncode == 0, crlf.stderr
    assert "crlf.txt:2: warning: Windows (CRLF) line endings" in crlf.stderr, crlf.stderr
    assert "dos2unix crlf.txt" in crlf.stderr
    # With a byte-order mark too, both are said at once (h553 #8: the BOM alone, then the
    # CRLF once it was gone).
    (tmp_path / "both.txt").write_bytes(b"\xef\xbb\xbfx3.yaml recon 3\r\n")
    both = rgt("queue", "check", "--hosts", str(hosts), "both.txt", cwd=tmp_path)
    assert both.returncode == 1, both.stderr
    assert "both.txt:1: the file starts with a UTF-8 byte-order mark" in both.stderr
    assert "both.txt:1: warning: Windows (CRLF) line endings" in both.stderr, both.stderr
    solo = tmp_path / "solo"  # no fleet file here: this machine's
    solo.mkdir()
    (solo / "one.txt").write_text("x.yaml recon\n")  # "1 cells" read wrong
    one = rgt("queue", "check", "one.txt", cwd=solo)
    assert "1 cell in 1 queue file" in one.stdout, one.stdout + one.stderr
    # A host's queue file missing: the message names the host's entry, whose path it is
    # (s35 docs audit: the path is the fleet file folder's, not the working one's).
    hosts.write_text(hosts.read_text().replace("queues/a.txt", "queues/gone.txt"))
    gone = rgt("queue", "check", "--hosts", str(hosts), cwd=tmp_path)
    assert gone.returncode == 1
    assert (
        "queues/gone.txt: queue file not found (the queue of host a, whose entry is at "
        "hosts.toml:4) — create it or fix the queue path in that entry"
    ) in gone.stderr, gone.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text("[[hosts]\n")
    assert rgt("queue", "check", "--hosts", str(broken), cwd=tmp_path).returncode == 2


async def test_launch_show_append_and_diagnose_from_the_command_line(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('gate', GATE)} t\n")

    asked = await arun("launch", "box1", "--hosts", hosts)  # no terminal, no --yes
    assert asked.returncode == 2 and "pass --yes" in asked.stderr
    assert "Launch plan for box1" in asked.stdout and "cells/gate.sh gate" in asked.stdout
    assert not (qf.qdir() / "runner.state").exists()

    launched = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert launched.returncode == 0, launched.stderr
    assert (
        "launched on box1: runner pid" in launched.stdout
        and "tmux session rgt-box1" in launched.stdout
    )
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING)

    again = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert again.returncode == 1 and "REFUSED: the queue on box1 is already running" in again.stdout

    qf.append_queue(f"{qf.cell_script('next_one', 'echo next')} t 2\n")
    appended = await arun("queue", "append", "box1", "--hosts", hosts)
    assert appended.returncode == 0, appended.stderr
    assert "appended 1 cell" in appended.stdout and "next_one" in appended.stdout
    # The epochs as the launch plan says them (a template without {epochs} passes none).
    assert "next_one  t  epochs 2 (the line)" in appended.stdout, appended.stdout
    assert "CRLF" not in appended.stderr

    shown = await arun("queue", "show", "box1", "--hosts", hosts, "--json")
    assert shown.returncode == 0
    view = json.loads(shown.stdout)
    assert view["state"] == "running" and [c["status"] for c in view["cells"]] == [
        "running",
        "pending",
    ]

    (qf.root() / "go").touch()
    await wait_view(qf, lambda v: v.state == FINISHED)
    calm = await arun("diagnose", "box1", "--hosts", hosts)
    assert calm.returncode == 0 and "nothing vanished" in calm.stdout
    # The state said once (it read "the queue is finished; finished · 2/2 done").
    assert "the queue is finished; 2/2 done" in calm.stdout, calm.stdout
    unknown = await arun("diagnose", "nope", "--hosts", hosts)
    assert unknown.returncode == 2 and "no host named 'nope'" in unknown.stderr
    fresh_box = await arun("queue", "show", "box2", "--hosts", hosts)
    assert fresh_box.returncode == 0 and "box2: not deployed" in fresh_box.stdout
    qf.write_queue("cells/other.sh t\ncells/more.sh t\ncells/last.sh t\n", "box2")
    early = await arun("queue", "append", "box2", "--hosts", hosts)  # nothing to append to
    assert early.returncode == 1 and "launch it first: rgt-tui launch box2 (L in" in early.stderr
    # A queue file not sent yet: its cells, each `not sent` as the docs and a line added
    # later say it (hour s31 CLI #10: they read "not deployed"), never "0/0 done".
    local = await arun("queue", "show", "box2", "--hosts", hosts)
    assert "box2: not deployed · 3 cells in" in local.stdout and "none sent" in local.stdout
    assert local.stdout.count("not deployed") == 1 and "0/0" not in local.stdout
    rows = local.stdout.splitlines()[1:]
    assert len(rows) == 3 and all(re.match(r"\s+\d+  \S+\s+not sent$", r) for r in rows), rows
    # --json says the same (s35 docs audit #1: "not_sent": [] on a box sent nothing).
    as_json = json.loads((await arun("queue", "show", "box2", "--json", "--hosts", hosts)).stdout)
    assert [(c["index"], c["name"], c["line"]) for c in as_json["not_sent"]] == [
        (0, "other", 1), (1, "more", 2), (2, "last", 3),
    ]  # fmt: skip
    # A name used twice: its rows at fault, as the Queue tab marks them (h493 #6: the
    # tab read "at fault", queue show "not sent" and nothing more).
    qf.write_queue("cells/other.sh t\ncells/more.sh t\ncells/other.sh t 2\n", "box2")
    twice = await arun("queue", "show", "box2", "--hosts", hosts)
    rows = [r.split() for r in twice.stdout.splitlines()[1:4]]
    assert [r[2:] for r in rows] == [["at", "fault"], ["not", "sent"], ["at", "fault"]], rows
    assert "the queue file cannot be launched as it is: 2 lines of " in twice.stdout
    assert "cannot run as written (listed above, at fault): rgt-tui queue check" in twice.stdout
    qf.write_queue("cells/other.sh t\ncells/more.sh t\ncells/last.sh t\n", "box2")
    # A line that is not UTF-8: said with the fix, the other cells still listed (hour s33
    # CLI #4: the file vanished from the output, "box2: not deployed", exit 0).
    with qf.queue_file("box2").open("ab") as f:
        f.write(b"cells/b\xff.sh t\n")
    bad = await arun("queue", "show", "box2", "--hosts", hosts)
    assert bad.returncode == 0 and "3 cells in" in bad.stdout, bad.stdout
    assert (
        ":4: byte 0xff at column 8 is not UTF-8 — save the file as UTF-8 text — rgt-tui queue check"
    ) in bad.stdout, bad.stdout
    qf.write_queue("cells/other.sh t\ncells/more.sh t\ncells/last.sh t\n", "box2")
    await qf.loopback.box("box2").stop()
    down = await arun("launch", "box2", "--hosts", hosts, "--yes")
    assert down.returncode == 1 and "box2 is unreachable" in down.stdout
    # A line saved with Windows line endings: appended as parsed, and warned of (hour
    # s45b #2: taken silently, while the next launch's crlf check fails the file).
    with qf.queue_file("box1").open("ab") as f:
        f.write(f"{qf.cell_script('crlf_one', 'echo crlf')} t 1\r\n".encode())
    crlf = await arun("queue", "append", "box1", "--hosts", hosts)
    assert crlf.returncode == 0 and "appended 1 cell" in crlf.stdout, crlf.stderr
    assert "has Windows (CRLF) line endings — the next launch's crlf check fails" in crlf.stderr


async def test_launch_asks_with_no_connection_held_and_ctrl_c_stops_it_at_once(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('quick', 'echo hi')} t\n")

    # Ctrl-C at the question: 130 straight away (no thread left waiting on the terminal).
    # Before, it hung until Enter, never exiting on its own: the cap catches that hang and
    # is generous, since a loaded machine takes seconds just to start and stop Python.
    asked = Terminal("launch", "box1", "--hosts", hosts)
    await asked.expect("Launch 1 cell on box1? [y/N]")
    asked.proc.send_signal(signal.SIGINT)
    code, _, err = await asked.finish(timeout=60)
    assert code == 130, err
    assert not (qf.qdir() / "runner.state").exists()
    # It says so, and where to look: not a bare ^C (a user's hour).
    assert "box1: interrupted; nothing is launched unless the question was answered yes" in err
    assert "rgt-tui queue show box1" in err

    # The box restarts while the question waits: the answer launches on a fresh connection.
    answered = Terminal("launch", "box1", "--hosts", hosts)
    await answered.expect("[y/N]")
    box = qf.loopback.box("box1")
    await box.stop()
    await box.start()
    answered.type("y")
    code, out, err = await answered.finish()
    assert code == 0, out + err
    assert "launched on box1: runner pid" in out
    await wait_view(qf, lambda v: v.state == FINISHED)


async def test_a_fresh_launch_that_loses_the_box_says_the_old_queue_may_be_set_aside(
    make_queue_fleet,
):
    """``launch --fresh`` sets the box's old queue aside before it starts the new one: a
    drop then read "unreachable" beside an empty queue where the finished cells had been
    (s36 faults #2). The box goes while the question waits; the answer's launch fails."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('quick', 'echo hi')} t\n")
    asked = Terminal("launch", "box1", "--fresh", "--hosts", hosts)
    await asked.expect("[y/N]")
    await qf.loopback.box("box1").stop()
    asked.type("y")
    code, out, err = await asked.finish(timeout=60)
    assert code == 1, out + err
    said = " ".join(err.split())
    assert "box1 unreachable:" in said, said
    assert (
        "fix: --fresh may have set the box's old queue aside already (in "
        "~/.rgt/queue.archived.<time> on the box, nothing deleted): rgt-tui queue show box1 "
        "says what the box holds; launch again once it answers"
    ) in said, said


def _waiting_on(lock: Path) -> bool:
    """Whether a process of this machine holds ``lock`` open as its fd 9 without the lock:
    queue_ctl.sh's ``flock -w 30 9``, waiting (the loopback box runs here)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if os.readlink(proc / "fd" / "9") == str(lock):
                    return b"flock" in (proc / "cmdline").read_bytes()
            except OSError:
                continue
    return False


async def test_a_launch_cut_off_on_the_box_says_whether_it_started_is_not_known(
    make_queue_fleet,
):
    """h521 #4: a launch whose connection went while the box ran it said only "box1
    unreachable: connection lost", no fix, after .rgt/queue was written there. The box's
    launch is held at its queue lock (held here), the box goes, and the words say where
    to look before launching again."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('quick', 'echo hi')} t\n")
    asked = Terminal("launch", "box1", "--hosts", hosts)
    await asked.expect("[y/N]")
    lock = qf.root() / ".rgt" / "queue.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        asked.type("y")
        await wait_for(lambda: _waiting_on(lock), 60, what="the box's launch to wait on its lock")
        await qf.loopback.box("box1").stop()
        code, out, err = await asked.finish(timeout=60)
    assert code == 1, out + err
    said = " ".join(err.split())
    assert "box1 unreachable:" in said, said
    assert (
        "fix: whether the queue started is not known: rgt-tui queue show box1 says, once it "
        "answers; launch again then (a queue already running is refused, never run twice)"
    ) in said, said


async def test_launch_without_start_begins_at_the_first_cell_not_done(make_queue_fleet):
    """As the launch dialog (ux-a #5): after a queue that finished with a failed cell,
    `launch` with no --start plans from that cell, not from 0 (which would run the done
    cell again, paid work); --start 0 still can."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(
        f"{qf.cell_script('fine', 'echo ok')} t\n{qf.cell_script('broke', 'exit 3')} t\n"
    )
    first = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert first.returncode == 0, first.stdout + first.stderr
    await wait_view(qf, lambda v: v.state == FINISHED)

    again = await arun("launch", "box1", "--hosts", hosts)  # no terminal: the plan, then 2
    assert again.returncode == 2 and "start index 1 · 1 of 2 cells to run" in again.stdout, (
        again.stdout
    )
    chosen = await arun("launch", "box1", "--hosts", hosts, "--start", "0")
    assert "start index 0 · 2 of 2 cells to run" in chosen.stdout, chosen.stdout


async def test_diagnose_exits_0_for_a_cell_that_failed_by_itself_and_1_for_a_vanished_one(
    make_queue_fleet,
):
    # A script reads the exit code: 1 means a run vanished (here a SIGKILL), never a cell
    # that ended with its own error code, which the output calls "not a vanished run".
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('fails', 'echo broken config; exit 1')} t\n")
    killed = qf.cell_script("killed", "kill -KILL $$", "box2")
    qf.write_queue(f"{killed} t\n", "box2")
    for name in ("box1", "box2"):
        launched = await arun("launch", name, "--hosts", hosts, "--yes")
        assert launched.returncode == 0, launched.stdout + launched.stderr
        await wait_view(qf, lambda v: v.state == FINISHED, name=name, what=f"{name} to end")

    failed = await arun("diagnose", "box1", "--hosts", hosts)
    assert "cell 0 (fails) exited 1 by itself — not a vanished run" in failed.stdout, failed.stdout
    assert failed.returncode == 0, failed.stdout + failed.stderr
    vanished = await arun("diagnose", "box2", "--hosts", hosts)
    assert "cell 0 (killed) was killed (SIGKILL" in vanished.stdout, vanished.stdout
    assert vanished.returncode == 1, vanished.stdout + vanished.stderr


async def test_ctrl_c_at_a_queue_actions_question_says_what_was_not_done(make_queue_fleet):
    """h472 #9: Ctrl-C at `queue retry`'s question ended with a bare 130; launch and
    teardown say what they did not do, and where to look."""
    from support.queues import wait_view

    from rgt_tui.domain.queue_state import FINISHED
    from rgt_tui.services.queue.launch import launch, plan_launch

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('flaky', 'exit 3')} t\n")
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to end")
    asked = Terminal("queue", "retry", "box1", "flaky", "--hosts", hosts)
    await asked.expect("[y/N]")
    asked.proc.send_signal(signal.SIGINT)
    code, _, err = await asked.finish(timeout=60)
    said = " ".join(err.split())
    assert code == 130, err
    assert "box1: interrupted; nothing was retried unless the question was answered yes" in said
    assert "rgt-tui queue show box1" in said, said
    assert "retry" not in qf.state("flaky"), qf.state("flaky")
