"""Trust says whose key it is (issue 26): when the unknown key is a ProxyJump hop's, the
error, the trust modal and `rgt-tui add` name the jump host, say to compare with the jump
host's own fingerprint (not the box provider's), and trusting it takes the jump host's
name typed. Real loopback asyncssh boxes (one plays the jump host), ssh_config in a HOME
of the test's own, the real App (Pilot) and the real console entry point."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
from support.cli import Terminal, arun
from textual.app import App
from textual.widgets import Button, Input, Static

from rgt_tui.demo.loopback import LOOPBACK_HOST, LoopbackFleet
from rgt_tui.domain.errors import HostKeyError
from rgt_tui.screens.host_key import HostKeyScreen
from rgt_tui.transport.known_hosts import trust_host_key
from rgt_tui.transport.ssh import SshTransport

NO_COLOR = {"NO_COLOR": "1"}
ALIAS = "viajump"  # the box, reached through the jump host (ssh_config's ProxyJump)


@pytest.fixture
async def via_jump(make_loopback_fleet, home: Path) -> tuple[LoopbackFleet, Path]:  # type: ignore[no-untyped-def]
    """(fleet, known_hosts): box1 plays the jump host to box2; known_hosts holds every
    box's key but the jump host's."""
    fleet = await make_loopback_fleet(2)
    jump, box = fleet.boxes
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, exist_ok=True)
    (ssh / "config").write_text(
        f"Host {ALIAS}\n"
        f"    HostName {LOOPBACK_HOST}\n"
        f"    Port {box.port}\n"
        f"    ProxyJump {fleet.username}@{LOOPBACK_HOST}:{jump.port}\n"
    )
    known = ssh / "known_hosts"
    known.write_text(box.known_hosts_line + "\n")
    return fleet, known


async def _refused(fleet: LoopbackFleet, known: Path) -> HostKeyError:
    t = SshTransport(
        "box2",
        address=ALIAS,
        username=getpass.getuser(),
        identity_file=fleet.client_key,
        known_hosts=known,
    )
    with pytest.raises(HostKeyError) as err:
        await t.connect()
    await t.close()
    return err.value


async def test_the_error_names_the_jump_host_and_its_own_fingerprint(via_jump) -> None:
    fleet, known = via_jump
    jump = fleet.boxes[0]
    err = await _refused(fleet, known)
    fp = jump.host_key.get_fingerprint("sha256")
    assert (err.kind, err.host, err.jump_host, err.key_owner) == (
        "unknown", "box2", LOOPBACK_HOST, LOOPBACK_HOST,
    )  # fmt: skip
    assert err.presented.endswith(fp)
    assert err.message.startswith(f"jump host {LOOPBACK_HOST} (the ProxyJump to box2): ")
    assert f"the jump host {LOOPBACK_HOST}'s own fingerprint" in err.fix
    assert "not the provider's fingerprint for box2" in err.fix
    assert err.trust_line == jump.known_hosts_line  # the jump host's line, by its own name


class KeyApp(App[None]):
    """Just the trust modal, and what it dismissed with."""

    def __init__(self, error: HostKeyError) -> None:
        super().__init__()
        self.error = error
        self.answers: list[bool | None] = []

    def on_mount(self) -> None:
        self.push_screen(HostKeyScreen(self.error), self.answers.append)


def _body(app: App[None]) -> str:
    return str(app.screen.query_one("#key-body", Static).render())


async def test_the_modal_names_the_jump_host_and_trusts_only_its_name_typed(via_jump) -> None:
    fleet, known = via_jump
    err = await _refused(fleet, known)
    app = KeyApp(err)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.pause()
        body = _body(app)
        assert f"trust the JUMP HOST's key? {LOOPBACK_HOST}" in body
        assert f"jump host {LOOPBACK_HOST}" in body and "reaches" in body and "box2" in body
        assert "not the provider's fingerprint for box2" in body
        trust = app.screen.query_one("#key-trust", Button)
        name = app.screen.query_one("#key-name", Input)
        assert trust.disabled and app.screen.focused is name
        for wrong in ("box2", "y", LOOPBACK_HOST[:-1]):  # Enter on a wrong name does nothing
            name.value = wrong
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, HostKeyScreen) and trust.disabled
        name.value = ""
        await pilot.press(*LOOPBACK_HOST)
        await pilot.pause()
        assert not trust.disabled
        await pilot.press("enter")
        await pilot.pause()
        assert app.answers == [True]


async def test_the_box_own_key_keeps_its_one_click_prompt(via_jump, tmp_path: Path) -> None:
    fleet, known = via_jump
    jump_err = await _refused(fleet, known)
    trust_host_key(jump_err)  # the jump host's key is trusted: now the box's own is asked
    known.write_text(known.read_text().replace(fleet.boxes[1].known_hosts_line + "\n", ""))
    box = fleet.boxes[1]
    t = SshTransport(
        "box2",
        address=LOOPBACK_HOST,
        port=box.port,
        username=getpass.getuser(),
        identity_file=fleet.client_key,
        known_hosts=known,
    )
    with pytest.raises(HostKeyError) as raised:
        await t.connect()
    err = raised.value
    assert err.jump_host is None and err.key_owner == "box2"
    app = KeyApp(err)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.pause()
        assert "trust this key? box2" in _body(app)
        assert not app.screen.query(Input)
        trust = app.screen.query_one("#key-trust", Button)
        assert not trust.disabled
        trust.press()
        await pilot.pause()
        assert app.answers == [True]


async def test_add_without_a_terminal_refuses_a_jump_hosts_key_naming_it(
    via_jump, tmp_path
) -> None:
    fleet, known = via_jump
    jump = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    before = known.read_text()
    fp = jump.host_key.get_fingerprint("sha256")
    for extra in ((), ("--trust-key", fp)):
        out = await arun(
            "add", f"{fleet.username}@{ALIAS}", "--name", "b2", "--hosts", hosts, *extra
        )
        assert out.returncode == 2, out.stdout + out.stderr
        assert f"unknown host key of the JUMP HOST {LOOPBACK_HOST}" in out.stdout
        assert fp in out.stdout and "nothing written" in out.stdout
        assert f"the jump host {LOOPBACK_HOST}'s own fingerprint" in out.stderr
    assert known.read_text() == before and not hosts.exists()


async def test_add_at_a_terminal_trusts_a_jump_hosts_key_only_by_its_name(
    via_jump, tmp_path
) -> None:
    fleet, known = via_jump
    hosts = tmp_path / "hosts.toml"
    before = known.read_text()
    prompt = f"Type the jump host's name ({LOOPBACK_HOST}) to trust its key"
    args = ("add", f"{fleet.username}@{ALIAS}", "--name", "b2", "--hosts", str(hosts))

    refused = Terminal(*args, cwd=tmp_path, env=NO_COLOR, output_on_terminal=True)
    await refused.expect("[generic-ssh]: ")
    refused.type("")
    await refused.expect("0: free): ")
    refused.type("")
    await refused.expect(prompt)
    assert "not with the provider's fingerprint for the box" in refused.out.decode()
    refused.type("y")  # a yes is not the name
    code, out, _ = await refused.finish()
    assert code == 1 and "not trusted; nothing written" in out, out
    assert known.read_text() == before

    typed = Terminal(*args, cwd=tmp_path, env=NO_COLOR, output_on_terminal=True)
    await typed.expect("[generic-ssh]: ")
    typed.type("")
    await typed.expect("0: free): ")
    typed.type("")
    await typed.expect(prompt)
    typed.type(LOOPBACK_HOST)
    await typed.expect(f"trusted the jump host {LOOPBACK_HOST}'s key")
    # Then the box itself is checked again, through the hop (which forwards nothing
    # here, so it cannot be reached): declining to add it anyway writes no host.
    await typed.expect("[y/N] ")
    typed.type("n")
    code, out, _ = await typed.finish()
    assert code == 1, out
    assert known.read_text() == before + fleet.boxes[0].known_hosts_line + "\n"
    assert not hosts.exists()


async def test_the_add_screens_add_anyway_adds_a_box_behind_an_unknown_jump_host(
    via_jump, tmp_path: Path
) -> None:
    """h604 #2: the `+` screen said "Enter: add the box anyway" for a box behind a jump host
    whose key is unknown, and its Add anyway did nothing. It adds the block (K on the
    pane trusts the jump host's key by its typed name), with no fingerprint noted: the one
    shown was the jump host's, not the box's. Nothing is trusted."""
    from support.pilot import click, wait_for

    from rgt_tui.screens.add_host import AddHostScreen

    fleet, known = via_jump
    jump = fleet.boxes[0]
    before = known.read_text()
    hosts = tmp_path / "hosts.toml"

    class AddApp(App[None]):
        def on_mount(self) -> None:
            self.push_screen(AddHostScreen(hosts))

    app = AddApp()
    async with app.run_test(size=(100, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        screen.query_one("#add-target", Input).value = f"ssh -i {fleet.client_key} {ALIAS}"
        screen.query_one("#add-name", Input).value = "behind"
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, 20, pilot=pilot)
        assert screen.check is not None and screen.check.error is not None
        assert screen.check.error.jump_host == LOOPBACK_HOST
        add = screen.query_one("#add-add", Button)
        assert str(add.label).strip("▶◀ ") == "Add anyway" and not add.disabled
        await click(pilot, add)
        await wait_for(lambda: hosts.exists() and "behind" in hosts.read_text(), 20, pilot=pilot)
    text = hosts.read_text()
    assert ALIAS in text, text
    assert jump.host_key.get_fingerprint("sha256") not in text  # the jump host's: not noted
    assert known.read_text() == before  # nothing trusted
