"""Issue 39: no escape from a box reaches the terminal through the command line.

One hostile box (a loopback box whose queue records and logs carry OSC 52, CSI 2J, an
OSC 8 hyperlink, a bell, a lone ESC, C1 controls and markup-looking names), many commands
over it: what each writes holds no control character, and the markup shows literally.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from support.cli import rgt
from support.queues import SCRIPT_RUN

from rgt_tui.cli import main as rgt_main

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x1b\\"  # writes "rm -rf ~" to the clipboard
CLEAR = "\x1b[2J\x1b[H"
LINK = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
C1 = "\u009b2J\u009d52;c;x\u009c"
HOSTILE = f"{OSC52}{CLEAR}{LINK}bell\x07lone\x1b {C1}"
NAME = f"{OSC52}{CLEAR}forged"  # the reviewer's reproduction: a cell name in cells.tsv
MARKUP = ("[bold red]x", "[link=https://e]y[/link]")
CONTROLS = set(map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]))


def _hostile_box(qf) -> None:  # noqa: ANN001
    q = qf.qdir()
    (q / "cells").mkdir(parents=True, exist_ok=True)
    boot = qf.loopback.box("box1").boot_id_file.read_text().strip()
    now = int(time.time())
    (q / "cells.tsv").write_bytes(
        "".join(
            f"{i}\t{name}\tbash cells/{i}.sh\n"
            for i, name in enumerate([NAME, *MARKUP, "failed", "skipped", "retried"])
        ).encode()
    )
    (q / "runner.state").write_bytes(
        f"launch {now - 60} {boot} tmux{HOSTILE} 0 /s/{HOSTILE}.sh 999999\n"
        f"done {now} 1 2\n".encode()
    )
    cells = q / "cells"
    (cells / f"{NAME}.state").write_bytes(
        f"start {now - 50} {boot} 999999\nend {now - 40} 0\n".encode()
    )
    (cells / "failed.state").write_bytes(
        f"start {now - 40} {boot} 999999\nkill {now - 31} user{HOSTILE} next\nend {now - 30} 3\n".encode()
    )
    (cells / "failed.log").write_bytes(f"\x1b[31mloss\x1b[0m ok\nTraceback {HOSTILE}\n".encode())
    (cells / "skipped.state").write_bytes(f"skip {now - 20} moved {HOSTILE}\n".encode())
    (cells / "retried.state").write_bytes(
        f"start {now - 20} {boot} 999999\nend {now - 10} 1\nretry {now} /out/{HOSTILE}\n".encode()
    )
    (q / "queue.log").write_bytes(f"runner {HOSTILE}\n\x1b[32mgreen\x1b[0m\n".encode())


def _fenced(text: str) -> None:
    assert not CONTROLS & set(text), repr([c for c in text if c in CONTROLS][:5])


@pytest.fixture
async def hostile(make_queue_fleet, capsys):  # noqa: ANN001, ANN201
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    _hostile_box(qf)
    hosts = str(qf.loopback.hosts_file)

    async def cli(*args: str) -> tuple[int, str, str]:
        # The box serves from this loop; the command runs its own loop in a thread.
        code = await asyncio.to_thread(rgt_main, [*args, "--hosts", hosts])
        out = capsys.readouterr()
        return code, out.out, out.err

    return qf, cli


async def test_queue_show_of_a_hostile_cells_tsv_writes_no_escape(hostile) -> None:  # noqa: ANN001
    _, cli = hostile
    code, out, err = await cli("queue", "show", "box1")
    assert code == 0, err
    _fenced(out + err)
    # Escaped where it entered (printable's \x1b), not only by the fence (\u001b).
    assert "\\x1b]52;c;cm0gLXJmIH4=" in out and "forged" in out
    for name in MARKUP:
        assert name in out  # shown as written, never read as markup
    assert "failed (exit 3)" in out or "killed" in out
    lines = {line.split()[1]: line for line in out.splitlines()[1:] if len(line.split()) > 1}
    assert "skipped" in lines and "moved" in lines["skipped"]

    code, out, err = await cli("queue", "show", "box1", "--json")
    assert code == 0, err
    _fenced(out + err)
    names = [c["name"] for c in json.loads(out)["cells"]]
    assert names[0].startswith("\\x1b]52;c;") and names[1:3] == list(MARKUP)


@pytest.mark.parametrize(
    "argv",
    [
        ("diagnose", "box1"),
        ("logs", "box1"),
        ("logs", "box1", "failed"),
        ("logs", "box1", "failed", "--tail", "1"),
        ("queue", "kill", "box1", "--yes"),
        ("queue", "retry", "box1", "skipped", "--yes"),
        ("queue", "retry", "box1", "failed", "--yes"),
        ("queue", "retry", "box1", MARKUP[0], "--yes"),
        ("status", "box1"),
        ("disk", "box1"),
        ("teardown", "box1"),
        ("queue", "stop", "box1", "--yes"),
    ],
    ids=lambda a: " ".join(a),
)
async def test_every_command_over_the_hostile_box_writes_no_escape(hostile, argv) -> None:  # noqa: ANN001
    _, cli = hostile
    _code, out, err = await cli(*argv)
    _fenced(out + err)


async def test_logs_drop_escapes_off_a_terminal_and_raw_passes_them(hostile) -> None:  # noqa: ANN001
    _, cli = hostile
    code, out, err = await cli("logs", "box1")
    assert code == 0, err
    assert "runner click" in out and "green\n" in out  # text kept, escapes (SGR too) dropped
    _fenced(out)
    code, raw, err = await cli("logs", "box1", "--raw")
    assert code == 0, err
    assert f"runner {HOSTILE}\n" in raw and "\x1b[32mgreen" in raw


def test_logs_help_says_what_raw_does() -> None:
    shown = rgt("logs", "--help").stdout
    assert "--raw" in shown and "escape" in shown
