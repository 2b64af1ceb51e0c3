"""The shell on a box whose queue runs (``rgt-tui shell``, the ``s`` key's twin), as a
person uses it: the installed rgt-tui in a real terminal (tmux), the user's ``ssh``, a
real OpenSSH sshd as the box, the queue's runner in its tmux session there.

The shell is a prompt in a NEW window of the queue's session, at the workdir; the
runner's window is never shown, so a Ctrl-C typed there cannot reach it; ``exit`` (or
tmux's detach) closes that window and comes back, the runner untouched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import psutil
from support.cli import RGT_TUI, cli_env
from support.queues import GATE, SCRIPT_RUN
from support.tmux import Tmux
from support.waiting import wait_for

from rgt_tui.services.box.shell import ShellCommand, queue_window_script, shell_command
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.view import read_queue_view
from rgt_tui.transport import transport_for

SESSION = "rgt-real1"


def _box_tmux(server, *args: str) -> str:
    """A tmux command on the box's tmux server (the one the queue's runner is on)."""
    env = {**os.environ, "TMUX_TMPDIR": str(server.tmux_tmpdir)}
    env.pop("TMUX", None)
    done = subprocess.run(
        ["tmux", *args], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    return done.stdout


def _windows(server) -> list[tuple[str, str, str]]:
    """The queue session's windows: (id, the pane's pid, the pane's directory)."""
    out = _box_tmux(
        server, "list-windows", "-t", f"={SESSION}", "-F",
        "#{window_id} #{pane_pid} #{pane_current_path}",
    )  # fmt: skip
    return [tuple(line.split(" ", 2)) for line in out.splitlines() if line.strip()]  # type: ignore[misc]


def _sessions(server) -> list[str]:
    return _box_tmux(server, "list-sessions", "-F", "#{session_name}").split()


async def test_the_shell_is_a_new_window_at_the_workdir_and_leaves_the_runner_alone(
    openssh_queue_server, tmux: Tmux, tmp_path: Path, home: Path
) -> None:
    server = openssh_queue_server
    queue = server.add_queue(SCRIPT_RUN)
    (server.workdir / "cells").mkdir()
    (server.workdir / "cells" / "gate.sh").write_text(GATE + "\n")  # sleeps until ~/go
    queue.write_text("cells/gate.sh t 1\n")
    host = load_fleet(server.hosts_file).host("real1")
    transport = transport_for(host)
    plan = await plan_launch(load_fleet(server.hosts_file), host, transport)
    assert plan.ok and plan.detach == "tmux", plan.problems
    await launch(plan, transport)
    cell_state = server.workdir / ".rgt" / "queue" / "cells" / "gate.state"
    await wait_for(cell_state.exists, 60, "the gate cell to start")
    [(runner_window, runner_pid, _)] = _windows(server)
    runner = psutil.Process(int(runner_pid))

    env = cli_env(
        {
            "TERM": "xterm-256color",
            "HOME": str(home),
            "SSH_AUTH_SOCK": None,
            "TMUX": None,
        }
    )
    status = tmp_path / "exit-status"

    def send(*keys: str) -> None:
        tmux("send-keys", "-t", "demo", *keys)

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "demo", "-S", "-100")

    def flat() -> str:  # the screen's lines joined: a long line wraps anywhere
        return "".join(screen().splitlines())

    def new_window() -> tuple[str, str, str] | None:
        others = [w for w in _windows(server) if w[0] != runner_window]
        return others[0] if len(others) == 1 else None

    tmux.start(
        f"{RGT_TUI} shell real1 --hosts {server.hosts_file}; echo $? > {status}", env, tmp_path
    )
    await wait_for(
        lambda: new_window() is not None, 60, "a new window in the queue's session", show=screen
    )
    window = new_window()
    assert window is not None and window[2] == str(server.workdir)  # its shell, at the workdir
    # The terminal shows the new window (how to come back, then a prompt), never the runner's.
    await wait_for(lambda: "exit` closes this window" in flat(), 30, "the hint", show=screen)
    # The detach as typed from inside a tmux of one's own too: Ctrl-b d alone detached the
    # user's own session (hour s34 TUI #11).
    assert "inside a tmux of your own, Ctrl-b Ctrl-b d" in flat(), flat()
    send("pwd", "Enter")
    await wait_for(
        lambda: str(server.workdir) in [line.strip() for line in screen().splitlines()],
        30, "pwd's answer", show=screen,
    )  # fmt: skip
    assert "waiting for" not in screen()  # the runner's window (its cell's output) not shown

    # The prompt as the shell draws it (the line pwd was typed on), to count prompts by.
    [prompt] = [
        line[: -len("pwd")].rstrip() for line in screen().splitlines() if line.endswith(" pwd")
    ]

    def prompts() -> int:
        return sum(line.startswith(prompt) for line in screen().splitlines())

    before = prompts()
    send("C-c")  # a Ctrl-C at the prompt is the shell's, never the runner's
    # Typed before the shell has drawn its fresh prompt, the interrupt can eat the first
    # keys ("bash: cho: command not found", seen in CI): type once the prompt is back.
    await wait_for(lambda: prompts() > before, 30, "a fresh prompt after Ctrl-C", show=screen)
    send("echo after-$((6*7))", "Enter")
    await wait_for(lambda: "after-42" in screen(), 30, "the shell after Ctrl-C", show=screen)
    assert runner.is_running() and runner.status() != psutil.STATUS_ZOMBIE

    send("exit", "Enter")  # closes this window and comes back
    await wait_for(
        lambda: status.exists() and status.read_text().strip() != "", 60, "exit", show=screen
    )
    assert status.read_text().strip() == "0", screen()
    # Said on the way back (after tmux gave the terminal back): where the runner is.
    said = f"closed the new window in tmux session {SESSION}; the queue runner stays in window 0"
    await wait_for(lambda: said in flat(), 30, "where the runner stays", show=screen)
    assert [w[0] for w in _windows(server)] == [runner_window]  # the runner's window alone
    assert runner.is_running() and runner.status() != psutil.STATUS_ZOMBIE
    assert _sessions(server) == [SESSION]  # nothing left behind
    view = await read_queue_view(host, transport)
    assert view.state == "running" and view.runner_alive

    # tmux's own detach (Ctrl-b d) comes back too, and closes the window the same way.
    status.unlink()
    tmux(
        "respawn-pane",
        "-k",
        "-t",
        "demo",
        f"{RGT_TUI} shell real1 --hosts {server.hosts_file}; echo $? > {status}",
    )
    await wait_for(lambda: new_window() is not None, 60, "the second window", show=screen)
    await wait_for(lambda: "exit` closes this window" in flat(), 30, "the hint", show=screen)
    send("C-b", "d")
    await wait_for(
        lambda: status.exists() and status.read_text().strip() != "", 60, "detach", show=screen
    )
    assert [w[0] for w in _windows(server)] == [runner_window] and _sessions(server) == [SESSION]
    assert runner.is_running()

    (server.workdir / "go").touch()  # the cell ends; the queue finishes as launched
    await wait_for(lambda: SESSION not in _sessions(server), 60, "the queue to end")
    await transport.close()


def test_a_local_host_whose_queue_runs_gets_the_same_new_window(
    tmp_path: Path, monkeypatch
) -> None:
    """``ssh = "local"``: the same box-side script, run here in the workdir."""
    hosts = tmp_path / "hosts.toml"
    work = tmp_path / "work"
    work.mkdir()
    hosts.write_text(f'[[hosts]]\nname = "here"\nssh = "local"\nworkdir = "{work}"\n')
    sockets = Path(tempfile.mkdtemp(prefix="rgtl-"))  # short: socket paths are limited
    monkeypatch.setenv("TMUX_TMPDIR", str(sockets))
    monkeypatch.delenv("TMUX", raising=False)
    subprocess.run(["tmux", "new-session", "-d", "-s", "rgt-here", "sleep 600"], check=True)
    try:
        host = load_fleet(hosts).host("here")
        command = shell_command(host, terminal=True)
        assert isinstance(command, ShellCommand)
        assert command.argv == ("/bin/sh", "-c", queue_window_script("rgt-here"))
        assert command.cwd == work and "attach" not in command.argv[:2]
        # No terminal (a script on stdin): the login shell, as on a box (review s46 #11:
        # tmux was tried, and its refusal printed before every scripted run).
        monkeypatch.setenv("SHELL", "/bin/sh")
        scripted = shell_command(host, terminal=False)
        assert isinstance(scripted, ShellCommand) and not scripted.terminal
        assert scripted.argv == ("/bin/sh", "-l") and scripted.cwd == work
        assert "no terminal here" in scripted.describe()
    finally:
        subprocess.run(["tmux", "kill-server"], check=False, timeout=30)
        shutil.rmtree(sockets, ignore_errors=True)


def test_tmux_refusing_the_terminal_gives_a_login_shell_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch
) -> None:
    """No terminal (as with a TERM the box's tmux does not know): ``tmux attach`` fails at
    once. The new window is closed again, the reason said, and the login shell runs
    instead (here it reads the script's stdin: ``pwd``); the runner's window untouched."""
    sockets = Path(tempfile.mkdtemp(prefix="rgtr-"))  # short: socket paths are limited
    monkeypatch.setenv("TMUX_TMPDIR", str(sockets))
    monkeypatch.delenv("TMUX", raising=False)
    subprocess.run(["tmux", "new-session", "-d", "-s", "rgt-here", "sleep 600"], check=True)
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", queue_window_script("rgt-here")],
            input="pwd\n",
            cwd=tmp_path,
            env={**os.environ, "SHELL": "/bin/sh"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        said = (
            "rgt-tui: tmux could not attach to a new window of session rgt-here (see above); "
            "a login shell here instead, the queue runner untouched in window 0"
        )
        assert said in done.stderr, done.stderr
        assert "closed the new window" not in done.stderr
        assert done.stdout.strip().splitlines()[-1] == str(tmp_path)  # the login shell ran
        sessions = subprocess.run(
            ["tmux", "list-sessions", "-F", "#{session_name}:#{session_windows}"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.split()  # fmt: skip
        assert sessions == ["rgt-here:1"]
    finally:
        subprocess.run(["tmux", "kill-server"], check=False, timeout=30)
        shutil.rmtree(sockets, ignore_errors=True)
