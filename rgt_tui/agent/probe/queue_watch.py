"""The queue's running cell (U43): its log and output directory, found from the records
the queue runner leaves in ~/.rgt/queue (run_queue.sh, run_one.sh)::

  runner.state        launch <ts> <boot_id> <detach> <start> <script> <pid> / done <ts> ...
  cells/NAME.state    start <ts> <boot_id> <pid> / end <ts> <exit code>
  cells/NAME.log      the cell's output

and the cell's output directory is <durable_dir>/NAME (the run template's {out}).
"""

import os
import time

from .artifacts import ARTIFACT_SCAN_EVERY_S, ArtifactScanner
from .common import read_optional
from .processes import pid_alive

QUEUE_RESCAN_EVERY_S = 30.0
QUEUE_SCAN_LIMIT = 5000  # state files looked at per scan: a huge queue must not stall us


def complete_lines(text):
    """The lines of a record file that are whole: a last line without its newline is
    still being appended and is left for the next look."""
    lines = text.split("\n")
    return [ln for ln in lines[:-1] if ln.strip()]


def open_attempt(state_text, boot_id):
    """(start time, pid) of a cell's unfinished attempt of this boot; None otherwise.

    Only ``start`` and ``end`` lines decide: other records follow a start while the
    attempt runs (``code``, the code it runs; ``kill``, a kill asked by the user), and
    reading the last line alone would lose the running cell behind them."""
    lines = [ln for ln in complete_lines(state_text) if ln.split()[:1] in (["start"], ["end"])]
    if not lines:
        return None
    words = lines[-1].split()
    if len(words) < 4 or words[0] != "start" or words[2] != boot_id:
        return None  # ended, or started in an earlier boot (it died with it, GEN6)
    try:
        return float(words[1]), int(words[3])
    except ValueError:
        return None


def last_done(runner_text):
    """(when the last launch wrote its done record (box clock), whether it ended on a
    stop before its last cell (the user's, or a group's: its ``stopped`` record));
    (None, False) while it runs or when the queue was never launched."""
    done, stopped = None, False
    for line in complete_lines(runner_text):
        words = line.split()
        if words[0] == "launch":
            done, stopped = None, False
        elif words[0] == "stopped":
            stopped = True
        elif words[0] == "done" and len(words) >= 2:
            try:
                done = float(words[1])
            except ValueError:
                done = None
    return done, stopped


def _signature(path):
    """(mtime, size) of a file or directory, None when it is absent: what changed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime, st.st_size)


class QueueWatch:
    """Follows the box's running queue cell from sample to sample.

    The cell is looked up again only when it ended or the records changed (a new state
    file, a new launch) and at most every 30 s otherwise, so a long-lived agent follows
    the queue from cell to cell without reading every record every sample.
    """

    def __init__(self, queue_dir, out_root, proc_root, scan_every=ARTIFACT_SCAN_EVERY_S):
        self.queue_dir = queue_dir
        self.out_root = out_root
        self.proc_root = proc_root
        self.scan_every = scan_every
        self.cell = None  # the running cell's name
        self.started = None  # when its attempt started (box clock), for the tracker check
        self.scanner = None
        self.done_at = None
        self.stopped = False  # the last launch stopped before its last cell
        self._runner_sig = None
        self._cells_sig = None
        self._last_scan = None

    def poll(self, boot_id):
        """(running cell name or None, its log path, its ArtifactScanner, done time)."""
        runner = os.path.join(self.queue_dir, "runner.state")
        sig = _signature(runner)
        launched = sig != self._runner_sig
        if launched:
            self._runner_sig = sig
            self.done_at, self.stopped = last_done(read_optional(runner) or "")
        attempt = self._attempt(self.cell, boot_id) if self.cell is not None else None
        ended = self.cell is not None and attempt is None
        if ended:
            self.cell = self.scanner = self.started = None  # look for the next cell now
        elif attempt is not None:
            self.started = attempt[0]  # a retry of the same cell starts a new attempt
        if self.cell is None:
            cells = os.path.join(self.queue_dir, "cells")
            csig = _signature(cells)
            now = time.monotonic()
            if (
                launched
                or ended
                or csig != self._cells_sig
                or self._last_scan is None
                or now - self._last_scan >= QUEUE_RESCAN_EVERY_S
            ):
                self._cells_sig, self._last_scan = csig, now
                self.cell = self._find(cells, boot_id)
                if self.cell is not None and self.out_root:
                    out = os.path.join(self.out_root, self.cell)
                    self.scanner = ArtifactScanner(out, self.scan_every)
        if self.cell is None:
            return None, None, None, self.done_at
        log = os.path.join(self.queue_dir, "cells", self.cell + ".log")
        return self.cell, log, self.scanner, self.done_at

    def _attempt(self, name, boot_id):
        path = os.path.join(self.queue_dir, "cells", name + ".state")
        attempt = open_attempt(read_optional(path) or "", boot_id)
        if attempt is None or not pid_alive(self.proc_root, attempt[1]):
            return None
        return attempt

    def _find(self, cells, boot_id):
        """The name of the running cell that started last; None when none runs."""
        try:
            entries = os.listdir(cells)
        except OSError:
            return None
        states = sorted(e for e in entries if e.endswith(".state"))
        best = None
        for entry in states[:QUEUE_SCAN_LIMIT]:
            name = entry[: -len(".state")]
            attempt = self._attempt(name, boot_id)
            if attempt is not None and (best is None or attempt[0] > best[0]):
                best = (attempt[0], name)
        self.started = None if best is None else best[0]
        return None if best is None else best[1]


def queue_boot_id(sample_boot_id):
    """The boot id the queue's records carry: the runner reads $RGT_BOOT_ID_FILE when set
    (the demo and tests point it at a file they can change), else the kernel's."""
    path = os.environ.get("RGT_BOOT_ID_FILE")
    if path:
        text = read_optional(path)
        if text is not None and text.strip():
            return text.strip()
    return sample_boot_id
