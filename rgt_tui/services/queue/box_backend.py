"""The box runner: a host's cells run one after another by ``run_queue.sh`` on the box,
detached in tmux or ``setsid nohup`` over SSH (DESIGN.md, Queues).

Each verb of the scheduler protocol (``services.queue.scheduler``) is a record on the box
written by ``queue_ctl.sh`` and read by the runner (``launch``, ``append``, ``control``);
the view is the box's records (``records``) and the diagnosis reads the box's kernel log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.domain.queue_state import QueueView
from rgt_tui.domain.vanished import BoxFacts, Diagnosis, diagnose
from rgt_tui.services.queue import append, control, launch
from rgt_tui.services.queue.moved_skips import moved_cells
from rgt_tui.services.queue.records import read_queue_facts, view_from_facts
from rgt_tui.transport import Transport


@dataclass(frozen=True)
class BoxRunner:
    """A rented box over SSH (or this machine): every capability but the job gate."""

    host: HostConfig
    name: str = "box runner"
    stops_without_runner: bool = False  # the runner reads the stop: none alive, none to ask
    allocations: bool = False  # the box's own GPUs are its telemetry
    kill_how: str = "TERM to its processes, KILL after 10 s; its state records the kill by you."

    async def read_view(self, transport: Transport) -> QueueView:
        """The box's records, in one probe; a cell the local queue file moved reads moved."""
        facts = await read_queue_facts(self.host, transport)
        return view_from_facts(self.host, facts, await asyncio.to_thread(moved_cells, self.host))

    async def diagnose(self, transport: Transport) -> tuple[QueueView, Diagnosis]:
        """The view, and the cause of the latest vanished cell with the evidence for all
        four (reboot, OOM kill, a closed session, a GPU fault: the box's kernel log)."""
        facts = await read_queue_facts(self.host, transport, diag=True)
        # A cell moved off this box is no vanished run of it (its #moved-to record).
        view = view_from_facts(self.host, facts, await asyncio.to_thread(moved_cells, self.host))
        box = BoxFacts(
            boot_id=facts.boot_id,
            uptime_s=facts.uptime_s,
            oom_kill_now=facts.oom_now,
            dmesg=facts.dmesg,
            dmesg_lines=facts.dmesg_lines,
            session_name=tmux_session_name(self.host.name),
            session_present=facts.session_present,
            xid_lines=facts.xid_lines,
            gpu_lines=facts.gpu_lines,
            cuda_oom=facts.cuda_oom,
            nospace=facts.nospace,
            out_disks=facts.out_disks,
            spare=self.host.watch.spare,  # a dead GPU's next step names a spare (U22)
            worker_signals={
                name: cause.signal_number
                for name, cause in facts.torchrun.items()
                if cause.signal_number is not None
            },
        )
        return view, diagnose(view, facts.launches, facts.attempts, box)

    async def plan_launch(
        self, fleet: Fleet, transport: Transport, *, start_index: int = 0,
        detach: str = "auto", fresh: bool = False, acks: Iterable[str] = (),
        preflight: bool = True, retry_only: bool = False,
    ) -> launch.LaunchPlan:  # fmt: skip
        return await launch.plan_launch(
            fleet, self.host, transport, start_index=start_index, detach=detach, fresh=fresh,
            acks=acks, preflight=preflight, retry_only=retry_only,
        )  # fmt: skip

    async def launch(self, plan: launch.LaunchPlan, transport: Transport) -> launch.LaunchResult:
        return await launch.launch(plan, transport)

    async def append_cells(self, fleet: Fleet, transport: Transport) -> append.AppendResult:
        return await append.append_cells(fleet, self.host, transport)

    async def stop(self, transport: Transport) -> control.StopResult:
        return await control.stop_queue(self.host, transport)

    async def kill(
        self, transport: Transport, name: str | None = None, *, then: str = "next",
        grace_s: int = control.KILL_GRACE_S, check_timeout_s: float | None = None,
    ) -> control.KillResult:  # fmt: skip
        return await control.kill_cell(
            self.host, transport, name, then=then, grace_s=grace_s,
            check_timeout_s=check_timeout_s,
        )  # fmt: skip

    async def plan_retry(
        self, fleet: Fleet, transport: Transport, names: Iterable[str], *,
        allow_done: bool = False, acks: Iterable[str] = (), launch_acks: bool = True,
        resume: bool = False,
    ) -> control.RetryPlan:  # fmt: skip
        return await control.plan_retry(
            fleet, self.host, transport, names, allow_done=allow_done, acks=acks,
            launch_acks=launch_acks, resume=resume,
        )  # fmt: skip

    async def retry(
        self, plan: control.RetryPlan, transport: Transport, *, fleet: Fleet | None = None
    ) -> control.RetryResult:
        return await control.retry_cells(plan, transport, fleet=fleet)

    async def skip(self, transport: Transport, name: str, reason: str) -> None:
        await control.skip_cell(transport, self.host.name, name, reason)
