"""Adding a box (issue 22): a pasted SSH command, the host key shown and trusted only on
confirmation, a [[hosts]] block appended without touching a byte of the file before it.

Real components: loopback asyncssh boxes, a HOME of the test's own (so ~/.ssh/known_hosts
starts empty), the real console entry point (under a pseudo-terminal where it asks), the
shipped, heavily commented hosts.example.toml, and the add screen driven by the Pilot.

One flow (paste → key → block), tested end to end in one file.

Over 450 lines on purpose: `add` is one conversation (paste, host key, questions,
write), each test a turn of it over the same real sshd fixture.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from support import ROOT
from support.cli import Terminal, arun, rgt
from support.pilot import click
from support.waiting import wait_for
from textual.app import App
from textual.widgets import Button, Input, Select

from rgt_tui.demo.loopback import LOOPBACK_HOST, LoopbackBox, LoopbackFleet
from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.services.fleet.add_host import (
    AddRefused,
    NewHost,
    add_to_fleet,
    check_host_key,
    fingerprint_matches,
    fleet_file_for_add,
    guess_profile,
    read_cost,
    read_fleet_file,
    read_target,
    suggest_name,
    trust_key,
)
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import open_transport

NO_COLOR = {"NO_COLOR": "1"}  # what the command line prints at a terminal, without colour
# A fleet file written by hand: comments everywhere, odd spacing, a [fleet] table, an
# active host, a trailing comment — all of it must survive byte for byte.
HAND_WRITTEN = (
    "# my fleet   (hand-written: keep this spacing)\n"
    "[fleet]\n"
    "poll_seconds = 3     # slower: the link is far\n"
    "\n"
    "[[hosts]]\n"
    'name = "old-box"   # rented last week\n'
    'ssh  = "root@203.0.113.7:2222"\n'
    'pull = ["/workspace/runs"]\n'
    '# profile = "vastai"   (commented out on purpose)\n'
)


def pasted(fleet: LoopbackFleet, box: LoopbackBox) -> str:
    """The command a provider's page would show for the box, forwarding and all."""
    return (
        f"ssh -p {box.port} -i {fleet.client_key} {fleet.username}@{LOOPBACK_HOST} "
        "-L 8080:localhost:8080"
    )


def new_host(fleet: LoopbackFleet, box: LoopbackBox, name: str = "pasted", **kw) -> NewHost:
    read = read_target(pasted(fleet, box))
    return NewHost(
        name=name, target=read.target, profile=kw.pop("profile", "vastai"),
        cost_per_hour=kw.pop("cost_per_hour", 1.29), identity_file=read.identity_file,
        pasted=read.text, **kw,
    )  # fmt: skip


def box_fingerprint(box: LoopbackBox) -> str:
    return f"ssh-ed25519 {box.host_key.get_fingerprint('sha256')}"


# -- reading what was pasted ------------------------------------------------------------------


def test_pasted_commands_give_target_key_name_and_profile():
    vast = read_target("  ssh -p 22034 root@ssh4.vast.ai -L 8080:localhost:8080 ")
    assert str(vast.target) == "root@ssh4.vast.ai:22034" and vast.identity_file is None
    assert suggest_name(vast.target) == "vast-22034"
    assert suggest_name(vast.target, ["vast-22034", "vast-22034-2"]) == "vast-22034-3"
    assert guess_profile(vast.target) == "vastai"

    # RunPod's proxied endpoint carries a PTY shell only: refused, with the direct one
    # (h553 #5: added, then every command failed with words about python3 or bash).
    with pytest.raises(AddRefused) as proxied:
        read_target("ssh abc123-64410a@ssh.runpod.io -i ~/.ssh/id_ed25519")
    assert proxied.value.field == "target"
    assert "ssh.runpod.io is RunPod's proxied SSH: it carries an interactive shell only" in (
        proxied.value.message
    )
    assert "SSH over exposed TCP: ssh root@IP -p PORT" in (proxied.value.fix or "")
    runpod = read_target("ssh root@pod7.runpod.io -p 17445 -i ~/.ssh/id_ed25519")
    assert runpod.identity_file == "~/.ssh/id_ed25519"
    assert (guess_profile(runpod.target), suggest_name(runpod.target)) == ("runpod", "runpod-17445")
    plain = read_target("ubuntu@gpu1.lab.example:2200")
    assert (guess_profile(plain.target), suggest_name(plain.target)) == ("generic-ssh", "gpu1-2200")
    ip = read_target("root@213.173.108.10:17445")
    assert suggest_name(ip.target) == "213-173-108-10-17445"
    assert read_target("local").target is None and suggest_name(None) == "local"

    # Shapes OpenSSH takes that were refused (h553 #7): a URL alone, an IPv6 address
    # unbracketed, a command continued over lines with backslashes.
    url = read_target("ssh://root@host.example:2222")
    assert str(url.target) == "root@host.example:2222"
    for pasted in ("ssh root@2001:db8::1 -p 2222", "ssh -p 2222 root@2001:db8::1"):
        assert str(read_target(pasted).target) == "root@[2001:db8::1]:2222", pasted
    assert str(read_target("ssh 2001:db8::1").target) == "[2001:db8::1]"
    lines = read_target("ssh -p 22034 root@ssh4.vast.ai \\\n  -L 8080:localhost:8080")
    assert str(lines.target) == "root@ssh4.vast.ai:22034"

    with pytest.raises(AddRefused) as jump:
        read_target("ssh -J bastion root@10.0.0.5")
    assert jump.value.field == "target" and "write ssh =" not in jump.value.message
    assert "write the Host alias (HostName 10.0.0.5" in jump.value.message  # h581 #1
    with pytest.raises(AddRefused, match="no box given"):
        read_target("   ")

    assert read_cost("$1,29") == 1.29 and read_cost("") is None and read_cost("0") == 0.0
    # As the providers' pages write a price.
    assert read_cost("$1.50/h") == 1.5 and read_cost("0.9 /hr") == 0.9
    for bad in ("-1", "nan", "cheap", "$1.50/day", "1,299"):
        with pytest.raises(AddRefused) as cost:
            read_cost(bad)
        assert cost.value.field == "cost"
    # h604 #6: 1,299 read as 1.299 (a US reader means 1299): refused, both readings said.
    assert "could be 1299 or 1.299 dollars" in cost.value.message
    assert read_cost("1,2") == 1.2 and read_cost("0,75") == 0.75
    fp = "ssh-ed25519 SHA256:abcDEF"
    assert fingerprint_matches(fp, "SHA256:abcDEF") and fingerprint_matches(fp, "abcDEF")
    assert fingerprint_matches(fp, fp) and not fingerprint_matches(fp, "SHA256:abcdef")
    assert not fingerprint_matches(fp, "")


def test_the_fleet_file_to_add_to(tmp_path: Path):
    # None anywhere: ./hosts.toml, to be created; a --hosts that does not exist yet: that one.
    assert fleet_file_for_add(None, {}, tmp_path) == tmp_path / "hosts.toml"
    assert fleet_file_for_add("new.toml", {}, tmp_path) == tmp_path / "new.toml"
    (tmp_path / "env.toml").write_text("")
    assert fleet_file_for_add(None, {"RGT_HOSTS": "env.toml"}, tmp_path) == tmp_path / "env.toml"
    assert fleet_file_for_add("x.toml", {"RGT_HOSTS": "env.toml"}, tmp_path) == tmp_path / "x.toml"


# -- the add flow over a real box -------------------------------------------------------------


async def test_add_shows_the_key_trusts_on_confirmation_and_appends_byte_for_byte(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    shutil.copy(ROOT / "hosts.example.toml", hosts)  # ~200 lines of comments
    before = hosts.read_bytes()
    new = new_host(fleet, box)

    check = await check_host_key(new)
    assert check.status == "unknown" and check.fingerprint == box_fingerprint(box)
    assert check.known_hosts_file == home / ".ssh" / "known_hosts"
    assert check.trust_line == box.known_hosts_line
    # Checking is not trusting: nothing written anywhere.
    assert not (home / ".ssh" / "known_hosts").exists() and hosts.read_bytes() == before

    assert trust_key(check) == home / ".ssh" / "known_hosts"
    assert (home / ".ssh" / "known_hosts").read_text() == box.known_hosts_line + "\n"
    again = await check_host_key(new)
    assert again.status == "trusted" and again.fingerprint == box_fingerprint(box).split()[1]
    with pytest.raises(ValueError):
        trust_key(again)  # only an unknown key is trusted

    host = add_to_fleet(new, hosts)
    after = hosts.read_bytes()
    assert after.startswith(before), "an original byte changed"
    added = after[len(before) :].decode()
    assert added.startswith("\n# pasted: added by rgt-tui add on ")
    assert f"from: {pasted(fleet, box)}" in added
    assert f'ssh = "{fleet.username}@{LOOPBACK_HOST}:{box.port}"' in added
    assert f'identity_file = "{fleet.client_key}"' in added and "cost_per_hour = 1.29" in added

    loaded = load_fleet(hosts)
    assert [h.name for h in loaded.hosts] == ["pasted"] and loaded.hosts[0] == host
    assert (host.profile, host.cost_per_hour, host.ssh.port) == ("vastai", 1.29, box.port)
    assert host.line == before.decode().count("\n") + 3  # the [[hosts]] header's line
    # The block works: the added host reaches the box through the transport.
    async with open_transport(host) as transport:
        await transport.connect()
        assert (await transport.run("echo reached")).stdout.strip() == "reached"
    assert fleet.errors == []


async def test_duplicate_name_is_refused_with_its_line_and_the_file_is_unchanged(tmp_path):
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    before, mtime = hosts.read_bytes(), hosts.stat().st_mtime_ns
    taken = NewHost("old-box", read_target("root@198.51.100.1:2200").target, "generic-ssh")
    with pytest.raises(AddRefused) as refused:
        add_to_fleet(taken, hosts)
    assert refused.value.field == "name"
    assert f"'old-box' is already used at {hosts}:6" in refused.value.message
    assert "old-box-2" in (refused.value.fix or "")
    assert hosts.read_bytes() == before and hosts.stat().st_mtime_ns == mtime
    # h604 #9: only by case is the same folder on a disk that ignores case.
    with pytest.raises(AddRefused) as refused:
        add_to_fleet(replace(taken, name="Old-Box"), hosts)
    assert refused.value.field == "name"
    assert f"'Old-Box' differs from 'old-box' (at {hosts}:6) only by case" in (
        refused.value.message
    )
    assert "'Old-Box-2'" in (refused.value.fix or "")
    assert hosts.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hosts.toml"]  # no temp left

    # Another name goes in after the last byte, the comments and spacing untouched.
    host = add_to_fleet(replace(taken, name="new-box"), hosts)
    assert hosts.read_bytes().startswith(before) and host.name == "new-box"
    assert [h.name for h in load_fleet(hosts).hosts] == ["old-box", "new-box"]


def test_what_would_not_load_is_never_written(tmp_path):
    hosts = tmp_path / "hosts.toml"
    broken = HAND_WRITTEN + "cost_per_hr = 1\n"
    hosts.write_text(broken)
    target = read_target("root@198.51.100.1").target
    with pytest.raises(AddRefused, match="cost_per_hr") as refused:
        add_to_fleet(NewHost("b", target, "generic-ssh"), hosts)
    assert "fix these mistakes first" in (refused.value.fix or "")
    assert hosts.read_text() == broken

    inline = 'hosts = [{ name = "a", ssh = "root@a" }]\n'
    hosts.write_text(inline)
    with pytest.raises(AddRefused, match=r"hosts = \[\.\.\.\]"):
        add_to_fleet(NewHost("b", target, "generic-ssh"), hosts)
    assert hosts.read_text() == inline

    # A value the loader refuses (a name that is not a folder name) leaves no file behind.
    hosts.unlink()
    with pytest.raises(AddRefused, match="may only use ASCII letters"):
        add_to_fleet(NewHost("bad name", target, "generic-ssh"), hosts)
    assert list(tmp_path.iterdir()) == []


def test_crlf_no_final_newline_symlinks_and_a_new_file(tmp_path):
    target = read_target("root@198.51.100.1:2201").target
    crlf = tmp_path / "crlf.toml"
    crlf.write_bytes(HAND_WRITTEN.replace("\n", "\r\n").encode())
    before = crlf.read_bytes()
    add_to_fleet(NewHost("b", target, "generic-ssh"), crlf)
    assert crlf.read_bytes().startswith(before) and b"\n" not in crlf.read_bytes().replace(
        b"\r\n", b""
    )

    bare = tmp_path / "bare.toml"
    bare.write_text(HAND_WRITTEN.rstrip("\n"))  # no final newline: the only byte added before
    add_to_fleet(NewHost("b", target, "generic-ssh"), bare)
    assert bare.read_text().startswith(HAND_WRITTEN + "\n# b: added")

    real = tmp_path / "dotfiles" / "fleet.toml"
    real.parent.mkdir()
    real.write_text(HAND_WRITTEN)
    real.chmod(0o640)
    link = tmp_path / "linked.toml"
    link.symlink_to(real)
    add_to_fleet(NewHost("b", target, "generic-ssh"), link)
    assert link.is_symlink() and "b" in [h.name for h in load_fleet(real).hosts]
    assert real.stat().st_mode & 0o777 == 0o640

    fresh = tmp_path / "fresh" / "hosts.toml"
    fresh.parent.mkdir()
    host = add_to_fleet(NewHost("b", target, "runpod", 0.44), fresh)
    assert fresh.read_text().startswith("## rgt-tui fleet file")
    assert (host.profile, host.cost_per_hour) == ("runpod", 0.44)
    with pytest.raises(AddRefused, match="folder does not exist"):
        read_fleet_file(tmp_path / "nowhere" / "hosts.toml")


async def test_a_box_that_refuses_the_connection_sends_the_fix_to_the_pasted_command(
    make_loopback_fleet, home
):
    # The host is not in the fleet file yet: "(the fleet file's ssh for box1)" sent a
    # user to a line that did not exist (session 29's hour).
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    new = new_host(fleet, box)
    await box.stop()
    check = await check_host_key(new)
    assert check.status == "unreachable" and "connection refused" in check.message
    assert check.fix is not None and "fleet file" not in check.fix, check.fix
    assert check.fix.endswith("(the pasted command)"), check.fix


async def test_a_key_file_missing_sends_the_fix_to_the_pasted_command(
    make_loopback_fleet, home, tmp_path
):
    """h472 #8: "check identity_file in the fleet file" for the pasted -i, before
    anything is written to that file."""
    import dataclasses

    fleet = await make_loopback_fleet(1)
    new = dataclasses.replace(
        new_host(fleet, fleet.boxes[0]), identity_file=str(tmp_path / "nonexistent")
    )
    check = await check_host_key(new)
    said = f"{check.message} {check.fix}"
    assert check.status == "unreachable" and "nonexistent" in said, said
    assert "fleet file" not in said and "the -i or --identity-file given to add" in said, said


async def test_a_changed_key_is_refused_with_the_fix_and_never_trusted(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(2)
    box, other = fleet.boxes
    known = home / ".ssh" / "known_hosts"
    known.parent.mkdir()
    # The name of box1's address carries another box's key: a re-created box, or worse.
    known.write_text(f"[{LOOPBACK_HOST}]:{box.port} {other.known_hosts_line.split(' ', 1)[1]}\n")
    before = known.read_bytes()
    check = await check_host_key(new_host(fleet, box))
    assert check.status == "refused" and check.fingerprint == box_fingerprint(box)
    assert "HOST KEY CHANGED" in check.message and "ssh-keygen -R" in (check.fix or "")
    with pytest.raises(ValueError):
        trust_key(check)

    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    done = await arun(
        "add", pasted(fleet, box), "--name", "b1", "--hosts", str(hosts), cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert "HOST KEY CHANGED" in done.stderr and "ssh-keygen -R" in done.stderr
    assert "nothing written" in done.stdout
    assert hosts.read_text() == HAND_WRITTEN and known.read_bytes() == before


# -- the command line -------------------------------------------------------------------------


def test_no_terminal_and_missing_values_exits_2_naming_the_flags(tmp_path, home):
    done = rgt("add", cwd=tmp_path)
    assert done.returncode == 2
    assert "no one to ask for TARGET and --name" in done.stderr and "--name NAME" in done.stderr
    named = rgt("add", "ssh -p 22034 root@ssh4.vast.ai", cwd=tmp_path)
    assert named.returncode == 2 and "for --name" in named.stderr
    bad = rgt("add", "root@@x:abc", "--name", "x", cwd=tmp_path)
    assert bad.returncode == 2 and "'@' is doubled" in bad.stderr
    profile = rgt("add", "root@x", "--name", "x", "--profile", "vast", cwd=tmp_path)
    assert profile.returncode == 2 and "did you mean 'vastai'" in profile.stderr
    assert list(tmp_path.iterdir()) == [home]  # no fleet file created

    # Everything given: this machine needs no key, and ./hosts.toml is created.
    here = rgt("add", "local", "--name", "here", cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    assert "no host key to check" in here.stdout
    assert load_fleet(tmp_path / "hosts.toml").host("here").is_local


async def test_cli_without_a_terminal_trusts_only_the_fingerprint_it_is_given(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    known = home / ".ssh" / "known_hosts"
    args = ("add", pasted(fleet, box), "--name", "b1", "--cost-per-hour", "0.5")

    unasked = await arun(*args, cwd=tmp_path)
    assert unasked.returncode == 2
    assert "no one to confirm the unknown host key" in unasked.stderr
    assert f"--trust-key '{box.host_key.get_fingerprint('sha256')}'" in unasked.stderr
    assert not known.exists() and not (tmp_path / "hosts.toml").exists()

    wrong = await arun(*args, "--trust-key", "SHA256:notthisone", cwd=tmp_path)
    assert wrong.returncode == 1 and "not the SHA256:notthisone" in wrong.stderr
    assert not known.exists() and not (tmp_path / "hosts.toml").exists()

    fp = box.host_key.get_fingerprint("sha256")
    done = await arun(*args, "--trust-key", fp, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # The price as read, on the same line (h604 #6).
    added = f"added b1 ({fleet.username}@{LOOPBACK_HOST}:{box.port}, generic-ssh, $0.5/h)"
    assert added in done.stdout, done.stdout
    assert known.read_text() == box.known_hosts_line + "\n"
    host = load_fleet(tmp_path / "hosts.toml").host("b1")
    assert host.cost_per_hour == 0.5 and host.identity_file == fleet.client_key

    # The same box again: another entry of b1's account is confirmed, its name is not.
    twice = await arun(*args, "--trust-key", fp, "--same-account", cwd=tmp_path)
    assert twice.returncode == 2 and "'b1' is already used at" in twice.stderr
    # Without --same-account the name that cannot be taken is said first, alone: the
    # account question would be asked for nothing.
    again = await arun(*args, "--trust-key", fp, cwd=tmp_path)
    assert again.returncode == 2 and "'b1' is already used at" in again.stderr, again.stderr
    assert "same account" not in again.stderr and "--same-account" not in again.stderr

    # --accept-new: the host opts in (host_key = "accept-new"), and the transport records
    # the first key the box shows, as it would on the host's first connection.
    other = await make_loopback_fleet(1)
    opted = await arun(
        "add", pasted(other, other.boxes[0]), "--name", "b2", "--accept-new", cwd=tmp_path,
    )  # fmt: skip
    assert opted.returncode == 0, opted.stderr
    assert load_fleet(tmp_path / "hosts.toml").host("b2").host_key == "accept-new"
    # It says the key was recorded now, not "already trusted" (s35 docs audit #2).
    assert f"recorded in {known} (host_key = accept-new" in opted.stdout, opted.stdout
    assert "already trusted" not in opted.stdout
    assert other.boxes[0].known_hosts_line in known.read_text().splitlines()


async def test_cli_at_a_terminal_asks_and_an_unconfirmed_key_writes_nothing(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    known = home / ".ssh" / "known_hosts"

    # Enter at the key question (the default) trusts nothing and adds nothing.
    asked = Terminal(
        "add", "--hosts", str(hosts), cwd=tmp_path, env=NO_COLOR, output_on_terminal=True
    )
    await asked.expect("SSH command (or user@host:port): ")
    asked.type(pasted(fleet, box))
    await asked.expect(f"Name [{LOOPBACK_HOST.replace('.', '-')}-{box.port}]: ")
    asked.type("old-box")  # taken: asked again, naming the line
    await asked.expect_asked(f"already used at {hosts}:6")
    asked.type("")  # the default
    await asked.expect("[generic-ssh]: ")
    asked.type("")
    await asked.expect("0: free): ")
    asked.type("1.10")
    await asked.expect("Trust this key? Type y or yes to trust; anything else cancels [N]: ")
    assert box.host_key.get_fingerprint("sha256") in asked.out.decode()
    asked.type("")
    code, out, _ = await asked.finish()
    assert code == 1, out
    assert "not trusted; nothing written" in out
    assert not known.exists() and hosts.read_text() == HAND_WRITTEN

    # y trusts, then the block goes in after every original byte.
    agreed = Terminal(
        "add",
        pasted(fleet, box),
        "--hosts",
        str(hosts),
        cwd=tmp_path,
        env=NO_COLOR,
        output_on_terminal=True,
    )
    await agreed.expect("Name [")
    agreed.type("b1")
    await agreed.expect("[generic-ssh]: ")
    agreed.type("lambda")
    await agreed.expect("0: free): ")
    agreed.type("")
    await agreed.expect("[N]: ")
    agreed.type("yes")  # as the prompt says: y or yes
    # Then what a first launch needs (tests/services/test_add_launch_keys.py): Enter
    # takes each default, but Lambda's durable dir names a filesystem only the user knows.
    for prompt in ("[~/code]: ", "[none]: ", "[queues/b1.txt]: ", "--out {out}]: "):
        await agreed.expect(prompt)
        agreed.type("")
    await agreed.expect("[/lambda/nfs/<filesystem>/runs]: ")
    agreed.type("")
    await agreed.expect_asked("still holds <filesystem>")
    agreed.type("/lambda/nfs/fs1/runs")
    await agreed.expect("comma-separated [/lambda/nfs/fs1/runs]: ")
    agreed.type("")
    await agreed.expect("[Y/n] ")
    agreed.type("n")
    code, out, _ = await agreed.finish()
    assert code == 0, out
    assert known.read_text() == box.known_hosts_line + "\n"
    assert hosts.read_text().startswith(HAND_WRITTEN)
    added = load_fleet(hosts).host("b1")
    assert (added.profile, added.cost_per_hour) == ("lambda", None)


# -- the TUI's add screen ---------------------------------------------------------------------


class AddApp(App[None]):
    """Just the add screen, and what it dismissed with."""

    def __init__(self, fleet_file: Path) -> None:
        super().__init__()
        self.fleet_file = fleet_file
        self.results: list[object] = []

    def on_mount(self) -> None:
        self.push_screen(AddHostScreen(self.fleet_file), self.results.append)


async def test_enter_after_the_paste_then_trust_goes_on_to_the_name_not_to_add(
    make_loopback_fleet, home, tmp_path
):
    """h604 #7: checked by Enter in the pasted command, an unknown key asks first (Cancel
    focused); once trusted, the focus went to Add, and the next Enter wrote a name, folders
    and a run template never seen. It goes on to the name, as for a key already known."""
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        target = screen.query_one("#add-target", Input)
        target.value = pasted(fleet, box)
        target.focus()
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(lambda: screen.check is not None, what="the key check", pilot=pilot)
        assert screen.check.status == "unknown"
        assert screen.query_one("#add-cancel", Button).has_focus
        await click(pilot, screen.query_one("#add-trust", Button))
        add = screen.query_one("#add-add", Button)
        await wait_for(lambda: not add.disabled, what="the key trusted", pilot=pilot)
        name = screen.query_one("#add-name", Input)
        await wait_for(lambda: name.has_focus, what="the name focused", pilot=pilot)
        await pilot.press("enter")  # walks on to the next field: nothing is added
        await pilot.pause()
        assert not app.results and not (tmp_path / "hosts.toml").exists()


async def test_add_screen_checks_the_key_trusts_on_the_button_and_dismisses_with_the_host(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    known = home / ".ssh" / "known_hosts"
    app = AddApp(hosts)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        target = screen.query_one("#add-target", Input)
        assert target.has_focus
        await pilot.press(*("space" if ch == " " else ch for ch in pasted(fleet, box)))
        await pilot.pause()
        assert target.value == pasted(fleet, box)
        name = screen.query_one("#add-name", Input)
        assert name.value == f"{LOOPBACK_HOST.replace('.', '-')}-{box.port}"  # from the host
        name.value = "old-box"  # taken
        screen.query_one("#add-profile", Select).value = "paperspace"
        screen.query_one("#add-cost", Input).value = "2.5"
        add = screen.query_one("#add-add", Button)
        trust = screen.query_one("#add-trust", Button)

        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: name.has_focus, what="the name refused", pilot=pilot)
        assert "already used at" in str(screen.query_one("#add-status").render())
        assert add.disabled and screen.check is None

        name.value = "b1"
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, what="the key check", pilot=pilot)
        assert screen.check.status == "unknown"
        assert box.host_key.get_fingerprint("sha256") in str(
            screen.query_one("#add-status").render()
        )
        assert trust.display and add.disabled and not known.exists()
        # Enter on what has the focus cancels: trusting takes the Trust button.
        assert screen.query_one("#add-cancel", Button).has_focus

        await click(pilot, trust)
        await wait_for(lambda: not add.disabled, what="the key trusted", pilot=pilot)
        assert known.read_text() == box.known_hosts_line + "\n"
        assert hosts.read_text() == HAND_WRITTEN  # nothing added before Add
        await click(pilot, add)
        await wait_for(lambda: app.results, what="the screen dismissed", pilot=pilot)

    (host,) = app.results
    assert host == load_fleet(hosts).host("b1")
    assert (host.profile, host.cost_per_hour, host.ssh.port) == ("paperspace", 2.5, box.port)
    assert host.identity_file == fleet.client_key
    assert hosts.read_text().startswith(HAND_WRITTEN)


async def test_add_screen_escape_writes_nothing(make_loopback_fleet, home, tmp_path):
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    app = AddApp(hosts)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        screen.query_one(
            "#add-target", Input
        ).value = f"{fleet.username}@{LOOPBACK_HOST}:{box.port}"
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, what="the key check", pilot=pilot)
        assert screen.check.status == "unknown"
        await pilot.press("enter")  # the focused button is Cancel
        await wait_for(lambda: app.results, what="the screen dismissed", pilot=pilot)
    assert app.results == [None]
    assert not hosts.exists() and not (home / ".ssh" / "known_hosts").exists()


async def test_add_screen_after_trusting_says_the_key_stays_written_on_cancel(
    make_loopback_fleet, home, tmp_path
):
    # Trusting writes known_hosts at once (only after `t` or the Trust button); from then
    # on Esc and Cancel no longer say "nothing written", but what stays and where.
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    known = home / ".ssh" / "known_hosts"
    app = AddApp(hosts)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        hint = screen.query_one("#add-hint")
        cancel = screen.query_one("#add-cancel", Button)
        screen.query_one("#add-target", Input).value = pasted(fleet, box)
        assert "Esc: cancel, nothing written" in str(hint.render())
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, what="the key check", pilot=pilot)
        assert "nothing written" in str(hint.render())  # not trusted yet: still true
        await click(pilot, screen.query_one("#add-trust", Button))
        add = screen.query_one("#add-add", Button)
        await wait_for(lambda: not add.disabled, what="the key trusted", pilot=pilot)
        assert known.read_text() == box.known_hosts_line + "\n"

        said = " ".join(str(hint.render()).split())
        assert "nothing written" not in said
        assert f"Esc: cancel; the key stays trusted in {known}" in said
        assert "nothing written" not in cancel.does and str(known) in cancel.does
        # A new target voids the check, not what was written.
        screen.query_one("#add-target", Input).value = "local"
        await pilot.pause()
        assert "nothing written" not in str(hint.render())
        # The last check's words go with it (they were for the command as it was).
        status = str(screen.query_one("#add-status").render())
        assert "the SSH command changed" in status and "trust" not in status, status
        await pilot.press("escape")
        await wait_for(lambda: app.results, what="the screen dismissed", pilot=pilot)
    assert app.results == [None]
    assert not hosts.exists() and known.read_text() == box.known_hosts_line + "\n"


AUTH_FIX = "add `-i <key file>` to the pasted command, or load the key into ssh-agent"


async def test_a_refused_login_without_i_says_to_add_it_to_the_pasted_command(
    make_loopback_fleet, home, tmp_path
):
    # No -i, no agent, no key in ~/.ssh: the box refuses the login. The fix names what
    # the add screen and `add` have (the pasted command), not the fleet file's
    # identity_file, which neither shows.
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    bare = f"ssh -p {box.port} {fleet.username}@{LOOPBACK_HOST}"
    hosts = tmp_path / "hosts.toml"
    (home / ".ssh").mkdir()
    (home / ".ssh" / "known_hosts").write_text(box.known_hosts_line + "\n")  # key: settled

    done = await arun("add", bare, "--name", "b1", "--hosts", str(hosts), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    said = " ".join(done.stderr.split())
    assert "authentication refused" in said and AUTH_FIX in said, said
    assert "identity_file" not in said and not hosts.exists()
    # With -i, a key the box does not take: that key file is named.
    other = await make_loopback_fleet(1)
    wrong = await arun(
        "add", f"{bare} -i {other.client_key}", "--name", "b1", "--hosts", str(hosts),
        cwd=tmp_path,
    )  # fmt: skip
    said = " ".join(wrong.stderr.split())
    assert f"authorized_keys holds the public key of {other.client_key}" in said, said
    assert "identity_file" not in said and not hosts.exists()

    app = AddApp(hosts)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        screen.query_one("#add-target", Input).value = bare
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, what="the key check", pilot=pilot)
        status = " ".join(str(screen.query_one("#add-status").render()).split())
        assert "authentication refused" in status and AUTH_FIX in status, status
        assert "identity_file" not in status


async def test_t_never_trusts_the_key_in_the_form(make_loopback_fleet, home, tmp_path):
    # A user's hour: one Tab past the profile chooser, a name's first letter `t` trusted
    # the key (and the focus jumped to Add); the text boxes' key line said "t: trust".
    # Then (s43) a name typed with Cancel focused trusted it: no letter trusts here now.
    from textual.widgets import Select

    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    known = home / ".ssh" / "known_hosts"
    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        hint = screen.query_one("#add-hint")
        screen.query_one("#add-target", Input).value = pasted(fleet, box)
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, what="the key check", pilot=pilot)
        assert "t: trust" not in str(hint.render())  # on the buttons neither
        await pilot.press("t")  # Cancel has the focus
        await pilot.pause()
        assert not known.exists() or box.known_hosts_line not in known.read_text()
        for field in (screen.query_one("#add-profile", Select), screen.query_one("#add-name")):
            field.focus()
            await pilot.pause()
            assert "t: trust" not in str(hint.render()), str(hint.render())
            await pilot.press("t")
            await pilot.pause()
            assert not known.exists() or box.known_hosts_line not in known.read_text()
        assert screen.query_one("#add-name", Input).value.endswith("t")  # typed, as text


# -- a fleet that keeps its keys in its own known_hosts -----------------------------------------


def own_known_hosts_fleet(fleet: LoopbackFleet, hosts: Path) -> None:
    """A fleet file whose one box names the fleet's own known_hosts (as the demo's do),
    which already holds every loopback box's key."""
    hosts.write_text(
        "[[hosts]]\n"
        'name = "first"\n'
        f'ssh = "{fleet.username}@{LOOPBACK_HOST}:{fleet.boxes[0].port}"\n'
        f'known_hosts = "{fleet.known_hosts}"\n'
    )


async def test_cli_add_checks_and_names_the_fleets_own_known_hosts(
    make_loopback_fleet, home, tmp_path
):
    # Every box names the same known_hosts: a box added is checked there (its key is
    # already trusted, so no --trust-key is asked for) and its block names the file too,
    # rather than calling the key unknown and writing it to ~/.ssh/known_hosts.
    fleet = await make_loopback_fleet(3)
    hosts = tmp_path / "hosts.toml"
    own_known_hosts_fleet(fleet, hosts)
    done = await arun("add", pasted(fleet, fleet.boxes[1]), "--name", "b2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "already trusted" in done.stdout
    assert load_fleet(hosts).host("b2").known_hosts == fleet.known_hosts
    assert "as every other host in this file" in hosts.read_text()
    assert not (home / ".ssh" / "known_hosts").exists()

    # Boxes that name different files (here: one names none) leave ssh's default.
    with hosts.open("a") as f:
        f.write(f'\n[[hosts]]\nname = "plain"\nssh = "{LOOPBACK_HOST}:2"\n')
    mixed = await arun("add", pasted(fleet, fleet.boxes[2]), "--name", "b3", cwd=tmp_path)
    assert mixed.returncode == 2 and "no one to confirm the unknown host key" in mixed.stderr


async def test_add_screen_checks_the_fleets_own_known_hosts(make_loopback_fleet, home, tmp_path):
    fleet = await make_loopback_fleet(2)
    hosts = tmp_path / "hosts.toml"
    own_known_hosts_fleet(fleet, hosts)
    app = AddApp(hosts)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        screen.query_one("#add-target", Input).value = pasted(fleet, fleet.boxes[1])
        screen.query_one("#add-name", Input).value = "b2"
        await click(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: screen.check is not None, what="the key check", pilot=pilot)
        assert screen.check.status == "trusted", screen.check.message
        add = screen.query_one("#add-add", Button)
        await wait_for(lambda: not add.disabled, what="Add enabled", pilot=pilot)
        await click(pilot, add)
        await wait_for(lambda: app.results, what="the screen dismissed", pilot=pilot)
    (host,) = app.results
    assert host.known_hosts == fleet.known_hosts == load_fleet(hosts).host("b2").known_hosts
    assert not (home / ".ssh" / "known_hosts").exists()


async def test_a_fleet_file_broken_while_add_asks_prints_the_block_to_paste(
    make_loopback_fleet, home, tmp_path
):
    """s37 fleet hour #11: an unrelated typo saved in the fleet file while `add` asked its
    questions threw every answer away ("does not load, so nothing can be added"). Nothing
    is written still, and the block it would have added is printed to paste."""
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    adding = Terminal(
        "add", pasted(fleet, box), "--name", "nb", "--profile", "generic-ssh",
        "--cost-per-hour", "1.5", "--workdir", "/w", "--code", "none", "--queue", "none",
        "--run", "none", "--durable-dir", "/w/runs", "--pull", "/w/runs", "--hosts", str(hosts),
        cwd=tmp_path, env=NO_COLOR, output_on_terminal=True,
    )  # fmt: skip
    await adding.expect("Trust this key? Type y or yes to trust; anything else cancels [N]: ")
    broken = HAND_WRITTEN + "poll_seconds = \n"  # saved meanwhile, in another editor
    hosts.write_text(broken)
    adding.type("yes")
    code, out, _ = await adding.finish()
    assert code != 0, out
    assert "nothing was written; the block it would add, to paste once" in out, out
    assert 'name = "nb"' in out and "cost_per_hour = 1.5" in out, out
    assert "does not load" in out and hosts.read_text() == broken


async def test_a_name_taken_while_add_asks_is_asked_again_before_the_key_is_trusted(
    make_loopback_fleet, home, tmp_path
):
    """h604 #4: a block of the same name saved by hand while `add` waited at its trust
    prompt: the key was trusted, then the write refused the name and every answer was
    lost. The name is asked again, before anything is written."""
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    adding = Terminal(
        "add", pasted(fleet, box), "--name", "nb", "--profile", "generic-ssh",
        "--cost-per-hour", "1.5", "--workdir", "/w", "--code", "none", "--queue", "none",
        "--run", "none", "--durable-dir", "/w/runs", "--pull", "/w/runs", "--hosts", str(hosts),
        cwd=tmp_path, env=NO_COLOR, output_on_terminal=True,
    )  # fmt: skip
    await adding.expect("Trust this key? Type y or yes to trust; anything else cancels [N]: ")
    taken = HAND_WRITTEN + '\n[[hosts]]\nname = "nb"\nssh = "local"\n'  # another editor
    hosts.write_text(taken)
    adding.type("yes")
    await adding.expect("Name [nb-2]: ")  # the free name its fix offers (h606 #10)
    assert not (home / ".ssh" / "known_hosts").exists()  # nothing trusted yet
    adding.type("nb2")
    code, out, _ = await adding.finish()
    assert code == 0, out
    assert "host name 'nb' is already used" in out and "(taken while you answered)" in out, out
    assert hosts.read_text().startswith(taken)
    added = load_fleet(hosts).host("nb2")
    assert added.cost_per_hour == 1.5 and added.workdir == "/w"
    assert box.known_hosts_line.split()[-1] in (home / ".ssh" / "known_hosts").read_text()


def test_a_fleet_file_with_a_byte_order_mark_is_added_to(tmp_path: Path) -> None:
    """h555 #2: a Notepad-saved fleet file loaded, but `add` refused it: "cannot read … as
    TOML (Empty key at line 1 col 0)"."""
    from rgt_tui.services.fleet.append import NewHost

    hosts = tmp_path / "hosts.toml"
    before = b'\xef\xbb\xbf[[hosts]]\r\nname = "box1"\r\nssh = "local"\r\n'
    hosts.write_bytes(before)
    assert set(read_fleet_file(hosts).names) == {"box1"}
    add_to_fleet(NewHost("box2", None, "generic-ssh"), hosts)
    assert hosts.read_bytes().startswith(before)
    assert [h.name for h in load_fleet(hosts).hosts] == ["box1", "box2"]
