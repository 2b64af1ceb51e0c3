"""Large files from a near box through OpenSSH's ``ssh`` (issue 44), against OpenSSH's own
sshd: the file streams through ``ssh … cat``, a resumed part through ``tail -c +N``, and
whatever goes wrong with the stream (it ends short, it stalls, it sends more than the
manifest lists) costs nothing: SFTP brings the rest from the part's size, or the extra
bytes are never read.

``ssh`` is the real one, reached through a shim first on PATH that logs how it was called
and, for the fault cases, cuts or holds the real one's stdout (as a dropped or frozen link
would).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import stat
from pathlib import Path

import pytest
from support import MIB
from support.cli import arun
from support.far_relay import far_relay, relay_listening
from support.pulls import fast, random_file, sha
from support.sshd import OpenSshServer
from support.waiting import wait_for

from rgt_tui.cli.pull import format_pull_result
from rgt_tui.content.pull_view import pull_result_lines
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.pull import pull_host
from rgt_tui.services.pull.budget import shared_budget
from rgt_tui.services.pull.bulk import MIN_BYTES, PROBES, round_trip
from rgt_tui.services.pull.types import BULK_SSH
from rgt_tui.transport import transport_for

SIZE = MIN_BYTES + 3 * MIB + 12345  # streamed: at least MIN_BYTES, not a whole MiB
# Its settings come from shim.env beside it, not the environment: rgt-tui runs ssh with
# an environment of its own (nothing a SendEnv could send the box).
SHIM = """#!/bin/sh
. "${0%/*}/shim.env"
printf '%s\\n' "$*" >> "$SSH_SHIM_LOG"
case "$*" in
  *"cat -- "*|*"tail -c "*) ;;
  *) exec "$REAL_SSH" "$@" ;;  # ssh -G and anything else: as it is
esac
case "$SSH_SHIM_MODE" in
  short) "$REAL_SSH" "$@" | head -c "$SSH_SHIM_BYTES"; echo "link dropped" >&2; exit 255 ;;
  stall) "$REAL_SSH" "$@" | head -c "$SSH_SHIM_BYTES"; exec sleep 600 ;;
  linger) "$REAL_SSH" "$@" | head -c "$SSH_SHIM_BYTES"; exec >&-; exec sleep 600 ;;
  extra) "$REAL_SSH" "$@"; printf 'BYTES THE MANIFEST DOES NOT LIST' ;;
  corrupt) printf X; "$REAL_SSH" "$@" | tail -c +2 ;;
  gone) case "$*" in
      *"$SSH_SHIM_GONE"*) echo "cat: $SSH_SHIM_GONE: No such file or directory" >&2; exit 1 ;;
      *) exec "$REAL_SSH" "$@" ;;
    esac ;;
  *) exec "$REAL_SSH" "$@" ;;
esac
"""


@pytest.fixture
def ssh_shim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shim first on PATH; returns the log of its calls (one line each)."""
    real = shutil.which("ssh")
    assert real is not None, "OpenSSH's ssh client is missing (.ci/run installs it)"
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "ssh").write_text(SHIM)
    (shims / "ssh").chmod(stat.S_IRWXU)
    log = tmp_path / "ssh-calls.log"
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    (shims / "shim.env").write_text("")
    set_shim(log, REAL_SSH=real, SSH_SHIM_LOG=str(log))
    return log


def set_shim(log: Path, **values: str) -> None:
    """Set the shim's variables (``SSH_SHIM_MODE`` …) in its shim.env."""
    with (log.parent / "shims" / "shim.env").open("a") as f:
        f.writelines(f"{key}={shlex.quote(value)}\n" for key, value in values.items())


def _calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


async def _pull(server: OpenSshServer, dest: Path, hosts: Path | None = None, **options: object):  # noqa: ANN202
    """A pull of ``real1`` (through ssh whatever the round trip, unless ``bulk`` says)."""
    options.setdefault("bulk", "ssh")
    host = load_fleet(hosts or server.hosts_file).host("real1")
    transport = transport_for(host)
    try:
        return await pull_host(host, dest, transport, options=fast(**options))
    finally:
        await transport.close()


async def test_a_near_boxs_large_file_streams_through_ssh_and_the_summary_says_so(
    openssh_server: OpenSshServer, ssh_shim: Path, tmp_path: Path
) -> None:
    results = openssh_server.workdir / "results"
    # A name the box's shell would read as an option, a command and a quote, unquoted.
    name = "-it's $(touch PWNED) `touch PWNED` big.pt"
    big = random_file(results / "ckpt" / name, SIZE)
    small = random_file(results / "metrics.json", 4096)
    env = {"RGT_HOSTS": str(openssh_server.hosts_file), "PATH": os.environ["PATH"]}
    # --bulk ssh: a loaded machine's loopback can read as a far round trip.
    done = await arun("pull", "real1", "--bulk", "ssh", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "large files: through OpenSSH's ssh (round trip" in done.stdout, done.stdout
    dest = openssh_server.base_dir / "results" / "real1"  # beside the fleet file
    assert sha(dest / "ckpt" / name) == big
    # The box's commands run in its user's home (this machine's, here).
    ran = [*openssh_server.base_dir.rglob("PWNED"), *Path.home().glob("PWNED")]
    assert not ran, "the box's shell ran the name"
    assert sha(dest / "metrics.json") == small
    streams = [c for c in _calls(ssh_shim) if "cat -- " in c]
    assert len(streams) == 1 and streams[0].endswith(
        f"cat -- {shlex.quote(str(results / 'ckpt' / name))}"
    )
    assert "Ciphers=^aes128-gcm" in streams[0] and "StrictHostKeyChecking=yes" in streams[0]


async def test_a_resumed_part_streams_from_its_size(
    openssh_server: OpenSshServer, ssh_shim: Path, tmp_path: Path
) -> None:
    data = os.urandom(SIZE)
    (openssh_server.workdir / "results").mkdir(parents=True, exist_ok=True)
    (openssh_server.workdir / "results" / "last.pt").write_bytes(data)
    dest = tmp_path / "out"
    kept = 10 * MIB
    part = dest / "real1" / ".rgt" / "parts" / "last.pt.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:kept])

    result = await _pull(openssh_server, dest)
    assert result.ok, result.failed
    assert result.bulk == BULK_SSH
    (pulled,) = result.pulled
    assert pulled.resumed_from == kept and pulled.received == SIZE - kept
    assert (dest / "real1" / "last.pt").read_bytes() == data
    streams = [c for c in _calls(ssh_shim) if "tail -c " in c or "cat -- " in c]
    assert len(streams) == 1 and f"tail -c +{kept + 1} -- " in streams[0], streams


@pytest.mark.parametrize("mode", ["short", "stall", "linger"])
async def test_a_stream_that_breaks_hands_the_rest_to_sftp_and_says_why(
    openssh_server: OpenSshServer,
    ssh_shim: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    cut = 20 * MIB
    set_shim(ssh_shim, SSH_SHIM_MODE=mode, SSH_SHIM_BYTES=str(cut))
    digest = random_file(openssh_server.workdir / "results" / "last.pt", SIZE)
    dest = tmp_path / "out"

    # Long enough for the box's scan to print its first line on a loaded machine.
    result = await _pull(openssh_server, dest, stall_timeout_s=8.0)
    assert result.ok, result.failed
    assert sha(dest / "real1" / "last.pt") == digest
    assert result.bulk is not None and result.bulk.startswith(f"{BULK_SSH} until last.pt (")
    assert result.bulk.endswith("), then SFTP"), result.bulk
    # linger: the stream's output ends, its process does not (a box command that closed
    # its output and goes on holding the session).
    why = {
        "short": "ssh exited 255 (link dropped)",
        "stall": "no byte for 4 s",
        "linger": f"the stream ended at {cut} of {SIZE} bytes, and ssh did not end",
    }[mode]
    assert f"the stream ended at {cut} of {SIZE} bytes" in result.bulk or mode == "stall"
    assert why in result.bulk, result.bulk
    # What the stream brought was kept: SFTP read only the rest.
    (pulled,) = result.pulled
    assert pulled.received == SIZE, pulled  # counted once: the stream's, then SFTP's
    assert not any(p.exists() for p in (dest / "real1" / ".rgt" / "parts").rglob("*.part"))


async def test_bytes_past_the_manifests_size_are_never_read(
    openssh_server: OpenSshServer,
    ssh_shim: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_shim(ssh_shim, SSH_SHIM_MODE="extra")
    digest = random_file(openssh_server.workdir / "results" / "last.pt", SIZE)
    dest = tmp_path / "out"
    result = await _pull(openssh_server, dest)
    assert result.ok and result.bulk == BULK_SSH, (result.failed, result.bulk)
    assert (dest / "real1" / "last.pt").stat().st_size == SIZE
    assert sha(dest / "real1" / "last.pt") == digest


async def test_sftp_when_asked_from_a_far_box_and_under_a_bandwidth_limit(
    openssh_server: OpenSshServer, ssh_shim: Path, tmp_path: Path
) -> None:
    digest = random_file(openssh_server.workdir / "results" / "last.pt", SIZE)
    asked = await _pull(openssh_server, tmp_path / "asked", bulk="sftp")
    assert asked.ok and asked.bulk == "--bulk sftp"
    limited = await _pull(openssh_server, tmp_path / "limited", budget=shared_budget(4000))
    assert limited.ok and limited.bulk == "a bandwidth limit (SFTP paces it)"
    with far_relay(openssh_server, 40) as hosts:  # 80 ms round trip
        await wait_for(lambda: relay_listening(hosts), 30, "the relay to listen")
        far = await _pull(openssh_server, tmp_path / "far", hosts, bulk="auto")
    assert far.ok and far.bulk is not None and "ms round trip (SFTP lanes fill it" in far.bulk
    for out in ("asked", "limited", "far"):
        assert sha(tmp_path / out / "real1" / "last.pt") == digest
    assert not [c for c in _calls(ssh_shim) if "cat -- " in c]
    summary = format_pull_result(far)
    assert "large files: up to 4 at a time, 2 SFTP sessions each (round trip ~" in summary
    assert "    not through OpenSSH's ssh: a " in summary, summary
    tab = "\n".join(line.plain for line in pull_result_lines(far))  # the TUI's Pulls tab
    assert "large files: up to 4 at a time, 2 SFTP sessions each (round trip ~" in tab
    assert "  not through OpenSSH's ssh: a " in tab, tab


async def test_bytes_through_ssh_that_do_not_match_are_pulled_again_by_sftp(
    openssh_server: OpenSshServer,
    ssh_shim: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A route that delivered wrong bytes is not trusted for the second try: the file is
    pulled again from zero by SFTP, and the summary does not blame the box."""
    set_shim(ssh_shim, SSH_SHIM_MODE="corrupt")
    last = openssh_server.workdir / "results" / "last.pt"
    random_file(last, SIZE)
    # The shim's corruption puts an X where the first byte was: random data starting
    # with X (1 run in 256) came through whole, and the route was rightly kept.
    with last.open("r+b") as f:
        f.write(b"\0")
    digest = sha(last)
    result = await _pull(openssh_server, tmp_path / "out")
    assert result.ok, result.failed
    assert sha(tmp_path / "out" / "real1" / "last.pt") == digest
    assert result.bulk == (
        f"{BULK_SSH} until last.pt (its bytes through ssh did not match its SHA-256), then SFTP"
    ), result.bulk
    assert len([c for c in _calls(ssh_shim) if "cat -- " in c]) == 1  # not again by ssh


async def test_a_file_the_box_cannot_send_goes_by_sftp_and_the_others_still_stream(
    openssh_server: OpenSshServer,
    ssh_shim: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """cat's own failure (here: a file gone since the listing, as the box would say it) is
    that file's: SFTP brings it or says precisely what is wrong, and the other large
    files keep streaming through ssh."""
    results = openssh_server.workdir / "results"
    digests = {n: random_file(results / n, SIZE) for n in ("a.pt", "b.pt", "c.pt")}
    set_shim(ssh_shim, SSH_SHIM_MODE="gone", SSH_SHIM_GONE=str(results / "b.pt"))
    result = await _pull(openssh_server, tmp_path / "out")
    assert result.ok, result.failed
    assert all(sha(tmp_path / "out" / "real1" / n) == d for n, d in digests.items())
    assert result.bulk is not None and result.bulk.startswith(
        f"{BULK_SSH}, but b.pt by SFTP (the stream ended at 0 of {SIZE} bytes: ssh exited 1 (cat: "
    ), result.bulk
    streamed = [c for c in _calls(ssh_shim) if "cat -- " in c]
    assert len(streamed) == 3, streamed  # a.pt and c.pt through ssh, b.pt tried once
    assert "large files: through OpenSSH's ssh, but b.pt by SFTP" in format_pull_result(result)


async def test_the_round_trip_that_decides_is_the_quickest_stat_and_a_far_box_pays_none(
    openssh_server: OpenSshServer,
) -> None:
    host = load_fleet(openssh_server.hosts_file).host("real1")
    transport = transport_for(host)
    stats = []

    async def stat() -> object:
        stats.append(1)
        return await transport.stat("/")

    try:
        await transport.connect()
        # An estimate past the line (a session's start on a busy loop; 32 ms under a
        # loaded TUI): probed, up to PROBES stats, and never above what it said.
        probed = await round_trip(stat, 0.032)
        assert 1 <= len(stats) <= PROBES and probed is not None and probed <= 0.032
        stats.clear()
        assert await round_trip(stat, 0.2) == 0.2 and not stats  # far: no probe
        assert await round_trip(stat, None) is None and not stats
    finally:
        await transport.close()


async def test_probing_stops_at_the_first_stat_that_decides() -> None:
    """Lines of whole seconds so that no load can blur them: a stat under the line ends
    the probing (near), and one past 10x the line too (far: one round trip paid)."""
    sleeps: list[float] = []

    async def stat() -> None:
        sleeps.append(0)
        await asyncio.sleep(delay)

    delay = 0.0
    assert await round_trip(stat, 5.0, line=1.0) <= 1.0 and len(sleeps) == 1  # type: ignore[operator]
    sleeps.clear()
    delay = 0.15  # past 10x a 10 ms line
    assert 0.15 <= await round_trip(stat, 0.2, line=0.01) <= 0.2 and len(sleeps) == 1  # type: ignore[operator]
    sleeps.clear()
    assert await round_trip(stat, 0.31, line=0.01) == 0.31 and not sleeps  # past 30x


async def test_a_kept_part_of_another_version_is_pulled_again_without_blaming_ssh(
    openssh_server: OpenSshServer, ssh_shim: Path, tmp_path: Path
) -> None:
    """The file was rewritten on the box after an interrupted pull (an atomic checkpoint
    save): the resumed bytes cannot match, and the route was blamed and dropped for SFTP
    (hour s17b #12). The file comes again from zero, through ssh still."""
    data = os.urandom(SIZE)
    (openssh_server.workdir / "results").mkdir(parents=True, exist_ok=True)
    (openssh_server.workdir / "results" / "last.pt").write_bytes(data)
    dest = tmp_path / "out"
    part = dest / "real1" / ".rgt" / "parts" / "last.pt.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(os.urandom(10 * MIB))  # the earlier version's first bytes

    result = await _pull(openssh_server, dest)
    assert result.ok, result.failed
    assert (dest / "real1" / "last.pt").read_bytes() == data
    assert result.bulk == BULK_SSH, result.bulk  # not "… did not match …, then SFTP"
    streams = [c for c in _calls(ssh_shim) if "tail -c " in c or "cat -- " in c]
    assert len(streams) == 2 and "cat -- " in streams[1], streams  # again from zero, by ssh
