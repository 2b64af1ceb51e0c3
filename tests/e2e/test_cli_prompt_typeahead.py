"""Hour s25a #5: keys typed before a question is shown answer nothing. A `y⏎` typed on
after `rgt-tui queue stop box1` answered "Stop the queue …? [y/N]" before it was seen; the
same prompt reads teardown's typed host name. A real terminal (a pty), a loopback box
running the real runner."""

from __future__ import annotations

import pytest
from support.cli import Terminal
from support.queues import SCRIPT_RUN, launched_holding


@pytest.mark.timeout(300)
async def test_an_answer_typed_before_the_question_is_dropped(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    await launched_holding(qf)

    # Typed at once, long before the command has connected and asked.
    stop = Terminal("queue", "stop", "box1", "--hosts", qf.loopback.hosts_file)
    stop.type("y")
    await stop.expect("[y/N]")
    stop.type("")  # Enter alone, seen the question: no
    code, out, err = await stop.finish()
    assert code == 1 and "nothing done" in out, out + err
    assert "stop " not in (qf.qdir() / "runner.state").read_text()
    (qf.root() / "go").touch()


def test_the_keys_a_terminal_passes_on_as_text_are_no_part_of_the_answer() -> None:
    """h604 #5: Left arrow in `add`'s prompt put ESC [ D into the answer, and the error
    then suggested '~/\\x1b[D\\x1b[Dabc'. The line-mode terminal still erases (Backspace,
    Ctrl-U) before the line is read."""
    from rgt_tui.cli.prompt import _typed

    assert _typed(b"~/ab\x1b[D\x1b[Dc") == "~/abc"
    assert _typed(b"box\x1bOH1") == "box1"  # Home, as some terminals send it
    assert _typed(b"\x1b") == "" and _typed(b" a100-1 ") == "a100-1"
    assert _typed(b"\x1b[1;5Cx") == "x"  # Ctrl+Right
