"""The TUI and the demo started without a terminal (backgrounded with `</dev/null`, in a
script, under cron) say so and start nothing: Textual drew escape codes into the file,
spun a core, and the demo never reached the cleanup SIGTERM asks for, its boxes and tmux
server outliving a SIGKILL (a user's hour)."""

from __future__ import annotations

from pathlib import Path

from support.cli import Terminal, rgt


def test_the_demo_without_a_terminal_says_so_and_starts_no_box(tmp_path: Path) -> None:
    ran = rgt("demo", env={"TMPDIR": str(tmp_path)}, timeout=60)
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr.startswith("rgt-tui demo: needs a terminal, and stdin and stdout are not")
    assert "run it in a terminal or in tmux" in ran.stderr
    assert ran.stdout == ""  # nothing drawn into the pipe
    assert not list(tmp_path.glob("rgt-demo-*")), "boxes were started"


async def test_the_tui_with_only_its_input_on_a_terminal_names_the_other(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "box1"\nssh = "root@127.0.0.1:1"\n')
    term = Terminal("--hosts", hosts)  # stdin a terminal, stdout a pipe
    code, out, err = await term.finish(timeout=60)
    assert code == 1, out + err
    assert err.startswith("rgt-tui: needs a terminal, and stdout is not one here"), err
    assert out == ""
