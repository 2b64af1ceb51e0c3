"""The runner's "does not answer" fix belongs to the host that did not answer (review
s46 #9): a command on box1 (interruptible: its fix says to move the interrupted cell)
that failed to reach box2 said box1's fix under box2's error. A real fleet file, the real
runner; the command stands for one that reaches a second host (a move's target)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rgt_tui.cli.runner import Call, Command, run_command
from rgt_tui.domain.errors import NoAnswer


def _fleet(tmp_path: Path) -> Path:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:2201"\nprofile = "vastai"\n'
        'interruptible = true\nspare = ["box2"]\n\n'
        '[[hosts]]\nname = "box2"\nssh = "me@127.0.0.1:2202"\n'
    )
    return hosts


@pytest.mark.parametrize("who", ["box1", "box2"])
def test_the_fix_for_a_box_not_answering_is_that_boxs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], who: str
) -> None:
    def run(call: Call) -> int:
        raise NoAnswer(who, "connection refused by 127.0.0.1:22", "check the port")

    command = Command("probe", "", lambda p: None, run, host="required")
    code = run_command(command, argparse.Namespace(host="box1", hosts=str(_fleet(tmp_path))))
    err = " ".join(capsys.readouterr().err.split())
    assert code != 0 and f"{who} unreachable: connection refused" in err, err
    moved = "box1 does not answer (preempted?): move the interrupted cell" in err
    assert moved == (who == "box1"), err  # box1's own fix only for box1
    assert "check the port" in err, err
