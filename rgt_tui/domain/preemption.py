"""A preemption of an interruptible box, named as one (issue 40), as pure data and words.

A host with ``interruptible = true`` (vast.ai interruptible, RunPod spot, a preemptible
Slurm partition) that stops answering may have been preempted: it reads "preempted?"
with the time since. Past its profile's grace (``Profile.spot_grace_s``) with no answer,
or when it answers again from a new start (a new boot id, or only a new PID 1: a
restarted container keeps the host's boot id), it is named preempted, with the cell it
interrupted and that cell's last verified checkpoint.

``start_key`` is what names one start of a box; a preemption's ``key`` is the host and
the start it ended, so the same preemption is the same key in the TUI, in ``watch`` and
after either restarts (the claim of an unattended move is made under it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.units import fmt_duration

SUSPECTED = "suspected"  # unreachable, within the grace: "preempted?"
LOST = "lost"  # unreachable past the grace: taken as preempted
RESTARTED = "restarted"  # answered again from a new start: preempted
NOT_CONNECTED = ("reconnecting", "lost", "unreached")


def start_key(snap: HostSnapshot | None) -> str | None:
    """``<boot id>/<PID 1 start>``: one start of the box (None: the sample says neither)."""
    if snap is None or (snap.boot_id is None and snap.container_start is None):
        return None
    start = "" if snap.container_start is None else f"{snap.container_start:.0f}"
    return f"{snap.boot_id or ''}/{start}"


@dataclass(frozen=True)
class Checkpoint:
    """A cell's newest checkpoint that is pulled and verified here."""

    path: str  # relative to the cell's {out}
    mtime: float  # when the box wrote it (box clock)
    size: int = 0
    step: int | None = None  # where its name or its sidecar says (``queue.resume.checkpoint_step``)
    # The cell's newer checkpoints that are not pulled-and-verified whole here, each with
    # why (``domain.checkpoints.left_out_words``): what a resume from this one skips.
    newer_left_out: tuple[str, ...] = ()
    # The host it was pulled from when not this one: the box the cell ran on before a
    # resume move brought it here (``services.queue.resume.earlier_hop``); "" otherwise.
    from_host: str = ""
    # The earlier copy verify kept of a checkpoint it found damaged (``.rgt/replaced/``):
    # the newer file of the same name is what is left out (h502 #7 read one name both
    # "resumes from" and "left out").
    earlier: bool = False

    def named(self) -> str:
        """``checkpoint.pt``, or ``the earlier verified copy of checkpoint.pt``."""
        return f"the earlier verified copy of {self.path}" if self.earlier else self.path


@dataclass(frozen=True)
class Preemption:
    """One preemption of one host (see the module docstring)."""

    host: str
    kind: str  # SUSPECTED | LOST | RESTARTED
    at: float  # ~ when: the last answer from the start it ended
    start: str | None  # that start (``start_key``)
    cell: str | None = None  # the cell it interrupted (running at the last answer)
    checkpoint: Checkpoint | None = None
    step: int | None = None  # the step its checkpoint holds, where known
    # The host the cell was moved to before the preemption was named (its queue file's
    # ``#moved-to``: the user moved it while the box was silent); None: not moved.
    moved_to: str | None = None
    # No verified checkpoint, but one pulled and not verified since the last pull (its
    # local path): a verify, which needs no box, lets a move resume from it ("" none).
    unverified: str = ""

    @property
    def key(self) -> str:
        """The occurrence: the host, the start it ended and the cell it interrupted (the
        same in the TUI and in ``watch``, and across restarts of either). The cell tells
        apart two preemptions of one start: a box vast.ai resumes from a pause keeps its
        start, and a second preemption of it, of a cell launched since, was never told
        nor moved (a user's hour, s21a #1)."""
        occurrence = f"preempted:{self.host}:{self.start or f'{self.at:.0f}'}"
        return occurrence if self.cell is None else f"{occurrence}:{self.cell}"

    @property
    def named(self) -> bool:
        """Taken as a preemption (past the grace, or restarted), not only suspected."""
        return self.kind in (LOST, RESTARTED)


def suspected(
    host: HostConfig, status: str, since: float, *, ever_seen: bool = True
) -> Preemption | None:
    """ "preempted?" for an interruptible host not answering (a sample came once this run,
    or an earlier run saw it answer: ``ever_seen``); None otherwise, and for a box never
    reached at all: nothing ran there to be preempted (hour s19b #6). ``since``: when the
    status began."""
    if not host.watch.interruptible or status not in NOT_CONNECTED:
        return None
    if status == "unreached" and not ever_seen:
        return None
    return Preemption(host.name, SUSPECTED, since, None)


def hhmm(t: float) -> str:
    """``14:05`` in local time."""
    return time.strftime("%H:%M", time.localtime(t))


def suspected_line(since: float, now: float) -> str:
    """``preempted? unreachable since 14:03 (12m)``: an interruptible box that is silent."""
    return f"preempted? unreachable since {hhmm(since)} ({fmt_duration(max(0.0, now - since))})"


def preemption_line(p: Preemption) -> str:
    """``preempted at ~14:03: cell X interrupted; last verified step k, from 13:58`` —
    what a preemption cost, in one line (the parts known), with the newer checkpoints a
    resume leaves out (``…; newer step-22.pt left out (verify found it corrupt)``); ``…;
    it already moved to box2 …`` when the cell was moved before it was named. The step
    is the verified checkpoint's, never "interrupted at": the run may have gone further
    (ux-h 11)."""
    head = f"preempted at ~{hhmm(p.at)}"
    if p.kind == LOST:
        head += " (unreachable past its grace)"
    if p.cell is None:
        # Nothing to move unattended; a cell that ended unfinished before (killed, its
        # runner gone) is still the user's to move (h502 #1: no next step was said).
        return (
            f"{head}: no cell was running then — a cell it did not finish moves to another "
            "box by hand (m on its Queue tab; rgt-tui queue move CELL --to HOST)"
        )
    ck = p.checkpoint
    if p.moved_to is not None:
        tail = f"it already moved to {p.moved_to} (its queue file's #moved-to)"
    elif ck is None and p.unverified:
        tail = (
            f"its checkpoint {p.unverified} is pulled but not verified: verify {p.host} (it "
            "needs no box), then a move resumes from it"
        )
    elif ck is None:
        tail = "it has no pulled and verified checkpoint: a move starts it from scratch"
    elif p.step is not None:
        tail = f"last verified step {p.step}, from {hhmm(ck.mtime)}"
    else:
        tail = f"its last verified checkpoint is from {hhmm(ck.mtime)}"
    if ck is not None and ck.from_host and p.moved_to is None:
        tail += f" (its run on {ck.from_host}, before it moved here: the one it resumed from)"
    if ck is not None and ck.newer_left_out and p.moved_to is None:
        tail += "; newer " + ", ".join(ck.newer_left_out) + " left out"
        if ck.earlier:
            tail += f" (a resume starts from the earlier verified copy of {ck.path})"
    return f"{head}: cell {p.cell} interrupted; {tail}"


def mtbf_s(host: HostConfig, profile: Profile) -> float | None:
    """The host's mean time between preemptions in seconds — its own
    ``preempt_mtbf_hours``, else its profile's — for an interruptible host; None
    otherwise (a box nobody preempts has no Young/Daly interval)."""
    if not host.watch.interruptible:
        return None
    hours = host.preempt_mtbf_hours or profile.preempt_mtbf_hours
    return hours * 3600.0 if hours else None


def lost_words(p: Preemption) -> str:
    """The lost connection's alert once ``p`` is named (no longer "preempted?")."""
    return f"connection lost — preempted at ~{hhmm(p.at)} (an interruptible box)"
