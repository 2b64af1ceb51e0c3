"""Nothing of the user's environment reaches the box through the user's ``ssh`` (sync's
rsync, a pull's large files, the shell), whatever ssh_config's ``SendEnv`` and
``SetEnv`` say: a user's hour found ``SendEnv RGT_*`` sending a variable to the box, and
a ``SendEnv *_TOKEN`` would send a credential. ssh runs with a short allowlist of the
environment (a command-line ``SendEnv`` cannot take back the config's) and the command
line's ``SetEnv`` stands in for the config's (ssh keeps the first). Real OpenSSH ``ssh``
against the real sshd fixture; what ssh sent is read from its own ``-v`` lines."""

from __future__ import annotations

import os
import subprocess

import pytest
from support.ssh_config import users_ssh_config

from rgt_tui.services.box.shell import shell_command
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport.openssh import OpenSsh, openssh_for

CONFIG = "Host *\n  SendEnv RGT_LEAK_* LANG LC_*\n  SetEnv RGT_SETENV_LEAK=leaked\n"


def test_send_env_and_set_env_of_ssh_config_send_nothing_of_ours(
    openssh_server, home, monkeypatch: pytest.MonkeyPatch
) -> None:
    users_ssh_config(home, monkeypatch, CONFIG)
    monkeypatch.setenv("RGT_LEAK_TOKEN", "s3cret-value")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("LC_MY_TOKEN", "s3cret-too")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    host = load_fleet(openssh_server.hosts_file).host("real1")
    ssh = openssh_for(host)
    assert isinstance(ssh, OpenSsh), ssh
    assert "RGT_LEAK_TOKEN" not in ssh.env and ssh.env.get("LANG") == "C.UTF-8"
    # What the config does not send stays, for a ProxyCommand or askpass that reads it;
    # an LC_-named variable that is no locale category is no locale.
    assert ssh.env.get("HTTPS_PROXY") == "http://proxy.example:3128"
    assert "LC_MY_TOKEN" not in ssh.env
    argv = ssh.command("true")
    done = subprocess.run(
        [argv[0], "-v", *argv[1:]], env=dict(ssh.env), capture_output=True, text=True, timeout=60
    )
    sent = [line for line in done.stderr.splitlines() if "setting env" in line]
    assert done.returncode == 0, done.stderr
    assert not any("RGT_LEAK" in line or "RGT_SETENV_LEAK" in line for line in sent), sent
    assert any('setting env RGT_TUI = "1"' in line for line in sent), sent
    # ssh did read the config: the locale it may send went.
    assert any('setting env LANG = "C.UTF-8"' in line for line in sent), sent
    assert not any("LC_MY_TOKEN" in line for line in sent), sent
    # The shell runs its ssh with that same environment.
    shell = shell_command(host)
    assert not isinstance(shell, str) and shell.env is not None
    assert "RGT_LEAK_TOKEN" not in shell.env


def test_an_openssh_without_setenv_still_gets_the_user_s_ssh(
    openssh_server, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenSSH before 7.8 knows no SetEnv ("Bad configuration option: setenv"), in its
    config either: the command leaves it out there rather than losing the shell, rsync
    and the bulk pull (a review). A wrapper that answers as such an ssh does, in front
    of the real one."""
    import shutil

    real = shutil.which("ssh")
    assert real is not None
    bin_dir = tmp_path / "oldssh"
    bin_dir.mkdir()
    wrapper = bin_dir / "ssh"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case "$*" in *SetEnv=*) echo "command-line line 0: Bad configuration option: '
        f'setenv" >&2; exit 255 ;; esac\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    host = load_fleet(openssh_server.hosts_file).host("real1")
    ssh = openssh_for(host)
    assert isinstance(ssh, OpenSsh), ssh
    assert not any("SetEnv" in a for a in ssh.argv)
    done = subprocess.run(list(ssh.command("true")), env=dict(ssh.env), timeout=60)
    assert done.returncode == 0
