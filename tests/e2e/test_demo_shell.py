"""The shell key on a demo box, as a new user meets it: `rgt-tui demo` in a real terminal
(tmux), box2 selected, ``s``. The user's own ``ssh`` reaches the loopback box, which the
demo serves from its own event loop while the app is suspended: a prompt in the box's
folder, a typed command's output, and ``exit`` back to the app. Its command-line twin
(``rgt-tui shell``) works on the same box, and the host-key check still holds: the box
behind another key is refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import asyncssh
import psutil
from support.cli import RGT_TUI, arun, cli_env
from support.tmux import Tmux
from support.waiting import wait_for

APP_UP = "● connected"


def _shell_in(pid: int, folder: Path) -> bool:
    """A login shell on a terminal runs in ``folder`` under process ``pid`` (the demo, which
    serves its boxes; the app's own commands there run in that folder too, on no terminal)."""
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            if proc.cmdline()[1:] == ["-l"] and proc.cwd() == str(folder):
                # Not psutil's terminal(): it keeps the map of ttys it read first.
                return os.readlink(f"/proc/{proc.pid}/fd/0").startswith("/dev/pts/")
        except (psutil.Error, OSError):
            continue
    return False


async def test_s_on_a_demo_box_gives_a_prompt_in_its_folder_and_exit_comes_back(
    tmux: Tmux, tmp_path: Path, home: Path
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = cli_env(
        {
            "TERM": "xterm-256color",
            "HOME": str(home),
            "TMPDIR": str(scratch),  # the demo's fleet folder goes here
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "TEXTUAL_ANIMATIONS": "none",
            "SSH_AUTH_SOCK": None,
            "TMUX": None,
        }
    )
    status = tmp_path / "exit-status"
    tmux.start(f"{RGT_TUI} demo --boxes 2; echo $? > {status}", env, tmp_path)

    send = tmux.send

    async def shows(text: str, timeout: float = 90) -> None:  # the demo starts slowly
        await tmux.shows(text, timeout)

    await wait_for(
        lambda: tmux.screen().count(APP_UP) >= 2, 90, "both demo boxes", show=tmux.screen
    )
    await shows("s Shell")
    (hosts,) = scratch.glob("rgt-demo-*/hosts.toml")
    box2 = hosts.parent / "box2"
    (demo,) = psutil.Process(int(tmux.pane("#{pane_pid}"))).children()

    send("Right")
    await shows("╔═ box2")
    send("s")
    await wait_for(lambda: _shell_in(demo.pid, box2), 60, "box2's shell", show=tmux.screen)
    # The first line says which box: the terminal still shows what came before the TUI.
    await shows("rgt-tui: box2: a shell (ssh;")
    send("echo ok-$((6*7)) in $PWD", "Enter")
    await shows(f"ok-42 in {box2}")  # the command ran on the box, in its folder
    send("exit", "Enter")
    await shows(APP_UP)
    assert "ok-42" not in tmux.screen()
    assert not _shell_in(demo.pid, box2)

    # The command-line twin, on the same box: the shell's status comes back.
    done = await arun(
        "shell", "box2", "--hosts", hosts, stdin="echo cli-$((6*7)) > cli.txt; exit 3\n"
    )
    assert done.returncode == 3, done.stderr
    assert (box2 / "cli.txt").read_text() == "cli-42\n"
    # The host-key check holds: box2's port behind another key is refused.
    impostor = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    known = (hosts.parent / "known_hosts").read_text().splitlines()
    other = tmp_path / "other_known_hosts"
    other.write_text(
        "".join(f"{line.split()[0]} {' '.join(impostor.split()[:2])}\n" for line in known)
    )
    forged = tmp_path / "forged.toml"
    forged.write_text(hosts.read_text().replace(str(hosts.parent / "known_hosts"), str(other)))
    refused = await arun("shell", "box2", "--hosts", forged, stdin="touch forged.txt\n")
    assert refused.returncode == 255, refused.stderr
    assert "Host key verification failed" in refused.stderr
    assert not (box2 / "forged.txt").exists()

    send("q")
    await wait_for(lambda: "Quit the demo?" in tmux.screen(), 60, "the quit question")
    send("q")  # q at the question quits
    await wait_for(lambda: status.exists() and status.read_text().strip() != "", 60, "exit")
    terminal = tmux("capture-pane", "-p", "-t", "demo", "-S", "-300")
    assert status.read_text().strip() == "0", terminal
    assert "Traceback" not in terminal
