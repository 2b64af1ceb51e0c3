"""`rgt-tui demo` as a person runs it: in a real terminal (tmux), read off the screen.

The test starts the installed console script in a private tmux server, waits until the
demo boxes' panes show their disk and inode figures, then quits (``q``, Ctrl-C, or a
SIGTERM) and checks that the process is gone, the loopback SSH ports refuse connections
and the temporary directory was removed. The demo's records are its own: kept in its
fleet's journal folder while it runs, never in the user's fleet's (which has a ``box1``
too) nor at the old flat place, and removed with it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import time
from pathlib import Path

import psutil
import pytest
from support.cli import RGT_TUI
from support.tmux import Tmux
from support.waiting import wait_for

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.paths import journal_dir, journal_root
from rgt_tui.services.journal import HostJournal, Journal, TeardownRecord

BOXES = 3
FIGURE = r"\s+\d+%\s+[\d.]+[BKMGTPk]?/[\d.]+[BKMGTPk]?"  # " 12% 3.9M/32.8M"


def listening_ports(pid: int) -> set[int]:
    """TCP ports the process (or its children) listens on."""
    ports: set[int] = set()
    proc = psutil.Process(pid)
    for p in [proc, *proc.children(recursive=True)]:
        try:
            for conn in p.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN:
                    ports.add(conn.laddr.port)
        except psutil.Error:
            continue
    return ports


def demo_listeners(ports: set[int], scratch: Path) -> list[str]:
    """Processes of this demo (they carry its TMPDIR) still listening on its ports.

    Asking whether a port refuses a connection is not enough once the demo is gone:
    another test's server may take a freed loopback port the next moment.
    """
    found = []
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status != psutil.CONN_LISTEN or conn.laddr.port not in ports or not conn.pid:
            continue
        try:
            proc = psutil.Process(conn.pid)
            if proc.environ().get("TMPDIR") == str(scratch):
                found.append(f"{conn.pid} on port {conn.laddr.port}: {proc.cmdline()}")
        except psutil.Error:
            continue
    return found


def refuses(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return False
    except ConnectionRefusedError:
        return True


@pytest.mark.parametrize("how", ["q", "ctrl-c", "sigterm", "sighup"])
async def test_demo_shows_the_boxes_and_cleans_up_on_exit(
    tmux: Tmux, tmp_path: Path, how: str
) -> None:
    assert RGT_TUI.exists(), f"{RGT_TUI} missing: run `.venv/bin/pip install -e .`"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "TMPDIR": str(scratch),  # the demo's temporary fleet directory goes here
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "TEXTUAL_ANIMATIONS": "none",
        "PYTHONFAULTHANDLER": "1",
    }
    env.pop("TMUX", None)
    # The user's own fleet has a box1 too (torn down), and a flat journal from before
    # journals were per fleet: the demo must leave both as they are.
    user_fleet = tmp_path / "mine" / "hosts.toml"
    user_box = BoxIdentity("f" * 32, "SHA256:the-users-box1")
    user_journal = Journal(journal_dir(user_fleet, env))
    user_journal.observe_box("box1", user_box, 1.0)
    user_journal.add_teardown("box1", TeardownRecord(2.0, "true", 0, "", True, user_box.box_id))
    Journal(journal_root(env)).save(HostJournal("box1", box=user_box))
    before = {p: p.read_bytes() for p in journal_root(env).rglob("*.json")}
    # The shell reaps the demo and records its exit status: tmux itself sometimes marks
    # a pane dead (its pty closed) long before it reaps the process.
    status_file = tmp_path / "exit-status"
    tmux.start(f"{RGT_TUI} demo --boxes {BOXES}; echo $? > {status_file}", env, tmp_path)

    def ready() -> bool:
        text = tmux.screen()
        return (
            len(re.findall("inodes .*?" + FIGURE, text)) >= BOXES
            and len(re.findall("bytes .*?" + FIGURE, text)) >= BOXES
            and text.count("● connected") >= BOXES
        )

    await wait_for(
        ready, 90, "the demo panes to show disk and inode figures", show=tmux.screen, every=0.3
    )
    text = tmux.screen()
    for n in range(1, BOXES + 1):
        assert f"box{n}" in text
    # A GPU fleet, honestly labelled: each box replays a recorded H100, and costs money.
    assert text.count("GPU0 util") >= BOXES and "GPUs replay a recorded H100" in text
    # No started_at in the demo's fleet file: billed from when rgt-tui first saw each box.
    assert "/h" in text and "since first seen" in text
    assert list(scratch.glob("rgt-demo-*")), "the demo fleet directory should exist while running"
    (demo_hosts,) = scratch.glob("rgt-demo-*/hosts.toml")
    # The header names the demo's fleet file, so the CLI can be tried on it beside the TUI.
    # As $RGT_HOSTS: the commands the CLI suggests then run on it as printed.
    assert f"export RGT_HOSTS={demo_hosts}" in " ".join(text.split()), text
    demo_records = journal_dir(demo_hosts, env)
    await wait_for(
        lambda: (demo_records / "box1.json").exists(), 30, "the demo's box1 to be recorded"
    )
    assert demo_records != user_journal.directory

    shell = psutil.Process(int(tmux.pane("#{pane_pid}")))
    (demo,) = [p for p in shell.children() if "demo" in p.cmdline()]
    pid = demo.pid
    ports = listening_ports(pid)
    assert len(ports) >= BOXES
    assert not any(refuses(p) for p in ports)
    # The check made after exit would see each of them: it is not vacuous.
    assert len(demo_listeners(ports, scratch)) == len(ports)

    if how in ("q", "ctrl-c"):
        # The demo asks first (it deletes its boxes, queues and pulls); the key again quits.
        key = "q" if how == "q" else "C-c"
        tmux.send(key)
        await wait_for(lambda: "Quit the demo?" in tmux.screen(), 60, "the quit question")
        tmux.send(key)
    elif how == "sighup":  # the terminal was closed
        os.kill(pid, signal.SIGHUP)
    else:
        os.kill(pid, signal.SIGTERM)

    def stuck_stacks() -> str:
        # faulthandler prints every thread's stack on SIGABRT: say where it hangs.
        os.kill(pid, signal.SIGABRT)
        time.sleep(1)
        return tmux("capture-pane", "-p", "-t", "demo", "-S", "-100")

    def exited() -> bool:
        return status_file.exists() and status_file.read_text().strip() != ""

    await wait_for(exited, 60, "the demo to exit", show=stuck_stacks, every=0.3)
    assert status_file.read_text().strip() == {"sigterm": "143", "sighup": "129"}.get(how, "0"), (
        tmux.screen()
    )
    assert not psutil.pid_exists(pid)
    left = demo_listeners(ports, scratch)
    assert not left, f"a loopback SSH server outlived the demo: {left}"
    assert not list(scratch.glob("rgt-demo-*")), "the demo's temporary directory was left behind"
    assert "Traceback" not in tmux.screen()
    assert "a new box answers" not in tmux.screen()
    assert not demo_records.exists(), "the demo's journal outlived it"
    assert {p: p.read_bytes() for p in journal_root(env).rglob("*.json")} == before
