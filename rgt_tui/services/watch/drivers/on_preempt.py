"""The opt-in recovery of a preempted box (issue 40): ``on_preempt`` in the fleet file.

The fleet runtime names a preemption of a host with ``interruptible = true``
(``services.runtime.preemption``: unreachable past its profile's grace, or answering
again from a new start) with the cell it interrupted and that cell's last pulled and
verified checkpoint. ``OnPreempt.on_preempted`` then, for both ``watch`` and the open TUI:

- tells it (a ``preempted`` event: one notification, one notices entry);
- ``on_preempt = "move"``: moves the interrupted cell, when it has a verified checkpoint,
  to the first of the host's ``spare`` hosts whose resume plan (``services.queue.resume``:
  preflight, room, the name free there) holds, and says what moved where and what the
  resume repeats (a ``moved`` event). A cell with no verified checkpoint is not moved
  unattended (the user decides on ``--from-scratch``);
- ``on_preempt = "relaunch"``: once the box answers again from a new start, launches its
  queue from the queue's resume index on the same box (``services.queue.launch``, with
  preflight as any launch).

Once: the action is claimed (``preempt/claims/<host>.json`` beside the fleet's journal,
written under the host's journal lock) before it runs, keyed by the preemption (the host
and the start it ended) and the cell, so a restart of ``watch``, a TUI open at the same
time or a crash mid-move never acts twice. Nothing is ever started on a host the fleet
file does not name (a spare that is not one is skipped, said), and nothing is destroyed.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rgt_tui.domain.checkpoints import left_out_words, newer_left_out
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.preemption import RESTARTED, Preemption, hhmm, preemption_line
from rgt_tui.domain.queue_state import DONE, QueueView
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_duration
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.journal import Journal, JournalError, journal_for
from rgt_tui.services.queue.move import MovedNotRun, MoveError
from rgt_tui.services.records import atomic_write_json, read_json
from rgt_tui.services.watch.events import WatchEvent

if TYPE_CHECKING:
    from rgt_tui.services.queue.resume import ResumePlan


@dataclass(frozen=True)
class Outcome:
    """What one attempt did: ``ok`` and its words (what moved where, or why not)."""

    ok: bool
    text: str


def repeats_words(plan: ResumePlan) -> str:
    """`` (repeats ~10s of work, to the preemption at ~21:46)``: the resume's repeated
    work from its checkpoint to the interruption (``ResumePlan.repeats_s``); "at most"
    when only the time of the move bounds it; "" without a checkpoint."""
    repeats = plan.repeats_s
    if repeats is None:
        return ""
    if plan.interrupted_at is None:
        return f" (repeats at most {fmt_duration(repeats)} of work: to the move)"
    return f" (repeats ~{fmt_duration(repeats)} of work, to the preemption at ~{hhmm(plan.interrupted_at)})"


# A watch that lost an action's claim to another rgt-tui looks for its outcome this often,
# this long: a resume move pushes a checkpoint, minutes on a slow link.
FOLLOW_LOOK_S = 5.0
FOLLOW_WAIT_S = 1800.0

# (fleet, source, cell, spare, when it was interrupted) → Outcome; (fleet, host, start
# index) → Outcome.
Mover = Callable[[Fleet, HostConfig, str, HostConfig, float], Awaitable[Outcome]]
Relauncher = Callable[[Fleet, HostConfig, int], Awaitable[Outcome]]


class OnPreempt:
    """Acts on named preemptions as each host's ``on_preempt`` says (module docstring)."""

    def __init__(
        self,
        fleet: Fleet,
        connections: FleetConnections,
        *,
        emit: Callable[[WatchEvent], None],
        journal: Journal | None = None,
        queue_view: Callable[[str], QueueView | None] = lambda host: None,
        mover: Mover | None = None,
        relauncher: Relauncher | None = None,
        clock: Callable[[], float] = time.time,
        actor: str = "watch",
        fleet_mistake: Callable[[], str] = lambda: "",
    ) -> None:
        self.fleet = fleet
        # The fleet file's mistake while it is not applied: a move or relaunch then acts
        # on the last good file's spares and settings, not the ones saved (h491 #1's rule).
        self.fleet_mistake = fleet_mistake
        self.connections = connections
        self.journal = journal or journal_for(fleet)
        self._emit = emit
        self._queue_view = queue_view
        self._mover = mover or self._resume_move
        self._relauncher = relauncher or self._relaunch
        self._clock = clock
        # Who acts: recorded with each outcome. ``watch`` tells what another rgt-tui (the
        # open TUI) did on a claim it lost, so its notify targets hear of it (hour s24a
        # #8); the TUI lists watch's actions from the told log instead (watch_actions).
        self.actor = actor
        # How long a lost claim's outcome is waited for; ``watch --once`` looks once (0):
        # a cron pass must not wait on a TUI's move (review s25 #1).
        self.follow_s = FOLLOW_WAIT_S
        self.done: list[tuple[str, str]] = []  # (claim key, what it did): tests, display
        self._busy: set[str] = set()

    def claims_path(self, host: str) -> Path:
        """Where ``host``'s claimed actions are kept."""
        return self.journal.directory / "preempt" / "claims" / f"{host}.json"

    async def on_preempted(self, host: HostConfig, p: Preemption) -> None:
        """Tell ``p``; then move or relaunch as ``host`` opted in, once."""
        action = host.watch.on_preempt
        body = preemption_line(p)
        acts = action == "move" or (action == "relaunch" and p.kind == RESTARTED)
        if p.named and p.cell is not None and p.moved_to is None and not acts:
            # What reaches a phone names the way on: nothing moves it unattended (a
            # user's hour read a preemption with no next step, s21a #7).
            to = host.watch.spare[0] if host.watch.spare else "HOST"
            body += (
                f". To resume it elsewhere: rgt-tui queue move {shlex.quote(p.cell)} --to {to} "
                "(m on its Queue tab)"
            )
        self._emit(
            WatchEvent("preempted", host.name, p.key, f"{host.name}: preempted?"
                       if not p.named else f"{host.name}: preempted", body, "warning")
        )  # fmt: skip
        if acts and (mistake := self.fleet_mistake()):
            # Not claimed: nothing acted, and the user does it by hand once the file is fixed.
            self._tell(
                host, p, "not moved" if action == "move" else "not relaunched",
                f"the fleet file is not applied ({mistake}): on_preempt acts on the file's "
                "spares and settings, and the ones in force are the last good file's — "
                "nothing was done; once it is applied, do it by hand (rgt-tui queue move, or "
                "rgt-tui launch)",
            )  # fmt: skip
            return
        if action == "move":
            await self._move(host, p)
        elif action == "relaunch" and p.kind == RESTARTED:
            await self._relaunch_once(host, p)

    # -- move ----------------------------------------------------------------------------

    async def _move(self, host: HostConfig, p: Preemption) -> None:
        if p.cell is None or p.moved_to is not None:
            return  # nothing ran, or the user moved it already: the preemption line says so
        view = self._queue_view(host.name)
        if view is not None and any(c.name == p.cell and c.status == DONE for c in view.cells):
            # Ended done just before the box went (the runtime keeps a cell that ended
            # within the grace: a TERM's doing, or its own end): nothing to resume.
            self._tell(host, p, "not moved", f"{p.cell} finished on {host.name} before the "
                       "preemption: nothing to move")  # fmt: skip
            return
        if p.checkpoint is None and p.unverified:
            # Pulled, not yet verified: a verify (no box needed) lets the move resume from
            # it; --from-scratch would throw the run away (s35 resume hour #5).
            self._tell(host, p, "not moved", f"{p.cell}'s checkpoint {p.unverified} is pulled "
                       f"but not verified: rgt-tui verify {host.name} (it needs no box), then "
                       f"rgt-tui queue move {p.cell} --to HOST resumes from it")  # fmt: skip
            return
        if p.checkpoint is None:
            self._tell(host, p, "not moved", f"{p.cell} has no pulled and verified checkpoint: "
                       f"not moved unattended (rgt-tui queue move {p.cell} --to HOST "
                       "--from-scratch runs it again from the start)")  # fmt: skip
            return
        key = f"move:{p.key}:{p.cell}"
        if key in self._busy or not await self._claimed(host, p, key):
            return
        self._busy.add(key)
        try:
            refused = []
            names = {h.name for h in self.fleet.hosts}
            for spare in host.watch.spare:
                if spare == host.name or spare not in names:
                    refused.append(f"{spare}: not another host of the fleet file")
                    continue
                try:
                    outcome = await self._mover(
                        self.fleet, host, p.cell, self.fleet.host(spare), p.at
                    )
                except MovedNotRun as exc:
                    # Moved (its line and checkpoint are the spare's) but not started
                    # there: no other spare can take it now; the notice says how to run
                    # it. It read "not moved", and its fix moved it on from scratch,
                    # leaving the checkpoint behind (hour s18a #2).
                    why = printable(_one_line(exc), 600)
                    text = f"moved {p.cell} to {spare}, NOT RUNNING there: {why}"
                    await self._finish(host, p, key, "moved, not running", text)
                    return
                except MoveError as exc:  # refused as the move says: its words, one line
                    outcome = Outcome(False, printable(_one_line(exc), 400))
                except Exception as exc:  # noqa: BLE001 - one spare's failure: try the next
                    outcome = Outcome(
                        False, f"{type(exc).__name__}: {printable(_one_line(exc), 300)}"
                    )
                if outcome.ok:
                    repeats = f"{p.checkpoint.named()} from {hhmm(p.checkpoint.mtime)}"
                    text = f"moved {p.cell} to {spare}: it resumes from {repeats}; {outcome.text}"
                    await self._finish(host, p, key, "moved", text)
                    return
                refused.append(f"{spare}: {outcome.text}")
            # Claimed once, so not tried again by itself: the notice says how to finish it.
            text = f"{p.cell} not moved: no spare could take it — " + "; ".join(refused or [
                "no spare named (spare = [\"box4\"])"]) + (
                f". Its verified checkpoint is kept here: move it when a box is free "
                f"with rgt-tui queue move {p.cell} --to HOST")  # fmt: skip
            await self._finish(host, p, key, "not moved", text)
        finally:
            self._busy.discard(key)

    async def _resume_move(
        self, fleet: Fleet, source: HostConfig, cell: str, spare: HostConfig, at: float
    ) -> Outcome:
        """The resume move (``services.queue.resume``): its plan, then the move. ``at``:
        when the preemption interrupted the cell (its last answer), so the work the
        resume repeats runs from the checkpoint to then, not to the move."""
        from rgt_tui.services.queue.resume import plan_resume_move, resume_move

        src, dst = self.connections.transport(source.name), self.connections.transport(spare.name)
        plan = await plan_resume_move(fleet, source, cell, spare.name, src, dst)
        if not plan.ok:
            return Outcome(False, "; ".join(plan.problems or plan.move.problems))
        if plan.interrupted_at is None:  # the box did not answer: its records say nothing
            plan = replace(plan, interrupted_at=at)
        done = await resume_move(plan, fleet, source, src, dst)
        left = newer_left_out(plan.excluded, plan.checkpoint)
        said = (
            ", ".join(left_out_words(f) for f in left) + " left out, never pushed; " if left else ""
        )  # a newer checkpoint that did not verify: the resume starts before it (ux-h 11)
        return Outcome(True, f"{said}{done.queued}{repeats_words(plan)}")

    # -- relaunch ------------------------------------------------------------------------

    async def _relaunch_once(self, host: HostConfig, p: Preemption) -> None:
        view = self._queue_view(host.name)
        index = view.resume_index if view is not None else None
        if index is None:
            return  # nothing to resume (yet): the next view after the poll says
        key = f"relaunch:{p.key}"
        if key in self._busy or not await self._claimed(host, p, key):
            return
        self._busy.add(key)
        try:
            try:
                outcome = await self._relauncher(self.fleet, host, index)
            except Exception as exc:  # noqa: BLE001 - said, never raised into the watch
                outcome = Outcome(False, f"{type(exc).__name__}: {printable(exc, 300)}")
            verb = "relaunched" if outcome.ok else "not relaunched"
            text = f"{verb} the queue on {host.name} from cell {index}: {outcome.text}"
            await self._finish(host, p, key, verb, text)
        finally:
            self._busy.discard(key)

    async def _relaunch(self, fleet: Fleet, host: HostConfig, index: int) -> Outcome:
        from rgt_tui.services.queue.launch import launch, plan_launch

        transport = self.connections.transport(host.name)
        plan = await plan_launch(fleet, host, transport, start_index=index)
        if not plan.ok:
            return Outcome(False, "; ".join(plan.problems))
        await launch(plan, transport)
        return Outcome(True, f"cells {index}.. run again (each resumes from its checkpoint)")

    # -- the claim -----------------------------------------------------------------------

    async def _claimed(self, host: HostConfig, p: Preemption, key: str) -> bool:
        """Claim ``key``; when another rgt-tui holds it, ``watch`` waits for its outcome
        and tells it (``_follow``). True when this driver is to act."""
        if await asyncio.to_thread(self._claim, host.name, key):
            return True
        if self.actor == "watch" and key not in self._busy:
            self._busy.add(key)  # one follower per action
            try:
                await self._follow(host, p, key)
            finally:
                self._busy.discard(key)
        return False

    async def _finish(
        self, host: HostConfig, p: Preemption, key: str, what: str, text: str
    ) -> None:
        """Tell what the claimed action did, and record it with the claim for a
        ``watch`` that lost the claim to tell too."""
        self.done.append((key, text))
        self._tell(host, p, what, text, key=key)
        await asyncio.to_thread(self._record_outcome, host.name, key, what, text)

    def _record_outcome(self, host: str, key: str, what: str, text: str) -> None:
        path = self.claims_path(host)
        try:
            with self.journal.locked(host):
                data: Any = read_json(path) or {}
                data = data if isinstance(data, dict) else {}
                outcomes = data.get("outcomes")
                outcomes = outcomes if isinstance(outcomes, dict) else {}
                outcomes[key] = {"what": what, "text": text, "at": self._clock()}  # by: claimed_by
                atomic_write_json(path, {**data, "version": 1, "outcomes": outcomes})
        except (OSError, ValueError, JournalError):
            pass  # told here already; a watch that lost the claim says it has no outcome

    def _recorded(self, host: str, key: str) -> tuple[str, tuple[str, str] | None]:
        """Who claimed ``key`` ("rgt-tui" when unknown) and, once recorded, its outcome
        (what, text). One read of the claims file. Blocking."""
        try:
            data: Any = read_json(self.claims_path(host))
        except (OSError, ValueError):
            data = None
        data = data if isinstance(data, dict) else {}
        claimed = data.get("claimed_by")
        by = claimed.get(key) if isinstance(claimed, dict) else None
        claimer = printable(by, 40) if isinstance(by, str) else "rgt-tui"
        outcomes = data.get("outcomes")
        found = outcomes.get(key) if isinstance(outcomes, dict) else None
        what = found.get("what") if isinstance(found, dict) else None
        text = found.get("text") if isinstance(found, dict) else None
        if isinstance(what, str) and isinstance(text, str):
            return claimer, (printable(what, 40), printable(text, 1200))
        return claimer, None

    async def _follow(self, host: HostConfig, p: Preemption, key: str) -> None:
        """Another rgt-tui claimed ``key``: tell its outcome once recorded (a resume move
        pushes a checkpoint: minutes), or that none came."""
        by, found = await asyncio.to_thread(self._recorded, host.name, key)
        # Claimed by a watch (an earlier run stopped mid-way, or a second one): looked at
        # once, not waited on; so is every claim in a --once pass.
        wait = self.follow_s if by != self.actor else 0.0
        waited = 0.0
        while True:
            if found is not None:
                what, text = found
                self._emit(
                    WatchEvent("preempt_action_by_other", host.name, f"{key}:{what}",
                               f"{host.name}: {what} (by {by})", text,
                               "warning" if what != "moved" else "info")
                )  # fmt: skip
                return
            if waited >= wait:
                break
            await asyncio.sleep(FOLLOW_LOOK_S)
            waited += FOLLOW_LOOK_S
            _, found = await asyncio.to_thread(self._recorded, host.name, key)
        if wait == 0.0 and by != self.actor:
            return  # --once: the claimer may still be at it; a later pass looks again
        action = key.split(":")[0]
        self._emit(
            WatchEvent("preempt_action_by_other", host.name, f"{key}:unknown",
                       f"{host.name}: {action} not told",
                       f"{by} took on the {action} of {p.cell or 'its queue'} and recorded no "
                       + (f"outcome in {fmt_duration(wait)}" if wait else "outcome")
                       + f" (it may have stopped mid-way): look at rgt-tui queue show {host.name}"
                       + (f" and at {host.watch.spare[0]}'s" if host.watch.spare else ""),
                       "warning")
        )  # fmt: skip

    def _claim(self, host: str, key: str) -> bool:
        """Record ``key`` as done for ``host`` unless it already is (another watch, an
        earlier run, the TUI); True when this call claimed it. Blocking."""
        path = self.claims_path(host)
        try:
            with self.journal.locked(host):
                data: Any = read_json(path) or {}
                claims = data.get("claims") if isinstance(data, dict) else None
                claims = claims if isinstance(claims, list) else []
                if key in claims:
                    return False
                path.parent.mkdir(parents=True, exist_ok=True)
                kept = data if isinstance(data, dict) else {}  # the outcomes recorded
                by = kept.get("claimed_by")
                by = {**by, key: self.actor} if isinstance(by, dict) else {key: self.actor}
                atomic_write_json(
                    path, {**kept, "version": 1, "claims": [*claims, key], "claimed_by": by}
                )
                return True
        except (OSError, ValueError, JournalError):
            return False  # never act without the claim written

    def _tell(self, host: HostConfig, p: Preemption, what: str, text: str, key: str = "") -> None:
        self._emit(
            WatchEvent("preempt_action", host.name, f"{key or p.key}:{what}",
                       f"{host.name}: {what}", text, "warning" if what != "moved" else "info")
        )  # fmt: skip


def _one_line(exc: BaseException) -> str:
    """An error's lines joined with "; ": a notification's text is one paragraph (a
    refusal's newlines arrived as a literal backslash-n: hour s18a #2)."""
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
