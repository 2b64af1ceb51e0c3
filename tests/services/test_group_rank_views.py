"""The group's watch keeps each rank's own view from the poll that read it (issue 41):
the pane's per-rank last lines and the Queue tab's rank picker show them without a read
of their own."""

from __future__ import annotations

from pathlib import Path

from support.samples import FLEET_TOML, write_fleet

from rgt_tui.domain.group_run import RankView
from rgt_tui.domain.queue_state import FAILED, RUNNING, CellView, QueueView
from rgt_tui.services.queue.group.supervise import GroupSupervisor

GROUP = """
[[groups]]
name = "pair"
hosts = ["a100-train", "h100-eval"]
master_addr = "10.0.0.5"
queue = "q.txt"
run = "echo {name}"
"""


def _view(host: str, status: str, note: str = "") -> QueueView:
    ended = 1200 if status == FAILED else None
    cell = CellView(0, "train", status, 1 if ended else None, 1000, ended, 1, note=note)
    return QueueView(host, "running", (cell,), None, "boot", 1300, None, group_job=True)


class _Ranks:
    """The backend's two reads the watch makes, answering fixed rank views (the SSH side
    is the e2e test's: tests/e2e/test_group_torchrun.py)."""

    def __init__(self, host: object, ranks: tuple[RankView, ...]) -> None:
        self.host = host
        self.ranks = ranks

    async def read_ranks(self, transport: object) -> tuple[RankView, ...]:
        return self.ranks

    async def kill_ranks(self, *args: object, **kwargs: object) -> None:
        return None


async def test_the_watch_keeps_each_rank_s_own_view_from_its_last_check(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path, FLEET_TOML + GROUP)
    ranks = (
        RankView(0, "a100-train", _view("a100-train", RUNNING)),
        RankView(1, "h100-eval", None, "connection refused"),
    )
    watch = GroupSupervisor(_Ranks(fleet.host("pair"), ranks))  # type: ignore[arg-type]
    assert watch.ranks == ()
    view = await watch.check(object())  # type: ignore[arg-type]
    assert [c.status for c in view.cells] == [RUNNING]
    assert watch.ranks == ranks  # what the pane and the Queue tab show, per rank
