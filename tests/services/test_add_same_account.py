"""`add` of an account the fleet file already logs in to (a box's own SSH command pasted
again under a new name): said before anything is written, naming the other entry, by
the rule a launch refuses with (``domain.shared_account``). The command line asks (the
default: no; without a terminal, ``--same-account`` says yes); the add screen says so in
the dialog and still adds: two entries of one account are fine for status, not queues.

Real components: loopback asyncssh boxes, the console entry point (under a
pseudo-terminal where it asks), a HOME of the test's own, the add screen under the Pilot.
"""

from __future__ import annotations

import os
from pathlib import Path

from support.cli import Terminal, arun
from support.pilot import click
from support.waiting import wait_for
from textual.app import App
from textual.widgets import Button, Input

from rgt_tui.demo.loopback import LOOPBACK_HOST, LoopbackFleet
from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.services.fleet.file import load_fleet

NO_COLOR = {"NO_COLOR": "1"}


def own_command(fleet: LoopbackFleet) -> str:
    """box1's own SSH command, as its provider shows it."""
    return f"ssh -p {fleet.boxes[0].port} -i {fleet.client_key} {fleet.username}@{LOOPBACK_HOST}"


async def test_cli_add_of_an_account_in_the_fleet_asks_first_and_no_is_the_default(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(1)
    hosts = fleet.hosts_file
    before = hosts.read_text()
    known = home / ".ssh" / "known_hosts"
    said_box1 = f"box1 ({hosts}:4) already logs in to {fleet.username}@{LOOPBACK_HOST}:"

    # No terminal: no one to confirm; refused before any connection, naming the flag.
    unasked = await arun("add", own_command(fleet), "--name", "again", "--hosts", str(hosts))
    assert unasked.returncode == 2, unasked.stderr
    said = " ".join(unasked.stderr.split())
    assert said_box1 in said and "one account holds one queue" in said, said
    assert "--same-account" in said
    assert hosts.read_text() == before and not known.exists()

    # At a terminal: asked right after the paste; Enter (no) writes nothing.
    asked = Terminal("add", "--hosts", hosts, cwd=tmp_path, env=NO_COLOR, output_on_terminal=True)
    await asked.expect("SSH command (or user@host:port): ")
    asked.type(own_command(fleet))
    await asked.expect("Add another entry for this account anyway? [y/N] ")
    assert said_box1 in " ".join(asked.out.decode().split())
    asked.type("")
    code, out, _ = await asked.finish()
    assert code == 1, out
    assert "nothing written" in out and "Name [" not in out
    assert hosts.read_text() == before and not known.exists()

    # The command pasted over two lines, the first ended by a backslash, as a provider's
    # page wraps it: one answer (h555 #1: the first line was refused, the second read as
    # a new paste).
    first, last = own_command(fleet).rsplit(" ", 1)
    pasted = Terminal("add", "--hosts", hosts, cwd=tmp_path, env=NO_COLOR, output_on_terminal=True)
    await pasted.expect("SSH command (or user@host:port): ")
    os.write(pasted.master, f"{first} \\\n  {last}\n".encode())  # both lines at once
    await pasted.expect("Add another entry for this account anyway? [y/N] ")
    assert "cannot read the pasted ssh command" not in pasted.out.decode()
    pasted.type("")
    code, out, _ = await pasted.finish()
    assert code == 1 and "nothing written" in out, out

    # --same-account says yes: added, the warning still printed.
    fp = fleet.boxes[0].host_key.get_fingerprint("sha256")
    done = await arun(
        "add", own_command(fleet), "--name", "again", "--hosts", str(hosts), "--same-account",
        "--trust-key", fp, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert said_box1 in " ".join(done.stdout.split())
    assert [h.name for h in load_fleet(hosts).hosts] == ["box1", "again"]
    # Run elsewhere, the next command needs the file named; run beside it, it does not
    # (s39 new user #7: `--hosts` was printed in the file's own folder too).
    assert hosts.parent != tmp_path
    assert f"see it: rgt-tui status again --hosts {hosts}  (or open rgt-tui)" in done.stdout
    beside = await arun(
        "add", own_command(fleet), "--name", "third", "--hosts", str(hosts), "--same-account",
        "--trust-key", fp, cwd=hosts.parent,
    )  # fmt: skip
    assert beside.returncode == 0, beside.stderr
    assert "see it: rgt-tui status third  (or open rgt-tui)" in beside.stdout, beside.stdout


async def test_cli_add_of_an_ssh_config_alias_for_an_account_in_the_fleet_is_seen(
    make_loopback_fleet, home, tmp_path
):
    """A new user's hour (s39 #3): ``ssh boxalias`` (an ssh_config alias for box1's
    address, port and user) was added with exit 0, unwarned, and its launch refused on
    the box after a whole preflight. ``add`` resolves both through ssh_config now."""
    fleet = await make_loopback_fleet(1)
    hosts = fleet.hosts_file
    before = hosts.read_text()
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "config").write_text(
        f"Host boxalias\n  HostName {LOOPBACK_HOST}\n  Port {fleet.boxes[0].port}\n"
        f"  User {fleet.username}\n  IdentityFile {fleet.client_key}\n"
    )
    unasked = await arun("add", "ssh boxalias", "--name", "again", "--hosts", str(hosts))
    assert unasked.returncode == 2, unasked.stderr
    said = " ".join(unasked.stderr.split())
    assert f"box1 ({hosts}:4) already logs in to boxalias" in said, said
    assert "--same-account" in said
    assert hosts.read_text() == before
    # Another port on the same address is another account: added without a word of it.
    (home / ".ssh" / "config").write_text(
        f"Host boxalias\n  HostName {LOOPBACK_HOST}\n  Port 1\n  User {fleet.username}\n"
    )
    other = await arun("add", "ssh boxalias", "--name", "again", "--hosts", str(hosts))
    assert "already logs in" not in other.stdout + other.stderr, other.stderr
    # The same address and port behind a jump host is another site's machine.
    (home / ".ssh" / "config").write_text(
        f"Host boxalias\n  HostName {LOOPBACK_HOST}\n  Port {fleet.boxes[0].port}\n"
        f"  User {fleet.username}\n  ProxyJump nobody@bastion.invalid\n"
    )
    jumped = await arun("add", "ssh boxalias", "--name", "again", "--hosts", str(hosts))
    assert "already logs in" not in jumped.stdout + jumped.stderr, jumped.stderr
    assert "checking the host key of boxalias" in other.stdout  # went on to the box


class AddApp(App[None]):
    """Just the add screen, and what it dismissed with."""

    def __init__(self, fleet_file: Path) -> None:
        super().__init__()
        self.fleet_file = fleet_file
        self.results: list[object] = []

    def on_mount(self) -> None:
        self.push_screen(AddHostScreen(self.fleet_file), self.results.append)


async def test_add_screen_names_the_entry_of_the_same_account_and_still_adds(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(1)
    hosts = fleet.hosts_file
    app = AddApp(hosts)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        screen.query_one("#add-target", Input).value = own_command(fleet)
        screen.query_one("#add-name", Input).value = "tuibox"
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, what="the key check", pilot=pilot)
        status = screen.query_one("#add-status")
        said = " ".join(str(status.render()).split())
        assert f"box1 ({hosts}:4) already logs in to" in said, said
        assert "one account holds one queue" in said and "Add still adds it" in said

        add = screen.query_one("#add-add", Button)
        if screen.check.status == "unknown":  # trusted as usual, by its button
            await click(pilot, screen.query_one("#add-trust", Button))
        await wait_for(lambda: not add.disabled, what="the key trusted", pilot=pilot)
        assert "box1" in str(status.render())  # still said beside the trusted key
        # Enter does not add it: Cancel has the focus, Add is one Tab away (s22a #6).
        cancel = screen.query_one("#add-cancel", Button)
        await wait_for(lambda: app.focused is cancel, what="Cancel focused", pilot=pilot)
        await pilot.press("shift+tab")
        await wait_for(lambda: app.focused is add, what="Add one key away", pilot=pilot)
        await pilot.press("enter")
        await wait_for(lambda: app.results, what="the screen dismissed", pilot=pilot)
    assert [h.name for h in load_fleet(hosts).hosts] == ["box1", "tuibox"]
