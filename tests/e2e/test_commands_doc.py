"""docs/commands.md's table names every option each command's --help has.

The commands come from the CLI's own parser, so a new command or option without its
doc row fails here.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import rgt_tui
from rgt_tui.cli import build_parser, main

DOC = Path(rgt_tui.__file__).parents[1] / "docs" / "commands.md"
IGNORED = {"--help", "--hosts"}  # every command takes --hosts (said once, below the table)


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--help"])
    assert stopped.value.code == 0
    return capsys.readouterr().out


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command the parser runs: the bare `rgt-tui` (the TUI) and each leaf sub-parser."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found = [path] if not path else []
    for group in groups:
        for name, sub in group.choices.items():
            subgroups = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            found += _commands(sub, (*path, name)) if subgroups else [(*path, name)]
    return found


COMMANDS = _commands(build_parser())


def _usage_cells(command: tuple[str, ...]) -> list[str]:
    """The usage cell of every row naming the command (`pull --all` and `pull HOST` are two)."""
    if command:
        named = re.compile(r"`(?:rgt-tui )?" + re.escape(" ".join(command)) + r"(?![\w-])")
    else:
        named = re.compile(r"^ `rgt-tui(?= \[|`)")
    cells = []
    for line in DOC.read_text().splitlines():
        if line.startswith("| `rgt-tui"):
            usage = re.split(r"(?<!\\)\|", line)[1]  # `auto\|tmux` is one cell
            if named.search(usage):
                cells.append(usage)
    return cells


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: " ".join(command) or "(tui)")
def test_each_commands_doc_row_names_every_option_its_help_has(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    name = " ".join(("rgt-tui", *command))
    usage = _help(capsys, *command).split("\n\n")[0]
    options = set(re.findall(r"--[a-z][a-z-]*", usage)) - IGNORED
    cells = _usage_cells(command)
    assert cells, f"`{name}` has no row in docs/commands.md: add one"
    missing = sorted(o for o in options if not any(o in cell for cell in cells))
    assert not missing, (
        f"`{name}`: its --help has {', '.join(missing)} but its row does not name them:"
        " add them to docs/commands.md"
    )
