"""How a group's cell ended, told right, over two real OpenSSH boxes on loopback.

- Rank 1 fails at start (ux-h #1): rgt-tui's own watch stops rank 0, and what the records
  then say is the group's stop, not the user's; a plain relaunch starts at the cell that
  failed, not after it.
- Rank 1's box vanishes mid-cell (ux-h #5): rank 0 then fails on its lost peer, and
  ``queue show`` and ``diagnose`` name the rank that does not answer, not rank 0's error
  as a failure of its own.

No torch here: each rank's cell is a bash script printing what torchrun would.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import arun
from support.machine import free_port
from support.queues import QUEUE_PREFLIGHT_ACK, QUEUE_PYTHON, QueueSshServer, started_boxes
from support.waiting import wait_for
from test_group_cli import _Box

from rgt_tui.domain.queue_state import FAILED, KILLED, QueueView
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.queue.launch import default_start
from rgt_tui.services.runtime.queues import QueuePoller

# Rank 1 fails as a torchrun without torch does; rank 0 waits for $HOME/go (never made).
START = (
    'if [ "$1" = 1 ]; then echo "ModuleNotFoundError: No module named \'torch\'"; exit 1; fi\n'
    'echo "rank $1 waits"; while [ ! -e "$HOME/go" ]; do sleep 0.1; done\n'
)


@pytest.fixture
def boxes(tmp_path: Path) -> Iterator[tuple[QueueSshServer, QueueSshServer]]:
    with started_boxes(tmp_path, ("box1", "box2"), _Box, _Box) as made:
        yield made[0], made[1]


def _fleet_file(tmp_path: Path, boxes: tuple[QueueSshServer, ...], script: str = START) -> Path:
    acks = ", ".join(f'"{n}"' for n in QUEUE_PREFLIGHT_ACK)
    text = f'[fleet]\nresults_dir = "{tmp_path / "results"}"\n\n'
    for box in boxes:
        text += box._hosts_toml() + f'preflight_ack = [{acks}]\npython = "{QUEUE_PYTHON}"\n\n'
        (box.workdir / "cells").mkdir(parents=True, exist_ok=True)
        (box.workdir / "cells" / "fit.sh").write_text(script)
        (box.workdir / "cells" / "long.sh").write_text(script)
    queue = tmp_path / "queues" / "pair.txt"
    queue.parent.mkdir(parents=True, exist_ok=True)
    queue.write_text("cells/fit.sh t 1\ncells/long.sh t 1\n")
    text += (
        "[[groups]]\n"
        'name = "pair"\n'
        'hosts = ["box1", "box2"]\n'
        f'queue = "{queue}"\n'
        "run = 'bash {cfg} {node_rank} {out}'\n"
        'workdir = "~"\n'
        'durable_dir = "~/results"\n'
        'master_addr = "127.0.0.1"\n'
        f"master_port = {free_port()}\n"
        'nccl_socket_ifname = "lo"\n'
    )
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


async def launched_running(hosts: Path, boxes: tuple[QueueSshServer, ...]) -> None:
    """`launch pair`, then every rank's cell fit is up (its log says it runs)."""
    launched = await arun("launch", "pair", "--hosts", hosts, "--yes", timeout=180)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    for box in boxes:
        log = box.workdir / ".rgt/queue/cells/fit.log"
        await wait_for(lambda log=log: log.exists() and "runs" in log.read_text(), 60, "ranks up")


def _status(view: QueueView, name: str) -> str:
    return next(c.status for c in view.cells if c.name == name)


@pytest.mark.timeout(300)
async def test_a_rank_failing_at_start_is_the_groups_stop_and_relaunch_reruns_it(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    hosts = _fleet_file(tmp_path, boxes)
    fleet = load_fleet(hosts)
    group = fleet.host("pair")
    connections = FleetConnections(fleet.hosts)
    backend = backend_for(group, connections)
    transport = connections.transport("pair")
    try:
        plan = await backend.plan_launch(fleet, transport)
        assert plan.ok, plan.problems
        await backend.launch(plan, transport)
        # The runtime's poll of the group (the TUI and `watch` run it): it kills rank 0.
        poller = QueuePoller(connections, on_view=lambda h, v: None, is_live=lambda h: True)

        async def stopped() -> bool:
            view = await poller.poll_once(group)
            return view is not None and not view.runner_alive and _status(view, "fit") == FAILED

        await wait_for(stopped, 90, "rank 0 stopped after rank 1 failed")
        # The failed rank stopped its own queue there: it never started the next cell
        # alone (s39 groups hour #3: its runner went on to `long` within a second).
        cells1 = boxes[1].workdir / ".rgt/queue/cells"
        assert not (cells1 / "long.state").exists(), (cells1 / "long.state").read_text()
        log1 = (boxes[1].workdir / ".rgt/queue/queue.log").read_text()
        assert "stopped with its group (its own cell failed here) after cell 0 fit" in log1, log1
        # Its own view says so too, and resumes at the cell that failed (the review of
        # s39: it read "another rank failed", resuming after the failed cell).
        rank1 = await arun("queue", "show", "box2", "--hosts", hosts)
        assert "its own cell 0 (fit) failed here" in rank1.stdout, rank1.stdout
        assert "resume from cell 0" in rank1.stdout, rank1.stdout
        # Resumed by the group's launch: the box's own is refused for a group's records.
        assert "resume: rgt-tui launch pair --start 0" in rank1.stdout, rank1.stdout
        assert "another rank failed" not in rank1.stdout, rank1.stdout
        ranks = poller.ranks["pair"]
        assert ranks[0].view is not None and _status(ranks[0].view, "fit") == KILLED
        # Each rank's own line (the pane's) names why rank 0 was stopped: not the user.
        fit0 = next(c for c in ranks[0].view.cells if c.name == "fit")
        assert "user" not in fit0.note and "rank 1 (box2) failed first" in fit0.note, fit0.note

        shown = await arun("queue", "show", "pair", "--hosts", hosts)
        assert shown.returncode == 0, shown.stderr
        assert "by the user" not in shown.stdout, shown.stdout
        assert "rank 1 (box2) failed first in cell 0 (fit)" in shown.stdout, shown.stdout
        assert "resume: rgt-tui launch pair --start 0" in shown.stdout, shown.stdout

        # The record says it (not only the group's view): box1's kill is the group's, so
        # the rank's own `queue show`, its cell log and its teardown gate say so.
        state = (boxes[0].workdir / ".rgt/queue/cells/fit.state").read_text()
        assert re.search(r"^kill \d+ group stop$", state, re.M), state
        log = (boxes[0].workdir / ".rgt/queue/cells/fit.log").read_text()
        assert (
            "cell fit: stopped with its group (another rank failed or went silent): TERM to" in log
        ), log
        own = await arun("queue", "show", "box1", "--hosts", hosts)
        assert own.returncode == 0, own.stderr
        assert "by the user" not in own.stdout, own.stdout
        assert "stopped with its group (exit" in own.stdout, own.stdout
        assert (
            "stopped with its group (another rank failed or went silent) in cell 0 (fit)"
            in own.stdout
        )
        env = {"XDG_STATE_HOME": str(tmp_path / "state")}
        gate = await arun("teardown", "box1", "--check", "--hosts", hosts, env=env, cwd=tmp_path)
        (line,) = [x for x in gate.stdout.splitlines() if "unfinished" in x and "fit" in x][:1] or [
            gate.stdout + gate.stderr
        ]
        assert "fit stopped with its group (exit" in line and "by the user" not in line, line

        # A plain relaunch (the CLI's and the L dialog's default) starts at the failed cell.
        again = await backend.plan_launch(fleet, transport)
        assert default_start(again) == 0
        assert again.cells[0].status == FAILED  # the group's word, not rank 0's "killed"
    finally:
        await connections.close_all()


# Both ranks wait; once $HOME/go exists, rank 0 fails as torchrun's agent does when the
# rendezvous store its lost peer held is gone.
PEER_GONE = (
    'echo "rank $1 runs"; while [ ! -e "$HOME/go" ]; do sleep 0.1; done\n'
    'echo "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The '
    'connection to the C10d store has failed."; exit 1\n'
)


@pytest.mark.timeout(300)
async def test_a_rank_whose_box_vanished_is_named_not_the_survivors_error(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, PEER_GONE)
    await launched_running(hosts, boxes)
    box2.stop()  # rank 1's box is gone (its processes live on, unreachable)
    (box1.workdir / "go").touch()
    state = box1.workdir / ".rgt/queue/cells/fit.state"
    await wait_for(lambda: "end " in state.read_text(), 60, "rank 0's cell ended")

    shown = await arun("queue", "show", "pair", "--hosts", hosts)
    assert shown.returncode == 0, shown.stderr
    fit = next(line for line in shown.stdout.splitlines() if " fit " in line)
    assert "rank 1 (box2) does not answer" in fit and "preempted or lost?" in fit, fit
    assert "rank 0 (box1) failed first" not in fit, fit

    diagnosed = await arun("diagnose", "pair", "--hosts", hosts)
    assert diagnosed.returncode == 1, diagnosed.stdout + diagnosed.stderr
    assert "by itself" not in diagnosed.stdout and "fix the cause" not in diagnosed.stdout
    assert "rank 1 (box2) does not answer" in diagnosed.stdout, diagnosed.stdout
    assert "rgt-tui status box2" in diagnosed.stdout, diagnosed.stdout


# Both ranks run each cell until $HOME/go_<cell> exists (never made for fit).
HOLD = 'echo "rank $1 runs"; while [ ! -e "$HOME/go_$(basename "$0" .sh)" ]; do sleep 0.1; done\n'


@pytest.mark.timeout(300)
async def test_the_users_kill_then_next_of_a_group_goes_on_to_the_next_cell(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    """A rank whose cell failed stops its own queue (s39 groups hour #3), but a cell the
    user killed is no failure of the rank: `queue kill pair fit --then next` kills fit on
    every rank and every rank goes on to the next cell (the review of s39 found the first
    version stopped them)."""
    hosts = _fleet_file(tmp_path, boxes, HOLD)
    await launched_running(hosts, boxes)
    killed = await arun(
        "queue", "kill", "pair", "fit", "--then", "next", "--yes", "--hosts", hosts, timeout=120
    )
    assert killed.returncode == 0, killed.stdout + killed.stderr
    try:
        for box in boxes:
            log = box.workdir / ".rgt/queue/cells/long.log"
            await wait_for(
                lambda log=log: log.exists() and "runs" in log.read_text(), 60, "long runs"
            )
            runner = (box.workdir / ".rgt/queue/runner.state").read_text()
            assert "stop " not in runner, runner
    finally:
        for box in boxes:
            (box.workdir / "go_long").touch()


def test_the_runner_knows_a_ranks_cell_by_the_prefix_the_group_template_writes() -> None:
    """run_queue.sh stops a rank's queue at its failed cell by the group template's
    prefix: the two must be the same bytes, or the rank goes on alone unsaid."""
    from importlib.resources import files

    from rgt_tui.domain.group_run import ENV_PREFIX

    runner = files("rgt_tui.scripts").joinpath("run_queue.sh").read_text()
    assert f"group_prefix='{ENV_PREFIX}'\n" in runner


@pytest.mark.timeout(300)
async def test_a_kill_that_misses_a_rank_says_so_and_the_next_kill_finds_it(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    """h572 #1 and #2: with box2 not answering, `queue kill pair` printed "killed" and
    exited 0 while rank 1 ran on; once box2 answered, the group read the cell as failed,
    so every kill the product offered said nothing ran, and the rank ran on alone."""
    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, HOLD)
    await launched_running(hosts, boxes)
    box2.stop()  # its cell lives on, unreachable
    try:
        missed = await arun("queue", "kill", "pair", "--yes", "--hosts", hosts, timeout=120)
        said = missed.stdout + missed.stderr
        assert missed.returncode != 0, said
        assert "the kill did not reach rank 1 (box2)" in said, said
        # Which cell it runs is not known from here: the view says (h575 #2).
        assert "rgt-tui queue show pair says which cell" in said, said
        assert "pair: pair:" not in said, said  # the group named once (h575 #7)
        # The user's kill is no stop of the group's for a rank gone quiet (review h574 #4).
        diagnosed = await arun("diagnose", "pair", "--hosts", hosts)
        assert "was stopped on the other ranks with it" not in diagnosed.stdout, diagnosed.stdout
    finally:
        box2.start()
    fit = box2.workdir / ".rgt/queue/cells/fit.state"
    assert "end " not in fit.read_text()  # the scenario: rank 1 still runs it
    shown = await arun("queue", "show", "pair", "--hosts", hosts)
    line = next(ln for ln in shown.stdout.splitlines() if " fit " in ln)
    assert "still running on rank 1 (box2)" in line, shown.stdout
    # Rank 0 went on to long (the kill's --then next), so two run: named, fit is killed.
    again = await arun("queue", "kill", "pair", "fit", "--yes", "--hosts", hosts, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    await wait_for(lambda: "end " in fit.read_text(), 60, "rank 1's cell ended")
    for box in boxes:
        (box.workdir / "go_long").touch()


@pytest.mark.timeout(300)
async def test_diagnose_names_the_rank_gone_quiet_that_the_group_stopped_the_others_for(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    """h572 #3: box2 went quiet, the group stopped rank 0 (its cell reads killed, no
    failure), and `diagnose pair` said "rank 0 (box1): nothing vanished", exit 0."""
    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, HOLD)
    await launched_running(hosts, boxes)
    box2.stop()
    try:
        # What the group's watch does after LOST_AFTER_S of silence: rank 0 stopped.
        fleet = load_fleet(hosts)
        connections = FleetConnections(fleet.hosts)
        group = fleet.host("pair")
        try:
            await backend_for(group, connections).kill_ranks(
                connections.transport("pair"), None, [0], then="stop"
            )
        finally:
            await connections.close_all()
        diagnosed = await arun("diagnose", "pair", "--hosts", hosts)
        said = diagnosed.stdout + diagnosed.stderr
        assert diagnosed.returncode == 1, said
        assert "rank 1 (box2) does not answer" in said, said
        assert "was stopped on the other ranks with it" in said, said
        assert "rgt-tui status box2" in said and "nothing vanished" not in said, said
    finally:
        box2.start()
        for box in boxes:
            (box.workdir / "go_fit").touch()
            (box.workdir / "go_long").touch()
