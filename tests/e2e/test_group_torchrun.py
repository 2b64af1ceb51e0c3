"""A group of two boxes runs each cell as one torchrun job (issue 41), over two real
OpenSSH servers on loopback, each box with its own HOME (so its own ``~/.rgt/queue``).

CPU torch with the gloo backend stands in for NCCL (no GPU here): the c10d rendezvous over
127.0.0.1, the all-reduce, the checkpoint and a dead peer behave as they would. One test
walks the whole life of a group's queue, to keep the CPU cost modest (two cores, one
process per box): a cell trains and checkpoints; a second is killed on rank 1 mid-run
while rank 0 sits outside any collective (it would not notice for two minutes), and the
runtime's queue poll stops rank 0 within 30 s, naming rank 1; a retry resumes it from the
checkpoint; the group's pull takes rank 0's results.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.machine import rendezvous_port
from support.queues import QUEUE_PREFLIGHT_ACK, QUEUE_PYTHON, QueueSshServer, started_boxes
from support.waiting import wait_for

from rgt_tui.domain.queue_state import DONE, FAILED, KILLED, RUNNING, QueueView
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.pull.run import pull_host
from rgt_tui.services.queue.backends import backend_for
from rgt_tui.services.runtime.queues import QueuePoller

TRAIN = Path(__file__).resolve().parent.parent / "support" / "ddp_train.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")
# is_host: rank 0's agent hosts the rendezvous store, as on real boxes, where only the
# master address's box matches its own name. Both "boxes" here are this machine, so each
# agent would claim it, the first to start would win, and when that was rank 1's (whose
# worker the test kills) rank 0's agent lost the store and ended FAILED by itself before
# the group's stop reached it (KILLED): a race under load, not the product's.
RUN = (
    f"{TORCHRUN} --nnodes {{nnodes}} --node-rank {{node_rank}} --nproc-per-node "
    "{nproc_per_node} --rdzv-backend c10d --rdzv-endpoint {master_addr}:{master_port} "
    "--rdzv-conf is_host=$(( {node_rank} == 0 )) "
    f"--rdzv-id {{name}} {TRAIN} {{out}} {{epochs}} {{task}}"
)


@pytest.fixture
def boxes(tmp_path: Path) -> Iterator[tuple[QueueSshServer, QueueSshServer]]:
    with started_boxes(tmp_path, ("box1", "box2")) as made:
        yield made[0], made[1]


def _fleet_file(tmp_path: Path, boxes: tuple[QueueSshServer, ...]) -> Path:
    acks = ", ".join(f'"{n}"' for n in QUEUE_PREFLIGHT_ACK)
    text = f'[fleet]\nresults_dir = "{tmp_path / "results"}"\n\n'
    for box in boxes:
        text += box._hosts_toml() + f'preflight_ack = [{acks}]\npython = "{QUEUE_PYTHON}"\n\n'
    queue = tmp_path / "queues" / "pair.txt"
    queue.parent.mkdir(parents=True)
    queue.write_text("cfg/fit.toml fast 3\ncfg/crash.toml hold 4\n")
    text += (
        "[[groups]]\n"
        'name = "pair"\n'
        'hosts = ["box1", "box2"]\n'
        "nproc_per_node = 1\n"
        f'queue = "{queue}"\n'
        f"run = '''{RUN}'''\n"
        'workdir = "~"\n'
        'durable_dir = "~/results"\n'
        'master_addr = "127.0.0.1"\n'
        f"master_port = {rendezvous_port()}\n"
        'nccl_socket_ifname = "lo"\n'
        "nccl_timeout_s = 300\n"
    )
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def _cell(view: QueueView, name: str) -> str:
    return next(c.status for c in view.cells if c.name == name)


def _worker_of(rank: int) -> psutil.Process | None:
    """The training worker torchrun started for box rank ``rank`` (its environment says)."""
    for proc in psutil.process_iter(["cmdline"]):
        argv = proc.info["cmdline"] or []
        if str(TRAIN) not in argv or str(TORCHRUN) in argv:
            continue
        try:
            if proc.environ().get("RGT_NODE_RANK") == str(rank):
                return proc
        except psutil.Error:
            continue
    return None


# Three torchrun launches of two boxes each on a shared two-core machine: minutes, not seconds.
@pytest.mark.timeout(600)
async def test_a_group_runs_one_torchrun_and_stops_together(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    box1, box2 = boxes
    fleet = load_fleet(_fleet_file(tmp_path, boxes))
    group = fleet.host("pair")
    connections = FleetConnections(fleet.hosts)
    backend = backend_for(group, connections)
    transport = connections.transport("pair")
    try:
        plan = await backend.plan_launch(fleet, transport)
        assert plan.ok, plan.problems
        assert any("NCCL_DEBUG=INFO" in n for n in plan.notes)  # the group's first launch
        assert any("--max-restarts" in n for n in plan.notes)  # MN5 said before the run
        await backend.launch(plan, transport)

        # The runtime's poll of the group, as the TUI and `watch` run it.
        views: list[QueueView] = []
        poller = QueuePoller(
            connections, on_view=lambda h, v: views.append(v), is_live=lambda h: True, poll_s=1
        )

        async def polled(check: object) -> bool:
            view = await poller.poll_once(group)
            return view is not None and check(view)  # type: ignore[operator]

        await wait_for(lambda: polled(lambda v: _cell(v, "fit") == DONE), 240, "cell fit done")
        fit1 = (box1.workdir / ".rgt/queue/cells/fit.log").read_text()
        fit2 = (box2.workdir / ".rgt/queue/cells/fit.log").read_text()
        assert "allreduce 3 world 2" in fit1 and "allreduce 3 world 2" in fit2  # 1 + 2
        assert "step 3 loss" in fit1 and "step 3 loss" in fit2  # per-rank logs, per box
        assert (box1.workdir / "results/fit/ckpt.pt").is_file()
        assert not (box2.workdir / "results/fit/ckpt.pt").exists()  # rank 0 writes it
        env2 = (box2.workdir / ".rgt/group.env").read_text()
        assert "RGT_NODE_RANK=1" in env2 and "NCCL_SOCKET_IFNAME=lo" in env2
        assert "NCCL_DEBUG=INFO" in env2 and "TORCH_NCCL_ASYNC_ERROR_HANDLING=1" in env2

        # Cell crash: rank 0 holds outside any collective after step 2; rank 1 dies.
        crash_log = box1.workdir / ".rgt/queue/cells/crash.log"
        await wait_for(
            lambda: crash_log.exists() and "holding" in crash_log.read_text(), 120, "holding"
        )
        worker = await wait_for(lambda: _worker_of(1), 30, "rank 1's worker")
        loop = asyncio.get_running_loop()
        killed_at = loop.time()
        worker.kill()
        await wait_for(
            lambda: polled(lambda v: _cell(v, "crash") == FAILED and not v.runner_alive),
            30,
            "the group's cell failed on both boxes",
        )
        assert loop.time() - killed_at < 30
        crash = next(c for c in views[-1].cells if c.name == "crash")
        assert crash.note.startswith("rank 1 (box2) failed first"), crash.note
        # torchrun exits 1 and ends on its banner: the note and diagnose read its summary.
        assert "a worker was killed by SIGKILL (torchrun: exitcode -9" in crash.note, crash.note
        _, diagnosis = await backend.diagnose(transport)
        assert diagnosis.summary.startswith(
            "rank 1 (box2): cell 1 (crash) had its worker killed by SIGKILL"
        ), diagnosis.summary
        assert diagnosis.cause == "manual kill", diagnosis
        rank0 = await backend.read_ranks(transport)
        assert rank0[0].view is not None and _cell(rank0[0].view, "crash") == KILLED
        assert _cell(rank0[1].view, "crash") == FAILED  # type: ignore[arg-type]

        # A relaunch from its index would resume it from the checkpoint in its output
        # path (MN5); so does a resume (s43), which marks it on every rank, keeping that
        # output (a plain retry sets it aside and starts afresh), and launches the group
        # for it alone.
        again = await backend.plan_launch(fleet, transport, start_index=1)
        assert again.ok, again.problems
        assert not any("NCCL_DEBUG=INFO" in n for n in again.notes)  # not the first launch
        resume = await backend.plan_retry(fleet, transport, ["crash"], resume=True)
        assert resume.ok and resume.resume, resume.problems
        resumed_by = await backend.retry(resume, transport, fleet=fleet)
        assert resumed_by.launched is not None
        assert [a for _, a in resumed_by.aside] == ["="]  # kept, as a resume: nothing set aside
        await wait_for(lambda: polled(lambda v: _cell(v, "crash") == DONE), 240, "crash resumed")
        resumed = crash_log.read_text().split("loaded step")[-1]
        assert resumed.split()[0] == "2", resumed[:80]
        assert "NCCL_DEBUG=WARN" in (box2.workdir / ".rgt/group.env").read_text()

        # Pull takes the results from rank 0's durable dir.
        result = await pull_host(group, fleet.results_dir, transport)
        assert not result.failed
        assert (fleet.results_dir / "pair" / "fit" / "ckpt.pt").is_file()
        assert (fleet.results_dir / "pair" / "crash" / "metrics.json").is_file()
        assert not any(c.status == RUNNING for c in views[-1].cells)
    finally:
        await connections.close_all()
