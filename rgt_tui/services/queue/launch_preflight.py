"""Preflight in a launch plan: the refusals and warnings a report makes (services.queue).

A failed check refuses the launch unless it is acknowledged by name: for this launch
(``--ack``, the plan dialog's button) or for every launch of the host (its
``preflight_ack``); an acknowledged one is a warning that says where it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rgt_tui.domain.config import PREFLIGHT_CHECKS, Fleet, HostConfig
from rgt_tui.domain.preflight_smoke import SMOKE_OUT_DIR
from rgt_tui.domain.queue_file import QueueCell, expand_home, render_command
from rgt_tui.domain.routes import host_routes
from rgt_tui.profiles import profile as load_profile
from rgt_tui.transport import Transport

if TYPE_CHECKING:
    from rgt_tui.services.preflight import PreflightReport

# Every preflight problem and warning of a plan starts so: the plan dialog and the CLI
# show them in their preflight section, not among the other problems.
PREFLIGHT_PREFIX = "preflight check '"


def is_preflight_problem(text: str) -> bool:
    """Whether a plan's problem (or warning) is a failed preflight check's."""
    return text.startswith(PREFLIGHT_PREFIX)


def unknown_acks_problem(acks: tuple[str, ...]) -> str | None:
    """The refusal for names in ``acks`` that are no preflight check, naming the checks."""
    unknown = [a for a in acks if a not in PREFLIGHT_CHECKS]
    if not unknown:
        return None
    return (
        f"unknown preflight check{'s' if len(unknown) > 1 else ''} "
        f"{', '.join(repr(a) for a in unknown)} to acknowledge — the checks are: "
        f"{', '.join(PREFLIGHT_CHECKS)}"
    )


async def run_preflight(
    fleet: Fleet,
    host: HostConfig,
    transport: Transport,
    *,
    cells: int | None = None,
    first_cell: str | None = None,
) -> PreflightReport:
    """Preflight on the box, over the plan's connection (imported here: the service is
    only loaded by a launch that runs it); ``cells``: the cells the launch will still
    run, which the disk check budgets for (U6); ``first_cell``: the first of them as
    rendered, the smoke of ``smoke_seconds`` (GEN5/U10)."""
    from rgt_tui.services.preflight import preflight

    return await preflight(fleet, host, transport, cells=cells, first_cell=first_cell)


def first_cell_command(
    host: HostConfig, cells: Sequence[QueueCell], home: str, start_index: int
) -> str | None:
    """The first live cell from ``start_index`` as ``smoke_seconds`` runs it: rendered
    with its ``{out}`` under the smoke's scratch (``SMOKE_OUT_DIR``), so what it saves
    is not there for the real run to resume from; None without a run template or such
    a cell."""
    if host.run is None:
        return None
    scratch = expand_home(SMOKE_OUT_DIR, home)
    for cell in tuple(cells)[max(start_index, 0) :]:
        if not cell.moved_to:
            return render_command(host.run, cell, scratch)
    return None


def cell_env_of(host: HostConfig) -> tuple[tuple[str, str], ...]:
    """What every cell of ``host`` gets exported from the fleet file: its mirrors
    (``PIP_INDEX_URL``, ``HF_ENDPOINT``; domain.routes, generic-ssh §3)."""
    return host_routes(host.ready, load_profile(host.profile)).cell_env()


def cells_to_run(cells: Sequence[QueueCell], start_index: int) -> int:
    """How many cells a launch from ``start_index`` will run: every cell from it that is
    not moved away (the runner runs a done one again: the plan warns so). The disk check
    budgets each of these (U6); a user's hour read "0 cells still to run" in it beside
    the plan's "3 of 3 cells to run"."""
    return sum(1 for i, c in enumerate(cells) if i >= start_index and not c.moved_to)


def preflight_acks(host: HostConfig) -> tuple[str, ...]:
    """The checks the fleet file acknowledges for every launch of ``host``: its own
    ``preflight_ack``; for a group that gives none, key by key as ``python`` goes, the
    checks every box's own entry acknowledges (h501 #3: box2 and box3 each acknowledged
    `gpu`, and the group's launch refused it). One box's acknowledgement is not the
    group's: the folded check that failed may be another box's."""
    info = host.group
    if info is None or "preflight_ack" in info.ready_keys:
        return host.ready.preflight_ack
    common = set.intersection(*(set(m.ready.preflight_ack) for m in info.members))
    return tuple(a for a in info.members[0].ready.preflight_ack if a in common)


def _ack_hint(name: str) -> str:
    return f"to launch anyway, acknowledge it: --ack {name} (or press its button in the plan)"


def append_ack_hint(name: str) -> str:
    """An append's: `queue append` takes no --ack (hour s18b #3 was told to pass one)."""
    return (
        f'to append anyway, acknowledge it in the fleet file: preflight_ack = ["{name}"] '
        "on this host"
    )


def preflight_problems(
    report: PreflightReport,
    acks: tuple[str, ...],
    host_acks: tuple[str, ...],
    hint: Callable[[str], str] | None = None,
) -> list[str]:
    """One refusal per failed check acknowledged neither in ``acks`` nor by the host;
    ``hint``: how to go ahead anyway (None: the launch's --ack)."""
    hint = hint or _ack_hint
    return [
        # A certain failure is a plain refusal: no Acknowledge button, no --ack offered.
        (f"{c.name} failed: " if c.certain else f"{PREFLIGHT_PREFIX}{c.name}' failed: ")
        + c.detail
        + (f" — {c.fix}" if c.fix and c.fix not in c.detail else "")  # said once
        + ("; no acknowledgement changes this" if c.certain else f"; {hint(c.name)}")
        for c in report.unacknowledged((*acks, *host_acks))
    ]


def preflight_warnings(
    report: PreflightReport, acks: tuple[str, ...], host_acks: tuple[str, ...]
) -> list[str]:
    """A warning per failed check that was acknowledged, naming where it was."""
    out = []
    for c in report.failed:
        if c.certain:
            continue  # a refusal (preflight_problems), never a warning
        if c.name in acks:
            where = "acknowledged for this launch"
        elif c.name in host_acks:
            where = "acknowledged by the host's preflight_ack"
        else:
            continue
        out.append(f"{PREFLIGHT_PREFIX}{c.name}' failed ({where}): {c.detail}")
    return out
