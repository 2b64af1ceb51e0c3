"""A group's preflight (issue 41; docs/groups.md): every box's own preflight, folded into
one report naming the box, plus the checks across the boxes (``same-code``,
``same-stack``, ``rendezvous``, ``nic``, ``mtu``, ``fabric``, ``clocks``), each by name
with its fix and acknowledgeable like any other (``--ack``, the plan's button,
``preflight_ack``).

Three round trips per box, all boxes at once: the box's facts (``group_check.sh facts``:
``ip``, ``ping``, ``nvidia-smi -q``, ``systemctl``), its clock (``date``, timed by the
round trip), and the rendezvous (rank 0 runs the one-shot listener, and the others
connect once it says it listens: ``group_rdzv.py``; when the port is in use there, rank 0's records say whether
the group's own cell runs and holds it). The rules are ``domain.preflight_group`` and
``domain.preflight_net``. ``rgt-tui preflight GROUP``, the TUI's ``P`` and a group's
launch plan all come here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rgt_tui.domain import preflight_group as rules
from rgt_tui.domain import preflight_net as net
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.preflight import Check, PreflightReport
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.box_script import box_command, run_box_script, script_text
from rgt_tui.services.queue.box_backend import BoxRunner
from rgt_tui.services.queue.group.ranks import (
    MemberLinks,
    each_rank,
    rank_hosts,
    rank_transports,
    reason,
    who,
)
from rgt_tui.services.queue.launch_preflight import (
    is_preflight_problem,
    preflight_acks,
    preflight_problems,
    preflight_warnings,
)
from rgt_tui.timeouts import within
from rgt_tui.transport import Transport

if TYPE_CHECKING:
    from rgt_tui.services.queue.launch import LaunchPlan

FACTS_TIMEOUT_S = 60.0  # nvidia-smi -q on eight GPUs takes seconds; ping waits 2 s
CLOCK_TIMEOUT_S = 15.0
# How long rank 0 listens from its bind (it ends as soon as every rank came): the other
# ranks start then, so their own login (a slow .bashrc) comes out of it before they dial.
LISTEN_S = 25.0
CONNECT_S = 10.0  # how long each other rank keeps dialling (refused: not up, or ended)
MARKER = "RGT-RDZV "


async def group_preflight(
    fleet: Fleet, group: HostConfig, transport: Transport, *, links: MemberLinks | None = None
) -> PreflightReport:
    """``rgt-tui preflight GROUP`` and the TUI's ``P``: every box's own preflight, then
    the group's checks (``group_checks``). TransportError naming the box when one box's
    preflight could not run."""
    from rgt_tui.services.preflight import preflight

    ranks = rank_hosts(group)
    async with rank_transports(group, transport, links) as ts:
        got = await each_rank(ts, lambda r, t: preflight(fleet, ranks[r], t))
        for rank, report in enumerate(got):
            if isinstance(report, BaseException):
                raise TransportError(
                    group.name, f"{who(group, rank)}: {reason(report)}",
                    "check that box, then run preflight again",
                )  # fmt: skip
        return await group_checks(group, ts, [r for r in got if isinstance(r, PreflightReport)])


async def group_checks(
    group: HostConfig, transports: Sequence[Transport], reports: Sequence[PreflightReport | None]
) -> PreflightReport:
    """The group's report over its ranks' connections (rank 0 first): each box's own
    preflight (``reports``, run already: by the launch plan or ``group_preflight``; None
    where a box's was not run) folded by check name, then the group's checks. A box that
    did not answer one of them is named in it; nothing raises for one box."""
    info = group.group
    assert info is not None, f"{group.name} is not a group"
    whos = [who(group, r) for r in range(len(transports))]
    facts_got, clocks_got, rdzv = await asyncio.gather(
        each_rank(transports, lambda r, t: _facts(t, info.master_addr, r)),
        each_rank(transports, lambda r, t: _clock(t)),
        _rendezvous(transports, info.master_addr, info.master_port),
    )
    checks: list[Check] = []
    known = [(whos[r], x) for r, x in enumerate(reports) if x is not None]
    if known:
        checks += rules.box_checks(whos, reports)
    if len(known) == len(whos):
        full = [x for _, x in known]
        checks.append(rules.same_code(whos, full, group.ready.code is not None))
        checks.append(rules.same_stack(whos, full))
    facts = [f if isinstance(f, net.NetFacts) else None for f in facts_got]
    listen, connects = rdzv
    if listen is not None and facts[0] is not None:
        own = tuple(a for _, a in facts[0].addrs if not a.startswith("127."))
        listen = replace(listen, addresses=own or listen.addresses)
    readings = [
        c if isinstance(c, rules.ClockReading) else rules.ClockReading(None) for c in clocks_got
    ]
    running = ""
    if listen is not None and listen.errno_name == "EADDRINUSE":
        running = await _running_cell(group, transports[0])
    checks += [
        rules.rendezvous(whos, info.master_addr, info.master_port, listen, connects, running),
        net.nic(whos, facts, info.master_addr, info.nccl_socket_ifname),
        net.mtu(whos, facts, info.master_addr),
        net.fabric(whos, facts),
        rules.clocks(whos, readings),
    ]
    lead = reports[0] if reports else None
    return PreflightReport(group.name, tuple(checks), lead.code if lead is not None else None)


def with_group_preflight(
    plan: LaunchPlan, group: HostConfig, report: PreflightReport, acks: Sequence[str]
) -> LaunchPlan:
    """``plan`` (the group's, its problems each rank's) with the group's report in place
    of rank 0's: each rank's own preflight refusals give way to the folded checks (one
    per name, naming the box), and the group's checks refuse or warn like any other. A
    refusal every rank makes in the same words (a line of the group's one queue file,
    whose config the code tree lacks) is said once, for every rank (ux-h #16)."""
    assert group.group is not None
    prefixes = [f"{who(group, r)}: " for r in range(group.group.nnodes)]

    def per_rank_preflight(line: str) -> bool:
        return any(line.startswith(p) and is_preflight_problem(line[len(p) :]) for p in prefixes)

    acked = tuple(acks)
    host_acks = preflight_acks(group)
    problems = _said_once([p for p in plan.problems if not per_rank_preflight(p)], prefixes)
    warnings = [
        w for w in plan.warnings if not per_rank_preflight(w) and not is_preflight_problem(w)
    ]
    return replace(
        plan,
        preflight=report,
        problems=(*problems, *preflight_problems(report, acked, host_acks)),
        warnings=(*warnings, *preflight_warnings(report, acked, host_acks)),
    )


def _said_once(lines: Sequence[str], prefixes: Sequence[str]) -> list[str]:
    """``lines`` with each text that every rank's prefix carries said once, as
    ``every rank: TEXT``; the others as they were, in order."""
    given = set(lines)
    out: list[str] = []
    for line in lines:
        prefix = next((p for p in prefixes if line.startswith(p)), None)
        text = line[len(prefix) :] if prefix is not None else ""
        if prefix is None or not all(f"{p}{text}" in given for p in prefixes):
            out.append(line)
        elif f"every rank: {text}" not in out:
            out.append(f"every rank: {text}")
    return out


async def _running_cell(group: HostConfig, transport: Transport) -> str:
    """``pair's cell `long```: the group's cell rank 0's records show running now (its
    torchrun holds the rendezvous port); "" when none runs or the records could not be
    read (the port is then someone else's, as the check says)."""
    try:
        view = await BoxRunner(rank_hosts(group)[0]).read_view(transport)
    except (TransportError, QueueError):
        return ""
    cell = view.current
    return f"{group.name}'s cell `{cell.name}`" if cell is not None else ""


async def _facts(transport: Transport, addr: str, rank: int) -> net.NetFacts:
    await transport.connect()
    result = await run_box_script(
        transport, script_text("group_check.sh"), "group_check", "facts", addr,
        "1" if rank else "0", timeout=FACTS_TIMEOUT_S,
    )  # fmt: skip
    return net.parse_net(result.stdout)


async def _clock(transport: Transport) -> rules.ClockReading:
    """The box's clock against this one: the best of two reads (the shorter round trip
    bounds the error closer)."""
    await transport.connect()
    best: rules.ClockReading | None = None
    for _ in range(2):
        sent = time.time()
        result = await transport.run("date +%s.%N", timeout=CLOCK_TIMEOUT_S)
        came = time.time()
        try:
            box = float(result.stdout.strip().splitlines()[0][:32])
        except (ValueError, IndexError):
            continue
        reading = rules.ClockReading(box - (sent + came) / 2, (came - sent) / 2)
        if best is None or reading.error_s < best.error_s:
            best = reading
    return best or rules.ClockReading(None)


async def _rendezvous(
    transports: Sequence[Transport], addr: str, port: int
) -> tuple[rules.ListenAnswer | None, list[rules.ConnectAnswer | None]]:
    """Rank 0 listens on addr:port for a moment while every other rank connects.

    The others dial only once rank 0's listener has said whether it listens (or ended):
    started together, a rank 0 slow to log in (a 12 s sleep in its .bashrc) bound after
    the others had given up, and the check failed as "connection refused" with the
    master_addr fix (h617 #3). Rank 0's window (``LISTEN_S``) is counted from its bind,
    and covers the others' own login before their ``CONNECT_S`` of dialling."""
    token = secrets.token_hex(8)
    others = len(transports) - 1
    program = script_text("group_rdzv.py")
    check = script_text("group_check.sh")
    spoke = asyncio.Event()  # rank 0's listener said whether it listens, or ended

    async def listen() -> list[dict]:
        answers: list[dict] = []
        try:
            await transports[0].connect()
            command = box_command(
                check, "group_check", "rdzv", "listen", addr, port, token, others, LISTEN_S
            )
            lines = transports[0].stream_lines(command, input=program)
            async with contextlib.aclosing(lines):  # a cancelled check closes the channel
                async for line in lines:
                    if len(answers) < 8:  # it says two things; a box may say more
                        answers += _answers(line)
                    if answers:
                        spoke.set()
        finally:
            spoke.set()
        return answers

    async def dial(t: Transport) -> list[dict]:
        await t.connect()  # logged in meanwhile: the dial starts when rank 0 listens
        await spoke.wait()
        result = await run_box_script(
            t, check, "group_check", "rdzv", "connect", addr, port, token, 0, CONNECT_S,
            input=program, timeout=CONNECT_S + 30,
        )  # fmt: skip
        return _answers(result.stdout)

    got = await asyncio.gather(
        within(listen(), LISTEN_S + 60),
        *(within(dial(t), LISTEN_S + CONNECT_S + 90) for t in transports[1:]),
        return_exceptions=True,
    )
    listen = None
    if not isinstance(got[0], BaseException):
        merged: dict = {}
        for answer in got[0]:
            merged.update(answer)
        if "bound" in merged:
            listen = rules.ListenAnswer(
                bool(merged.get("bound")),
                str(merged.get("errno", ""))[:20],
                str(merged.get("error", "")),
                int(merged.get("accepted", 0) or 0),
                tuple(str(a)[:45] for a in merged.get("addresses", []) if isinstance(a, str))[:16],
            )
    connects: list[rules.ConnectAnswer | None] = []
    for answer in got[1:]:
        if isinstance(answer, BaseException) or not answer:
            connects.append(None)
            continue
        a = answer[-1]
        connects.append(
            rules.ConnectAnswer(
                bool(a.get("reached")), str(a.get("why", ""))[:20], str(a.get("error", ""))
            )
        )
    return listen, connects


def _answers(stdout: str) -> list[dict]:
    out = []
    for line in stdout.splitlines()[:8]:
        if not line.startswith(MARKER):
            continue
        try:
            data = json.loads(line[len(MARKER) :])
        except ValueError:
            continue
        if isinstance(data, dict):
            out.append(data)
    return out
