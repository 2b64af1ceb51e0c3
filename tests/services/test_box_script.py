"""The one box-script call: the command line it builds runs the script whole with every
argument intact, and the answer's refusal is read once, printable."""

from __future__ import annotations

import subprocess

from rgt_tui.services.box_script import ShellWord, box_command, box_path, box_refusal
from rgt_tui.transport import CommandResult

ECHO = 'printf "%s\\n" "$0" "$@"'


def _run(command: str, home: str = "/home/box") -> list[str]:
    out = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env={"HOME": home}, check=True
    ).stdout
    return out.split("\n")[:-1]


def test_every_argument_reaches_the_script_as_one_word_and_name_is_dollar_zero() -> None:
    hostile = ["a b", "it's", "$(touch /tmp/x)", "`id`", "*", "", "-n", 7]
    assert _run(box_command(ECHO, "queue_ctl", "verb", *hostile)) == [
        "queue_ctl",
        "verb",
        *map(str, hostile),
    ]


def test_a_shell_word_is_passed_as_written_so_a_tilde_path_expands_on_the_box() -> None:
    command = box_command(
        ECHO, "preflight", box_path("~/runs/it's"), box_path("~"), ShellWord("1 2")
    )
    assert _run(command) == ["preflight", "/home/box/runs/it's", "/home/box", "1", "2"]
    assert box_path("/abs path") == "'/abs path'"


def test_a_refusal_line_is_read_with_its_code_and_detail_printable() -> None:
    result = CommandResult(0, "progress\nrefused\trunning\tcell \x1b[2J a\x85b\n", "")
    refused = box_refusal(result, "the box's queue control")
    assert refused is not None
    assert (refused.code, refused.message) == ("running", "cell \\x1b[2J a\\x85b")


def test_a_detail_is_cut_to_the_callers_limit() -> None:
    result = CommandResult(1, "refused\tbig\t" + "x" * 500 + "\n", "")
    assert len(box_refusal(result, "w").message) == 300  # type: ignore[union-attr]
    assert len(box_refusal(result, "w", limit=None).message) == 500  # type: ignore[union-attr]


def test_a_failure_names_what_ran_and_its_last_stderr_line() -> None:
    result = CommandResult(2, "", "first\nlast \x07line\n")
    refused = box_refusal(result, "the disk audit")
    assert refused is not None
    assert refused.code == ""
    assert refused.message == "the disk audit exited with 2: last \\x07line"
    assert box_refusal(CommandResult(0, "ok\n", ""), "w") is None


def test_an_answer_cut_short_is_never_trusted_even_with_exit_zero() -> None:
    result = CommandResult(0, "refused\tx\ty\n", "", truncated=("stdout",), max_output=1024)
    refused = box_refusal(result, "the script", answer="the VRAM evidence")
    assert refused is not None and "(the VRAM evidence)" in refused.message
