"""Ctrl-C during `rgt-tui add`: every question comes before the first write, so a Ctrl-C
at any of them leaves the fleet file, the queue file and known_hosts as they were, and
says so on a line of its own (130, as a shell reports a command it stopped).

Real components: the console entry point under a pseudo-terminal, a loopback asyncssh
box whose unknown host key is accepted at the question, a HOME of the test's own.
"""

from __future__ import annotations

import re
import signal

from support.cli import Terminal

NO_COLOR = {"NO_COLOR": "1"}
FLEET = '[[hosts]]\nname = "old-box"\nssh = "root@203.0.113.7:2222"\n'
CANCELLED = "rgt-tui add: cancelled: nothing was written"


def plain(out: str) -> str:
    """What the terminal shows, without the bold of the command's name."""
    return re.sub(r"\x1b\[[0-9;]*m", "", out)


async def test_ctrl_c_at_an_early_question_says_nothing_was_written(tmp_path, home):
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(FLEET)
    term = Terminal("add", "local", "--name", "h", "--hosts", hosts, cwd=tmp_path,
                    env=NO_COLOR, output_on_terminal=True)  # fmt: skip
    for prompt in ("[generic-ssh]: ", "0: free): ", "[~/code]: "):
        await term.expect(prompt)
        term.type("")
    await term.expect("Local code tree to sync (none: no sync) [none]: ")
    term.proc.send_signal(signal.SIGINT)  # what Ctrl-C at the terminal sends
    code, out, _ = await term.finish()
    out = plain(out)
    assert code == 130, out
    # On a line of its own: not after the prompt, where the terminal shows ^C.
    assert re.search(r"\[none\]: \r?\n(\r?\n)?" + re.escape(CANCELLED), out), out
    assert hosts.read_text() == FLEET and not (tmp_path / "queues").exists()


async def test_ctrl_c_at_the_queue_question_writes_neither_the_host_nor_its_key(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(FLEET)
    ssh = f"ssh -p {box.port} -i {fleet.client_key} {fleet.username}@127.0.0.1"
    term = Terminal("add", ssh, "--name", "b1", "--hosts", hosts, cwd=tmp_path, env=NO_COLOR,
                    output_on_terminal=True)  # fmt: skip
    for prompt in ("[generic-ssh]: ", "0: free): "):
        await term.expect(prompt)
        term.type("")
    await term.expect("Trust this key? Type y or yes to trust; anything else cancels [N]: ")
    term.type("y")
    for prompt in ("[~/code]: ", "[none]: ", "[queues/b1.txt]: ", "--out {out}]: ",
                   "(results) [~/runs]: ", "comma-separated [~/runs]: "):  # fmt: skip
        await term.expect(prompt)
        term.type("")
    await term.expect("create it, empty, with how to write cells? [Y/n] ")  # the last question
    term.proc.send_signal(signal.SIGINT)
    code, out, _ = await term.finish()
    out = plain(out)
    assert code == 130, out
    assert re.search(r"\[Y/n\] \r?\n(\r?\n)?" + re.escape(CANCELLED), out), out
    assert hosts.read_text() == FLEET  # the box is not added ...
    assert not (home / ".ssh" / "known_hosts").exists()  # ... nor its key trusted
    assert not (tmp_path / "queues").exists()
    assert "added b1" not in out and "trusted ssh-" not in out
