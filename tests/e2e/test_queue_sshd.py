"""The queue over OpenSSH's sshd with tmux: what works on the loopback boxes works on sshd."""

from __future__ import annotations

import re

from support.machine import this_boot_id
from support.queues import GATE, SCRIPT_RUN
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, FAILED, FINISHED, RUNNING
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.view import read_queue_view
from rgt_tui.transport import transport_for


async def test_launch_over_sshd_survives_the_server_going_down_and_finishes(openssh_queue_server):
    server = openssh_queue_server
    queue = server.add_queue(SCRIPT_RUN)
    cells = server.workdir / "cells"
    cells.mkdir()
    (cells / "gate.sh").write_text(GATE + "\n")
    (cells / "broken.sh").write_text("exit 7\n")
    queue.write_text("cells/gate.sh t 1\ncells/broken.sh t\n")
    host = load_fleet(server.hosts_file).host("real1")
    transport = transport_for(host)

    plan = await plan_launch(load_fleet(server.hosts_file), host, transport)
    assert plan.ok, plan.problems
    assert plan.detach == "tmux" and plan.box_queue_dir == f"{server.workdir}/.rgt/queue"
    result = await launch(plan, transport)
    view = await read_queue_view(host, transport)
    assert view.state == "running" and view.runner_alive

    second = await plan_launch(load_fleet(server.hosts_file), host, transport)
    assert not second.ok and "already running" in second.problems[0]
    await transport.close()

    server.stop()  # every sshd session dies; the tmux-detached runner must not
    server.start()
    state_file = server.workdir / ".rgt" / "queue" / "cells" / "gate.state"
    await wait_for(lambda: state_file.exists(), what="the gate cell to start")
    (server.workdir / "go").touch()

    transport = transport_for(host)

    async def finished() -> bool:
        return (await read_queue_view(host, transport)).state == FINISHED

    await wait_for(finished, timeout=60, what="the queue to finish")
    view = await read_queue_view(host, transport)
    await transport.close()
    assert [(c.name, c.status, c.exit_code) for c in view.cells] == [
        ("gate", DONE, 0), ("broken", FAILED, 7),
    ]  # fmt: skip
    boot = this_boot_id()
    runner = (server.workdir / ".rgt" / "queue" / "runner.state").read_text()
    assert re.match(rf"launch \d+ {boot} tmux 0 \S+ {result.pid}\n", runner)
    log = (server.workdir / ".rgt" / "queue" / "queue.log").read_text().splitlines()
    assert "gate open" in log and log[-1] == "QUEUE DONE: 1/2 succeeded; failed: broken(exit 7)"
    assert RUNNING not in [c.status for c in view.cells]
