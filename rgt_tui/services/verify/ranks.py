"""One roster over a group's folders (``pull_ranks = "all"``, issue 41).

torchrun's c10d rendezvous numbers the workers itself, so the worker a script saves from
may run on any box of the group, cell by cell: one cell's results land in rank 0's folder
(``results/pair/``), the next one's in ``results/pair.rank1/``. Each folder verified
alone missed the other's cells, so ``verify pair`` never passed on a group set up as the
docs say for exactly this (h531 #1). Each folder is still checked file by file as
before; then a cell missing from one folder counts present there when another folder of
the group holds it verified — never a cell whose run is unfinished, which stays missing
everywhere. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rgt_tui.services.verify.types import VerificationReport


def settle_ranks(reports: Sequence[VerificationReport]) -> list[VerificationReport]:
    """``reports`` (the group's folder first, then each rank's), each with the cells
    another one holds verified moved from missing to present, and their roster lines
    (``cell NAME missing: WHY``, as ``problem_lines`` writes them) gone from its problems."""
    present = {name for r in reports if r.roster is not None for name in r.roster.present}
    settled = []
    for report in reports:
        roster = report.roster
        if roster is None:
            settled.append(report)
            continue
        unfinished = {name for name, _ in roster.unfinished}
        found = [(n, why) for n, why in roster.missing if n in present and n not in unfinished]
        if not found:
            settled.append(report)
            continue
        lines = {f"cell {name} missing: {why}" for name, why in found}
        roster = replace(
            roster,
            present=(*roster.present, *(n for n, _ in found)),
            missing=tuple(m for m in roster.missing if m not in found),
        )
        problems = tuple(p for p in report.problems if p not in lines)
        settled.append(replace(report, roster=roster, problems=problems))
    return settled
