"""`rgt-tui watch` end to end: the real command over real loopback boxes, a notification
through Apprise's json:// target to a local HTTP server, once across two runs; a clean
stop on SIGTERM; ``--install`` writing a systemd user unit (or printing the nohup line)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path

from support.cli import RGT, arun, cli_env, rgt
from support.waiting import wait_for
from support.webhook import webhook

SECRET = "wAtch-s3cret-77f1"


def alert_fleet(hosts: Path, notify: list[str]) -> None:
    """Any used inode trips the inode rule; box1 tells ``notify``."""
    targets = f"notify = {json.dumps(notify)}\n" if notify else ""
    head = f"[fleet]\npoll_seconds = 0.2\n{targets}[fleet.thresholds]\ninode_pct = 0.0001\n\n"
    hosts.write_text(head + hosts.read_text())


def event_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.strip()]


async def test_watch_once_tells_a_new_alert_once_across_two_runs(make_loopback_fleet):
    loopback = await make_loopback_fleet(1)
    with webhook() as hook:
        alert_fleet(loopback.hosts_file, [hook.url("/${WATCH_TOKEN}")])
        env = {"WATCH_TOKEN": SECRET}
        first = await arun("watch", "--once", "--hosts", loopback.hosts_file, env=env)
        assert first.returncode == 0, first.stderr
        (line,) = [ln for ln in event_lines(first.stdout) if " alert " in ln]
        assert "box1: disk.inodes" in line
        # What the alert says, not only its rule's id (hour s31 CLI #4): a journal read
        # later has the figure and the fix, as the notification does.
        assert re.search(r"\[\w+\] box1: disk\.inodes /\S* — .*inodes .*\(U\d+\)", line), line
        (body,) = hook.at(f"/{SECRET}")  # the ${VAR} expanded at send time, sent once
        assert "disk.inodes" in body["title"]
        second = await arun("watch", "--once", "--hosts", loopback.hosts_file, env=env)
        assert second.returncode == 0, second.stderr
        assert event_lines(second.stdout) == []  # nothing new: nothing printed, nothing sent
        assert len(hook.at(f"/{SECRET}")) == 1
    for out in (first, second):
        assert SECRET not in out.stdout + out.stderr
        assert "Traceback" not in out.stderr


async def started_watch(hosts: Path, *more: str) -> asyncio.subprocess.Process:
    """`rgt-tui watch` on ``hosts`` as a process of its own, its output piped."""
    return await asyncio.create_subprocess_exec(
        *RGT, "watch", "--hosts", str(hosts), *more,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
    )  # fmt: skip


async def test_watch_runs_until_sigterm_and_stops_cleanly(make_loopback_fleet):
    loopback = await make_loopback_fleet(1)
    alert_fleet(loopback.hosts_file, [])
    proc = await started_watch(loopback.hosts_file, "--metrics", "127.0.0.1:0")
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert " alert " in line and "box1" in line, line  # the first event: the alert
        await second_watch_is_warned(loopback.hosts_file)
        proc.send_signal(signal.SIGTERM)
        err = (await asyncio.wait_for(proc.stderr.read(), 30)).decode()
        assert await asyncio.wait_for(proc.wait(), 30) == 0, err
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert "watching 1 host " in err and "Traceback" not in err
    assert "another rgt-tui watch" not in err  # the first was alone
    # ":0" asks for any port: the one it got is said (h582 #6: "http://0.0.0.0:0/metrics").
    port = re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", err)
    assert port is not None and int(port[1]) > 0, err


async def test_ctrl_c_says_what_a_cut_pull_left(make_loopback_fleet):
    """An overnight hour (s39 watch #7): Ctrl-C ended watch with 130 and no word, mid
    periodic pull; `pull` names the parts folder in the same case. It says so too."""
    loopback = await make_loopback_fleet(1)
    alert_fleet(loopback.hosts_file, [])
    proc = await started_watch(loopback.hosts_file)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert " alert " in line, line
        proc.send_signal(signal.SIGINT)
        err = (await asyncio.wait_for(proc.stderr.read(), 30)).decode()
        assert await asyncio.wait_for(proc.wait(), 30) == 130, err
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    said = " ".join(err.split())
    # Said once as watch's (h535 #8: "rgt-tui watch: watch: interrupted"), and only as
    # what a pull cut short, if any, keeps.
    assert "rgt-tui watch: interrupted; a periodic pull it cut short, if any, keeps" in said, said
    assert "watch: watch:" not in said
    assert "the next pull resumes it" in said and "Traceback" not in said


async def second_watch_is_warned(hosts: Path) -> None:
    """A second `watch` of the fleet says so as it starts (two started unwarned: s36)."""
    from rgt_tui.paths import journal_dir
    from rgt_tui.services.watch.drivers.periodic_pull import watch_alive_for

    await wait_for(lambda: watch_alive_for(journal_dir(hosts)) is not None, 60, "watch alive")
    proc = await asyncio.create_subprocess_exec(
        *RGT, "watch", "--hosts", str(hosts),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        said = []
        while not said or "watching 1 host" not in said[-1]:
            said.append((await asyncio.wait_for(proc.stderr.readline(), 60)).decode())
            assert said[-1], said  # ended before it said it watches
        assert any("another rgt-tui watch runs on this fleet" in line for line in said), said
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 30)


async def test_watch_ends_with_141_when_the_reader_of_its_events_goes(make_loopback_fleet):
    """`watch | grep -m1 …`: once grep has its line, the watch ends as SIGPIPE ends a tool
    (141), quietly; it neither watches on forever nor notes "PrintSink failed" per event.
    stdout is a pipe whose read end is closed: the first event's write fails."""
    loopback = await make_loopback_fleet(1)
    alert_fleet(loopback.hosts_file, [])
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = await asyncio.create_subprocess_exec(
            *RGT, "watch", "--hosts", str(loopback.hosts_file),
            stdout=write_end, stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
        )  # fmt: skip
    finally:
        os.close(write_end)
    try:
        assert proc.stderr is not None
        err = (await asyncio.wait_for(proc.stderr.read(), 120)).decode()
        assert await asyncio.wait_for(proc.wait(), 30) == 141, err
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert "watching 1 host " in err
    assert "PrintSink" not in err and "BrokenPipe" not in err and "Traceback" not in err, err


def test_install_writes_a_systemd_user_unit_and_starts_nothing(tmp_path):
    hosts = tmp_path / "fleet dir" / "hosts.toml"  # a space: the unit must quote it
    hosts.parent.mkdir()
    hosts.write_text('[[hosts]]\nname = "a"\nssh = "root@192.0.2.1:22"\n')
    config = tmp_path / "config"
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(config), "PATH": "/usr/bin:/bin"}
    out = rgt("watch", "--install", "--metrics", "127.0.0.1:9101", "--hosts", hosts, env=env)
    assert out.returncode == 0, out.stderr
    unit = config / "systemd" / "user" / "rgt-tui-watch.service"
    text = unit.read_text()
    assert f'ExecStart={sys.executable} -m rgt_tui watch --hosts "{hosts}"' in text
    assert "--metrics 127.0.0.1:9101" in text and "Restart=on-failure" in text
    assert "systemctl --user enable --now rgt-tui-watch.service" in out.stdout
    assert "nothing was started" in out.stdout
    again = rgt("watch", "--install", "--metrics", "127.0.0.1:9101", "--hosts", hosts, env=env)
    assert again.returncode == 0 and "already installed" in again.stdout
    other = rgt("watch", "--install", "--hosts", hosts, env=env)  # differs: left alone
    assert other.returncode == 1 and "left as it is" in other.stderr
    assert "it watches the same file with other options" in other.stderr
    assert unit.read_text() == text

    # A second project's fleet gets a unit of its own; the first is never to be removed
    # for it (hour s34 CLI #10: that fix unwatched the first project).
    second = tmp_path / "proj b" / "hosts.toml"
    second.parent.mkdir()
    second.write_text(hosts.read_text())
    out = rgt("watch", "--install", "--hosts", second, env=env)
    assert out.returncode == 0, out.stderr
    assert f"rgt-tui-watch.service watches {hosts}: this fleet gets a unit of its own" in out.stdout
    (own,) = [u for u in unit.parent.glob("rgt-tui-watch-proj-b-*.service")]
    assert f'--hosts "{second}"' in own.read_text() and unit.read_text() == text
    assert f"systemctl --user enable --now {own.name}" in out.stdout
    again = rgt("watch", "--install", "--hosts", second, env=env)
    assert again.returncode == 0 and f"{own}: already installed" in again.stdout


def test_install_without_systemd_prints_the_nohup_line(tmp_path):
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "a"\nssh = "root@192.0.2.1:22"\n')
    empty = tmp_path / "bin"
    empty.mkdir()  # a PATH with no systemctl on it
    config = tmp_path / "config"
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(config), "PATH": str(empty)}
    out = rgt("watch", "--install", "--hosts", hosts, env=env)
    assert out.returncode == 0, out.stderr
    assert f"nohup {sys.executable} -m rgt_tui watch --hosts {hosts}" in out.stdout
    assert not (config / "systemd").exists()


async def test_watch_once_names_each_host_that_did_not_answer_and_why(tmp_path):
    """cron's `watch --once`: a silence is told as an event only past its grace, in a
    later pass; this pass says on the console which host did not answer, and why when
    known (a box that accepts but never speaks SSH; a closed port)."""
    import socket

    from support.machine import closed_port

    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(5)  # accepts, never answers: a hung sshd
    try:
        with closed_port() as refused:
            hosts = tmp_path / "hosts.toml"
            hosts.write_text(
                f'[[hosts]]\nname = "hung"\nssh = "root@127.0.0.1:{hung.getsockname()[1]}"\n\n'
                f'[[hosts]]\nname = "shut"\nssh = "root@127.0.0.1:{refused}"\n\n'
                f'[[hosts]]\nname = "nokey"\nssh = "root@127.0.0.1:{refused}"\n'
                f'identity_file = "{tmp_path}/gone"\n'
            )
            env = {"XDG_STATE_HOME": str(tmp_path / "state")}
            out = await arun("watch", "--once", "--timeout", "3", "--hosts", hosts, env=env)
    finally:
        hung.close()
    assert out.returncode == 0, out.stderr
    assert "hung: no answer within 3 s (the connection did not finish)" in out.stderr, out.stderr
    assert "shut: not reached: connection refused" in out.stderr, out.stderr
    # Never dialled: it read "does not answer" (hour s33 CLI #12).
    assert f"nokey: not reached: identity_file {tmp_path}/gone" in out.stderr, out.stderr
    assert "a silence past 5m00s is told as a silent event" in out.stderr


async def test_watch_once_exits_1_when_a_notification_was_not_delivered(make_loopback_fleet):
    """cron reads `watch --once`'s status: a pass whose alert an unset ${VAR} kept from
    its target exited 0 (a user's hour)."""
    loopback = await make_loopback_fleet(1)
    with webhook() as hook:
        alert_fleet(loopback.hosts_file, [hook.url("/${WATCH_UNSET_TOKEN}")])
        done = await arun(
            "watch", "--once", "--hosts", loopback.hosts_file, env={"WATCH_UNSET_TOKEN": None}
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "WATCH_UNSET_TOKEN" in done.stderr, done.stderr
    assert "not every notification was delivered (above): exit 1" in done.stderr


async def test_watch_once_with_no_event_says_a_target_cannot_be_used_not_undelivered(
    make_loopback_fleet,
):
    """h602 #5: a pass that told nothing said "not every notification was delivered"
    because a target was unusable (an unset ${VAR}): it still exits 1, in true words."""
    loopback = await make_loopback_fleet(1)
    with webhook() as hook:
        targets = json.dumps([hook.url("/${WATCH_UNSET_TOKEN}")])
        text = loopback.hosts_file.read_text()
        loopback.hosts_file.write_text(f"[fleet]\nnotify = {targets}\n\n" + text)
        done = await arun(
            "watch", "--once", "--hosts", loopback.hosts_file, env={"WATCH_UNSET_TOKEN": None}
        )
        assert hook.received == [], hook.received
    assert done.returncode == 1, done.stdout + done.stderr
    assert "WATCH_UNSET_TOKEN" in done.stderr, done.stderr
    assert "not every notification was delivered" not in done.stderr, done.stderr
    assert "1 notify target cannot be used (above), though no notification was missed" in (
        done.stderr
    ), done.stderr
    # Its host is not counted as told (s60's note: "1 with notification targets").
    assert "0 with notification targets (1 more whose targets cannot be used, above)" in (
        done.stderr
    ), done.stderr


async def test_a_changed_host_key_is_its_own_critical_event_at_once_and_once(
    make_loopback_fleet,
):
    """A changed host key may be someone in the middle: `watch` told it only as "silent",
    five minutes later and with no why on its line (a user's hour). It is a `host_key`
    event, critical, in the first pass, sent to the targets, and not told again while the
    same key is refused."""
    import asyncssh

    loopback = await make_loopback_fleet(1)
    box = loopback.box("box1")
    await box.stop()
    box.host_key = asyncssh.generate_private_key("ssh-ed25519")  # known_hosts keeps the old
    await box.start()
    with webhook() as hook:
        alert_fleet(loopback.hosts_file, [hook.url("/keys")])
        first = await arun("watch", "--once", "--timeout", "10", "--hosts", loopback.hosts_file)
        second = await arun("watch", "--once", "--timeout", "10", "--hosts", loopback.hosts_file)
        sent = hook.at("/keys")
    (line,) = [ln for ln in event_lines(first.stdout) if " host_key " in ln]
    # Said once on the console, not again as "does not answer" (it answers).
    assert first.stderr.count("HOST KEY CHANGED") == 1, first.stderr
    assert "does not answer" not in first.stderr, first.stderr
    assert "[critical] box1: HOST KEY CHANGED; rgt-tui does not connect to it" in line, line
    (body,) = sent
    assert "HOST KEY CHANGED" in body["title"] and "ssh-keygen -R" in body["message"], body
    # The fix pastes as written: its [host]:port not escaped for Markdown (a user's hour).
    port = loopback.box("box1").port
    assert f"`ssh-keygen -R '[127.0.0.1]:{port}' -f " in body["message"], body["message"]
    assert not [ln for ln in event_lines(second.stdout) if " host_key " in ln], second.stdout


def test_the_console_line_is_one_printable_line_whatever_the_box_wrote(capsys) -> None:
    """The watch's stdout is a terminal or a journal: the box's words in an event's title
    and body (a cell's name, a log line) arrive as visible escapes on one line."""
    from rgt_tui.cli.watch import PrintSink
    from rgt_tui.services.watch.events import WatchEvent

    hostile = "x\x1b]52;c;cm0=\x07\x1b[2J\nsecond line\u202e"
    PrintSink(clock=lambda: 0.0).on_event(
        WatchEvent("queue_done", "box1", "k", f"box1: cell {hostile} failed", hostile, "warning")
    )
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.endswith("\n"), out
    assert not {c for c in out[:-1] if ord(c) < 0x20 or c == "\u202e"}, repr(out)
    assert "[warning] box1: cell x\\x1b]52;c;cm0=\\x07\\x1b[2J\\nsecond line\\u202e failed" in out
    assert out.rstrip().endswith("— x\\x1b]52;c;cm0=\\x07\\x1b[2J second line\\u202e"), out


async def test_watch_ending_mid_stop_says_what_it_leaves_running(capsys) -> None:
    """A SIGTERM while autostop's stop command ran ended watch without a word, and the
    alarms of the next watch read as a stop gone wrong (h532 #4): the end names each
    stop still running. (The words are AutoStop.stops_running's, tested there.)"""
    from rgt_tui.cli.watch import _until_stopped

    class Watcher:
        class autostop:  # noqa: N801 - stands in for the AutoStop
            @staticmethod
            def stops_running() -> list[str]:
                return ["box1's stop command (started 21:44) is still running: …"]

        async def run(self) -> None:
            await asyncio.Event().wait()

    gone = asyncio.Event()
    gone.set()  # the reader of stdout went: watch ends as on SIGTERM
    await _until_stopped(Watcher(), gone)
    said = capsys.readouterr().err
    assert said == "watch: box1's stop command (started 21:44) is still running: …\n", said
