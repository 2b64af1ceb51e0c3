"""`rgt-tui tunnel HOST PORT`: prints the URL, serves through it until Ctrl-C (exit 0);
this machine needs no tunnel (exit 1, the URL to open instead)."""

from __future__ import annotations

import asyncio
import re
import signal

from support.cli import Terminal, arun
from support.http_box import box_http_server, fetch, listening_addresses, refused
from support.machine import free_port
from support.waiting import wait_for

URL = re.compile(rb"tunnel (http://127\.0\.0\.1:(\d+)/) \xe2\x86\x92 box1:(\d+)")


async def test_tunnel_prints_the_url_and_serves_until_ctrl_c(make_loopback_fleet):
    fleet = await make_loopback_fleet(1)
    local_port = free_port()
    with box_http_server() as box_port:
        tunnel = Terminal(
            "tunnel",
            "box1",
            str(box_port),
            "--local-port",
            str(local_port),
            "--hosts",
            fleet.hosts_file,
        )
        try:
            await tunnel.expect("(Ctrl-C ends it)")
            found = URL.search(tunnel.out)
            assert found, tunnel.out
            url = found.group(1).decode()
            assert int(found.group(2)) == local_port and int(found.group(3)) == box_port
            assert await fetch(url) == "hello from the box"
            assert listening_addresses(local_port) == {"127.0.0.1"}
            assert await fetch(url) == "hello from the box"  # still serving: it runs on
        finally:
            tunnel.proc.send_signal(signal.SIGINT)
            code, _, err = await tunnel.finish(timeout=60)
    assert code == 0, err
    assert "Traceback" not in err
    await wait_for(lambda: refused(url), what="the port closed after Ctrl-C")


async def test_this_machine_needs_no_tunnel_and_says_where_to_look():
    port = free_port()
    done = await asyncio.wait_for(arun("tunnel", "local", str(port)), 120)
    assert done.returncode == 1
    assert "local is this machine: no tunnel is needed" in done.stderr
    assert f"open http://127.0.0.1:{port}/ directly" in done.stderr


async def test_port_0_on_the_box_is_bad_input_and_any_port_here_is_not():
    """Hour s45b #4: `tunnel HOST 0` said "cannot listen on 127.0.0.1:None here". A box's
    port is 1-65535; 0 is "any" for this side's --local-port only."""
    done = await asyncio.wait_for(arun("tunnel", "local", "0"), 120)
    assert done.returncode == 2, done.stderr
    assert "not a port number: '0' (1-65535)" in done.stderr and "None" not in done.stderr
    here = await asyncio.wait_for(arun("tunnel", "local", "6006", "--local-port", "0"), 120)
    assert here.returncode == 1 and "no tunnel is needed" in here.stderr, here.stderr
