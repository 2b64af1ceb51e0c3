"""U39, the port half: a box's port brought here over the host's one connection.

A tiny HTTP server on the box's loopback (the loopback box is this machine) answers
through the tunnel from 127.0.0.1 here; the listener is bound to loopback only; no
second SSH login is made; a dropped connection says the tunnel is down and the one
reconnect loop opens it again on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from support.http_box import box_http_server, fetch, listening_addresses, refused
from support.pulls import host_of
from support.waiting import wait_for

from rgt_tui.services.box.tunnel import TunnelError, TunnelState, hold_tunnel
from rgt_tui.services.connections import FleetConnections
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.local import LocalTransport

FAST = Backoff(base=0.1, cap=0.3)


async def test_tunnel_reaches_the_box_port_over_the_one_connection_and_survives_a_drop(
    make_loopback_fleet,
):
    fleet = await make_loopback_fleet(1)
    box = fleet.box("box1")
    connections = FleetConnections([host_of(fleet)], backoff=FAST)
    transport = connections.transport("box1")
    states: list[TunnelState] = []
    with box_http_server() as box_port:
        await transport.connect()
        logins = box.connections_made
        task = asyncio.create_task(
            hold_tunnel(transport, box_port, states.append, local_port=0, backoff=FAST)
        )
        try:
            up = await wait_for(lambda: next((s for s in states if s.up), None), what="up")
            assert up.url and up.url.startswith("http://127.0.0.1:") and up.url.endswith("/")
            assert up.local_port != box_port and not up.unanswered
            assert await fetch(up.url) == "hello from the box"
            # Loopback here only, never 0.0.0.0; and no second SSH login for it.
            assert listening_addresses(up.local_port) == {"127.0.0.1"}
            assert box.connections_made == logins

            await box.stop()  # the box's network dies: every connection aborted
            down = await wait_for(
                lambda: next((s for s in states[states.index(up) :] if not s.up), None),
                what="down",
            )
            assert "connection lost" in down.why and down.url is None
            assert "down" in down.line()
            assert await refused(up.url)  # nothing answers here meanwhile: no stale page

            await box.start()
            again = await wait_for(
                lambda: next((s for s in states[states.index(down) :] if s.up), None),
                timeout=60,
                what="up again",
            )
            assert again.local_port == up.local_port  # the URL the user has open still works
            assert await fetch(up.url) == "hello from the box"
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await connections.close_all()
        assert await refused(up.url)  # cancelled: closed here


async def test_tunnel_says_when_nothing_answers_on_the_box(make_loopback_fleet):
    fleet = await make_loopback_fleet(1)
    connections = FleetConnections([host_of(fleet)], backoff=FAST)
    transport = connections.transport("box1")
    with box_http_server() as port:
        pass  # closed again: nothing listens on it now
    states: list[TunnelState] = []
    task = asyncio.create_task(hold_tunnel(transport, port, states.append, local_port=0))
    try:
        up = await wait_for(lambda: next((s for s in states if s.up), None), what="up")
        # The box's own words: sshd says "Connection refused", asyncssh "Connect call failed".
        assert up.unanswered and ("refused" in up.unanswered or "failed" in up.unanswered)
        assert f"box1:{port}" in up.line() and "nothing answers there" in up.line()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await connections.close_all()


async def test_a_taken_local_port_is_refused_with_the_fix(make_loopback_fleet):
    fleet = await make_loopback_fleet(1)
    connections = FleetConnections([host_of(fleet)], backoff=FAST)
    transport = connections.transport("box1")
    with (
        box_http_server() as taken,  # this machine's port is taken by it
        pytest.raises(TunnelError, match=f"127.0.0.1:{taken}") as caught,
    ):
        await hold_tunnel(transport, 6006, lambda s: None, local_port=taken)
    assert "--local-port" in caught.value.fix
    await connections.close_all()


async def test_this_machine_needs_no_tunnel():
    with pytest.raises(TunnelError, match="this machine: no tunnel is needed") as caught:
        await hold_tunnel(LocalTransport("local"), 6006, lambda s: None)
    assert caught.value.fix == "open http://127.0.0.1:6006/ directly"


async def test_a_box_on_this_machines_loopback_never_gets_the_same_port_here(make_loopback_fleet):
    """The demo's boxes are this machine: a tunnel listening on the box's own port number
    here was the box's port, and the probe's connection opened another through the box
    without end (20,000 descriptors in 8 s after T in the demo: hour s33 TUI #1). With no
    port asked for it takes a free one; the same port asked for is refused with why."""
    import os

    fleet = await make_loopback_fleet(1)
    connections = FleetConnections([host_of(fleet)], backoff=FAST)
    transport = connections.transport("box1")
    with box_http_server() as port:
        pass  # free here, and nothing listens on the box (this machine) there
    states: list[TunnelState] = []
    fds = len(os.listdir("/proc/self/fd"))
    task = asyncio.create_task(hold_tunnel(transport, port, states.append))
    try:
        up = await wait_for(lambda: next((s for s in states if s.up), None), what="up")
        assert up.local_port != port, up
        assert up.unanswered  # the box's port: nothing there, said so
        assert len(os.listdir("/proc/self/fd")) < fds + 20  # a listener and a connection
        with pytest.raises(TunnelError, match="would carry into itself") as caught:
            await hold_tunnel(transport, port, lambda s: None, local_port=port)
        assert "--local-port" in caught.value.fix
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await connections.close_all()
