"""Quitting says nothing on the terminal but goodbye: no traceback and no "Task exception
was never retrieved" after rgt-tui exits (issue 27: quitting the demo printed an
``SFTPEOFError`` from a log read cut off at exit).

The installed ``rgt-tui`` runs in a real terminal (tmux) on loopback boxes served by this
test. Each run visits every screen with everything live — telemetry, box1's queue
launched from its dialog, the Logs tab following, a pull — and one run also has a box
drop under it; then it quits (q, or Ctrl-C) and reads the whole terminal, scrollback
included, for anything printed after the app let go of the screen.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.cli import RGT_TUI, cli_env
from support.tmux import Tmux
from support.waiting import wait_for

BIG = 1 << 30  # sparse on the box: no disk, but every byte goes over SFTP
NOISE = ("Traceback", "never retrieved", "Exception ignored", "Error")


@pytest.mark.parametrize("how", ["q", "ctrl-c"])
async def test_quitting_from_every_screen_prints_nothing(
    make_queue_fleet, tmux: Tmux, tmp_path: Path, how: str
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(2, workload=True)
    # Something to pull for a while: the quit comes with SFTP reads in flight.
    results = qf.loopback.boxes[0].root / "results"
    results.mkdir(exist_ok=True)
    (results / "big.ckpt").touch()
    os.truncate(results / "big.ckpt", BIG)
    env = cli_env(
        {
            "TERM": "xterm-256color",
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "TEXTUAL_ANIMATIONS": "none",
            "TMUX": None,
        }
    )
    status = tmp_path / "exit-status"
    hosts = qf.loopback.hosts_file
    tmux.start(f"{RGT_TUI} --hosts {hosts}; echo $? > {status}", env, tmp_path)

    send = tmux.send
    shows = tmux.shows

    async def changes(before: str) -> None:
        await wait_for(
            lambda: tmux.screen() != before, 30, "the screen to change", show=tmux.screen
        )

    await wait_for(
        lambda: tmux.screen().count("● connected") >= 2, 60, "both boxes", show=tmux.screen
    )
    send("L")  # box1 (selected) launches its queue from the dialog: Enter on Launch
    await shows("▶ Launch ◀")
    send("Enter")
    await shows("queue launched")
    send("Enter")  # box1's detail screen, every tab in turn
    await shows("8 Logs")
    for tab in "1234567":
        before = tmux.screen()
        send(tab)
        await changes(before)
    send("8")
    await shows("following")
    send("p")  # a pull (its tab shows), then back to the log while it copies
    await shows("big.ckpt")
    send("8")
    await shows("following")
    if how == "ctrl-c":
        send("Escape")  # back to the fleet, where box2 goes down
        await shows("● connected")
        await qf.loopback.boxes[1].stop()
        await wait_for(
            lambda: tmux.screen().count("● connected") < 2, 60, "box2 to drop", show=tmux.screen
        )
    key = {"q": "q", "ctrl-c": "C-c"}[how]
    send(key)

    def exited() -> bool:
        if "Quit while these run?" in tmux.screen():
            send(key)  # the pull still runs: quit anyway
        return status.exists() and status.read_text().strip() != ""

    await wait_for(exited, 30, "rgt-tui to exit", show=tmux.screen, every=0.3)
    terminal = tmux("capture-pane", "-p", "-t", "demo", "-S", "-500")
    assert status.read_text().strip() == "0", terminal
    assert not [word for word in NOISE if word in terminal], terminal
