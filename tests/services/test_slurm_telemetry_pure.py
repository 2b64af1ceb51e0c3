"""The in-allocation GPU line's cadence and backoff (issue 32), with a recorded sampler:
when the srun step is refused the pane says why and the next try waits, growing with
each refusal in a row; a sample is taken at most every ``every_s``."""

from __future__ import annotations

from rgt_tui.domain.queue_state import RUNNING, CellView, QueueView
from rgt_tui.domain.slurm_jobs import ClusterSide, SlurmCell
from rgt_tui.domain.snapshot import GpuSample, HostSnapshot
from rgt_tui.services.queue.slurm.telemetry import AllocationTelemetry, InsideSample, inside_note

REFUSAL = "srun: error: Unable to create step for job 7: Access/permission denied"
H100 = GpuSample(0, "NVIDIA H100 80GB HBM3", None, 37.0, None, None, None,
                 2 << 30, 80 << 30, None, None, None, (), None)  # fmt: skip


def running_view(*tasks: str) -> QueueView:
    cells = tuple(
        CellView(i, f"c{i}", RUNNING, slurm=SlurmCell(f"c{i}", i, t, "RUNNING", node="n1"))
        for i, t in enumerate(tasks)
    )
    return QueueView("login", "running", cells, None, "b", 0, None, cluster=ClusterSide())


class Recorder:
    """Answers each srun with the next scripted answer; keeps what it was asked."""

    def __init__(self, clock: list[float], answers: list[str]) -> None:
        self.clock, self.answers, self.asked = clock, answers, []

    async def __call__(self, host, transport, task):  # type: ignore[no-untyped-def]
        self.asked.append(task)
        answer = self.answers.pop(0)
        if answer == "ok":
            snap = HostSnapshot("login", 0.0, gpus=(H100,))
            return InsideSample(task, "n1", self.clock[0], snapshot=snap)
        return InsideSample(task, "n1", self.clock[0], error=answer)


class Host:
    name = "login"


async def test_a_refusal_is_shown_with_srun_words_and_retried_only_after_a_growing_pause():
    now = [1000.0]
    rec = Recorder(now, [REFUSAL, REFUSAL, "ok"])
    tel = AllocationTelemetry(sampler=rec, clock=lambda: now[0], backoff_s=(60.0, 300.0))
    view = running_view("7_0")
    note = (await tel.annotate(Host(), None, view)).cluster.gpu_note  # type: ignore[arg-type, union-attr]
    assert note == (
        f"GPU telemetry not sampled on n1 (inside job 7_0): srun --overlap refused: {REFUSAL}"
        " (next try in 1m00s)"
    )
    now[0] += 59  # polls inside the pause do not ask srun again
    again = (await tel.annotate(Host(), None, view)).cluster.gpu_note  # type: ignore[arg-type, union-attr]
    assert rec.asked == ["7_0"] and REFUSAL in again and "next try in 1s" in again
    now[0] += 1
    await tel.annotate(Host(), None, view)  # type: ignore[arg-type]
    assert rec.asked == ["7_0", "7_0"]
    now[0] += 299  # the second refusal in a row waits longer
    await tel.annotate(Host(), None, view)  # type: ignore[arg-type]
    assert len(rec.asked) == 2
    now[0] += 1
    ok = (await tel.annotate(Host(), None, view)).cluster.gpu_note  # type: ignore[arg-type, union-attr]
    assert ok.startswith("GPU telemetry on n1 (inside job 7_0, 0s ago): GPU0 NVIDIA H100")
    assert "37% util · 2.0G/80G" in ok and "refused" not in ok


async def test_samples_come_at_most_every_every_s_and_a_new_task_is_sampled_at_once():
    now = [0.0]
    rec = Recorder(now, ["ok", "ok", "ok", "ok"])
    tel = AllocationTelemetry(sampler=rec, clock=lambda: now[0], every_s=30.0)
    await tel.annotate(Host(), None, running_view("7_0"))  # type: ignore[arg-type]
    now[0] = 10.0
    note = (await tel.annotate(Host(), None, running_view("7_0"))).cluster.gpu_note  # type: ignore[arg-type, union-attr]
    assert rec.asked == ["7_0"] and "10s ago" in note
    await tel.annotate(Host(), None, running_view("7_0", "7_1"))  # type: ignore[arg-type]
    assert rec.asked == ["7_0", "7_0", "7_1"]
    idle = await tel.annotate(Host(), None, running_view())  # type: ignore[arg-type]
    assert idle.cluster is not None and idle.cluster.gpu_note.startswith("GPU telemetry: no cell")


async def test_a_host_that_is_not_slurm_is_left_alone():
    rec = Recorder([0.0], [])
    plain = QueueView("box", "running", (), None, "b", 0, None)
    assert await AllocationTelemetry(sampler=rec).annotate(Host(), None, plain) is plain  # type: ignore[arg-type]
    assert rec.asked == [] and "no cell running" in inside_note((), 0.0)
