"""A pull on a connection the host's telemetry already holds, as the TUI's `p` and
`watch`'s periodic pull make it (`scripts/pull_open.py`, the pull bench's third tool,
issue 44): whole and hash-checked on OpenSSH's own sshd while the agent streams on the
same connection — the agent's channel, the scan, the small files' tar stream and the
copy's SFTP sessions together stay inside the 10 sessions sshd allows a connection."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from support import MIB
from support.cli import cli_env
from support.pulls import random_file, sha
from support.sshd import OpenSshServer

SCRIPT = Path(__file__).parents[2] / "scripts" / "pull_open.py"


async def test_a_pull_beside_the_streaming_agent_is_whole(
    openssh_server: OpenSshServer, tmp_path: Path
) -> None:
    results = openssh_server.workdir / "results"
    large = {f"ckpt/{i}.pt": random_file(results / f"ckpt/{i}.pt", 3 * MIB) for i in range(3)}
    small = {f"logs/{i}.json": random_file(results / f"logs/{i}.json", 900) for i in range(40)}
    hosts = tmp_path / "hosts.toml"
    here = tmp_path / "res"
    hosts.write_text(f'[fleet]\nresults_dir = "{here}"\n\n' + openssh_server.hosts_file.read_text())
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), "real1", "--hosts", str(hosts), "--bulk", "sftp",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=cli_env({"XDG_STATE_HOME": str(tmp_path / "state")}),
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    text = out.decode()
    assert proc.returncode == 0, text + err.decode()
    assert "43 pulled" in text and "matching SHA-256" in text, text
    assert "pull on the open connection:" in text and "agent's first sample" in text, text
    for path, digest in {**large, **small}.items():
        assert sha(here / "real1" / path) == digest, path
