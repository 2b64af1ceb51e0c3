"""Hour s23c #9: a group's plan over a rank box busy with the box's own queue said "the
queue on pair is already running … queue kill" — the group's name, whose kill would not
stop it. The words say it is another queue's, to stop under its own host name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.domain.group_run import ENV_PREFIX
from rgt_tui.domain.queue_records import RunnerLaunch
from rgt_tui.domain.queue_state import Q_RUNNING, RUNNING, CellView, QueueView
from rgt_tui.services.queue.launch import running_problem

HOST = '[[hosts]]\nname = "pair"\nssh = "me@box1:22"\npull = ["/w"]\nrun = "bash {cfg}"\n'


def _view(group_job: bool) -> QueueView:
    launch = RunnerLaunch(100, "boot", "tmux", 0, "run_queue.sh", 7733)
    cells = (CellView(0, "box1_long_epoch", RUNNING),)
    return QueueView("pair", Q_RUNNING, cells, launch, "boot", 200, None, True, group_job=group_job)


def test_a_rank_box_busy_with_its_own_queue_is_said_as_another_queues() -> None:
    host = parse_fleet(Path("/f/hosts.toml"), HOST, ["generic-ssh"]).hosts[0]
    rank = dataclasses.replace(host, run=ENV_PREFIX + "bash {cfg}")
    said = running_problem("pair", _view(group_job=False), "rgt-pair", rank)
    assert said is not None and said.startswith("the box runs another queue (runner pid 7733")
    assert "not pair's" in said and "under the host name whose queue it is" in said
    # The group's own job running there: its own words, as before.
    own = running_problem("pair", _view(group_job=True), "rgt-pair", rank)
    assert own is not None and own.startswith("the queue on pair is already running")
