"""Copies that start on the walk's listing, while the box still hashes (issue 33).

The scan walks every pull root first and lists each file (``--list-first``: path, size,
mtime), then hashes them: on a large result set the hashing alone is a minute of a paid
box. The files that need no hash to be planned (nothing of them here yet, or only a part
of ours) start copying into their parts as soon as the listing is whole; the files that
something local is in the way of wait for the hash, since skip, replace and conflict are
decided on it.

Nothing is trusted early: every part waits at the install gate (``copy._checked``) for
the complete manifest, and counts only at the size it lists and when its SHA-256 is the
manifest's. Early copies start only when every listed byte fits (the space check with
each file counted as missing): a subset is never pulled silently, and a tight disk waits
for the exact plan instead. When the files that move whatever their hashes (nothing of
them here, or rgt-tui's own copy at another size) already cannot fit, no hash can change
that: the pull is refused at once, on the listing (ux-i 6: a box's 90G sparse file made
the user wait while the box hashed it, to be told the same; h616 #3: the same file with
an earlier copy here). A lost connection ends them; once the manifest is whole the
pull's one retry loop resumes what they left from the parts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat
import time

from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.manifest import Manifest, ManifestEntry
from rgt_tui.services.pull.copy import copy_files
from rgt_tui.services.pull.local_tree import HostTree, LocalConflict, in_thread
from rgt_tui.services.pull.other_box import other_box_refusal
from rgt_tui.services.pull.plan import (
    FilePlan,
    LinksAbove,
    PulledRecord,
    PullPlan,
    check_space,
    earlier_entries,
    part_path,
)
from rgt_tui.services.pull.state import PullRun, stall_watch
from rgt_tui.services.pull.types import NotEnoughInodes, NotEnoughSpace, PullOptions


class EarlyCopy:
    """The early copies of one pull: started by the listing, awaited by the pull."""

    def __init__(self, run: PullRun, previous: Manifest | None) -> None:
        self.run, self.previous = run, previous
        self.plans: dict[str, FilePlan] = {}  # by local path: what started early
        self.task: asyncio.Future | None = None
        self.ended = asyncio.Event()  # the task is over, whatever its outcome
        # The plans are made (or none can start): the pull reads ``plans`` and
        # ``run.checked`` only after this, so no early copy starts once it moved on.
        self.planned = asyncio.Event()
        self.started: float | None = None  # when the first byte was asked for

    def on_listing(self, listing: Manifest) -> None:
        """The scan's walk is whole (called from its reader: start, never block it).
        After a reconnect the scan lists again: what started first carries on."""
        if self.task is None:
            self.task = asyncio.ensure_future(self._copy(listing))
            self.task.add_done_callback(self._over)

    def _over(self, task: asyncio.Future) -> None:
        self.ended.set()
        self.planned.set()
        # Its error is read by ``failure`` or ``wait``; a pull that failed first (the
        # scan refused) reads neither, and asyncio logged "Task exception was never
        # retrieved" for a full disk the pull had already reported.
        if not task.cancelled():
            task.exception()

    async def until_planned(self) -> None:
        """Until the plans are made (at once when no listing came, or they are made)."""
        if self.task is not None:
            await self.planned.wait()

    async def _copy(self, listing: Manifest) -> None:
        run = self.run
        refused = other_box_refusal(self.previous, listing, run.dest)
        if refused is not None:
            raise refused  # on the listing: the scan is stopped, nothing is written
        listing = await in_thread(run.tree.writable, listing)  # as the manifest will be
        plans = await in_thread(
            early_plans, run.tree, listing, self.previous, run.record, run.options
        )
        if not plans:
            self.planned.set()
            return
        run.listing = listing
        run.checked = asyncio.get_running_loop().create_future()
        self.plans = {p.local: p for p in plans}
        self.planned.set()
        self.started = time.monotonic()
        run.tracker.plan(len(listing.entries), listing.total_bytes, 0, 0)
        # U14, before the bytes move: those starting now, and those waiting for their hash
        # that will likely move too, so the one line shown is the plan's (ux-e 16).
        waiting = await in_thread(
            waiting_bytes, run.tree, listing, self.previous, run.record, self.plans
        )
        run.announce_move(sum(p.entry.size - p.resume_from for p in plans) + waiting)
        run.tracker.set_phase(
            "pulling", "the box is still hashing; each file counts once its hash matches"
        )
        async with stall_watch(run):
            try:
                await copy_files(run, plans)
            except TransportError:
                pass  # a lost connection: the pull's retry loop resumes these from parts

    def failure(self) -> BaseException | None:
        """Why the early copies stopped the pull (a full disk, say), once they ended."""
        task = self.task
        if task is None or not task.done() or task.cancelled():
            return None
        return task.exception()

    async def wait(self) -> None:
        """Until the early copies are over; their error, when one stops the pull."""
        if self.task is not None:
            await self.task

    async def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    def unfinished(self, final: dict[str, ManifestEntry]) -> tuple[list[FilePlan], list[FilePlan]]:
        """What the early copies left, by the complete manifest: the plans to go on with
        (a drop cut them off, or the listing was not what the box then hashed; each
        resumes from what its part holds, and its hash decides), and the plans of files
        the manifest does not list at all (their parts are of no use)."""
        run = self.run
        resume, gone = [], []
        for local, plan in self.plans.items():
            entry = final.get(local)
            if local in run.finished:
                continue
            if entry is None:
                gone.append(plan)
            else:
                run.leftover.discard(local)  # planned now, from the complete manifest
                resume.append(dataclasses.replace(plan, entry=entry, early=False))
        return resume, gone


def waiting_bytes(
    tree: HostTree,
    listing: Manifest,
    previous: Manifest | None,
    record: PulledRecord,
    started: dict[str, FilePlan],
) -> int:
    """Bytes of the listed files that wait for their hash (something here is in their
    way) and will likely move: all but those the last pull brought that the box lists at
    the same size and mtime, and whose copy here is as rgt-tui left it."""
    before = earlier_entries(previous)
    total = 0
    for entry in listing.entries:
        rel = listing.local_relpath(entry.root, entry.path)
        if rel in started:
            continue
        earlier = before.get((listing.roots[entry.root].path, entry.path))
        try:
            st = tree.lstat(rel)
        except (LocalConflict, OSError):
            st = None
        if (
            st is not None
            and earlier is not None
            and (earlier.size, earlier.mtime) == (entry.size, entry.mtime)
            and record.vouches(rel, st) == earlier.sha256
        ):
            continue  # here already, most likely: its hash decides
        total += entry.size
    return total


def _surely_replaced(
    tree: HostTree,
    plan: FilePlan,
    here: os.stat_result,
    record: PulledRecord,
    earlier: ManifestEntry | None,
) -> list[FilePlan]:
    """``plan`` as the least the exact plan will move for it, when the file here is
    rgt-tui's own copy, unchanged since (``pulled.json`` vouches), at another size than
    the box lists: never a skip (the size differs) nor a conflict (it is ours), so it is
    replaced. Else nothing: its hash decides. The least: what its part or, for a file
    the last pull took while it grew, the copy here may hold of it is not counted."""
    size = plan.entry.size
    if (
        not stat.S_ISREG(here.st_mode)
        or here.st_size == size
        or record.vouches(plan.local, here) is None
    ):
        return []
    held = 0
    part = tree.lstat(plan.part)
    if part is not None and stat.S_ISREG(part.st_mode) and part.st_size <= size:
        held = part.st_size  # ``_resumable`` may keep it: its hash is not known yet
    if earlier is not None and earlier.growing and here.st_size < size:
        held = max(held, here.st_size)  # the part may start as a copy of this one
    return [dataclasses.replace(plan, action="replace", resume_from=held)]


def early_plans(
    tree: HostTree,
    listing: Manifest,
    previous: Manifest | None,
    record: PulledRecord,
    options: PullOptions,
) -> list[FilePlan]:
    """The listed files that can start before their hash is known; none when not every
    listed byte would fit (the exact plan decides then, once the manifest is whole).
    NotEnoughSpace / NotEnoughInodes when those that must move whatever their hashes
    (nothing of them here, or rgt-tui's own copy at another size) cannot fit."""
    before = earlier_entries(previous)
    above = LinksAbove(tree)
    early, everything, replaced = [], [], []
    for entry in listing.entries:
        rel = listing.local_relpath(entry.root, entry.path)
        plan = FilePlan(entry, rel, part_path(rel, tree.name_max), "pull", early=True)
        everything.append(plan)
        earlier = before.get((listing.roots[entry.root].path, entry.path))
        try:
            here, link = tree.lstat(rel), above.of(rel)
            if here is not None or link is not None:
                # Something is in the way: its hash, or the exact plan, decides. One
                # thing is sure already: rgt-tui's own copy at another size is replaced.
                if here is not None and link is None:
                    replaced += _surely_replaced(tree, plan, here, record, earlier)
                continue
            part = tree.lstat(plan.part)
        except (LocalConflict, OSError):
            continue  # named by the exact plan, which meets it again
        # A part of ours is resumed unless it cannot be this version (as ``_resumable``,
        # by size and mtime: the hash is not known yet; a wrong guess fails the hash).
        same = earlier is None or (earlier.size, earlier.mtime) == (entry.size, entry.mtime)
        if part is not None and stat.S_ISREG(part.st_mode) and part.st_size:
            if part.st_size <= entry.size and same:
                plan = FilePlan(entry, rel, plan.part, "pull", part.st_size, early=True)
            else:  # thrown away: said on an AGAIN line, never silently (h616 #2)
                plan = dataclasses.replace(plan, part_dropped=True)
        early.append(plan)
        everything[-1] = plan
    margin = {"margin_fraction": options.margin_fraction, "margin_min": options.margin_min_bytes}
    try:
        # These move whatever their hashes say: too much for the disk now is too much for
        # the exact plan too (NotEnoughSpace, NotEnoughInodes). rgt-tui's own copies at
        # another size among them: a huge file pulled before was let wait for the box to
        # hash every byte (hours, for a 15T sparse one) to be refused the same (h616 #3).
        check_space(tree.root, PullPlan((*early, *replaced)), **margin)
    except OSError:
        return []  # the exact plan checks again, and names what it meets
    try:
        check_space(tree.root, PullPlan(tuple(everything)), **margin)
    except (NotEnoughSpace, NotEnoughInodes, OSError):
        return []  # the exact plan checks again, and names what it meets
    return early
