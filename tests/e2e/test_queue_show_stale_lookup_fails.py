"""`queue show` (and the Queue tab) keeps its not-sent list when the look at the box's configs fails (review
s46 #13): the look is asked after the comparison, over the same connection, and a
connection lost between the two replaced the whole list with "cannot compare". A real
fleet file with a code tree, a real transport whose box's port refuses."""

from __future__ import annotations

from pathlib import Path

from support.machine import closed_port

from rgt_tui.domain.queue_file import QueueCell
from rgt_tui.domain.queue_prefix import NotSent
from rgt_tui.domain.queue_state import RUNNING, QueueView
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.append import AgainstBox, with_stale_configs
from rgt_tui.transport.ssh import SshTransport


async def test_the_not_sent_cells_stay_when_the_config_look_fails(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "cells").mkdir(parents=True)
    (proj / "cells" / "new.sh").write_text("echo new\n")
    with closed_port() as port:
        hosts = tmp_path / "hosts.toml"
        hosts.write_text(
            f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\n'
            f'workdir = "/w"\ncode = "{proj}"\nrun = "bash {{cfg}}"\n'
        )
        fleet = load_fleet(hosts)
        cell = QueueCell("queues/box1.txt", 2, "new", "cells/new.sh", "t", 1, True)
        compared = AgainstBox(not_sent=NotSent("queues/box1.txt", ((1, cell),)))
        view = QueueView("box1", RUNNING, (), None, "b", 0, None, runner_alive=True)
        transport = SshTransport(
            "box1", address="127.0.0.1", port=port, username="me", known_hosts=tmp_path / "kh"
        )
        try:
            shown = await with_stale_configs(fleet, fleet.host("box1"), transport, view, compared)
        finally:
            await transport.close()
    assert shown.not_sent is not None and shown.not_sent.cells == ((1, cell),), shown
    assert shown.changed is None, shown  # not "cannot compare": the list was compared
