"""``T`` on a host's detail: its TensorBoard port forwarded here over the host's shared
connection, shown on the detail (also when opened again later), closed by ``T`` again."""

from __future__ import annotations

import re

from support.http_box import listening_addresses, refused
from support.pilot import SIZE, make_app, palette_titles, text_of, wait_for

from rgt_tui.screens.tunnel_keys import TunnelLine
from rgt_tui.services.fleet.file import load_fleet

URL = re.compile(r"tunnel (http://127\.0\.0\.1:(\d+)/) → box1:6006")


async def test_t_opens_the_tunnel_over_the_one_connection_and_t_again_closes_it(
    make_loopback_fleet, tmp_path
):  # type: ignore[no-untyped-def]
    fleet = await make_loopback_fleet(1)
    box = fleet.box("box1")
    app = make_app(tmp_path, fleet=load_fleet(fleet.hosts_file))
    async with app.run_test(size=SIZE) as pilot:
        app.open_host("box1")
        await pilot.pause()

        def line() -> str:
            found = list(app.screen.query(TunnelLine))
            return text_of(found[0]) if found and found[0].display else ""

        assert line() == ""  # no tunnel, no line
        assert "Tunnel TensorBoard: box1" in await palette_titles(app)
        await pilot.press("T")
        shown = await wait_for(lambda: URL.search(line()), what="the tunnel's URL", pilot=pilot)
        url, port = shown.group(1), int(shown.group(2))
        assert listening_addresses(port) == {"127.0.0.1"}
        assert box.connections_made == 1  # the host's one connection: no login of its own
        # Nothing answers on the box's 6006: the line says so and how to start it; the
        # banner in sight is the one place it is said (h542 #8: two toasts said it too).
        await wait_for(lambda: "no TensorBoard runs on box1" in line(), 30, pilot=pilot)
        told = [
            n for n in app._notifications if "tunnel" in str(n.message) or "TensorBoard" in n.title
        ]
        assert told == [], told
        # Lives as long as the app: the detail opened again still shows it.
        await pilot.press("escape")
        app.open_host("box1")
        await wait_for(lambda: URL.search(line()), what="shown again", pilot=pilot)
        await pilot.press("T")
        await wait_for(lambda: line() == "", what="the line gone", pilot=pilot)
        assert await refused(url)
