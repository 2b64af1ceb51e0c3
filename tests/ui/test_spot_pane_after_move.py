"""A preempted box's pane follows a move made after the preemption was named (hour s21a
#3, #7): the pane kept "it has no pulled and verified checkpoint: a move starts it from
scratch" after ``watch`` (or the user, by the command line) had moved the cell, inviting
a second, from-scratch move. The host's queue file gaining ``#moved-to`` is looked at
again, with the real queue-file reader, and the pane names where the cell went."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pilot import make_app, screen_text, wait_for
from support.samples import FROZEN, agent_sample, make_update, write_fleet

from rgt_tui.domain.preemption import LOST, Preemption
from rgt_tui.messages import HostUpdated
from rgt_tui.services.queue.check import read_queue_file
from rgt_tui.services.telemetry import ConnectionState

pytestmark = pytest.mark.usefixtures("utc")
HOST = "spot1"
FLEET = f"""\
[[hosts]]
name = "{HOST}"
ssh = "root@10.0.0.7:40022"
profile = "vastai"
interruptible = true
queue = "q.txt"
run = "echo {{cfg}}"

[[hosts]]
name = "spare"
ssh = "root@10.0.0.8:40022"
profile = "vastai"
queue = "s.txt"
run = "echo {{cfg}}"

[[hosts]]
name = "spare2"
ssh = "root@10.0.0.9:40022"
profile = "vastai"
queue = "s2.txt"
run = "echo {{cfg}}"
"""
LINE = "configs/eta_long.json t 1"


def flat(app) -> str:
    return " ".join(" ".join(row.strip(" │┃║").split()) for row in screen_text(app).splitlines())


async def test_the_pane_of_a_preempted_box_names_the_move_made_since(tmp_path: Path) -> None:
    queue = tmp_path / "q.txt"
    queue.write_text(LINE + "\n")
    fleet = write_fleet(tmp_path, FLEET)
    host = fleet.host(HOST)
    cell = read_queue_file(queue, host=HOST, default_epochs=host.epochs).parsed.cells[0].name
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(110, 50)) as pilot:
        named = Preemption(HOST, LOST, FROZEN - 600, "boot/1", cell)
        app.runtime.preemptions.current[HOST] = named  # named by this runtime, as told

        def silent(seq: int) -> HostUpdated:
            sample = agent_sample(HOST, t=FROZEN - 600, seq=seq, cell=cell)
            down = ConnectionState("reconnecting", FROZEN - 500, attempt=seq)
            return HostUpdated(make_update(HOST, sample, down))

        app.post_message(silent(1))
        await wait_for(lambda: "no pulled and verified checkpoint" in flat(app), pilot=pilot)

        # The cell is moved (watch's on_preempt, or `rgt-tui queue move`): its line in
        # the local queue file is rewritten. The box's next update (a retry) shows it.
        queue.write_text(f"#moved-to spare: {LINE}\n")
        (tmp_path / "s.txt").write_text(LINE + "\n")
        app.post_message(silent(2))
        await wait_for(lambda: "it already moved to spare" in flat(app), pilot=pilot)
        assert "no pulled and verified checkpoint" not in flat(app)
        assert app.runtime.preemptions.current[HOST].moved_to == "spare"

        # Moved on from spare to spare2 (h592 #7): spare's file changes, not this host's.
        (tmp_path / "s2.txt").write_text(LINE + "\n")
        (tmp_path / "s.txt").write_text(f"#moved-to spare2: {LINE}\n")
        app.post_message(silent(3))
        await wait_for(lambda: "it already moved to spare → spare2" in flat(app), pilot=pilot)
