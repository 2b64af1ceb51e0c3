"""The shell key as a person uses it: the installed rgt-tui in a real terminal (tmux), a
real OpenSSH sshd as the box, the user's real ``ssh`` in between.

``s`` suspends the app and opens a login shell in the workdir (no queue runs yet); a
command typed there runs on the box; ``exit`` brings the app back on the same SSH
connection, and a launch (``L``) from it shows on the pane. With the queue running, ``s``
opens a new window of its tmux session on the box (test_shell_queue_window.py has the
rest); detaching brings the app back, and the pane follows the queue to its end.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil
from support.cli import RGT_TUI, cli_env, rgt
from support.machine import children
from support.queues import GATE, SCRIPT_RUN
from support.tmux import Tmux
from support.waiting import wait_for

APP_UP = "● connected"


def _shell_under(sshd_pid: int, workdir: Path) -> bool:
    """A shell (the box's login shell) runs in ``workdir`` under one of sshd's sessions."""
    for pid in children(sshd_pid):
        try:
            for proc in psutil.Process(pid).children(recursive=True):
                if proc.name() in ("bash", "sh", "dash") and proc.cwd() == str(workdir):
                    return True
        except psutil.Error:
            continue
    return False


async def test_s_opens_a_shell_on_the_box_and_returns_to_a_live_app(
    openssh_queue_server, tmux: Tmux, tmp_path: Path, home: Path
) -> None:
    server = openssh_queue_server
    queue = server.add_queue(SCRIPT_RUN)
    (server.workdir / "cells").mkdir()
    (server.workdir / "cells" / "gate.sh").write_text(GATE + "\n")
    queue.write_text("cells/gate.sh t 1\n")
    env = cli_env(
        {
            "TERM": "xterm-256color",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "TEXTUAL_ANIMATIONS": "none",
            "SSH_AUTH_SOCK": None,
            "TMUX": None,
        }
    )
    status = tmp_path / "exit-status"
    tmux.start(f"{RGT_TUI} --hosts {server.hosts_file}; echo $? > {status}", env, tmp_path)

    send = tmux.send
    shows = tmux.shows

    await shows(APP_UP)
    await shows("s Shell")
    app_sessions = set(children(server.pid))  # the app's own SSH connection(s)
    assert app_sessions

    # s: the app steps aside for a login shell in the workdir on the box. Keys typed
    # right after it are the shell's, never the app's commands (hour s23b #4: they ran
    # once the shell ended): L here would open the launch dialog.
    send("s", "L")
    await wait_for(
        lambda: _shell_under(server.pid, server.workdir), 60, "the box's shell", show=tmux.screen
    )
    assert APP_UP not in tmux.screen()
    send("C-u")  # an L that reached the shell's line
    send("echo marker-$((6*7)) > shell-marker.txt; echo seen-$((3*14))", "Enter")
    await shows("seen-42")
    marker = server.workdir / "shell-marker.txt"
    await wait_for(lambda: marker.exists() and marker.read_text() == "marker-42\n", 30, "the file")
    send("exit", "Enter")
    await shows(APP_UP)
    assert "seen-42" not in tmux.screen()
    assert "▶ Launch ◀" not in tmux.screen()
    # The same connection, still open: the shell was ssh's own, beside it.
    assert app_sessions <= set(children(server.pid))

    # Live: a launch from the app (L, then Enter on Launch) shows on the pane.
    send("L")
    await shows("▶ Launch ◀")
    send("Enter")
    await shows("queue 0/1 done · gate")

    # With the queue's tmux session on the box, s attaches to it; detaching comes back.
    box_tmux = {**os.environ, "TMUX_TMPDIR": str(server.tmux_tmpdir)}
    box_tmux.pop("TMUX", None)

    def attached() -> bool:
        out = subprocess.run(
            ["tmux", "list-clients", "-F", "#{client_session}"],
            env=box_tmux, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        return any(s.startswith("rgt-real1-shell-") for s in out.stdout.split())

    send("s")
    await wait_for(
        attached, 60, "a client on a new window of the queue's session", show=tmux.screen
    )
    send("C-b", "d")  # tmux's own detach: the shell ends, the app comes back
    await shows(APP_UP)
    assert not attached()
    (server.workdir / "go").touch()  # the cell finishes; the pane follows
    await shows("queue 1/1 done")
    send("q")
    await wait_for(lambda: status.exists() and status.read_text().strip() != "", 30, "exit")
    terminal = tmux("capture-pane", "-p", "-t", "demo", "-S", "-300")
    assert status.read_text().strip() == "0", terminal
    assert "Traceback" not in terminal


def test_the_shell_command_runs_the_same_ssh_and_returns_its_exit_status(
    openssh_queue_server, home: Path
) -> None:
    server = openssh_queue_server
    # The queue's tmux session exists on the box: a script's shell does not try a window
    # of it (h462 #7: tmux's refusal of a non-terminal was printed before every run).
    box_tmux = {**os.environ, "TMUX_TMPDIR": str(server.tmux_tmpdir)}
    box_tmux.pop("TMUX", None)
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", "rgt-real1", "sleep 600"],
        env=box_tmux, check=True, timeout=30,
    )  # fmt: skip
    try:
        done = rgt(
            "shell", "real1", "--hosts", server.hosts_file,
            stdin="echo cli-$((6*7)) > cli-marker.txt; exit 3\n",
            env={"HOME": str(home), "SSH_AUTH_SOCK": None},
        )  # fmt: skip
    finally:
        subprocess.run(["tmux", "kill-server"], env=box_tmux, check=False, timeout=30)
    assert done.returncode == 3, done.stderr
    assert "tmux" not in done.stderr and "not a terminal" not in done.stderr, done.stderr
    assert (server.workdir / "cli-marker.txt").read_text() == "cli-42\n"  # in the workdir
    # From a script with nothing to say (stdin /dev/null): it ends with its input. With a
    # terminal forced, the box's shell waited at its prompt until killed (hour s45b #1).
    quiet = rgt(
        "shell", "real1", "--hosts", server.hosts_file, timeout=60,
        env={"HOME": str(home), "SSH_AUTH_SOCK": None},
    )  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    unknown = rgt("shell", "nope", "--hosts", server.hosts_file, env={"HOME": str(home)})
    assert unknown.returncode == 2 and "nope" in unknown.stderr
