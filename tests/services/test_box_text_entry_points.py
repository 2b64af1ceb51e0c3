"""Box text is made printable where it enters, at three more entry points (issue 39):

- the telemetry agent's stderr, when a sample fails, goes into the error every surface
  shows (``box.status.sample_once``: ``rgt-tui status``);
- a Slurm cell's out-of-memory line (slurmstepd's, read from its output file) is keyed by
  the cell's name as the parser names it: printable, so a name with a control character
  keeps its OOM line;
- a box whose HOME holds control characters runs no queue, and the refusal names the host.

Over the real loopback SSH box (its own python3 first on its PATH; its HOME from its
environment), and the Slurm view's parser on the login node's answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.domain.errors import TransportError
from rgt_tui.services.box.status import sample_once
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.box import probe
from rgt_tui.services.queue.slurm.view import parse_slurm_view
from rgt_tui.transport import transport_for

ESCAPES = "\x1b]52;c;cm0gLXJmIH4=\x1b\\\x1b[2J\x1b]8;;https://evil\x1b\\L\x1b]8;;\x1b\\\x07\u009b2J"
CONTROL = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))}


async def test_the_agents_stderr_reaches_the_error_printable(loopback_fleet, tmp_path: Path):
    box = loopback_fleet.boxes[0]
    bin_dir = tmp_path / "hostile-bin"
    bin_dir.mkdir()
    said = bin_dir / "said.txt"  # what the agent prints on stderr before it dies
    said.write_text(f"agent broke {ESCAPES}\n")
    python3 = bin_dir / "python3"  # the box's own python3, first on its PATH
    python3.write_text(f"#!/bin/sh\ncat > /dev/null\ncat '{said}' >&2\nexit 1\n")
    python3.chmod(0o755)
    box.extra_path.append(bin_dir)
    host = load_fleet(loopback_fleet.hosts_file).host(box.name)
    message = str(await _refused_sample(host))
    assert "telemetry agent gave no sample: python3 on the box failed (exit 1): agent broke " in (
        message
    )
    assert not set(message) & CONTROL, message
    assert "\\x1b]52;c;cm0gLXJmIH4=" in message  # shown, not acted on
    # Exit 127 of a python3 that is there but broken: its own words, not "not found"
    # (hour s20a #8), and the fix says the box answers.
    said.write_text("python3: error while loading shared libraries: libpython3.11.so.1.0\n")
    python3.write_text(f"#!/bin/sh\ncat > /dev/null\ncat '{said}' >&2\nexit 127\n")
    broken = await _refused_sample(host)
    assert "failed (exit 127): python3: error while loading shared libraries" in broken.message
    assert broken.fix is not None and "the box answers over SSH" in broken.fix


async def _refused_sample(host) -> TransportError:  # type: ignore[no-untyped-def]
    """The error one agent sample of ``host`` ends in (it must end in one)."""
    transport = transport_for(host)
    try:
        with pytest.raises(TransportError) as err:
            await sample_once(host, transport)
    finally:
        await transport.close()
    return err.value


def test_a_slurm_cells_oom_line_is_kept_when_its_name_holds_a_control_character():
    name = "train\x1b[2Jx"
    oom = "slurmstepd: error: Detected 1 oom_kill event in StepId=3.batch"
    text = (
        "now\t1700000100\nuser\troot\n"
        f"cell\t0\t{name}\n"
        "jobs\t3 0 0 1700000000 launch\n"
        "acct\t3_0|FAILED|1:0|00:00:10|node1\n"
        f"oomout\t{name}\t{oom}\n"
    )
    cells = parse_slurm_view(text).cells
    assert list(cells) == ["train\\x1b[2Jx"]  # the name as the cells' parser makes it
    [cell] = cells.values()
    assert cell.oom and oom in cell.oom_line


async def test_a_box_whose_home_holds_control_characters_is_refused_by_name(make_queue_fleet):
    qf = await make_queue_fleet(1)
    home = qf.root().parent / "home\x1b[2J\x07"
    home.mkdir()
    qf.loopback.box("box1").extra_env["HOME"] = str(home)
    transport = qf.transport()
    try:
        await transport.connect()
        with pytest.raises(TransportError) as err:
            await probe(transport, "box1", session="rgt-box1")
    finally:
        await transport.close()
    assert err.value.host == "box1"
    message = str(err.value)
    assert message.startswith("box1") and "holds control characters" in message
    assert "home\\x1b[2J\\x07" in message and not set(message) & CONTROL
