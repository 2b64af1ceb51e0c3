"""The group backend: a ``[[groups]]`` host whose every cell is one ``torchrun`` over its
boxes, one rank per box, stopped together (issue 41; docs/groups.md).

Each verb fans out to every rank's box with the box runner's own use-cases (``launch``,
``append``, ``control``) on that rank's host (``ranks.rank_hosts``); the view is every
rank's records read together and read as one job (``domain.group_run.group_view``). The
group is reached through rank 0's connection (the ``transport`` every verb is given);
the other boxes' connections are borrowed from the fleet's (``links``) or opened per verb.

Over 450 lines on purpose: each verb's fan-out and the reading of its ranks' answers (a
rank not reached, a kill that missed one) are the one backend contract of
``scheduler.Backend``; what a group's records mean is ``domain.group_run``'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.group_run import (
    RankView,
    group_view,
    rank_env,
    unanswered_diagnosis,
    unanswered_first,
)
from rgt_tui.domain.queue_state import BY_GROUP, KILLED, QueueView
from rgt_tui.domain.vanished import Diagnosis
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.journal import torn_down_refusal
from rgt_tui.services.queue import append, control, launch
from rgt_tui.services.queue.box_backend import BoxRunner
from rgt_tui.services.queue.group.preflight import group_checks, with_group_preflight
from rgt_tui.services.queue.group.ranks import (
    MemberLinks,
    each_rank,
    rank_hosts,
    rank_transports,
    reason,
    who,
    write_env,
)
from rgt_tui.services.queue.group.supervise import GroupSupervisor
from rgt_tui.services.queue.scheduler import Watch
from rgt_tui.transport import Transport

# What the plan says of the job beyond the cells (MN5): a restart restores no state.
RESTART_NOTE = (
    "a relaunched cell resumes only from the checkpoint in its {out}: torchrun's "
    "--max-restarts restarts the processes, never their state (MN5) — load the latest "
    "checkpoint at the top of every launch"
)


@dataclass(frozen=True)
class GroupLaunchPlan(launch.LaunchPlan):
    """The group's launch: rank 0's plan (what is shown) with every rank's problems, and
    each rank's own plan and environment, launched together."""

    ranks: tuple[launch.LaunchPlan, ...] = ()
    envs: tuple[dict[str, str], ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class GroupBackend:
    """A group of boxes: launch, append, stop, kill, retry and skip fan out to every rank."""

    host: HostConfig
    links: MemberLinks | None = field(default=None, compare=False)
    name: str = "group"
    stops_without_runner: bool = False
    allocations: bool = False

    @property
    def boxes(self) -> tuple[str, ...]:
        """The group's boxes, rank 0 first."""
        assert self.host.group is not None
        return self.host.group.hosts

    @property
    def kill_how(self) -> str:
        """What a kill really does, said in the dialog before it runs (``Killable``)."""
        ranks = ", ".join(who(self.host, r) for r in range(len(self.boxes)))
        return (
            f"It is killed on every rank at once ({ranks}): TERM to each rank's processes, "
            f"KILL after {control.KILL_GRACE_S} s — one torchrun job is all its ranks or none."
        )

    def watch(self) -> Watch:
        """The watch that stops the other ranks when one dies (``supervise``)."""
        return GroupSupervisor(self)

    # -- reading ---------------------------------------------------------------------------

    async def read_ranks(self, transport: Transport) -> tuple[RankView, ...]:
        """Every rank's view; a box that did not answer is a RankView with its error."""
        ranks = rank_hosts(self.host)
        async with rank_transports(self.host, transport, self.links) as links:
            got = await each_rank(links, lambda r, t: BoxRunner(ranks[r]).read_view(t))
        assert self.host.group is not None
        boxes = self.host.group.hosts
        return tuple(
            RankView(r, boxes[r], None, reason(v))
            if isinstance(v, BaseException)
            else RankView(r, boxes[r], v)
            for r, v in enumerate(got)
        )

    async def read_view(self, transport: Transport) -> QueueView:
        """The group's cells as one job from every rank's records. QueueError when no
        rank's box answered (one that did not is named in the cells' notes)."""
        try:
            return group_view(self.host.name, await self.read_ranks(transport))
        except LookupError as exc:
            raise QueueError(self.host.name, str(exc)) from None

    async def diagnose(self, transport: Transport) -> tuple[QueueView, Diagnosis]:
        """The group's view, and the diagnosis of the rank whose cell ended first."""
        views = await self.read_ranks(transport)
        view = group_view(self.host.name, views)
        failed = view.last_failed
        quiet = unanswered_first(failed.name, views) if failed is not None else None
        if failed is not None and quiet is not None:  # the survivor's error is not its own
            return view, unanswered_diagnosis(self.host.name, failed, quiet)
        silent = next((r for r in views if r.view is None), None)
        since = view.launch.ts if view.launch is not None else 0
        stopped = [  # the group's own stop in this launch: never a kill of the user's
            c
            for c in view.cells
            if c.status == KILLED and c.killed_by == BY_GROUP and (c.ended_at or 0) >= since
        ]
        if failed is None and silent is not None and stopped:
            # The group stopped the others because this rank went quiet: its cell reads
            # "killed", no failure, and rank 0's box said "nothing vanished" (h572 #3).
            last = max(stopped, key=lambda c: c.ended_at or 0)
            return view, unanswered_diagnosis(self.host.name, last, silent)
        rank = 0
        if failed is not None and failed.note.startswith("rank "):
            rank = int(failed.note.split()[1])
        ranks = rank_hosts(self.host)
        async with rank_transports(self.host, transport, self.links) as links:
            _, diagnosis = await BoxRunner(ranks[rank]).diagnose(links[rank])
        return view, replace(diagnosis, summary=f"{who(self.host, rank)}: {diagnosis.summary}")

    # -- launching ---------------------------------------------------------------------------

    async def plan_launch(
        self, fleet: Fleet, transport: Transport, *, start_index: int = 0,
        detach: str = "auto", fresh: bool = False, acks: Iterable[str] = (),
        preflight: bool = True, retry_only: bool = False,
    ) -> GroupLaunchPlan:  # fmt: skip
        """Every rank's plan (each box's preflight, records and prefix checks); the
        group's problems are all of theirs, each naming its rank."""
        ranks = rank_hosts(self.host)
        acked = tuple(acks)

        async def plan(rank: int, t: Transport) -> launch.LaunchPlan:
            return await launch.plan_launch(
                fleet, ranks[rank], t, start_index=start_index, detach=detach, fresh=fresh,
                acks=acked, preflight=preflight, retry_only=retry_only,
            )  # fmt: skip

        async with rank_transports(self.host, transport, self.links) as links:
            # Every box first, as `rgt-tui preflight GROUP` does: a box down took 51 s of
            # rank 0's preflight and the group's checks over the box that did not answer
            # ("python ok every box", a rendezvous failure blaming master_addr), then a
            # refusal naming the group, not the box (h617 #2).
            down = self._unreachable(await each_rank(links, lambda r, t: t.connect()))
            got: list[launch.LaunchPlan | BaseException] = []
            if not down:
                got = await each_rank(links, plan)
            # The group's own checks across the boxes (issue 41: same code, rendezvous,
            # MN1-MN4), only over every box's own preflight: a rank whose plan stopped
            # short of it (its box lost since) has nothing to compare.
            checked = None
            if (
                preflight
                and got
                and all(isinstance(p, launch.LaunchPlan) and p.preflight is not None for p in got)
            ):
                reports = [p.preflight for p in got if isinstance(p, launch.LaunchPlan)]
                checked = await group_checks(self.host, links, reports)
        plans: list[launch.LaunchPlan] = []
        problems: list[str] = list(down)
        warnings: list[str] = []
        for rank, p in enumerate(got):
            if isinstance(p, BaseException):
                problems.append(f"{who(self.host, rank)}: {reason(p)}")
                continue
            plans.append(p)
            problems += [f"{who(self.host, rank)}: {line}" for line in p.problems]
            # Rank 0's warnings are the group's; the others' only where they differ.
            warnings += [
                line if rank == 0 else f"{who(self.host, rank)}: {line}"
                for line in p.warnings
                if rank == 0 or line not in plans[0].warnings
            ]
        # A rank's box recorded torn down (GEN1) is refused, as a launch on that box alone
        # is: the ranks' plans run under the group's name, whose journal holds no teardown.
        assert self.host.group is not None
        for rank, box in enumerate(self.host.group.hosts):
            torn = await asyncio.to_thread(torn_down_refusal, fleet, box)
            problems += [f"{who(self.host, rank)}: {torn}"] if torn else []
        if len(plans) != len(ranks):
            return GroupLaunchPlan(
                host=self.host.name, cells=(), start_index=start_index, detach="",
                session=f"rgt-{self.host.name}", box_queue_dir="", workdir=self.host.workdir,
                problems=tuple(problems),
            )  # fmt: skip
        lead = plans[0]
        # NCCL_DEBUG=INFO on the group's first launch: rank 0's box never ran this queue.
        first = fresh or lead.current is None or lead.current.launch is None
        info = self.host.group
        assert info is not None
        envs = tuple(
            rank_env(info, self.host.name, r, first_launch=first) for r in range(len(plans))
        )
        notes = (
            *lead.notes,
            f"one torchrun over {info.nnodes} boxes ({', '.join(info.hosts)}; rank 0 "
            f"{info.hosts[0]}), rendezvous {info.master_addr}:{info.master_port}",
            "every rank exports: "
            + " ".join(f"{k}={v}" for k, v in envs[0].items() if k != "RGT_NODE_RANK"),
            RESTART_NOTE,
        )
        planned = replace(
            _as_group(lead, tuple(plans), envs),
            **_group_state(self.host, plans),
            host=self.host.name,
            problems=tuple(problems),
            warnings=tuple(dict.fromkeys(warnings)),
            notes=notes,
        )
        return (
            planned if checked is None else with_group_preflight(planned, self.host, checked, acked)
        )

    async def launch(self, plan: launch.LaunchPlan, transport: Transport) -> launch.LaunchResult:
        """Write every rank's environment, then start every rank; when one rank's start
        fails, the ranks already started are killed (a job is all its ranks or none)."""
        if not plan.ok:
            raise QueueError(
                plan.host, "the launch plan has problems:\n" + "\n".join(plan.problems)
            )
        if not isinstance(plan, GroupLaunchPlan) or len(plan.ranks) != len(rank_hosts(self.host)):
            raise QueueError(self.host.name, "not a group's launch plan: plan the launch again")
        async with rank_transports(self.host, transport, self.links) as links:
            wrote = await each_rank(links, lambda r, t: write_env(self.host.name, t, plan.envs[r]))
            self._raise_first(wrote)
            started = await each_rank(links, lambda r, t: launch.launch(plan.ranks[r], t))
            if any(isinstance(s, BaseException) for s in started):
                ranks = rank_hosts(self.host)
                await each_rank(
                    links,
                    lambda r, t: (
                        _quiet_kill(ranks[r], t)
                        if not isinstance(started[r], BaseException)
                        else _nothing()
                    ),
                )
            self._raise_first(started)
        lead = started[0]
        assert isinstance(lead, launch.LaunchResult)
        return replace(lead, host=self.host.name)

    async def append_cells(self, fleet: Fleet, transport: Transport) -> append.AppendResult:
        """Send the appended lines to every rank's box."""
        ranks = rank_hosts(self.host)
        async with rank_transports(self.host, transport, self.links) as links:
            got = await each_rank(links, lambda r, t: append.append_cells(fleet, ranks[r], t))
        self._raise_first(got)
        lead = got[0]
        assert isinstance(lead, append.AppendResult)
        return lead

    # -- control -----------------------------------------------------------------------------

    async def stop(self, transport: Transport) -> control.StopResult:
        """Stop every rank's queue after the cell that runs now."""
        ranks = rank_hosts(self.host)
        async with rank_transports(self.host, transport, self.links) as links:
            got = await each_rank(links, lambda r, t: control.stop_queue(ranks[r], t))
        ok = [g for g in got if isinstance(g, control.StopResult)]
        if not ok:
            self._raise_first(got)
        return ok[0]

    async def kill(
        self, transport: Transport, name: str | None = None, *, then: str = "next",
        grace_s: int = control.KILL_GRACE_S, check_timeout_s: float | None = None,
    ) -> control.KillResult:  # fmt: skip
        """Kill the cell on every rank that runs it (the others are told nothing: they
        do not run it): the user's kill (``k``, ``queue kill GROUP``), recorded as the
        user's on every rank. QueueError when no rank runs it."""
        if name is None:
            view = await self.read_view(transport)
            if view.current is None:
                raise QueueError(
                    self.host.name, "no cell is running: there is nothing to kill",
                    code="not-running",
                )  # fmt: skip
            name = view.current.name
        return await self.kill_ranks(
            transport, name, None, then=then, grace_s=grace_s, check_timeout_s=check_timeout_s,
            who="user",
        )  # fmt: skip

    async def kill_ranks(
        self, transport: Transport, name: str | None, only: Iterable[int] | None, *,
        then: str = "stop", grace_s: int = control.KILL_GRACE_S,
        check_timeout_s: float | None = None, who: str = "group",
    ) -> control.KillResult:  # fmt: skip
        """Kill ``name`` (None: whatever each runs) on the ranks ``only`` (None: all) and,
        with ``then="stop"``, stop their queues even where no cell runs now. ``who``: the
        group's own stop by default (the watch's, ``supervise``: another rank failed), so
        each rank's record says "group"; ``kill`` passes the user's."""
        ranks = rank_hosts(self.host)
        chosen = set(range(len(ranks)) if only is None else only)

        async def one(rank: int, t: Transport) -> control.KillResult | None:
            if rank not in chosen:
                return None
            try:
                return await control.kill_cell(
                    ranks[rank], t, name, then=then, grace_s=grace_s,
                    check_timeout_s=check_timeout_s, who=who,
                )  # fmt: skip
            except QueueError as exc:
                if exc.code != "not-running" or then != "stop":
                    raise
                # Between cells (or past the cell): the runner must still not go on.
                try:
                    await control.stop_queue(ranks[rank], t, who=who)
                except QueueError as stop_error:
                    if stop_error.code != "not-running":
                        raise
                return None

        async with rank_transports(self.host, transport, self.links) as links:
            got = await each_rank(links, one)
        killed = [g for g in got if isinstance(g, control.KillResult)]
        if not killed:
            self._raise_first(got)
            raise QueueError(
                self.host.name, f"cell {name} runs on no rank: nothing to kill", code="not-running"
            )
        result = replace(killed[0], host=self.host.name)
        missed = self._missed(got)
        if missed:
            # Said, never "killed" alone: the rank not reached runs on (h572 #1). Which
            # cell it runs is not known from here (it may be one the others left): the
            # group's view says, once its box answers (h575 #2).
            name = self.host.name
            raise QueueError(
                name,
                f"{result.summary().removeprefix(f'{name}: ')}; but the kill did not reach "
                f"{'; '.join(missed)} — it may still run there: once its box answers, "
                f"rgt-tui queue show {name} says which cell, and rgt-tui queue kill {name} "
                "CELL kills it",
                code="partial",
            )
        return result

    async def plan_retry(
        self, fleet: Fleet, transport: Transport, names: Iterable[str], *,
        allow_done: bool = False, acks: Iterable[str] = (), launch_acks: bool = True,
        resume: bool = False,
    ) -> control.RetryPlan:  # fmt: skip
        """Rank 0's retry plan (outputs set aside on every rank when it runs, unless a
        resume)."""
        wanted = tuple(names)
        ranks = rank_hosts(self.host)
        async with rank_transports(self.host, transport, self.links) as links:
            got = await each_rank(
                links,
                lambda r, t: control.plan_retry(
                    fleet, ranks[r], t, wanted, allow_done=allow_done, acks=acks,
                    launch_acks=launch_acks, resume=resume,
                ),
            )  # fmt: skip
        problems: list[str] = []
        for rank, p in enumerate(got):
            if isinstance(p, BaseException):
                problems.append(f"{who(self.host, rank)}: {reason(p)}")
            else:
                problems += [f"{who(self.host, rank)}: {line}" for line in p.problems]
                if p.launch is not None:
                    problems += [f"{who(self.host, rank)}: {line}" for line in p.launch.problems]
        lead = got[0]
        if isinstance(lead, BaseException):
            raise lead
        return replace(lead, host=self.host.name, problems=tuple(dict.fromkeys(problems)))

    async def retry(
        self, plan: control.RetryPlan, transport: Transport, *, fleet: Fleet | None = None
    ) -> control.RetryResult:
        """Mark the cells on every rank; where no runner runs, the group's launch (from
        past the last cell: only the marked cells) starts every rank together."""
        if fleet is None:
            raise QueueError(self.host.name, "a group's retry needs the fleet to plan its launch")
        names = [c.name for c in plan.cells]
        ranks = rank_hosts(self.host)
        async with rank_transports(self.host, transport, self.links) as links:
            marked = await each_rank(
                links,
                lambda r, t: _retry_no_launch(
                    fleet, ranks[r], t, names, plan.allow_done, resume=plan.resume
                ),
            )
        self._raise_first(marked)
        lead = marked[0]
        assert isinstance(lead, control.RetryResult)
        if lead.running:
            return replace(lead, host=self.host.name)
        launch_plan = await self.plan_launch(
            fleet, transport, retry_only=True, acks=plan_acks(plan)
        )
        started = await self.launch(launch_plan, transport)
        return replace(lead, host=self.host.name, launched=started)

    async def skip(self, transport: Transport, name: str, reason_text: str) -> None:
        """Record on every rank's box that ``name`` does not run here."""
        async with rank_transports(self.host, transport, self.links) as links:
            got = await each_rank(
                links, lambda r, t: control.skip_cell(t, self.host.name, name, reason_text)
            )
        self._raise_first(got)

    def _unreachable(self, connected: list[object]) -> list[str]:
        """``rank 1 (box2) is unreachable: why — fix`` for each rank whose box did not
        answer: the box, not the group (whose name is rank 0's way in)."""
        return [
            f"{who(self.host, r)} is unreachable: {reason(c)}"
            + (f" — {c.fix}" if isinstance(c, TransportError) and c.fix else "")
            for r, c in enumerate(connected)
            if isinstance(c, BaseException)
        ]

    def _missed(self, results: list[object]) -> list[str]:
        """ "rank 1 (box2): why" for each rank whose call failed, not for want of a cell
        running there."""
        return [
            f"{who(self.host, r)}: {g.message if isinstance(g, QueueError) else reason(g)}"
            for r, g in enumerate(results)
            if isinstance(g, BaseException)
            and not (isinstance(g, QueueError) and g.code == "not-running")
        ]

    def _raise_first(self, results: list[object]) -> None:
        """Raise the first rank's error, naming the rank."""
        for rank, result in enumerate(results):
            if isinstance(result, QueueError):
                raise QueueError(
                    self.host.name, f"{who(self.host, rank)}: {result.message}", code=result.code
                )
            if isinstance(result, BaseException):
                raise QueueError(self.host.name, f"{who(self.host, rank)}: {reason(result)}")


def _as_group(
    lead: launch.LaunchPlan, plans: tuple[launch.LaunchPlan, ...], envs: tuple[dict[str, str], ...]
) -> GroupLaunchPlan:
    values = {f: getattr(lead, f) for f in launch.LaunchPlan.__dataclass_fields__}
    return GroupLaunchPlan(**values, ranks=plans, envs=envs)


def _group_state(host: HostConfig, plans: list[launch.LaunchPlan]) -> dict[str, object]:
    """The plan's ``current`` and each deployed cell's status as the group's (ux-h #1):
    rank 0's alone call a cell the group's watch killed after rank 1 failed "killed",
    and its resume index (the launch's default start) the cell after it. Rank 0's own
    where a rank's records were not read (a fresh launch reads none)."""
    if any(p.current is None for p in plans):
        return {}
    assert host.group is not None
    boxes = host.group.hosts
    view = group_view(host.name, [RankView(r, boxes[r], p.current) for r, p in enumerate(plans)])
    status = {c.name: c.status for c in view.cells}
    cells = tuple(
        replace(c, status=status.get(c.name, c.status))
        if c.status is not None and c.status not in launch.NOT_RUN
        else c
        for c in plans[0].cells
    )
    return {"current": view, "cells": cells}


def plan_acks(plan: control.RetryPlan) -> tuple[str, ...]:
    """The checks the retry's launch goes ahead without (its launch plan's)."""
    return plan.launch.acks if plan.launch is not None else ()


async def _retry_no_launch(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport,
    names: list[str],
    allow_done: bool,
    *,
    resume: bool = False,
) -> control.RetryResult:
    """Mark ``names`` for a retry (or a resume) on one rank's box without launching its
    runner (the group launches every rank together)."""
    plan = await control.plan_retry(
        fleet, host, transport, names, allow_done=allow_done, resume=resume
    )
    if not plan.problems:
        plan = replace(plan, launch=None)
    return await control.retry_cells(plan, transport, fleet=fleet)


async def _quiet_kill(host: HostConfig, transport: Transport) -> None:
    """Stop a rank that started when another rank's start failed: the group's stop."""
    try:
        await control.kill_cell(host, transport, None, then="stop", grace_s=2, who="group")
    except QueueError:
        await control.stop_queue(host, transport, who="group")


async def _nothing() -> None:
    return None
