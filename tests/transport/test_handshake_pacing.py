"""A fleet's start is paced: at most ``handshakes.AT_ONCE`` SSH connections are being
opened at once by one process (issue 44: 500 hosts connecting together held the event
loop for seconds). Against a real listener that accepts and never answers, so every
handshake in flight stays in flight until the test lets it go."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rgt_tui.domain.errors import TransportError
from rgt_tui.transport.handshakes import AT_ONCE
from rgt_tui.transport.ssh import SshTransport


async def test_no_more_than_the_limit_are_opened_at_once_and_the_rest_follow(
    tmp_path: Path,
) -> None:
    held: list[asyncio.StreamWriter] = []
    accepted = asyncio.Event()

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # says nothing: the client waits for a version line
        if len(held) >= AT_ONCE:
            accepted.set()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    hosts = AT_ONCE + 8
    transports = [
        SshTransport(
            f"box{i}",
            address="127.0.0.1",
            port=port,
            known_hosts=tmp_path / "known_hosts",
            connect_timeout=120,  # the test lets them go, not the timeout
        )
        for i in range(hosts)
    ]
    attempts = [asyncio.ensure_future(t.connect()) for t in transports]
    try:
        await asyncio.wait_for(accepted.wait(), 60)
        # Every attempt has had many turns of the loop: an unpaced start would have its
        # connections accepted by now (they were all asked for at once, on loopback).
        for _ in range(200):
            await asyncio.sleep(0)
        assert len(held) == AT_ONCE
        first = list(held)
        for writer in first:  # the box drops them: those attempts fail, the rest go on
            writer.close()
        done, _ = await asyncio.wait(attempts[:1], timeout=60)
        assert done
        deadline = asyncio.get_running_loop().time() + 60
        while len(held) < hosts and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        assert len(held) == hosts
    finally:
        for writer in held:
            writer.close()
        results = await asyncio.gather(*attempts, return_exceptions=True)
        server.close()
        await server.wait_closed()
    assert all(isinstance(r, TransportError) for r in results), results
