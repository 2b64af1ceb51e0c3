"""`add` never writes a pull of the whole home (ux-a #2): `~` typed at the pull prompt
(or given with --pull, or a durable_dir of `~` taken as the default) is refused with the
fix before anything is written, as the fleet file refuses it (config_hosts.is_home);
the add screen's fields are checked by the same reader.

Real components: the console entry point without a terminal, and under a
pseudo-terminal where a refused answer is asked again.
"""

from __future__ import annotations

import pytest
from support.cli import Terminal, rgt

from rgt_tui.services.fleet.add_keys import read_launch_keys
from rgt_tui.services.fleet.append import AddRefused
from rgt_tui.services.fleet.file import load_fleet

FLEET = '[[hosts]]\nname = "old-box"\nssh = "root@203.0.113.7:2222"\npull = ["/w/runs"]\n'


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--pull", "~"), "pull folder ~ is the whole home on the box"),
        (("--pull", "/workspace/runs, $HOME/"), "pull folder $HOME/ is the whole home"),
        (("--durable-dir", "~"), "pull folder ~ (the default: durable_dir) is the whole home"),
    ],
)
def test_add_refuses_a_pull_of_the_whole_home_and_writes_nothing(tmp_path, home, flags, said):
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(FLEET)
    done = rgt("add", "local", "--name", "x", *flags, "--hosts", str(hosts), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr and "e.g. ~/runs" in done.stderr
    assert hosts.read_text() == FLEET and not (tmp_path / "queues").exists()


def test_the_add_screen_fields_refuse_the_whole_home(tmp_path):
    fields = {"workdir": "/w", "durable_dir": "/w/runs", "pull": "/w/runs, ~/"}
    with pytest.raises(AddRefused) as refused:
        read_launch_keys(fields, tmp_path / "hosts.toml")
    assert refused.value.field == "pull" and "~/ is the whole home" in refused.value.message


async def test_add_at_a_terminal_asks_again_after_a_whole_home(tmp_path, home):
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(FLEET)
    term = Terminal("add", "local", "--name", "h", "--hosts", hosts, cwd=tmp_path,
                    env={"NO_COLOR": "1"}, output_on_terminal=True)  # fmt: skip
    prompts = ("[generic-ssh]: ", "0: free): ", "[~/code]: ", "[none]: ", "[queues/h.txt]: ",
               "--out {out}]: ", "(results) [~/runs]: ")  # fmt: skip
    for prompt in prompts:
        await term.expect(prompt)
        term.type("")
    await term.expect("comma-separated [~/runs]: ")
    term.type("~")
    await term.expect_asked("is the whole home on the box")  # asked again, with the fix
    term.type("~/runs")
    await term.expect("create it, empty, with how to write cells? [Y/n] ")
    term.type("n")
    status, out, _ = await term.finish()
    assert status == 0, out
    host = load_fleet(hosts).host("h")
    assert host.pull == ("~/runs",) and host.pull_refused is None


async def test_a_durable_dir_of_the_whole_home_offers_no_pull_default_it_would_refuse(
    tmp_path, home
):
    """The pull prompt offered `[~]` after a durable_dir of `~`, then refused that very
    default: it now offers an example, and Enter still says why and asks again."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(FLEET)
    term = Terminal("add", "local", "--name", "h", "--hosts", hosts, cwd=tmp_path,
                    env={"NO_COLOR": "1"}, output_on_terminal=True)  # fmt: skip
    prompts = ("[generic-ssh]: ", "0: free): ", "[~/code]: ", "[none]: ", "[queues/h.txt]: ",
               "--out {out}]: ")  # fmt: skip
    for prompt in prompts:
        await term.expect(prompt)
        term.type("")
    await term.expect("(results) [~/runs]: ")
    term.type("~")
    await term.expect("comma-separated [e.g. ~/runs; the durable dir is the whole home]: ")
    term.type("")
    await term.expect_asked("is the whole home on the box")  # Enter: why, and asked again
    term.type("~/runs")
    await term.expect("create it, empty, with how to write cells? [Y/n] ")
    term.type("n")
    status, out, _ = await term.finish()
    assert status == 0, out
    assert "[~]" not in out
    host = load_fleet(hosts).host("h")
    assert host.durable_dir == "~" and host.pull == ("~/runs",)
