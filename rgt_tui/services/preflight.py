"""Preflight: check a box before the meter runs, in the environment its runs will use.

One round trip runs ``rgt_tui/scripts/preflight.sh`` on the box (sent whole as
``bash -c <script> preflight ARGS``, as queue_ctl is), which runs
``preflight_check.py`` with the run's own interpreter in the workdir, asks nvidia-smi
about the GPUs, the driver and who holds them, ``df`` about the durable dir's mount and
finds tmux; a second, only with a ``code`` key, asks sync whether the box's code is the
local tree (U42). ``domain.preflight_checks`` turns the answers into checks, and its
``preflight_scope`` says which checks the host gets (a Slurm login node: disk, durable,
code, crlf and signal-lead; its box script then skips the interpreter, the GPUs, the
storage and tmux). Three checks need no box: ``crlf`` reads this machine's code tree and
queue file (U26), ``syntax`` compiles the run template's script from that tree
(``preflight_syntax``), ``signal-lead`` reads a Slurm host's keys (SLURM2).

Issue 42's last two: on a host of the China route (``domain.routes``) the box program
also fetches the pip index, the Hugging Face endpoint and GitHub with a hard deadline
(``route``); with ``smoke`` or ``smoke_seconds`` a third round trip runs the smoke
(``services.preflight_smoke``, GEN5/U10) after the other checks.
"""

from __future__ import annotations

import asyncio
from functools import cache
from importlib import resources
from pathlib import Path

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.preflight import Check, PreflightReport, parse_box_facts
from rgt_tui.domain.preflight_checks import CheckContext, box_checks, preflight_scope
from rgt_tui.domain.routes import Routes, check_route, host_routes
from rgt_tui.domain.run_interpreter import run_interpreter
from rgt_tui.domain.slurm_lead import host_signal_lead_check
from rgt_tui.domain.slurm_partition import SINFO_PARTITIONS, partition_check, partition_of
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.box_script import box_command, box_path, script_text
from rgt_tui.services.ckpt_record import observed_write
from rgt_tui.services.code_sync import SyncError, code_status, fleet_files
from rgt_tui.services.code_sync.crlf import crlf_preflight
from rgt_tui.services.preflight_smoke import smoke_check
from rgt_tui.services.preflight_syntax import syntax_check
from rgt_tui.transport import Transport

__all__ = ["Check", "PreflightReport", "preflight", "preflight_command"]

# torch's import alone takes seconds to tens of seconds on a cold disk; the box script
# bounds each step (python 120 s, nvidia-smi 20 s each, the checkpoint search 20 s).
PREFLIGHT_TIMEOUT_S = 240.0


def routes_of(host: HostConfig) -> Routes:
    """The host's routes and mirrors (its keys over its profile's defaults)."""
    return host_routes(host.ready, load_profile(host.profile))


def measured_routes(host: HostConfig) -> str:
    """The ``label<TAB>url`` lines the box program fetches: a China-route host's, when its
    scope runs ``route``; "" otherwise."""
    routes = routes_of(host)
    if not routes.china or "route" not in preflight_scope(host).checks:
        return ""
    return "\n".join(f"{label}\t{url}" for label, _base, url in routes.targets())


@cache
def check_program() -> str:
    """The text of ``preflight_check.py``, the program the run's interpreter runs."""
    path = resources.files("rgt_tui").joinpath("scripts", "preflight_check.py")
    return path.read_text(encoding="utf-8")


def preflight_command(host: HostConfig) -> str:
    """The command line that runs the box side for ``host`` (its program goes on stdin);
    the interpreter, GPUs and tmux are asked about only when the host's scope runs a
    check of them."""
    interpreter = run_interpreter(host.run, host.ready.python)
    find = "0" if host.ready.checkpoint_gb is not None else "1"
    runtime = "1" if preflight_scope(host).asks_runtime else "0"
    data = box_path(host.data_dir) if host.data_dir else ""
    return box_command(
        script_text("preflight.sh"),
        "preflight",
        box_path(host.workdir),
        box_path(host.durable_dir),
        interpreter.command,
        find,
        runtime,
        data,
        measured_routes(host),
    )


async def preflight(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport,
    *,
    cells: int | None = None,
    first_cell: str | None = None,
) -> PreflightReport:
    """Run the preflight checks of ``host``'s kind (``preflight_scope``) on its box
    (``code`` only with a ``code`` key). ``cells``: how many cells the launch will still
    run, for the disk budget (U6; None: one, as ``rgt-tui preflight`` alone does);
    ``first_cell``: the first of them as rendered, which ``smoke_seconds`` runs. TransportError when the box cannot be reached or its answer was cut short;
    every problem of the box itself is a failed check with its fix. Connects the
    transport when it is not yet. ``fleet`` is the agreed interface's: the host's
    readiness already carries the fleet's defaults."""
    await transport.connect()
    result = await transport.run(
        preflight_command(host), input=check_program(), timeout=PREFLIGHT_TIMEOUT_S
    )
    flood = result.overflow("preflight")
    if flood is not None:
        raise TransportError(host.name, flood, "see what on the box prints into a login shell")
    facts = parse_box_facts(result.stdout)
    if not facts.ended:
        said = result.stderr.strip().splitlines()
        raise TransportError(
            host.name,
            f"the preflight script stopped before its end (exit {result.exit_status}): "
            f"{said[-1][:300] if said else 'no message'}",
            "is bash installed on the box? Run `rgt-tui preflight` again",
        )
    scope = preflight_scope(host)
    ctx = CheckContext(
        host=host.name,
        profile=load_profile(host.profile),
        ready=host.ready,
        interpreter=run_interpreter(host.run, host.ready.python).on_box(
            facts.script, str((facts.python or {}).get("executable", ""))
        ),
        workdir=host.workdir,
        durable_dir=host.durable_dir,
        outlives=scope.outlives,
        interruptible=host.watch.interruptible,
        teardown_command=bool(host.teardown),
        cells=cells,
        data_dir=host.data_dir,
    )
    checks = list(box_checks(facts, ctx, scope.checks))
    code, stamp = None, ""
    withheld = fleet_files(fleet)
    if host.ready.code is not None and "code" in scope.checks:
        check, code, stamp = await _code_check(host, transport, withheld)
        checks.append(check)
    elif "code" in scope.checks and "python" not in scope.checks:
        # A login node (no python check, which says this on a box): whether every task's
        # workdir is there. With a code key, the code check says it. Said when it passes
        # too: the note names ``code`` among the checks run, and no line said it (s35
        # Slurm hour #10).
        checks.append(
            Check("code", True, f"the workdir {host.workdir} is there (no code key to compare)")
            if facts.workdir_ok
            else Check(
                "code",
                False,
                f"the workdir {host.workdir} does not exist on {host.name}, so no task can "
                "start there",
                f"create it, or fix workdir for {host.name} in the fleet file",
            )
        )
    if "crlf" in scope.checks:
        checks.append(await crlf_preflight(host, withheld))
    if "syntax" in scope.checks:
        checks.append(await asyncio.to_thread(syntax_check, host))
    lead = (
        host_signal_lead_check(host, observed_write(fleet, host.name))
        if "signal-lead" in scope.checks
        else None
    )
    if lead is not None:
        checks.append(lead)
    if "partition" in scope.checks:  # a Slurm login node's
        checks.append(await _partition(fleet, host, transport))
    routes = routes_of(host)
    if routes.china and "route" in scope.checks:
        checks.append(check_route(facts.routes, routes))
    if "smoke" in scope.checks:
        smoke = await smoke_check(
            host, transport, first_cell, routes.cell_env(), cells_running=bool(facts.cell_pids)
        )
        if smoke is not None:
            checks.append(smoke)
    return PreflightReport(host.name, tuple(checks), code, scope.note, code_stamp=stamp)


async def _partition(fleet: Fleet, host: HostConfig, transport: Transport) -> Check:
    """The ``partition`` check: the login node's ``sinfo`` against the host's key."""
    where = f"{fleet.path or 'the fleet file'}:{host.line or '?'} ({host.name}'s block)"
    partition = partition_of(host)
    if partition is None:
        return partition_check(host.name, None, None, where)
    try:
        said = await transport.run(SINFO_PARTITIONS, timeout=30.0)
    except TransportError as exc:
        return partition_check(host.name, partition, None, where, exc.message)
    error = said.stderr.strip()[-300:] or f"sinfo exited {said.exit_status}"
    return partition_check(host.name, partition, said.stdout, where, error)


async def _code_check(
    host: HostConfig, transport: Transport, withhold: tuple[Path, ...]
) -> tuple[Check, CodeIdentity | None, str]:
    """The ``code`` check from sync's comparison of the box's tree with the local one,
    and the identity a launch records: when the box holds the local tree, the local
    identity (the same tree hash, with its git commit and whether it was dirty); when it
    differs (a launch with --ack code), the box's own tree hash with no commit — the code
    that will really run, which no local commit describes. And the box's sync record as
    read (``PreflightReport.code_stamp``)."""
    try:
        status = await code_status(host, transport, withhold=withhold)
    except SyncError as exc:
        return Check("code", False, exc.message, exc.fix), None, ""
    if status is None:  # no code key after all
        return Check("code", True, "no code key: not checked"), None, ""
    same = status.in_sync and status.box is not None and status.box.tree == status.local.tree
    identity = status.local if same else status.box
    problem = status.problem()
    stamp = status.record_stamp
    if problem is None:
        said = f"{host.name} holds the local {status.local.short()}"
        return Check("code", True, said), identity, stamp
    return Check("code", False, problem, status.fix()), identity, stamp
