"""Issue 39: no escape from a box reaches the terminal through the command line.

One hostile box (a loopback box whose queue records and logs carry OSC 52, CSI 2J, an
OSC 8 hyperlink, a bell, a lone ESC, C1 controls and markup-looking names; whose
``nvidia-smi`` names its GPU with them, whose ``dmesg`` OOM line names the cell's pid
with them, and whose disk and Hugging Face cache hold folders named with them), many
commands over it: each one prints the box's hostile text (so each row tests something:
on 7d7a2a9, before the cleaning, they wrote the escapes raw) and what it writes holds no
control character; the markup shows literally.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time

import pytest
from support.cli import rgt
from support.gpu_sequence import gpu_rows
from support.queues import SCRIPT_RUN

from rgt_tui.cli import main as rgt_main

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x1b\\"  # writes "rm -rf ~" to the clipboard
CLEAR = "\x1b[2J\x1b[H"
LINK = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
C1 = "\u009b2J\u009d52;c;x\u009c"
HOSTILE = f"{OSC52}{CLEAR}{LINK}bell\x07lone\x1b {C1}"
NAME = f"{OSC52}{CLEAR}forged"  # the reviewer's reproduction: a cell name in cells.tsv
MARKUP = ("[bold red]x", "[link=https://e]y[/link]")
# A file name holds no "/": the escapes without the link.
FILE_NAME = f"{OSC52}{CLEAR}bell\x07lone\x1b {C1}"
# What a command prints of the box's OSC 52 once made printable, at entry (\x1b) or by
# the fence (\u001b): the proof that the row printed the box's text at all.
SHOWN = ("\\x1b]52;c;", "\\u001b]52;c;")
COMMANDS = ("diagnose", "logs", "queue", "status", "disk", "teardown")
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
        f"launch {now - 60} {boot} tmux{OSC52}{C1} 0 /s/{HOSTILE}.sh 999999\n".encode()
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
    _hostile_disk_and_tools(qf)


def _hostile_disk_and_tools(qf) -> None:  # noqa: ANN001
    """Folders named with escapes on the watched disk and in the HF cache; an
    ``nvidia-smi`` (the recorded H100's idle row) whose GPU name carries them and a
    ``dmesg`` whose OOM line names the failed cell's pid (999999) with them."""
    root = qf.root()
    big = root / "data" / FILE_NAME
    big.mkdir(parents=True)
    (big / "blob").write_bytes(b"x" * 2_000_000)  # the largest folder of the mount
    model = root / ".cache" / "huggingface" / "hub" / f"models--org--{FILE_NAME}"
    (model / "blobs").mkdir(parents=True)
    (model / "blobs" / "b").write_bytes(b"y" * 1000)
    tools = qf.base / "hostile-bin"
    tools.mkdir()
    row = gpu_rows("idle").strip().split(", ")
    row[1] = f"H100{FILE_NAME}"  # the name: no ", " in it, so the row still splits
    (tools / "gpu.csv").write_text(", ".join(row) + "\n")
    (tools / "dmesg.txt").write_text(f"Out of memory: Killed process 999999 (py{FILE_NAME})\n")
    for name, body in {
        "nvidia-smi": f'case "$*" in *--query-gpu=*) cat {tools}/gpu.csv ;; esac',
        "dmesg": f"cat {tools}/dmesg.txt",
    }.items():
        (tools / name).write_text(f"#!/bin/bash\n{body}\n")
        (tools / name).chmod(0o755)
    qf.loopback.box("box1").extra_path.insert(0, tools)


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


# Each row and what proves it printed the box's text: its OSC 52 made printable (SHOWN),
# a log line's text with its escapes dropped, or a markup-looking name shown as written.
# None: on this box the command prints no box text (nothing runs, so kill and stop
# refuse; the retry of a cell whose queue file is gone, and the teardown checklist before
# any pull, name only rgt-tui's own words): only the fence is checked there.
LOG_TEXT = "Traceback clickbelllone"


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (("diagnose", "box1"), SHOWN),  # the dmesg OOM line, the launch's detach word
        (("logs", "box1"), ("runner clickbelllone",)),
        (("logs", "box1", "failed"), (LOG_TEXT,)),
        (("logs", "box1", "failed", "--tail", "1"), (LOG_TEXT,)),
        (("queue", "kill", "box1", "--yes"), None),
        (("queue", "retry", "box1", "skipped", "--yes"), SHOWN),  # the skip's reason
        (("queue", "retry", "box1", "failed", "--yes"), None),
        (("queue", "retry", "box1", MARKUP[0], "--yes"), (f"cell {MARKUP[0]} never ran",)),
        (("status", "box1"), SHOWN),  # the GPU's name from nvidia-smi
        (("disk", "box1"), SHOWN),  # a folder's and an HF model's name
        (("teardown", "box1"), None),
        (("queue", "stop", "box1", "--yes"), None),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, tuple) and a and a[0] in COMMANDS else "",
)
async def test_every_command_over_the_hostile_box_writes_no_escape(hostile, argv, shown) -> None:  # noqa: ANN001
    _, cli = hostile
    _code, out, err = await cli(*argv)
    _fenced(out + err)
    if shown is not None:
        assert any(s in out + err for s in shown), f"printed none of the box's text: {out}{err}"


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


async def test_logs_follow_prints_hostile_lines_through_the_same_filter(hostile) -> None:  # noqa: ANN001
    qf, _ = hostile
    log = qf.qdir() / "cells" / "failed.log"
    argv = ["logs", "--hosts", str(qf.loopback.hosts_file), "box1", "failed", "--follow"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rgt_tui", *argv, "--poll", "0.05",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    try:
        # Generous caps: each is a wait for the line, not a speed check.
        seen = [await asyncio.wait_for(proc.stdout.readline(), 60) for _ in range(2)]
        with log.open("ab") as f:  # a line written while it follows
            f.write(f"epoch 2 {HOSTILE}\n".encode())
        seen.append(await asyncio.wait_for(proc.stdout.readline(), 60))
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        err = await proc.stderr.read()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    shown = b"".join(seen).decode()
    _fenced(shown + err.decode())
    assert shown.splitlines()[1:] == [LOG_TEXT, "epoch 2 clickbelllone"]


async def test_a_cell_name_that_climbs_out_of_the_queue_folder_reads_no_file(
    make_queue_fleet, capsys
) -> None:  # noqa: ANN001
    """h503 #2: a cells.tsv row naming `../escaped` had the box's probe read
    `cells/../escaped.state` and `.log` — files outside the queue's folder (on a loopback
    box, this machine's) — and show them as the cell's state and last line."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    q = qf.qdir()
    (q / "cells").mkdir(parents=True, exist_ok=True)
    boot = qf.loopback.box("box1").boot_id_file.read_text().strip()
    now = int(time.time())
    (q / "cells.tsv").write_text("0\t../escaped\tbash x.sh\n1\tplain\tbash y.sh\n")
    outside = f"start {now - 50} {boot} 999999\nend {now - 40} 137\n"
    (q / "escaped.state").write_text(outside)  # what cells/../escaped.state names
    (q / "escaped.log").write_text("SECRET-OUTSIDE-LOG\n")
    (q / "cells" / "plain.state").write_text(outside)  # the same records, in its place
    (q / "cells" / "plain.log").write_text("plain's own last line\n")
    hosts = str(qf.loopback.hosts_file)
    code = await asyncio.to_thread(rgt_main, ["queue", "show", "box1", "--json", "--hosts", hosts])
    out = capsys.readouterr().out
    assert code == 0
    cells = {c["name"]: c for c in json.loads(out)["cells"]}
    assert "SECRET-OUTSIDE" not in out, out
    assert cells["../escaped"]["status"] != cells["plain"]["status"], cells  # read no record
    assert "137" in json.dumps(cells["plain"]), cells["plain"]  # the probe reads a plain one
