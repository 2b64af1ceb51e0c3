"""Hour s25a #5: keys typed before a question is shown answer nothing. A `y⏎` typed on
after `rgt-tui queue stop box1` answered "Stop the queue …? [y/N]" before it was seen; the
same prompt reads teardown's typed host name. A real terminal (a pty), a loopback box
running the real runner."""

from __future__ import annotations

import signal

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


async def test_an_answer_typed_with_arrow_keys_is_asked_again(tmp_path) -> None:
    """h604 #5: Left arrow in `add`'s prompt put ESC [ D into the answer (the error then
    suggested '~/\\x1b[D\\x1b[Dabc'); dropping the keys would write another value than
    the one meant ('box1' + Left + 'x' is not 'box1x': review h605 #7). Asked again,
    saying why. A real terminal (a pty), `add` with no fleet file."""
    from rgt_tui.cli.prompt import ARROWS_SAID

    adding = Terminal("add", "root@198.51.100.7:2200", "--hosts", str(tmp_path / "hosts.toml"))
    await adding.expect("Name [")
    adding.type("box1\x1b[Dx")
    await adding.expect_asked(ARROWS_SAID.strip())
    assert adding.out.decode().rstrip().endswith("]:"), adding.out
    adding.type("gpu1")
    await adding.expect("Profile (")
    adding.proc.send_signal(signal.SIGINT)  # Ctrl-C: nothing is written
    code, out, _ = await adding.finish()
    assert code == 130 and "box1x" not in out, out
    assert not (tmp_path / "hosts.toml").exists()


def test_at_the_end_of_input_the_keys_escapes_are_no_part_of_the_answer() -> None:
    """Piped input has no asking again: the escape sequences are dropped, not kept."""
    from rgt_tui.cli.prompt import _typed

    assert _typed(b"~/ab\x1b[D\x1b[Dc") == "~/abc"
    assert _typed(b"box\x1bOH1") == "box1"  # Home, as some terminals send it
    assert _typed(b"\x1b") == "" and _typed(b" a100-1 ") == "a100-1"
    assert _typed(b"\x1b[1;5Cx") == "x"  # Ctrl+Right
