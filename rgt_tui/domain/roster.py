"""Roster reconciliation: does every queue cell have results in the pulled copy?

A cell writes into its own output directory, ``{out}`` = ``<durable_dir>/<name>``
(``domain.queue_file.render_command``). In the pulled copy that is the pull root holding
``durable_dir`` (its local label) followed by the part of ``durable_dir`` below that
root and the cell name. When no pull root holds ``durable_dir`` (custom ``pull`` roots),
a cell whose run writes into ``{out}`` has its results left on the box: it is missing,
whatever else of it was pulled (h511 #1: ``pull = ["~/eval"]`` counted a cell's eval
file for its checkpoints, and the gate opened over them). Only a run that does not
name ``{out}`` (it writes where its own flags say) is found in any folder named after
the cell. A cell is present only when that folder holds at
least one artifact that verified by loading (torch, safetensors, JSON) — a log alone or
a file checked by hash only does not show the run produced results (principle 3).

A cell whose run is unfinished or running (``open_work``: failed, killed, interrupted,
ended by the scheduler, waiting for a retry, still running) counts for none of that,
whatever of it verified: a partial checkpoint is not the cell's results. It is missing,
named as unfinished (``RosterCheck.unfinished``), as the teardown gate counts it (its
roster line leaves such a cell to the cell's own line, where it is moved or accepted).

Pure: manifest and check results in, verdict out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rgt_tui.domain.manifest import Manifest
from rgt_tui.domain.queue_state import PENDING, RUNNING
from rgt_tui.domain.units import plural

# How verify's problem for a manifest of no file begins (``verify.run.problem_lines``):
# the teardown gate leaves it to the roster when every cell is missing.
EMPTY_RESULTS = "nothing to verify: the manifest lists no files"
# How a cell none of whose outputs the pulled copy holds is said (a group's verify reads
# it: another rank's folder may hold them, ``verify.ranks``).
NO_OUTPUT = "no output directory"
# ``reconcile``'s ``open_work`` state of a cell that never started on a queue that runs no
# more (stopped, or launched from a later cell): "no output directory … in the pulled
# copy" read as results lost (h481 #12). Its verified files still count (a cell run by
# hand, or before a --fresh launch: review h483 #6).
NEVER_RAN = "never ran"
NEVER_RAN_WHY = "never ran: no queue runs it now — a launch from it runs it"
# The same read offline (``verify --offline``, a box gone): the pull's record of the
# queue (``code.json``) lists no attempt of it, and only the box knows whether a queue
# runs it now.
NOT_RUN_AT_PULL = "not run at the pull"
NOT_RUN_AT_PULL_WHY = (
    "the box's queue records, as a pull read them, list no attempt of it (it had not "
    "started, or its state could not be read then) — verify with the box reachable to "
    "know whether a queue runs it"
)
_NOT_RUN = {NEVER_RAN: NEVER_RAN_WHY, NOT_RUN_AT_PULL: NOT_RUN_AT_PULL_WHY}


@dataclass(frozen=True)
class RosterCheck:
    """Which cells have verified results, and why the others do not."""

    expected: tuple[str, ...]
    present: tuple[str, ...]
    missing: tuple[tuple[str, str], ...]  # (cell name, why)
    # Of the missing: the cells whose run is unfinished or running, with their state
    # (``failed (exit 3)``), not counted whatever of them verified.
    unfinished: tuple[tuple[str, str], ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing


def box_home(manifest: Manifest) -> str | None:
    """The box's home, as a pull root written with ``~`` was resolved there (None: no
    root tells)."""
    for root in manifest.roots:
        given, path = root.given.rstrip("/"), root.path.rstrip("/")
        if given == "~" and path:
            return path
        if given.startswith("~/") and path.endswith(given[1:]) and len(path) > len(given) - 1:
            return path[: len(path) - len(given) + 1]
    return None


def _durables(manifest: Manifest, durable_dir: str) -> list[str]:
    """``durable_dir`` as written, and with its ``~`` resolved as the pull's roots were
    (``~/results`` against a root given as ``/root/results``: review h514 #5)."""
    durable = durable_dir.rstrip("/") or "/"
    home = box_home(manifest) if durable == "~" or durable.startswith("~/") else None
    return [durable] + ([home.rstrip("/") + durable[1:]] if home else [])


def output_prefixes(manifest: Manifest, durable_dir: str, name: str) -> tuple[str, ...]:
    """Local folder(s), relative to the host folder, where cell ``name``'s outputs land."""
    found = []
    for durable in _durables(manifest, durable_dir):
        found += _prefixes(manifest, durable, name)
    return tuple(dict.fromkeys(found))


def _prefixes(manifest: Manifest, durable: str, name: str) -> list[str]:
    cell_dir = f"{durable.rstrip('/')}/{name}"
    found = []
    for root in manifest.roots:
        for base in {root.given.rstrip("/") or "/", root.path.rstrip("/") or "/"}:
            if base == cell_dir or base.startswith(cell_dir + "/"):
                # A pull root inside the cell's own folder: all of it is the cell's ("":
                # the host folder itself, the one root's files landing there).
                found.append(manifest.local_relpath(root.index, "").rstrip("/"))
                continue
            if durable == base:
                below = ""
            elif durable.startswith(base.rstrip("/") + "/"):
                below = durable[len(base.rstrip("/")) + 1 :]
            else:
                continue
            inner = f"{below}/{name}" if below else name
            found.append(manifest.local_relpath(root.index, inner))
    return found


def in_outputs(path: str, name: str, prefixes: Sequence[str]) -> bool:
    """Whether local ``path`` is one of cell ``name``'s outputs: under one of its output
    folders (``output_prefixes``), or, with none known, in a folder named after the cell."""
    if prefixes:
        return any(not pre or path.startswith(pre + "/") for pre in prefixes)
    return name in path.split("/")[:-1]


def reconcile(
    cells: Sequence[str],
    manifest: Manifest,
    durable_dir: str,
    statuses: Mapping[str, str],
    open_work: Mapping[str, str] | None = None,
    writes_out: bool = False,
) -> RosterCheck:
    """Check each cell against the pulled files (``statuses``: local path → check status);
    ``open_work``: the cells whose run is unfinished or running, name → state;
    ``writes_out``: the host's run template names ``{out}`` (``queue_file.writes_out``)."""
    present, missing, unfinished = [], [], []
    paths = list(statuses)
    for name in dict.fromkeys(cells):
        never = _NOT_RUN.get(open_work.get(name, "")) if open_work is not None else None
        if open_work and name in open_work and not never:
            state = open_work[name]
            unfinished.append((name, state))
            if state == RUNNING:
                why = "running: counted once it is done"
            elif state == PENDING:  # waits its turn in a queue that runs: nothing to do
                why = "pending: counted once it has run and is done"
            else:
                why = (
                    f"{state}: its run did not finish, so what of it verified is not its "
                    "results (retry or move it, or accept it at teardown)"
                )
            missing.append((name, why))
            continue
        prefixes = output_prefixes(manifest, durable_dir, name)
        # A durable_dir under ~ that no root written with ~ resolves cannot be placed:
        # missing too, never found by a folder's name (review h516 #1: that let an eval
        # folder stand for checkpoints again); the fix writes it as durable_dir is.
        if writes_out and not prefixes:
            out = f"{durable_dir.rstrip('/')}/{name}"
            roots = ", ".join(r.given for r in manifest.roots) or "none"
            missing.append(
                (
                    name,
                    f"its output folder {out} is under no pull folder ({roots}), so its "
                    f'results were not pulled — add "{durable_dir}" to the host\'s pull, '
                    "then pull and verify (or accept it at teardown)",
                )
            )
            continue
        inside = [p for p in paths if in_outputs(p, name, prefixes)]
        where = " or ".join(prefixes) if prefixes else f"a folder named {name}"
        verified = [p for p in inside if statuses[p] == "verified"]
        if verified:
            present.append(name)
        elif not inside:
            missing.append(
                (
                    name,
                    never or f"{NO_OUTPUT} ({where}) in the pulled copy",
                )
            )
        else:
            missing.append(
                (
                    name,
                    f"{where} holds {plural(len(inside), 'file')} but none loaded as an artifact",
                )
            )
    return RosterCheck(
        tuple(dict.fromkeys(cells)), tuple(present), tuple(missing), tuple(unfinished)
    )


def roster_line(roster: RosterCheck) -> str:
    """``3 of 6 cells have verified results; unfinished or running, not counted: flaky
    (failed (exit 1)), slow1 (killed by the user)``: the count the teardown gate gives."""
    text = f"{len(roster.present)} of {len(roster.expected)} cells have verified results"
    if roster.unfinished:
        named = ", ".join(f"{name} ({state})" for name, state in roster.unfinished)
        text += f"; unfinished or running, not counted: {named}"
    return text
