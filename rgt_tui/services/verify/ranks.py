"""One roster over a group's folders (``pull_ranks = "all"``, issue 41).

torchrun's c10d rendezvous numbers the workers itself, so the worker a script saves from
may run on any box of the group, cell by cell: one cell's results land in rank 0's folder
(``results/pair/``), the next one's in ``results/pair.rank1/``. Each folder verified
alone missed the other's cells, so ``verify pair`` never passed on a group set up as the
docs say for exactly this (h531 #1). Each folder is still checked file by file as
before; then a cell that one folder has no output folder of at all counts present there
when another folder of the group holds it verified. Only that miss: a cell whose run is
unfinished, whose log claims a save the box did not hold, whose only copy here is gone or
whose files did not load stays missing however another folder fares (review h534 #1). A
folder with no file at all is no problem of its own once the roster is whole over the
group (every save landed on another rank's box: review h534 #4).

``verify_group`` is what the command line and the TUI's ``v`` both run, so neither
writes a record the other contradicts (review h534 #3). The records are written once the
roster is settled, and never for a folder a pull writes into now (review h534 #2).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.roster import EMPTY_RESULTS, NO_OUTPUT
from rgt_tui.services.pull.ranks import rank_pull_hosts, rank_pull_name
from rgt_tui.services.verify.run import record_verification, verify_host
from rgt_tui.services.verify.types import VerificationReport
from rgt_tui.transport.base import Transport

# Verify one folder (the group's own, or a rank's ``pair.rank<k>``) without writing its
# record (``write_record``), over whatever connection the caller has for its box.
VerifyOne = Callable[[HostConfig, bool], Awaitable[VerificationReport]]


def folder_boxes(host: HostConfig) -> dict[str, str]:
    """Each folder ``verify_group`` verifies (by its host name) → the box whose
    connection re-scans it: the host's own, and a group's ``pair.rank<k>`` its rank's."""
    members = host.group.hosts if host.group is not None else ()
    boxes = {rank_pull_name(host.name, k): box for k, box in enumerate(members)}
    boxes[host.name] = host.name
    return boxes


async def verify_group(host: HostConfig, verify_one: VerifyOne) -> list[VerificationReport]:
    """``host``'s folder verified, and with ``pull_ranks = "all"`` each further rank's,
    settled into one roster (``settle_ranks``) and recorded: the group's report first.
    A host that is no such group is verified (and recorded) as any other."""
    further = rank_pull_hosts(host)
    if not further:
        return [await verify_one(host, True)]
    reports = [await verify_one(host, False)]
    reports += [await verify_one(rank, False) for rank in further]
    if not all(r.recordable for r in reports):
        # A pull writes into one of the folders now: the group's roster cannot be
        # settled, and no record is written over (review h534 #2: the others' records
        # lost the cells that folder holds). Its report says to verify once it ends.
        return reports
    return [await record_verification(r) for r in settle_ranks(reports)]


async def verify_on_connections(
    host: HostConfig, fleet: Fleet, transport_of: Callable[[str], Transport | None]
) -> list[VerificationReport]:
    """``verify_group`` over connections already held (the TUI's, watch's): each folder
    re-scanned over ``transport_of(box)`` (None: no re-scan), with the fleet's loader."""
    boxes = folder_boxes(host)

    async def verify_one(one: HostConfig, write_record: bool) -> VerificationReport:
        box = boxes.get(one.name)
        return await verify_host(
            one,
            fleet.results_dir,
            transport=transport_of(box) if box is not None else None,
            python=fleet.verify_python,
            safe_globals=fleet.verify_safe_globals,
            pulled_by=None if one is host else host.name,
            write_record=write_record,
        )

    return await verify_group(host, verify_one)


def settle_ranks(reports: Sequence[VerificationReport]) -> list[VerificationReport]:
    """``reports`` (the group's folder first, then each rank's), each with the cells it
    has no output folder of and another one holds verified moved from missing to present,
    and their roster lines (``cell NAME missing: WHY``, as ``problem_lines`` writes them)
    gone from its problems; a folder with no file drops its "nothing to verify" line once
    its roster is whole and another folder holds files."""
    present = {name for r in reports if r.roster is not None for name in r.roster.present}
    any_files = any(r.manifest is not None and r.manifest.entries for r in reports)
    settled = []
    for report in reports:
        roster = report.roster
        if roster is None:
            settled.append(report)
            continue
        unfinished = {name for name, _ in roster.unfinished}
        found = [
            (n, why)
            for n, why in roster.missing
            if n in present and n not in unfinished and why.startswith(NO_OUTPUT)
        ]
        lines = {f"cell {name} missing: {why}" for name, why in found}
        roster = replace(
            roster,
            present=(*roster.present, *(n for n, _ in found)),
            missing=tuple(m for m in roster.missing if m not in found),
        )
        empty_ok = any_files and not roster.missing
        problems = tuple(
            p
            for p in report.problems
            if p not in lines and not (empty_ok and p.startswith(EMPTY_RESULTS))
        )
        settled.append(replace(report, roster=roster, problems=problems))
    return settled
