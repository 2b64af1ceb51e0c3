"""How a host name the fleet does not have is answered, wherever a command takes one:
the fleet file named, the known hosts, and the closest name as the fix (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.cli import exit_codes, main


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    """Hosts on this machine: looking them up never reaches a network."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        "".join(f'[[hosts]]\nname = "{n}"\nssh = "local"\n\n' for n in ("box1", "box2", "gpu-a"))
    )
    return hosts


def test_queue_move_to_an_unknown_host_says_what_every_command_says(
    fleet_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["queue", "move", "a", "--to", "gpu-b", "--hosts", str(fleet_file)])
    err = capsys.readouterr().err
    assert code == exit_codes.EXIT_BAD_INPUT, err
    assert f"rgt-tui queue move: no host named 'gpu-b' in {fleet_file}" in err
    assert "known: box1, box2, gpu-a" in err and "fix: did you mean 'gpu-a'?" in err


@pytest.mark.parametrize(
    ("typed", "fix"),
    [
        ("boxl", "did you mean 'box1'?"),  # l for 1 beats box2, equally close in spelling
        ("BOX2", "did you mean 'box2'?"),
        ("b0x2", "did you mean 'box2'?"),  # 0 for o
        ("box3", "did you mean 'box1' or 'box2'?"),  # a tie: both, never one at random
    ],
)
def test_the_closest_host_name_prefers_a_look_alike_and_lists_a_tie(
    typed: str, fix: str, fleet_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["status", typed, "--hosts", str(fleet_file)])
    err = capsys.readouterr().err
    assert code == exit_codes.EXIT_BAD_INPUT and f"fix: {fix}\n" in err, err
