"""The runtime's view of preemptions (issue 40): which interruptible box reads
"preempted?", and which one is named preempted, with the cell it interrupted and that
cell's last pulled-and-verified checkpoint (``domain.preemption``).

``PreemptionWatch.observe`` takes each applied update of a host with ``interruptible =
true``: a connected sample's start (boot id and PID 1 start) is remembered with the cell
running then (or the one that ended less than the profile's grace ago: RunPod's TERM
ends the cell while the box still answers, its KILL follows); a later sample from another start names a restart; an unreachable box past
its profile's grace (``Profile.spot_grace_s``, never less than ``blip_s``: a drop of a
minute is a network blip, not a preemption) names a loss. Each named preemption is
returned once per runtime (its consumers: the TUI's notice, ``watch``'s notification and
the ``on_preempt`` driver, whose journal claim makes the action once across restarts).

What was last seen of each host is kept in ``<journal>/preempt/<host>.json`` (written when
the start or the running cell changes, and at most once a minute otherwise), so a box that
was preempted while nothing watched is still named when it answers again.

Just past 450 lines on purpose: what a box that does not answer is told to do
(``unreachable_fix``: torn down, stopped by watch, preempted, its moves on record) reads
the same memory the watch keeps here; split, each half would read it again.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rgt_tui.domain.checkpoints import (
    is_checkpoint,
    left_out_words,
    newer_left_out,
    newest_checkpoint,
    recency,
)
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import HostKeyError, SessionRefused, TransportError
from rgt_tui.domain.health import Alert
from rgt_tui.domain.preemption import (
    LOST,
    NOT_CONNECTED,
    RESTARTED,
    SUSPECTED,
    Checkpoint,
    Preemption,
    lost_words,
    start_key,
)
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.queue.moved_skips import moved_on, moves_on_record
from rgt_tui.services.queue.resume import (
    NOT_VERIFIED_YET,
    cell_files,
    checkpoint_step,
    earlier_hop,
    is_earlier_copy,
)
from rgt_tui.services.records import atomic_write_json, fleet_host_dir, read_json
from rgt_tui.services.runtime.monitors import GEN8_ALERT
from rgt_tui.services.telemetry import HostUpdate

BLIP_S = 120.0  # an unreachable box shorter than this is a network blip, whatever the grace
# A cell seen ending this long past the grace still counts as the one the preemption
# interrupted: the box's last answers after the TERM arrive a poll (and a loaded
# machine's delay) apart, so the grace alone would drop the cell on an unlucky sample.
CELL_SLACK_S = 30.0
SAVE_EVERY_S = 60.0


@dataclass(frozen=True)
class Seen:
    """The last answer of a host: its start, when, and the cell running then."""

    start: str | None
    at: float
    cell: str | None
    # When ``cell`` was last seen running: a cell that ended within the platform's grace
    # before the box went (RunPod's TERM, then KILL ~5 s later) is the one interrupted.
    cell_at: float | None = None


def cell_checkpoints(fleet: Fleet, host: HostConfig, cell: str) -> tuple[Checkpoint | None, str]:
    """``cell``'s newest checkpoint that is pulled, verified and still whole here (the
    resume move's own choice: ``services.queue.resume.cell_files``), with its step where
    its name says it; and, when there is none, the local path of its newest checkpoint
    that is pulled but not verified for the last pull ("" when none: s35 resume hour #5,
    a verify, not a move from scratch, is then the way on). One pass over the cell's files
    (they are re-hashed). Blocking: run it in a thread."""
    files = cell_files(fleet, host, cell, time.time())
    best = newest_checkpoint(files)
    if best is not None:
        left = tuple(left_out_words(f) for f in newer_left_out(files, best))
        # Its sidecar's step too, as the move's plan says it (spot hour s43 #2: the
        # preemption line said no step where the plan said "step 900").
        step, _ = checkpoint_step(fleet_host_dir(fleet, host), files, best)
        earlier = is_earlier_copy(best)
        return Checkpoint(best.rel, best.mtime, best.size, step, left, earlier=earlier), ""
    waiting = [f for f in files if is_checkpoint(f.rel) and f.why.startswith(NOT_VERIFIED_YET)]
    if waiting:
        return None, max(waiting, key=lambda f: recency(f.mtime, f.rel)).local
    # Moved here by a resume move, and nothing of its run here verified: the checkpoint it
    # resumed from is the move's base, not "from scratch" (s38 spot hour #1).
    hop = earlier_hop(fleet, host.name, cell)
    if hop is not None and (base := newest_checkpoint(hop[1])) is not None:
        step, _ = checkpoint_step(fleet_host_dir(fleet, fleet.host(hop[0])), hop[1], base)
        return Checkpoint(base.rel, base.mtime, base.size, step, from_host=hop[0]), ""
    return None, ""


class PreemptionWatch:
    """What the runtime knows of each interruptible host's preemptions (see the module
    docstring). ``memory_dir``: where the last answers are kept (None: not kept)."""

    def __init__(
        self,
        fleet: Fleet,
        *,
        memory_dir: Path | None = None,
        blip_s: float = BLIP_S,
        grace_s: Callable[[HostConfig], float] | None = None,
        checkpoint: Callable[[HostConfig, str], Checkpoint | None] | None = None,
    ) -> None:
        self.fleet = fleet
        self.memory_dir = memory_dir
        self.blip_s = blip_s
        self._grace = grace_s or profile_grace
        # The verified checkpoint and, without one, an unverified one (one pass); one a
        # caller gives has no unverified one to say.
        self._checkpoints: Callable[[HostConfig, str], tuple[Checkpoint | None, str]] = (
            (lambda h, c: (checkpoint(h, c), ""))
            if checkpoint is not None
            else (lambda h, c: cell_checkpoints(self.fleet, h, c))
        )
        self.hosts_by_name: dict[str, HostConfig] = {}
        self.current: dict[str, Preemption] = {}  # what each host's pane shows now
        self._seen: dict[str, Seen | None] = {}
        self._saved: dict[str, Seen] = {}
        self._told: set[str] = set()
        self._sample: dict[str, HostSnapshot] = {}  # each host's last sample taken
        for host in fleet.hosts:
            self._restore(host)

    def _restore(self, host: HostConfig) -> None:
        """Take back the preemption a runtime before this one named for ``host`` and kept
        (it holds until the box runs its queue again: a TUI started later shows it on the
        pane as ``diagnose`` does, ux-h 6); already told, so never told again. Reads a
        small file, once per host, as ``seen`` does."""
        if self.memory_dir is None or not host.watch.interruptible:
            return
        named = read_named(self.memory_dir, host.name)
        if named is not None and named.host == host.name and named.named:
            self.current[host.name] = named
            self._told.add(named.key)

    def grace(self, host: HostConfig) -> float:
        """Seconds an interruptible box may be unreachable before it is taken as preempted."""
        return max(self._grace(host), self.blip_s)

    def observe(self, host: HostConfig, update: HostUpdate, now: float) -> Preemption | None:
        """Take ``update``; the preemption it names for the first time, else None."""
        if not host.watch.interruptible:
            return None
        seen = self.seen(host.name)
        snap, status = update.snapshot, update.connection.status
        if status == "connected" and snap is not None:
            if self._sample.get(host.name) is snap:
                # The last sample again: a reconnect is told before the agent's first
                # answer, with the sample from before the loss (its cell still running).
                return None
            self._sample[host.name] = snap
            key = start_key(snap)
            named = None
            if seen is not None and seen.start and key and key != seen.start:
                named = self._name(host.name, RESTARTED, seen)
            elif host.name in self.current and (
                self.current[host.name].kind == SUSPECTED or snap.cell is not None
            ):
                # Back from a blip, or its queue runs again. A box named lost that answers
                # from the same start with nothing running (vast.ai resumed a paused box:
                # every process died) keeps its preemption: ``diagnose`` names it as the
                # cause of the run it interrupted (ux-e #2), the pane keeps its line.
                del self.current[host.name]
                self._save_named(host.name, None)
            self._remember(host.name, self._running(host, seen, key, snap.cell, now))
            return named
        if status not in NOT_CONNECTED or seen is None:
            return None
        if now - seen.at <= self.grace(host):
            shown = self.current.get(host.name)
            if shown is None or shown.kind == SUSPECTED:
                self.current[host.name] = Preemption(host.name, SUSPECTED, seen.at, seen.start)
            return None
        return self._name(host.name, LOST, seen)

    def _running(
        self, host: HostConfig, seen: Seen | None, start: str | None, cell: str | None, now: float
    ) -> Seen:
        """The answer to keep: the cell running now, else the one that ended less than
        the profile's grace ago under the same start (the TERM that begins a RunPod
        preemption ends the cell while the box still answers; the loss follows)."""
        if cell is not None:
            return Seen(start, now, cell, now)
        if (
            seen is not None
            and seen.cell is not None
            and seen.cell_at is not None
            and seen.start == start
            and now - seen.cell_at <= self._grace(host) + CELL_SLACK_S
        ):
            return Seen(start, now, seen.cell, seen.cell_at)
        return Seen(start, now, None)

    def _name(self, host: str, kind: str, seen: Seen) -> Preemption | None:
        shown = self.current.get(host)
        if shown is not None and shown.named and shown.start == seen.start:
            return None  # already named (a loss, then its restart: one preemption)
        named = Preemption(host, kind, seen.at, seen.start, seen.cell)
        self.current[host] = named
        if named.key in self._told:
            return None
        self._told.add(named.key)
        return named

    def with_checkpoint(self, host: HostConfig, named: Preemption) -> Preemption:
        """``named`` with its cell's last verified checkpoint and, when its local queue
        line is ``#moved-to``, where it went (blocking: it re-hashes the copy here; run in
        a thread), also as the host's current one."""
        if named.cell is None:
            return named
        try:
            found, unverified = self._checkpoints(host, named.cell)
        except (OSError, ValueError):
            found, unverified = None, ""  # unreadable records: never taken as verified
        try:  # moved while the box was silent (ux-e #14): the notice says so, to its end
            moved = moved_on(self.fleet, host).get(named.cell)
        except (OSError, ValueError):
            moved = None
        full = replace(
            named, checkpoint=found, step=found.step if found else None, moved_to=moved,
            unverified=unverified,
        )  # fmt: skip
        if self.current.get(host.name) == named:
            self.current[host.name] = full
        self._save_named(host.name, full)
        return full

    def _save_named(self, host: str, named: Preemption | None) -> None:
        """Keep the named preemption for ``queue show`` and ``diagnose`` (None: gone)."""
        if self.memory_dir is None:
            return
        path = self.memory_dir / f"{host}.named.json"
        try:
            if named is None:
                path.unlink(missing_ok=True)
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, asdict(named))
        except OSError:
            pass  # the pane and the notices have it; the command line misses it

    # -- the last answers, kept ---------------------------------------------------------

    def seen(self, host: str) -> Seen | None:
        """The host's last answer (from this run, else as kept)."""
        if host not in self._seen:
            self._seen[host] = self._load(host)
        return self._seen[host]

    def _path(self, host: str) -> Path | None:
        return (
            None if self.memory_dir is None else self.memory_dir / f"{host}.json"
        )  # a checked host name

    def _load(self, host: str) -> Seen | None:
        return None if self.memory_dir is None else read_seen(self.memory_dir, host)

    def _remember(self, host: str, seen: Seen) -> None:
        self._seen[host] = seen
        path, saved = self._path(host), self._saved.get(host)
        if path is None:
            return
        same = saved is not None and (saved.start, saved.cell) == (seen.start, seen.cell)
        if same and saved is not None and seen.at - saved.at < SAVE_EVERY_S:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, asdict(seen))
            self._saved[host] = seen
        except OSError:
            pass  # kept in memory; the next sample tries again


def profile_grace(host: HostConfig) -> float:
    """The host's profile's grace in seconds (0 where the profile names none)."""
    return load_profile(host.profile).spot_grace_s or 0.0


def preempt_dir(journal_folder: Path) -> Path:
    """Where the last answers of a fleet's interruptible hosts are kept."""
    return journal_folder / "preempt"


def read_seen(memory_dir: Path, host: str) -> Seen | None:
    """The host's last answer as a runtime kept it (None: none, or unreadable)."""
    try:
        data = read_json(memory_dir / f"{host}.json")  # a checked host name
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("at"), (int, float)):
        return None
    start, cell, cell_at = data.get("start"), data.get("cell"), data.get("cell_at")
    return Seen(
        start if isinstance(start, str) else None,
        float(data["at"]),
        cell if isinstance(cell, str) else None,
        float(cell_at) if isinstance(cell_at, (int, float)) else None,
    )


def read_named(memory_dir: Path, host: str) -> Preemption | None:
    """The preemption a runtime (TUI or ``watch``) last named for ``host`` and that still
    holds (the box has not run its queue again since); None when there is none."""
    try:
        data = read_json(memory_dir / f"{host}.named.json")
        ckpt = data.get("checkpoint") if isinstance(data, dict) else None
        if not isinstance(data, dict):
            return None
        if isinstance(ckpt, dict):
            ckpt["newer_left_out"] = tuple(str(n) for n in ckpt.get("newer_left_out") or ())
        data["checkpoint"] = Checkpoint(**ckpt) if isinstance(ckpt, dict) else None
        return Preemption(**data)
    except (OSError, ValueError, TypeError):
        return None  # damaged or another version: nothing said rather than a wrong line


def named_preemption(fleet: Fleet, host: str) -> Preemption | None:
    """The preemption the TUI or ``watch`` named for ``host`` of ``fleet`` that still holds
    (None: none, or the built-in fleet, which keeps no journal). Reads a file."""
    from rgt_tui.paths import journal_dir

    if fleet.is_default or fleet.path is None:
        return None
    return read_named(preempt_dir(journal_dir(fleet.path)), host)


def unreachable_fix(fleet: Fleet, host: HostConfig) -> str | None:
    """What to do about ``host`` not answering when watch's autostop stopped it, or when
    it may have been preempted (ux-e #2): an interruptible host, or one a runtime named
    preempted. ``box1 does not answer
    (preempted?): move the interrupted cell: rgt-tui queue move alpha --to box2`` (the
    cell a runtime last saw running there, the first spare), or that the cell already
    moved; None for any other host. Reads files: call it off the event loop."""
    from rgt_tui.paths import journal_dir
    from rgt_tui.services.journal import Journal, JournalError, local_minute
    from rgt_tui.services.runtime.stopped import StoppedHosts, hhmm

    if not fleet.is_default and fleet.path is not None:
        journal = Journal(journal_dir(fleet.path))
        try:
            torn = journal.load(host.name).torn_down_at
        except (JournalError, OSError, ValueError):
            torn = None
        if torn is not None:
            # Torn down: not answering is what it should do (hour s22c #5: the commands
            # talked of a box that was down, and of its port).
            return (
                f"{host.name} was torn down ({local_minute(torn)}): not answering is "
                "expected; to work on a box again, rename its [[hosts]] entry in place "
                "(rgt-tui takes it as a new host)"
            )
        # watch's autostop stopped it: "check the port" sent the user to the wrong place
        # (hour s23a #6). Stopped is what it is until it answers again.
        stopped = StoppedHosts(journal).stopped_at(host.name)
        if stopped is not None:
            return (
                f"{host.name} was stopped by watch at {hhmm(stopped)} (its queue done, its "
                "results pulled and verified): start it from the provider to use it again"
            )
    memory = (
        None if fleet.is_default or fleet.path is None else preempt_dir(journal_dir(fleet.path))
    )
    named = read_named(memory, host.name) if memory is not None else None
    if not host.watch.interruptible and named is None:
        return None
    seen = read_seen(memory, host.name) if memory is not None else None
    cell = named.cell if named is not None else seen.cell if seen is not None else None
    head = f"{host.name} does not answer ({'preempted' if named is not None else 'preempted?'})"
    try:  # one read of the queue files serves both answers below
        seen_moves = moves_on_record(fleet, host)
    except (OSError, ValueError):
        seen_moves = None
    held = seen_moves.held if seen_moves is not None else {}
    moved = seen_moves.every if seen_moves is not None else {}
    if cell is not None and cell in moved:
        last = moved[cell].split(" → ")[-1]
        return (
            f"{head}; {cell} already moved to {moved[cell]} (its queue file's #moved-to): "
            f"follow it there (rgt-tui queue show {last})"
        )
    to = host.watch.spare[0] if host.watch.spare else "HOST"
    what = shlex.quote(cell) if cell is not None else "CELL"
    move = f"rgt-tui queue move {what} --to {to}"
    if cell is None and held:
        # No runtime saw which cell ran (a move from the command line, nothing watching):
        # the moves on record are said, not a bare "move CELL" as if none was made
        # (h541 #4: the checklist said "moved" beside it). Only moves the destination's
        # queue file holds, as the gate counts them, each followed where it went.
        names = list(held)
        said = ", ".join(f"{shlex.quote(n)} → {held[n]}" for n in names[:3])
        said += f" and {len(names) - 3} more" if len(names) > 3 else ""
        dests = dict.fromkeys(held[n].split(" → ")[-1] for n in names)
        follow = "; ".join(f"rgt-tui queue show {d}" for d in list(dests)[:3])
        return (
            f"{head}; moved from it already (its queue file's #moved-to): {said} — follow "
            f"them there ({follow}); another cell that ran there: {move}"
        )
    return f"{head}: move the interrupted cell: {move}"


def with_unreachable_fix(fleet: Fleet, host: HostConfig, exc: TransportError) -> TransportError:
    """``exc`` (``host`` not reached) with ``unreachable_fix`` as its fix, before the
    transport's own, where the host may have been preempted; ``exc`` itself otherwise
    (a refused host key or session is no preemption). Reads files."""
    if isinstance(exc, (HostKeyError, SessionRefused)):
        return exc
    return told_with_fix(exc, unreachable_fix(fleet, host))


def told_with_fix(exc: TransportError, fix: str | None) -> TransportError:
    """``exc`` with ``fix`` (``unreachable_fix``, read once by the caller) before the
    transport's own; ``exc`` itself when there is none, or when ``exc`` is a refused host
    key or session (no preemption)."""
    if fix is None or isinstance(exc, (HostKeyError, SessionRefused)):
        return exc
    if exc.fix and exc.fix.startswith(fix):
        return exc  # told already (a command's own, then the runner's for every command)
    return TransportError(exc.host, exc.message, f"{fix}; or {exc.fix}" if exc.fix else fix)


def as_preempted_alerts(fleet: Fleet, host: str, alerts: Iterable[Alert]) -> tuple[Alert, ...]:
    """``alerts`` of ``host``'s box that does not answer (a status report's) with the lost
    connection's said as the named preemption's, as ``as_preempted`` says it. Reads a file."""
    p = named_preemption(fleet, host)
    if p is None or not p.named:
        return tuple(alerts)
    words = lost_words(p)
    return tuple(replace(a, message=words) if a.id == GEN8_ALERT else a for a in alerts)


def as_preempted(update: HostUpdate, p: Preemption | None) -> HostUpdate:
    """``update`` of a box not answering once ``p`` names its preemption: the lost
    connection's alert says so, not "preempted?" (ux-e #14). Any other update as it is."""
    if p is None or not p.named or update.connection.status not in ("reconnecting", "lost"):
        return update
    words = lost_words(p)
    alerts = tuple(replace(a, message=words) if a.id == GEN8_ALERT else a for a in update.alerts)
    return replace(update, alerts=alerts)
