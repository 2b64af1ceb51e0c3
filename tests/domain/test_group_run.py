"""A group's cell read as one job (issue 41): each rank's command and environment, the
group's view from every rank's records, and which ranks to stop when one died (MN3)."""

from __future__ import annotations

import shlex
from dataclasses import replace

from rgt_tui.domain.config import GroupConfig
from rgt_tui.domain.group_run import (
    LOST_AFTER_S,
    RankView,
    group_view,
    rank_env,
    rank_template,
    stop_order,
    with_group_stop,
)
from rgt_tui.domain.queue_file import QueueCell, render_command
from rgt_tui.domain.queue_records import RunnerLaunch
from rgt_tui.domain.queue_state import (
    BY_GROUP,
    BY_USER,
    DONE,
    FAILED,
    GROUP_STOPPED,
    INTERRUPTED,
    KILLED,
    NOT_DEPLOYED,
    PENDING,
    Q_RUNNING,
    RUNNING,
    USER_STOPPED,
    CellView,
    QueueView,
)

GROUP = GroupConfig(hosts=("b1", "b2"), members=(), master_addr="10.0.0.1", master_port=29511)


def _group(**kw: object) -> GroupConfig:
    return GroupConfig(**{**GROUP.__dict__, **kw})  # type: ignore[arg-type]


def _view(*cells: CellView, alive: bool = True, launched: int = 100) -> QueueView:
    launch = RunnerLaunch(launched, "boot", "tmux", 0, "run_queue.sh", 42)
    return QueueView(
        "g", Q_RUNNING if alive else "finished", cells, launch, "boot", 200, None, alive,
        group_job=True,  # a rank's records of the group's job
    )  # fmt: skip


def test_the_rank_template_fills_group_fields_and_leaves_the_cells_to_the_runner() -> None:
    template = "torchrun --nnodes {nnodes} --node-rank {node_rank} --rdzv-endpoint {master_addr}:{master_port} t.py {out} {{x}}"
    rank1 = rank_template(template, _group(master_addr="h$(x)"), 1)
    cell = QueueCell("q", 1, "a", "c/a.toml", "t", 3, True)
    command = render_command(rank1, cell, "/runs")
    assert "--nnodes 2 --node-rank 1" in command and "/runs/a {x}" in command
    assert shlex.split(command)  # one shell line, quotes balanced
    # The rendezvous is read from the environment file (s22b #3), never the literal value,
    # so a hostile or changed address changes no cell's command.
    assert '"$RGT_MASTER_ADDR":"$RGT_MASTER_PORT"' in command and "h$(x)" not in command
    assert rank_template(template, _group(master_addr="10.0.0.9"), 1) == rank1
    assert command.startswith('set -a && . "$HOME/.rgt/group.env" && set +a && ')


def test_every_rank_exports_the_same_nccl_settings() -> None:
    g = _group(nccl_socket_ifname="eth0", nccl_ib="off")
    env0 = rank_env(g, "g", 0, first_launch=True)
    env1 = rank_env(g, "g", 1, first_launch=True)
    assert {k: v for k, v in env0.items() if k != "RGT_NODE_RANK"} == {
        k: v for k, v in env1.items() if k != "RGT_NODE_RANK"
    }
    assert env1["RGT_NODE_RANK"] == "1" and env1["NCCL_IB_DISABLE"] == "1"
    assert env1["NCCL_SOCKET_IFNAME"] == env1["GLOO_SOCKET_IFNAME"] == "eth0"
    assert env1["NCCL_DEBUG"] == "INFO" and env1["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
    assert rank_env(g, "g", 0, first_launch=False)["NCCL_DEBUG"] == "WARN"
    assert rank_env(_group(nccl_ib="mlx5"), "g", 0, first_launch=False)["NCCL_IB_HCA"] == "mlx5"
    assert "NCCL_DEBUG" not in rank_env(_group(nccl_debug="off"), "g", 0, first_launch=True)


def _cell(status: str, **kw: object) -> CellView:
    return CellView(0, "a", status, **kw)  # type: ignore[arg-type]


def test_a_cell_fails_naming_the_rank_that_died_first_not_the_one_stopped() -> None:
    died = _cell(FAILED, exit_code=1, started_at=110, ended_at=150, note="RuntimeError: boom")
    stopped = _cell(KILLED, exit_code=137, started_at=110, ended_at=140)
    view = group_view("g", [RankView(0, "b1", _view(stopped)), RankView(1, "b2", _view(died))])
    assert view.cells[0].status == FAILED and view.host == "g"
    assert view.cells[0].note == "rank 1 (b2) failed first (exit 1): RuntimeError: boom"


def test_a_rank_that_failed_because_its_peer_went_is_not_the_one_named() -> None:
    """Rank 1's worker crashed; rank 0's agent then lost the rendezvous store rank 1's
    agent held, in the same second (or before rank 1's record was written)."""
    peer = "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed."
    for rank0_end in (150, 149):  # the same second, and a second earlier
        lost = _cell(FAILED, exit_code=1, started_at=110, ended_at=rank0_end, note=peer)
        died = _cell(FAILED, exit_code=-9, started_at=110, ended_at=150, note="")
        view = group_view("g", [RankView(0, "b1", _view(lost)), RankView(1, "b2", _view(died))])
        assert view.cells[0].note.startswith("rank 1 (b2) failed first (exit -9)")
    # With only peer-gone failures and the other rank unread (its box vanished, ux-h #5),
    # the rank that does not answer is named first, not the survivor's error.
    view = group_view("g", [RankView(0, "b1", _view(lost)), RankView(1, "b2", None, "refused")])
    assert view.cells[0].note.startswith(
        "rank 1 (b2) does not answer (refused): preempted or lost? rank 0 (b1) then failed"
    ), view.cells[0].note
    # Every rank read: the earliest peer-gone failure is still named.
    view = group_view("g", [RankView(0, "b1", _view(lost)), RankView(1, "b2", _view())])
    assert view.cells[0].note.startswith("rank 0 (b1) failed first")


def test_a_rank_gone_quiet_is_named_not_a_kill_on_every_rank_nor_the_survivors_error() -> None:
    """Rank 1's box went quiet mid-cell; a minute on the group stopped rank 0 (h531 #2).
    While rank 1 is silent the cell read "killed on every rank", though it was never
    reached; once it answered, its worker's exit 1 (its peer gone, because rank 0 was
    stopped) read "rank 1 (b2) failed first", a fault of its own to fix."""
    from rgt_tui.domain.queue_state import BY_GROUP

    stopped = _cell(KILLED, exit_code=143, started_at=110, ended_at=180, killed_by=BY_GROUP)
    quiet = group_view(
        "g", [RankView(0, "b1", _view(stopped)), RankView(1, "b2", None, "timed out")]
    )
    assert quiet.cells[0].status == KILLED
    assert quiet.cells[0].note == (
        "rank 1 (b2) does not answer (timed out): preempted or lost? the other ranks were "
        "stopped with it"
    ), quiet.cells[0].note
    peer = "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed."
    after = _cell(FAILED, exit_code=1, started_at=110, ended_at=185, note=peer)
    back = group_view("g", [RankView(0, "b1", _view(stopped)), RankView(1, "b2", _view(after))])
    assert back.cells[0].note.startswith(
        "rank 0 (b1) was stopped by its group first (a rank did not answer, or failed); "
        "rank 1 (b2) then failed (exit 1), its peer gone"
    ), back.cells[0].note
    # A fault of its own (no peer gone) is still named first, the kill after it.
    own = _cell(FAILED, exit_code=1, started_at=110, ended_at=185, note="RuntimeError: boom")
    named = group_view("g", [RankView(0, "b1", _view(stopped)), RankView(1, "b2", _view(own))])
    assert named.cells[0].note == "rank 1 (b2) failed first (exit 1): RuntimeError: boom"


def test_a_rank_interrupted_first_is_named_without_an_exit_it_does_not_have() -> None:
    """h617 #4: a rank with no end record (interrupted) read "rank 1 (b2) interrupted
    first (interrupted)", the group's cell carrying no exit code."""
    cut = _cell(INTERRUPTED, started_at=110, ended_at=150, note="no end record")
    peer = "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: gone"
    lost = _cell(FAILED, exit_code=1, started_at=110, ended_at=160, note=peer)
    view = group_view("g", [RankView(0, "b1", _view(lost)), RankView(1, "b2", _view(cut))])
    cell = view.cells[0]
    assert cell.note == "rank 1 (b2) interrupted first: no end record", cell.note
    assert cell.exit_code is None


def test_a_cell_runs_only_while_every_rank_runs_it() -> None:
    running, pending = _cell(RUNNING, started_at=110), _cell(PENDING)
    view = group_view("g", [RankView(0, "b1", _view(running)), RankView(1, "b2", _view(pending))])
    assert view.cells[0].status == RUNNING and "waiting for rank 1 (b2)" in view.cells[0].note
    # A rank whose box did not answer is said so, as docs/groups.md promises, not waited
    # for (h617 #5).
    quiet = group_view(
        "g", [RankView(0, "b1", _view(running)), RankView(1, "b2", None, "connection refused")]
    )
    assert quiet.cells[0].status == RUNNING
    assert (
        quiet.cells[0].note
        == "rank 1 (b2) does not answer (connection refused): preempted or lost?"
    )
    done = group_view("g", [RankView(0, "b1", _view(_cell(DONE))), RankView(1, "b2", None, "gone")])
    assert "rank 1 (b2) not read: gone" in done.cells[0].note  # said, not guessed
    both = group_view("g", [RankView(r, f"b{r}", _view(_cell(DONE))) for r in (0, 1)])
    assert both.cells[0].status == DONE


def test_the_others_are_stopped_when_a_rank_dies_or_its_box_goes_quiet() -> None:
    died = RankView(1, "b2", _view(_cell(FAILED, exit_code=1, ended_at=150), alive=False))
    running = RankView(0, "b1", _view(_cell(RUNNING, started_at=110)))
    order = stop_order([running, died], {}, 0.0)
    assert order is not None and order.ranks == (0,) and "rank 1 (b2)" in order.why
    # A failure before this launch is history: a relaunch is not stopped by it.
    old = RankView(1, "b2", _view(_cell(FAILED, exit_code=1, ended_at=90), launched=100))
    assert stop_order([running, old], {}, 0.0) is None
    quiet = RankView(1, "b2", None, "connection refused")
    assert stop_order([running, quiet], {1: 0.0}, LOST_AFTER_S - 1) is None
    lost = stop_order([running, quiet], {1: 0.0}, LOST_AFTER_S)
    assert lost is not None and lost.ranks == (0,) and "lost" in lost.why


def test_a_rank_back_from_silence_still_running_a_cell_the_group_stopped_is_stopped() -> None:
    """A groups hour (s39 #1): box3 went quiet, the group stopped rank 0 (killed by the
    group); box3 answered again still running the cell, alone, billing, and no order
    came (only a failed or cut-short cell stopped peers). A user's kill with ``--then
    next`` is no such order: every rank goes on to the next cell together."""
    stopped = _cell(KILLED, exit_code=143, started_at=110, ended_at=150, killed_by=BY_GROUP)
    rank0 = RankView(0, "b1", _view(stopped, alive=False))
    back = RankView(1, "b2", _view(_cell(RUNNING, started_at=110)))
    order = stop_order([rank0, back], {}, 200.0)
    assert order is not None and order.ranks == (1,) and order.cell == "a", order
    assert "rank 0 (b1) stopped with its group (exit 143) in a" in order.why, order.why
    by_user = _cell(KILLED, exit_code=143, started_at=110, ended_at=150, killed_by=BY_USER)
    later = CellView(1, "b", RUNNING, started_at=151)
    rank0_next = RankView(0, "b1", _view(by_user, later))
    rank1_next = RankView(1, "b2", _view(by_user, later))
    assert stop_order([rank0_next, rank1_next], {}, 200.0) is None


def test_a_users_kill_that_did_not_reach_a_rank_leaves_the_cell_running_there() -> None:
    """h572 #2: rank 1's box did not answer the user's kill; the group read the cell as
    failed (rank 0 killed first), so no kill found it running and rank 1 ran on alone."""
    by_user = _cell(KILLED, exit_code=143, started_at=110, ended_at=150, killed_by=BY_USER)
    ranks = [
        RankView(0, "b1", _view(by_user, alive=False)),
        RankView(1, "b2", _view(_cell(RUNNING, started_at=110))),
    ]
    view = group_view("g", ranks)
    assert view.current is not None and view.current.name == "a"
    assert view.current.note == (
        "killed by the user on rank 0 (b1), still running on rank 1 (b2): the kill did not "
        "reach it — kill it again"
    )
    both = [RankView(r, f"b{r}", _view(by_user, alive=False)) for r in (0, 1)]
    assert group_view("g", both).cells[0].status == KILLED  # reached every rank
    # Not missed (review h574 #5): a rank whose kill is under way (in its TERM grace),
    # and a rank running a later attempt (a relaunch) beside the old kill's record.
    ending = _cell(RUNNING, started_at=110, killed_by=BY_USER, note="kill asked by the user")
    later = _cell(RUNNING, started_at=300)
    for other in (ending, later):
        view = group_view("g", [ranks[0], RankView(1, "b2", _view(other))])
        assert "the kill did not reach it" not in view.cells[0].note, view.cells[0]
    # The later attempt runs: read so, not "failed" by the old kill, or no kill finds it
    # running alone (h575 #1).
    alone = group_view("g", [ranks[0], RankView(1, "b2", _view(later))])
    assert alone.current is not None and alone.current.note == "waiting for rank 0 (b1)"
    # ... with the running attempt's start, not the old kill's (review h576 #1).
    current = alone.current
    assert (current.started_at, current.ended_at, current.exit_code) == (300, None, None)
    # A kill with no end record (its runner died too) is no earlier attempt (h576 #2).
    no_end = _cell(KILLED, exit_code=143, started_at=110, killed_by=BY_USER)
    still = RankView(1, "b2", _view(_cell(RUNNING, started_at=110)))
    view = group_view("g", [RankView(0, "b1", _view(no_end, alive=False)), still])
    assert "the kill did not reach it" in view.cells[0].note, view.cells[0]
    # The user's kill with a rank not heard: not blamed on that rank (h575 #3).
    quiet = group_view("g", [ranks[0], RankView(1, "b2", None, "connection refused")])
    assert quiet.cells[0].status == KILLED
    assert quiet.cells[0].note == (
        "killed by the user; rank 1 (b2) does not answer (connection refused): whether it "
        "still runs there is not known (rgt-tui status b2)"
    )


def _stopped_view(*cells: CellView, stop_by: str, stopped_before: int | None) -> QueueView:
    launch = RunnerLaunch(100, "boot", "tmux", 0, "run_queue.sh", 42, stop_by=stop_by,
                          stop_requested_at=150 if stop_by else None,
                          stopped_before=stopped_before)  # fmt: skip
    state = USER_STOPPED if stopped_before is not None else "finished"
    return QueueView("g", state, cells, launch, "boot", 200, stopped_before, False, group_job=True)


def test_a_rank_that_failed_by_itself_is_the_groups_stop_not_the_users() -> None:
    """ux-h #1: rank 1 failed at start, the watch killed rank 0 with the kill verb (which
    records "user") and stopped its queue before cell 1."""
    a = CellView(0, "a", KILLED, 143, 110, 150, 1, note="killed by the user")
    b = CellView(1, "b", PENDING)
    rank0 = RankView(0, "b1", _stopped_view(a, b, stop_by="kill", stopped_before=1))
    died = CellView(0, "a", FAILED, 1, 110, 111, 1, note="ModuleNotFoundError: torch")
    rank1 = RankView(1, "b2", _stopped_view(died, CellView(1, "b", PENDING), stop_by="",
                                            stopped_before=None))  # fmt: skip
    view = group_view("g", [rank0, rank1])
    assert view.state == GROUP_STOPPED and view.resume_index == 0  # not 1: a failed, rerun it
    assert view.stop_text().startswith("rank 1 (b2) failed first in cell 0 (a); the other")
    assert view.launch is not None and not view.launch.stopped_by_user
    shown = with_group_stop([rank0, rank1])
    assert shown[0].view is not None and "user" not in shown[0].view.stop_text()
    assert shown[0].view.cells[0].note == "stopped with the group: rank 1 (b2) failed first"
    assert shown[1] == rank1  # the rank that failed is shown as its records say
    # Stopped between cells (no cell of its killed): the group's stop all the same.
    idle = RankView(0, "b1", _stopped_view(CellView(0, "a", PENDING), b, stop_by="kill",
                                           stopped_before=0))  # fmt: skip
    assert group_view("g", [idle, rank1]).state == GROUP_STOPPED


def test_a_kill_of_every_rank_stays_the_users_stop() -> None:
    a = CellView(0, "a", KILLED, 143, 110, 150, 1, note="killed by the user")
    b = CellView(1, "b", PENDING)
    ranks = [RankView(r, f"b{r}", _stopped_view(a, b, stop_by="kill", stopped_before=1))
             for r in (0, 1)]  # fmt: skip
    view = group_view("g", ranks)
    assert view.state == USER_STOPPED and view.resume_index == 1
    assert with_group_stop(ranks) == tuple(ranks)


def _rank_from_records(rank: int, box: str, fit_state: str, runner_tail: str) -> RankView:
    """A rank's own view, derived from its box's records as the probe reads them."""
    from rgt_tui.domain.queue_records import (
        cells_tsv_line,
        parse_cell_state,
        parse_cells_tsv,
        parse_runner_state,
    )
    from rgt_tui.domain.queue_state import derive_view

    deployed = parse_cells_tsv(cells_tsv_line(0, "fit", "run fit") + cells_tsv_line(1, "b", "b"))
    launches = parse_runner_state("launch 100 boot tmux 0 /r/run_queue.sh 42\n" + runner_tail)
    attempts = {"fit": parse_cell_state(fit_state)}
    view = derive_view(box, deployed, launches, attempts, boot_id="boot", now=200,
                       runner_alive=False)  # fmt: skip
    # A rank's cells source the group's env file, which the records' reader marks.
    return RankView(rank, box, replace(view, group_job=True))


def test_a_rank_the_group_stopped_says_so_from_its_own_record() -> None:
    """The watch's kill records ``group``: the stopped rank's own view (``queue show
    b1``, its Queue tab row, its gate) reads "stopped with its group" before any group
    view lays its words over it, and the group's stop is read from that record."""
    from rgt_tui.domain.group_run import own_stop

    rank0 = _rank_from_records(
        0, "b1", "start 110 boot 7\nkill 150 group stop\nend 152 143\n",
        "stop 150 kill\nstopped 153 1\ndone 153 0 1\n",
    )  # fmt: skip
    rank1 = _rank_from_records(1, "b2", "start 110 boot 8\nend 111 1\n", "done 112 0 1\n")
    own = rank0.view
    assert own is not None and own.cells[0].label == "stopped with its group (exit 143)"
    assert own.state == GROUP_STOPPED and "user" not in own.stop_text() + own.summary()
    stop = own_stop([rank0, rank1])
    assert stop is not None and (stop.rank, stop.index) == (1, 0)
    view = group_view("g", [rank0, rank1])
    assert view.state == GROUP_STOPPED and view.resume_index == 0
    assert view.stop_text().startswith("rank 1 (b2) failed first in cell 0 (fit)")
    shown = with_group_stop([rank0, rank1])[0].view
    assert shown is not None and shown.cells[0].note.startswith("stopped with the group: rank 1")
    # An older box's record says "user" for the same stop: inferred the group's all the same.
    old = _rank_from_records(
        0, "b1", "start 110 boot 7\nkill 150 user stop\nend 152 143\n",
        "stop 150 kill\nstopped 153 1\ndone 153 0 1\n",
    )  # fmt: skip
    assert old.view is not None and old.view.state == USER_STOPPED
    assert old.view.cells[0].label == "killed (exit 143)"
    assert group_view("g", [old, rank1]).state == GROUP_STOPPED


def test_a_box_holding_its_own_queue_is_no_rank_of_the_groups_job() -> None:
    """A box that ran its own queue since (or never ran the group's) holds records that
    are not the group's: a user's hour saw box1's own queue read as a failed group job."""
    job = _view(CellView(0, "fit", DONE, 0, 150, 160, 1), alive=False)
    own = replace(_view(CellView(0, "solo", FAILED, 1, 150, 160, 1)), group_job=False)
    mixed = group_view("g", [RankView(0, "box1", job), RankView(1, "box2", own)])
    assert [c.name for c in mixed.cells] == ["fit"]
    assert "rank 1 (box2) not read: its box holds its own queue's records" in mixed.cells[0].note
    alone = group_view("g", [RankView(0, "box1", own), RankView(1, "box2", own)])
    assert alone.state == NOT_DEPLOYED and alone.cells == () and not alone.runner_alive
