"""The user's ssh_config for a test: OpenSSH reads ~ from the password database, not
$HOME, so the user's ``ssh`` here is the real one given the file by a wrapper first on
PATH (``ssh -F FILE``); asyncssh (the transport) reads ``$HOME/.ssh/config``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def users_ssh_config(
    home: Path, monkeypatch: pytest.MonkeyPatch, text: str, *, asyncssh_reads: bool = True
) -> Path:
    """``text`` as the ssh_config ssh reads; ``asyncssh_reads``: asyncssh reads it too
    (else the two read different files, as when $HOME is not the password database's)."""
    config = home / ".ssh" / "config" if asyncssh_reads else home / "only_ssh_config"
    config.parent.mkdir(exist_ok=True)
    config.write_text(text)
    bin_dir = home / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "ssh"
    wrapper.write_text(f'#!/bin/sh\nexec /usr/bin/ssh -F {config} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return config
