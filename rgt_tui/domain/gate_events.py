"""The teardown gate's vocabulary: the facts it is told, as frozen events.

Each event is one recorded fact about a host (a manifest taken, a file pulled, a cell
acknowledged, the name typed...). ``teardown_gate.apply`` is the only thing that turns
them into gate state, and the journal stores them by class name, so a class keeps its
name once recorded. Nothing here decides anything; this module imports no gate logic
(``teardown_gate`` imports it, never the other way).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileFacts:
    """What the box said about one file: enough to notice any change."""

    size: int
    mtime: float
    sha256: str


# --- events --------------------------------------------------------------------------


@dataclass(frozen=True)
class ManifestTaken:
    """A manifest of every file under the pull roots; ``last_write`` is the newest mtime seen.

    ``refused``: (local path, reason) of what the scan refused; ``links``: (local path,
    target) of the links it kept. A re-scan finding any other is a change (events
    recorded before these were kept load with none).
    """

    files: tuple[tuple[str, FileFacts], ...]
    taken_at: float
    last_write: float
    refused: tuple[tuple[str, str], ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    # When the scan ended (box clock; 0: not recorded): a file dated after it is dated
    # in the future, not written after the scan (hour s20a #4).
    finished_at: float = 0.0


@dataclass(frozen=True)
class Rescanned:
    """A fresh listing of the box (sizes and mtimes) at gate time.

    ``attempt``: the token of the confirmation this re-scan was taken for ("" for a
    checklist check, which counts for no confirmation). ``box_id``: the box it listed.
    ``refused`` and ``links``: as in ``ManifestTaken``, what this re-scan refused and
    the links it found; one the manifest did not have is a mismatch.
    """

    files: tuple[tuple[str, int, float], ...]
    at: float
    attempt: str = ""
    box_id: str | None = None
    refused: tuple[tuple[str, str], ...] = ()
    links: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RescanFailed:
    """The box could not be re-scanned just now (unreachable, garbled output): no re-scan
    taken before counts in its place."""

    why: str


@dataclass(frozen=True)
class FilePulled:
    """The local copy of ``path`` hashed to ``sha256``."""

    path: str
    sha256: str


@dataclass(frozen=True)
class LocalCopyChecked:
    """The local copy under ``folder`` re-hashed just now against the manifest: ``matched``
    files are there with the manifest's SHA-256; ``missing`` (local paths) are not there;
    ``changed`` ("path: why") are there but are not the pulled file (another hash or
    size, a link, not a regular file, unreadable). ``reclaimed``: how many of the files
    checked are not the manifest's but ones a reclaim deleted on the box after they
    verified (``services.reclaimed``), whose only copy is this one."""

    folder: str
    at: float
    matched: int
    missing: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    reclaimed: int = 0

    @property
    def ok(self) -> bool:
        """Nothing missing, nothing changed."""
        return not self.missing and not self.changed


@dataclass(frozen=True)
class ArtifactChecked:
    """The verification of one pulled file: loadable types must load; others count by hash."""

    path: str
    loadable: bool
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class VerificationRead:
    """What verify said about this manifest: ``ok`` and every problem it named.

    ``problems`` leaves out the missing roster cells: the roster condition rules those,
    with the user's by-name acknowledgements. ``left_to_roster`` names those cells, so
    the checklist can say verify did not pass for them (its words and verify's agree).
    """

    ok: bool
    problems: tuple[str, ...] = ()
    left_to_roster: tuple[str, ...] = ()
    # The manifest lists no file and every cell of the roster is missing: verify's "an
    # empty result set is never a success" is left to the roster too, where each cell
    # must be acknowledged by name as having no results (a box where nothing ran, or
    # whose cells all moved away before any ran, could never be torn down: hour s34 TUI
    # #1). With no roster (no queue) an empty manifest still never counts.
    empty_left_to_roster: bool = False


@dataclass(frozen=True)
class RecordsInvalid:
    """The records the facts rest on are gone or belong elsewhere (the pulled copy's
    manifest is missing, unreadable, or of another box): every fact built on them drops."""

    why: str


@dataclass(frozen=True)
class RosterChecked:
    """Cells the queues name, and those with an output directory holding a verified artifact."""

    expected: tuple[str, ...]
    present: tuple[str, ...]


@dataclass(frozen=True)
class MissingCellAcknowledged:
    """The user accepted, by name, that this cell has no results."""

    name: str


@dataclass(frozen=True)
class CellsRunning:
    """The queue cells running on the box right now (from its records); ``runs``: (name,
    run) of each (``domain.unfinished.run_key``), the run an acknowledgement holds for."""

    names: tuple[str, ...]
    runs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SlurmJobsSeen:
    """On a Slurm host: the tasks of the host's queue that squeue still lists (not ended),
    each as its evidence ("job 123_4 RUNNING on node1"); ``error``: why squeue could not
    be read just now (the jobs are then unknown, not none)."""

    jobs: tuple[str, ...]
    error: str = ""


@dataclass(frozen=True)
class RunningAcknowledged:
    """The user accepted, by name, tearing down while this cell runs: with ``run``, the
    run of it the check saw running (``CellsRunning.runs``). A later run of the cell (a
    retry, a relaunch) is asked again: accepted once, a name opened the gate for a run
    the user never saw (h551 #1). "" (recorded before runs were) holds only while no run
    is known."""

    name: str
    run: str = ""


@dataclass(frozen=True)
class QueueCellsSeen:
    """The host's queue as its records (or its scheduler) show it, read at this check.

    ``unfinished``: (name, state, what is known) of each cell they know to be unfinished
    (failed, killed, interrupted, a Slurm end such as CANCELLED or PREEMPTED, waiting to
    run or to be retried; a running cell is ``CellsRunning``'s). ``moved``: (name, host)
    of each cell the host's queue file records as moved (``#moved-to``): its work is the
    other host's now. ``outputs``: (name, local folder) where an unfinished cell's outputs
    land in the pulled copy, to name its newest verified checkpoint (none: any folder
    named after the cell, as the roster has it). ``runs``: (name, run) of each unfinished
    cell: which run of it is unfinished (``domain.unfinished.run_key``), so that an
    acknowledgement holds for that run only, not for a retry's.
    """

    unfinished: tuple[tuple[str, str, str], ...] = ()
    moved: tuple[tuple[str, str], ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()
    runs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class UnfinishedAcknowledged:
    """The user accepted, by name, tearing down with this cell's work unfinished: with
    ``run``, the run of it the checklist showed (``QueueCellsSeen.runs``). A retry is
    another run, unfinished again or not, and asks again; "" (an acknowledgement recorded
    before runs were) holds only while no run is known."""

    name: str
    run: str = ""


@dataclass(frozen=True)
class BoxChanged:
    """Something changed on the box after the manifest: a file or a started cell."""

    what: str


@dataclass(frozen=True)
class ConfirmationTyped:
    """What the user typed in the confirmation box; ``attempt`` is a fresh token per
    confirmation, which the re-scan taken for it carries (see ``teardown_gate``'s docstring).
    ``group_cells``: (group, cell) for each cell of the queue file of each ``[[groups]]``
    entry the box is a rank of, as the name was typed: what the confirmation knew of those
    files, which the box's own gate never reads (``confirm.changed_since``); None for a
    confirmation recorded before rgt-tui kept them (nothing known: not compared)."""

    text: str
    attempt: str = ""
    group_cells: tuple[tuple[str, str], ...] | None = None


GateEvent = (
    ManifestTaken
    | Rescanned
    | RescanFailed
    | FilePulled
    | LocalCopyChecked
    | ArtifactChecked
    | VerificationRead
    | RecordsInvalid
    | RosterChecked
    | MissingCellAcknowledged
    | CellsRunning
    | SlurmJobsSeen
    | RunningAcknowledged
    | QueueCellsSeen
    | UnfinishedAcknowledged
    | BoxChanged
    | ConfirmationTyped
)
