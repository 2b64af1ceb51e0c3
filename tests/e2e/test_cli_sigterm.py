"""SIGTERM (``timeout``, systemd, a CI cancel) stops a command as Ctrl-C does: a pull
ended silently with 143, and a sync's rsync went on uploading under init (s36 faults #3,
#4). Real OpenSSH sshd, the command as its own process, the signal sent to it alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.waiting import wait_for


def _parts(res: Path) -> int:
    return sum(p.stat().st_size for p in res.rglob("*") if p.is_file())


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sigint", ["default", "ignored"])
async def test_sigterm_stops_a_pull_as_ctrl_c_does_and_keeps_its_parts(
    openssh_server, sigint: str
) -> None:
    """Also with SIGINT ignored, as a script's background job has it: the TERM, turned
    into a SIGINT, would then be lost and `kill` stop nothing."""
    server = openssh_server
    (server.workdir / "results" / "blob.bin").write_bytes(os.urandom(48 << 20))
    res = Path(server.base_dir) / "res"
    hosts = server.hosts_file
    hosts.write_text(f'[fleet]\nresults_dir = "{res}"\n\n' + hosts.read_text())
    proc = subprocess.Popen(  # noqa: ASYNC220 - its own process, read after the signal
        [sys.executable, "-m", "rgt_tui", "pull", "real1", "--bwlimit", "40", "--hosts", str(hosts)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_ignore_sigint if sigint == "ignored" else None,
    )  # fmt: skip
    try:
        await wait_for(lambda: res.exists() and _parts(res) > (1 << 20), 60, "bytes arriving")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("rgt-tui pull: real1: interrupted; what arrived is kept in"), err
    assert last.endswith("re-run the same pull to resume"), err
    assert _parts(res) > (1 << 20)  # what arrived is kept for the resume
