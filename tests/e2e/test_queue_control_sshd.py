"""Queue control over OpenSSH's sshd with the queue in tmux: kill (detached on the box,
checked in new calls), stop, retry and skip, the records and files checked after."""

from __future__ import annotations

import re

from support.queues import SCRIPT_RUN
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, KILLED, PENDING, RUNNING, SKIPPED, USER_STOPPED
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.control import (
    kill_cell,
    plan_retry,
    retry_cells,
    skip_cell,
    stop_queue,
)
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.view import read_queue_view
from rgt_tui.transport import transport_for


async def test_kill_stop_retry_and_skip_over_sshd_with_tmux(openssh_queue_server):
    server = openssh_queue_server
    queue = server.add_queue(SCRIPT_RUN)
    home = server.workdir
    cells = home / "cells"
    cells.mkdir()
    # hold has a child; it succeeds once "fixed" exists, writing into its {out} ($2).
    (cells / "hold.sh").write_text(
        'mkdir -p "$2"; if [ -e "$HOME/fixed" ]; then echo second > "$2/r"; exit 0; fi\n'
        'echo first > "$2/r"; sleep 600 & wait\n'
    )
    (cells / "a.sh").write_text('while [ ! -e "$HOME/go_a" ]; do sleep 0.05; done\n')
    (cells / "moved.sh").write_text('touch "$HOME/moved_ran"\n')
    (cells / "b.sh").write_text("echo b\n")
    queue.write_text("cells/hold.sh t\ncells/a.sh t\ncells/moved.sh t\ncells/b.sh t\n")
    fleet = load_fleet(server.hosts_file)
    host = fleet.host("real1")
    transport = transport_for(host)

    async def view_when(check, what):  # noqa: ANN001, ANN202
        seen = []

        async def ok() -> bool:
            seen.append(await read_queue_view(host, transport))
            return check(seen[-1])

        await wait_for(ok, 60, what)
        return seen[-1]

    plan = await plan_launch(fleet, host, transport)
    assert plan.ok and plan.detach == "tmux", plan.problems
    await launch(plan, transport)
    await view_when(lambda v: v.cells[0].status == RUNNING, "hold to run")

    killed = await kill_cell(host, transport, "hold", then="next", grace_s=3)
    assert killed.ended and killed.cell is not None and killed.cell.status == KILLED
    assert killed.cell.exit_code == 143
    await skip_cell(transport, "real1", "moved", "moved to real2")
    await view_when(lambda v: v.cells[1].status == RUNNING, "a to run after the kill")
    stopped = await stop_queue(host, transport)
    assert stopped.current is not None and stopped.current.name == "a"
    (home / "go_a").touch()
    view = await view_when(lambda v: v.state == USER_STOPPED, "the queue to stop")
    assert [c.status for c in view.cells] == [KILLED, DONE, SKIPPED, PENDING]
    assert view.cells[2].label == "moved" and not (home / "moved_ran").exists()
    q = home / ".rgt" / "queue"
    assert re.search(
        r"^kill \d+ user next\nend \d+ 143$", (q / "cells" / "hold.state").read_text(), re.M
    )
    assert re.search(r"^stopped \d+ 3$", (q / "runner.state").read_text(), re.M)
    assert "cell 2 moved skipped: moved to real2" in (q / "queue.log").read_text()

    (home / "fixed").touch()
    retry = await plan_retry(fleet, host, transport, ["hold"])
    assert retry.ok, retry.problems
    result = await retry_cells(retry, transport)
    ((_, aside),) = result.aside
    assert result.launched is not None and aside.startswith(f"{home}/results/hold.before-retry-")
    view = await view_when(lambda v: v.cells[0].status == DONE and not v.runner_alive, "the retry")
    await transport.close()
    assert (home / "results" / "hold" / "r").read_text() == "second\n"
    assert (home / aside.removeprefix(f"{home}/") / "r").read_text() == "first\n"
    assert [c.status for c in view.cells] == [DONE, DONE, SKIPPED, PENDING]
