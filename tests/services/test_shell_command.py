"""The shell's ssh command (``s``, ``rgt-tui shell``): the user's ssh with our options.

Every forced option is on the command line and survives ssh_config (``ssh -G``, run here
as the product runs it); the host-key file is the fleet's; nothing secret is in it. A
local host gets a login shell in its workdir."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

from support.ssh_config import users_ssh_config

from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.services.box.shell import ShellCommand, remote_shell_script, shell_command
from rgt_tui.services.fleet.file import load_fleet

FORCED = [
    "StrictHostKeyChecking=yes",
    "GlobalKnownHostsFile=/dev/null",
    "ForwardAgent=no",
    "ForwardX11=no",
    "ClearAllForwardings=yes",
    "ControlMaster=no",
    "ControlPath=none",
    "PermitLocalCommand=no",
    "RequestTTY=force",
    "BatchMode=no",  # a person is there: a passphrase may be asked, never a host key
]


def _options(argv: tuple[str, ...]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "-o"]


def _resolved(argv: tuple[str, ...]) -> dict[str, str]:
    """``ssh -G`` of the command (its options, no remote command): what ssh will use."""
    cut = argv.index("--")
    done = subprocess.run(
        [*argv[:cut], "-G", *argv[cut : cut + 2]], capture_output=True, text=True, check=True
    )
    return dict(line.partition(" ")[::2] for line in done.stdout.splitlines())


def test_the_shell_is_the_users_ssh_with_every_forced_option_and_the_fleets_known_hosts(
    openssh_server, home
):
    server = openssh_server
    host = load_fleet(server.hosts_file).host(server.host_name)
    command = shell_command(host, terminal=True)
    assert isinstance(command, ShellCommand), command
    argv = command.argv
    options = _options(argv)
    for option in FORCED:
        assert option in options, option
    assert f"UserKnownHostsFile={server.known_hosts}" in options  # the product's file only
    assert argv[argv.index("-p") + 1] == str(server.port)
    assert argv[argv.index("-l") + 1] == server.user
    assert argv[argv.index("-i") + 1] == str(server.client_key)  # the path, never the key
    assert argv[-3:] == ("--", "127.0.0.1", remote_shell_script(host))
    # No forwarding flag, and nothing secret: no key material, no agent socket.
    assert not {"-A", "-X", "-Y", "-L", "-R", "-D", "-M", "-S"} & set(argv)
    secret = server.client_key.read_text()
    assert not any(secret in a or "PRIVATE KEY" in a for a in argv)
    assert command.session == tmux_session_name(server.host_name) == "rgt-real1"
    assert command.cwd is None
    # From a script (no terminal here) none is asked of the box: its shell then ends with
    # its input, not at a prompt no one answers (hour s45b #1).
    scripted = shell_command(host, terminal=False)
    assert isinstance(scripted, ShellCommand), scripted
    options = _options(scripted.argv)
    assert "RequestTTY=no" in options and "RequestTTY=force" not in options
    assert scripted.describe().endswith("(ssh; no terminal here: it reads its input)")
    assert "tmux" in command.describe()  # at a terminal: the queue's window when it runs


def test_ssh_config_that_would_forward_or_trust_anything_is_overridden(
    openssh_server, home, monkeypatch
):
    server = openssh_server
    users_ssh_config(
        home,
        monkeypatch,
        "Host 127.0.0.1\n"
        "  ForwardAgent yes\n  ForwardX11 yes\n  StrictHostKeyChecking no\n"
        "  UserKnownHostsFile /dev/null\n  LocalForward 9999 127.0.0.1:22\n"
        "  ControlMaster auto\n  ControlPath ~/.ssh/cm-%r@%h:%p\n  RequestTTY no\n"
        "  Compression yes\n",  # the user's own setting, kept
    )
    host = load_fleet(server.hosts_file).host(server.host_name)
    command = shell_command(host, terminal=True)
    assert isinstance(command, ShellCommand), command
    assert command.argv[0] == str(home / "bin" / "ssh")
    resolved = _resolved(command.argv)
    assert resolved["compression"] == "yes"  # the user's config was read
    assert resolved["forwardagent"] == "no" and resolved["forwardx11"] == "no"
    assert resolved["stricthostkeychecking"] in ("true", "yes")
    assert resolved["userknownhostsfile"] == str(server.known_hosts)
    assert resolved["clearallforwardings"] == "yes" and "localforward" not in resolved
    assert resolved["controlmaster"] == "false" and resolved["requesttty"] == "force"


def test_a_proxy_jump_in_ssh_config_is_refused_with_the_reason(openssh_server, home, monkeypatch):
    server = openssh_server
    users_ssh_config(home, monkeypatch, "Host 127.0.0.1\n  ProxyJump jump.example\n")
    host = load_fleet(server.hosts_file).host(server.host_name)
    why = shell_command(host)
    assert isinstance(why, str)
    assert why.startswith("real1: no shell over your ssh:") and "proxyjump" in why


def test_the_box_side_opens_a_window_in_the_queue_session_else_a_login_shell_in_the_workdir(
    openssh_server,
):
    host = load_fleet(openssh_server.hosts_file).host("real1")
    script = remote_shell_script(dataclasses.replace(host, workdir="~/runs/it's"))
    assert script.startswith("cd \"$HOME\"/'runs/it'\"'\"'s' 2>/dev/null || {")
    assert "tmux has-session -t =rgt-real1" in script
    # A new window linked into the queue's session; never an attach to that session.
    assert 'tmux link-window -d -s "$w" -t =rgt-real1:' in script
    assert 'tmux attach -t "=$v"' in script and "attach -t =rgt-real1" not in script
    assert script.endswith('exec "${SHELL:-/bin/sh}" -l')


def test_a_local_host_gets_a_login_shell_in_its_workdir(tmp_path: Path, monkeypatch):
    hosts = tmp_path / "hosts.toml"
    work = tmp_path / "work"
    work.mkdir()
    hosts.write_text(f'[[hosts]]\nname = "here"\nssh = "local"\nworkdir = "{work}"\n')
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))  # no queue session on this server
    monkeypatch.delenv("TMUX", raising=False)
    host = load_fleet(hosts).host("here")
    command = shell_command(host, terminal=True)
    assert isinstance(command, ShellCommand)
    assert command.argv == ("/bin/bash", "-l") and command.cwd == work and command.note == ""
    gone = shell_command(dataclasses.replace(host, workdir=str(tmp_path / "gone")))
    assert isinstance(gone, ShellCommand) and gone.cwd == Path(os.environ["HOME"])
    assert "does not exist here" in gone.note
