"""The Slurm backend (issue 32): a login node whose queue runs as job arrays.

Each verb of the scheduler protocol (``services.queue.scheduler``) in Slurm's terms:
launch and append submit arrays (``slurm.launch``), stop holds the pending tasks, kill
scancels a task, retry submits a new array of the retried cells, skip scancels a pending
task first (``slurm.control``); the view lays squeue/sacct's states over the box's
records (``slurm.view``), and the teardown gate waits for the queue's jobs to end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, replace

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.slurm_queue import slurm_view
from rgt_tui.domain.slurm_vanished import SlurmLimits, diagnose_slurm
from rgt_tui.domain.teardown_gate import SlurmJobsSeen
from rgt_tui.domain.text import printable
from rgt_tui.domain.vanished import Diagnosis
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.credentials import launch_credentials
from rgt_tui.services.preflight_smoke import send_cell_env
from rgt_tui.services.queue import control as box
from rgt_tui.services.queue.append import AppendResult
from rgt_tui.services.queue.launch import LaunchPlan, LaunchResult, plan_launch
from rgt_tui.services.queue.moved_skips import moved_cells
from rgt_tui.services.queue.records import read_queue_facts, view_from_facts
from rgt_tui.services.queue.slurm import control
from rgt_tui.services.queue.slurm.launch import (
    append_slurm_cells,
    plan_slurm_launch,
    submit,
    submit_indices,
    workdir_code_id,
)
from rgt_tui.services.queue.slurm.view import read_slurm, requeue_diagnosis, with_requeues
from rgt_tui.transport import Transport


@dataclass(frozen=True)
class SlurmBackend:
    """A Slurm cluster's login node: every capability of the protocol."""

    host: HostConfig
    name: str = "Slurm"
    stops_without_runner: bool = True  # the pending tasks are held: no runner to ask
    allocations: bool = True  # running cells' GPUs are sampled inside their allocations
    kill_how: str = (
        "scancel of its array task: Slurm sends TERM, then KILL after the cluster's "
        "KillWait; its state records the kill by you."
    )

    async def read_view(self, transport: Transport) -> QueueView:
        """The box's records with each cell's array task laid over them."""
        facts = await read_queue_facts(self.host, transport)
        seen = await read_slurm(self.host, transport)
        # A cell the local queue file moved reads moved (the login node records it later).
        view = view_from_facts(self.host, facts, await asyncio.to_thread(moved_cells, self.host))
        return with_requeues(slurm_view(view, seen.cells, seen.cluster, squeue_ok=seen.squeue_ok))

    async def diagnose(self, transport: Transport) -> tuple[QueueView, Diagnosis]:
        """The job state says why a cell ended, not the login node's kernel."""
        view = await self.read_view(transport)
        slurm = self.host.slurm
        assert slurm is not None  # backend_for chose this backend for it
        found = diagnose_slurm(view, SlurmLimits(slurm.mem, slurm.time, slurm.signal_lead_s))
        return view, requeue_diagnosis(view, found)  # nothing vanished, a task requeued

    async def plan_launch(
        self, fleet: Fleet, transport: Transport, *, start_index: int = 0,
        detach: str = "auto", fresh: bool = False, acks: Iterable[str] = (),
        preflight: bool = True, retry_only: bool = False,
    ) -> LaunchPlan:  # fmt: skip
        """The box runner's plan (cells, preflight, prefix checks) made a job array's."""
        return await plan_slurm_launch(
            fleet, self.host, transport, plan_launch, start_index=start_index, detach=detach,
            fresh=fresh, acks=acks, preflight=preflight, retry_only=retry_only,
        )  # fmt: skip

    async def launch(self, plan: LaunchPlan, transport: Transport) -> LaunchResult:
        """``sbatch --array`` of the plan; the result's pid is the array's job id."""
        if not plan.ok:
            raise QueueError(
                plan.host, "the launch plan has problems:\n" + "\n".join(plan.problems)
            )
        await transport.connect()
        creds_line = await launch_credentials(plan.host, plan.credentials, transport)
        # The mirrors every cell exports (run_one.sh sources ~/.rgt/cell.env, on the
        # cluster's shared home), as a box launch writes them.
        await send_cell_env(plan.host, plan.cell_env, transport)
        job, archived = await submit(plan, transport)
        return LaunchResult(
            plan.host, job, "slurm", plan.session, plan.start_index, len(plan.to_run), archived,
            creds_line,
        )  # fmt: skip

    async def append_cells(self, fleet: Fleet, transport: Transport) -> AppendResult:
        """The appended cells submitted as a new array."""
        added, detail = await append_slurm_cells(fleet, self.host, transport, plan_launch)
        return AppendResult(self.host.name, added, bool(added), detail)

    async def stop(self, transport: Transport) -> box.StopResult:
        """Hold the arrays' pending tasks; the running ones finish."""
        view = await self.read_view(transport)
        held = await control.slurm_stop(self.host, transport)
        return box.StopResult(
            self.host.name, held.already, view.current, held.held, held.not_held, held.running,
            holds=True,
        )  # fmt: skip

    async def kill(
        self, transport: Transport, name: str | None = None, *, then: str = "next",
        grace_s: int = box.KILL_GRACE_S, check_timeout_s: float | None = None,
    ) -> box.KillResult:  # fmt: skip
        """scancel of the cell's task (Slurm's KillWait is the grace)."""
        if then not in box.KILL_THEN:
            raise ValueError(f"then must be next or stop, not {then!r}")
        killed = await control.slurm_kill(
            self.host, transport, name, then=then,
            check_timeout_s=check_timeout_s if check_timeout_s is not None else 60.0,
        )  # fmt: skip
        try:
            after: QueueView | None = await self.read_view(transport)
        except TransportError:
            after = None
        cell = next((c for c in after.cells if c.name == killed.name), None) if after else None
        return box.KillResult(
            self.host.name, killed.name, 0, then, False, killed.ended, cell, after, killed.task
        )

    async def plan_retry(
        self, fleet: Fleet, transport: Transport, names: Iterable[str], *,
        allow_done: bool = False, acks: Iterable[str] = (), launch_acks: bool = True,
        resume: bool = False,
    ) -> box.RetryPlan:  # fmt: skip
        """The box runner's checks, plus: a cell whose task Slurm still holds must end
        first; no launch is planned (the retry submits a new array of the cells)."""
        wanted = list(dict.fromkeys(n.strip() for n in names if n.strip()))
        if not wanted:
            raise ValueError("name at least one cell to retry")
        live = await control.live_task_problems(self.host, transport, wanted)
        plan = await box.plan_retry(
            fleet, self.host, transport, wanted, allow_done=allow_done, refused=live,
            with_launch=False, resume=resume,
        )  # fmt: skip
        return replace(plan, running=False, submits=self.name)

    async def retry(
        self, plan: box.RetryPlan, transport: Transport, *, fleet: Fleet | None = None
    ) -> box.RetryResult:
        """The retry records (outputs set aside unless a resume), then a new array of those indices with
        the code the workdir holds now (read first: nothing is recorded if the box does
        not answer)."""
        code_id = await workdir_code_id(fleet, self.host, transport)
        aside, _ = await box.mark_retry(plan, transport, fleet=fleet)
        indices = [c.index for c in plan.cells]
        try:
            job = await submit_indices(self.host, transport, indices, kind="retry", code_id=code_id)
        except QueueError as exc:
            kept = "kept" if plan.resume else "set aside"
            raise QueueError(plan.host, f"{exc.message} — the outputs were {kept} and the "
                             "retry recorded, but no array was submitted", code=exc.code) from exc  # fmt: skip
        return box.RetryResult(plan.host, aside, False, None, job_id=str(job))

    async def skip(self, transport: Transport, name: str, reason: str) -> None:
        """The cell's pending task scancel'ed (refused while it runs), then the record."""
        await transport.connect()
        await control.cancel_pending_of(self.host, transport, name)
        await box.skip_cell(transport, self.host.name, name, reason)

    async def jobs_seen(self, transport: Transport) -> SlurmJobsSeen:
        """The queue's tasks squeue still lists, or why they could not be read."""
        try:
            return SlurmJobsSeen(
                control.jobs_evidence(await control.host_tasks(self.host, transport))
            )
        except (QueueError, TransportError) as exc:
            return SlurmJobsSeen((), error=printable(exc.message, 300))

    async def cancel_jobs(self, transport: Transport, typed: str) -> control.CancelResult:
        """scancel of every task of the queue, once the host's name was typed."""
        return await control.cancel_jobs(self.host, transport, typed)
