"""What a box prints is read up to a bound (issue 26): ``Transport.run`` keeps at most
``max_output`` bytes of each stream, over a real loopback SSH box and on this machine,
stops the command there and says so; `status` names the host that flooded it."""

from __future__ import annotations

import getpass
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from rgt_tui.domain.errors import TransportError
from rgt_tui.services.box.status import collect_status
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.telemetry import parse_agent_line
from rgt_tui.transport import Transport
from rgt_tui.transport.base import MAX_OUTPUT_BYTES
from rgt_tui.transport.local import LocalTransport
from rgt_tui.transport.ssh import SshTransport

FLOOD = 200 << 20  # what the box writes: 200 MiB
BOUND = 50 << 20  # what reading it may cost here, at most


@pytest.fixture(params=["ssh", "local"])
async def transport(request, loopback_fleet) -> AsyncIterator[Transport]:  # type: ignore[no-untyped-def]
    if request.param == "local":
        yield LocalTransport("here")
        return
    box = loopback_fleet.boxes[0]
    t = SshTransport(
        box.name,
        address="127.0.0.1",
        port=box.port,
        username=getpass.getuser(),
        identity_file=loopback_fleet.client_key,
        known_hosts=loopback_fleet.known_hosts,
    )
    await t.connect()
    try:
        yield t
    finally:
        await t.close()


async def _peak(run: Callable[[], Awaitable[object]]) -> tuple[object, int]:
    """``run()``'s result and the most memory Python held meanwhile (tracemalloc)."""
    tracemalloc.start()
    try:
        result = await run()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_a_200_mib_stdout_is_cut_at_the_cap_and_the_command_stopped(
    transport: Transport, tmp_path: Path
) -> None:
    marker = tmp_path / "still-running"
    # Were the command not stopped, it would go on to leave the marker behind.
    command = f"head -c {FLOOD} /dev/zero; touch {marker}"
    result, peak = await _peak(lambda: transport.run(command, timeout=60))
    assert peak < BOUND, f"reading the flood held {peak >> 20} MiB"
    assert result.truncated == ("stdout",)
    assert len(result.stdout) == MAX_OUTPUT_BYTES == result.max_output
    assert result.exit_status is None and not result.ok and not marker.exists()
    assert result.overflow("a test") == (
        "the box sent more than 4 MiB on stdout (a test); the rest was dropped and the "
        "command stopped"
    )


async def test_the_cap_is_per_call_and_per_stream(transport: Transport) -> None:
    small = await transport.run("printf 'abcdef'; exit 3", max_output=4)
    assert (small.stdout, small.truncated, small.exit_status) == ("abcd", ("stdout",), None)
    err = await transport.run("head -c 100000 /dev/zero >&2; echo fine", max_output=1000)
    assert err.truncated == ("stderr",) and len(err.stderr) == 1000
    assert "1000 bytes on stderr" in (err.overflow() or "")
    whole = await transport.run("echo hi; echo oops >&2; exit 3")
    assert (whole.exit_status, whole.stdout, whole.stderr) == (3, "hi\n", "oops\n")
    assert whole.truncated == () and whole.overflow() is None


async def test_status_names_the_host_whose_box_flooded_it_and_stays_bounded(
    loopback_fleet, tmp_path: Path
) -> None:
    flooding = loopback_fleet.boxes[1]
    bin_dir = tmp_path / "hostile-bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"  # the box's own python3, first on its PATH
    python3.write_text(f"#!/bin/sh\ncat > /dev/null\nexec head -c {FLOOD} /dev/zero\n")
    python3.chmod(0o755)
    flooding.extra_path.append(bin_dir)
    fleet = load_fleet(loopback_fleet.hosts_file)

    reports, peak = await _peak(lambda: collect_status(fleet, timeout=60))
    assert peak < BOUND, f"`status` held {peak >> 20} MiB"
    by_name = {r.host.name: r for r in reports}  # type: ignore[attr-defined]
    flooded = by_name[flooding.name]
    assert not flooded.reachable
    assert flooded.error == (
        "the box sent more than 4 MiB on stdout (the telemetry agent's one sample); the "
        "rest was dropped and the command stopped"
    )
    others = [r for name, r in by_name.items() if name != flooding.name]
    assert others and all(r.reachable for r in others)


async def test_stream_lines_refuses_a_line_over_its_cap(transport: Transport) -> None:
    """The telemetry agent's and the manifest scan's reader: a line over MAX_STREAM_LINE
    ends the stream with an error naming the host (on this machine it used to escape as
    asyncio's ValueError past 64 KiB); the lines before it, and a last line without its
    newline, come through."""
    assert [ln async for ln in transport.stream_lines("printf 'a\\nb'")] == ["a", "b"]
    got: list[str] = []
    with pytest.raises(TransportError) as err:
        async for line in transport.stream_lines(f"echo first; head -c {3 << 20} /dev/zero"):
            got.append(line)
    assert got == ["first"]
    assert err.value.host == transport.host
    assert err.value.message == "the box printed a line over 1 MiB; the command was stopped"
    wide = "x" * (100 << 10)  # 100 KiB: over asyncio's default, well under the cap
    assert [ln async for ln in transport.stream_lines(f"echo {wide}")] == [wide]


def test_a_deeply_nested_agent_line_is_not_a_sample() -> None:
    """A box's ``[[[[…`` line costs json.loads a RecursionError, not the monitor."""
    assert parse_agent_line("box1", "[" * 100_000) is None
