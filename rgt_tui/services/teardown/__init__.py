"""Teardown: gather the gate's facts, show the checklist, and run teardown only when told.

One module per job, the gate itself being the pure state machine in
``domain.teardown_gate`` (nothing here decides on its own):

- ``events`` — facts → gate events: the pull's manifest record, the verification record
  beside the results, and a re-scan of the box, in the gate's terms (pure);
- ``services.local_copy`` (beside this package: pulls, verify and disk reclaim read it
  too, and a pull must not import the gate) — the local copy re-hashed now: every file
  the manifest lists must be under ``<results_dir>/<host>/`` with its SHA-256, or the
  gate stays locked naming the file and saying to pull again; ``services.reclaimed``
  keeps the files a reclaim deleted on the box, whose copy here is the only one;
- ``gate`` — the gate check: ``check_gate`` re-scans the box *now* (sizes and mtimes, no
  hashing; it also says which box answers: its ``~/.rgt/box-id`` and host key) and reads
  its queue records (which cells run, and which the records or the scheduler know to be
  unfinished; the queue file's ``#moved-to`` records), and records every fact in the host's journal (only events that
  change the gate are appended, so re-checking is cheap and the journal stays short). A
  re-scan that fails (or no connection) is recorded as such, so an earlier one never
  stands in for it; ``observe_now`` records which box answers. Its re-scan of the box
  (what answers, what runs, which cells are unfinished or moved) is ``gate_scan``'s; the
  checklist lines that need what the check found beside the recorded state (box, idle,
  roster, account) are ``gate_conditions``';
- ``acknowledge`` — the user's by-name acknowledgements of missing, running or unfinished
  cells (an unfinished one must be one the box's last check recorded), of the box they saw (``acknowledge(box=...)``; the command line identifies the box
  answering first with ``observe_now``);
- ``confirm`` — running the teardown: ``confirm_and_tear_down`` records the typed name
  with a fresh token, re-scans the box right then and runs the teardown command only
  when that re-scan, taken for that confirmation, unlocks the gate (an unreachable box
  at that moment keeps it locked). Without a configured command nothing is recorded at
  confirmation: the user gets the instructions. A failed command is recorded as a
  failed attempt, never as a teardown;
- ``by_hand`` — ``record_destroyed`` records a teardown done by hand once the user types
  the name again — of the box that was confirmed, only while the journal still holds it
  (``BoxMismatch`` otherwise) and while that confirmation holds (``changed_since``: what
  since voids it, which periodic pulls and autostop ask too, ``voided_by``);
- ``group`` — a group is no box: ``teardown GROUP`` is refused naming each box's own
  teardown, and a group's gate is one locked line saying so (nothing recorded under it);
- ``command`` — the teardown command runs in its own process group, killed whole when it
  runs past its time; a timeout is recorded as a failed attempt.

Every fact belongs to a box: records (manifest, verification) are used only when they are
of the box answering now, and a new box under the host's name starts with a closed gate
while the old box's facts become history (``Journal.observe_box``). The re-scan carries
its own refusals and links: one the manifest did not have is a change
(``teardown_gate``). Text from the box is made printable (``text.printable``) before it
becomes a problem or a re-scan failure.
"""

from rgt_tui.services.box.identity import box_still_answers
from rgt_tui.services.teardown.acknowledge import (
    BoxMismatch,
    NotRunningError,
    NotUnfinishedError,
    StillToRun,
    UnknownCellError,
    acknowledge,
    check_cells,
    queue_cells,
    unfinished_cells,
)
from rgt_tui.services.teardown.by_hand import (
    MANUAL_OUTPUT,
    ConfirmationVoid,
    confirmed_at,
    record_destroyed,
    record_manual_teardown,
)
from rgt_tui.services.teardown.confirm import (
    TEARDOWN_TIMEOUT_S,
    GateLocked,
    TeardownOutcome,
    confirm_and_tear_down,
    instructions,
    is_cluster,
)
from rgt_tui.services.teardown.events import manifest_event, rescan_event, verification_events
from rgt_tui.services.teardown.gate import GateReport, check_gate, gather, observe_now
from rgt_tui.services.teardown.group import group_refusal

__all__ = [
    "MANUAL_OUTPUT", "TEARDOWN_TIMEOUT_S", "BoxMismatch", "ConfirmationVoid", "GateLocked", "GateReport",
    "NotRunningError", "NotUnfinishedError", "StillToRun", "TeardownOutcome", "UnknownCellError", "unfinished_cells", "acknowledge", "check_cells", "check_gate",
    "confirm_and_tear_down", "confirmed_at", "instructions", "manifest_event", "observe_now",
    "gather", "group_refusal", "is_cluster", "queue_cells", "record_destroyed", "record_manual_teardown", "rescan_event", "box_still_answers", "verification_events",
]  # fmt: skip
