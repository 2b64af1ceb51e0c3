"""What code sync hands back: its error, the status of a host's code, a sync's result."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.units import fmt_bytes

# How many differing paths a status keeps (and a message names at most a few of them).
MAX_DIFFERS = 20
_NAMED = 3


def _first(paths: Sequence[str], count: int | None = None) -> str:
    """The first ``_NAMED`` of ``paths``, then ", …" when there are more (``count``: how
    many there are in all, when ``paths`` holds only the first of them)."""
    more = (len(paths) if count is None else count) > _NAMED
    return ", ".join(paths[:_NAMED]) + (", …" if more else "")


class SyncError(Exception):
    """A sync or a code check was refused or failed; names the host and the fix."""

    def __init__(self, host: str, message: str, fix: str = "") -> None:
        self.host = host
        self.message = message
        self.fix = fix
        super().__init__(f"{host}: {message}" + (f" — {fix}" if fix else ""))


@dataclass(frozen=True)
class CodeStatus:
    """The host's ``code`` tree here against the box's whole copy of it (U42, issue 39).

    ``box`` is None when the workdir does not exist on the box. ``differs``: the first
    paths missing or different there (at most MAX_DIFFERS; ``differ_count`` has them all).
    ``box_only``: the first files the box holds under the workdir that the local rules
    would send but the local tree does not have (``box_only_count`` all of them;
    ``box_only_synced`` how many of them a sync put there and would now remove).
    """

    host: str
    local: CodeIdentity
    box: CodeIdentity | None
    differs: tuple[str, ...]
    record_stamp: str = ""  # the box's sync record as read (``BoxTree.record_stamp``)
    code_dir: str = ""  # the local tree, for messages
    differ_count: int = 0
    files: int = 0  # files in the local listing
    box_only: tuple[str, ...] = ()
    box_only_count: int = 0
    box_only_synced: int = 0
    uncommitted: tuple[str, ...] = ()  # the first paths git shows as changed or untracked
    uncommitted_count: int = 0
    # Of ``differs``: the files a sync installed that were changed on the box since (a
    # sync overwrites them).
    box_edited: tuple[str, ...] = ()
    # Of ``differs``: the files the box holds that no sync put there (a clone's, an scp's):
    # a sync replaces them too, keeping the box's copies (a user's hour found the check
    # silent about them).
    box_found: tuple[str, ...] = ()
    # The tree's entries no sync sends ("path (why)": a symlink, an odd name): the box
    # does not have them, in sync or not.
    skipped: tuple[str, ...] = ()
    # Files an earlier sync put on the box, unchanged there, that the tree no longer sends
    # and the rules hold back (a copy of the fleet file an older rgt-tui sent): not code,
    # so not a difference, but the next sync removes them and ``--check`` says so (a
    # user's hour read "in sync" while the box held the fleet file's copy).
    unsent_left: tuple[str, ...] = ()
    # Files on the box the rules would send whose names are no plain text (printable):
    # nothing can compare or remove them, so the box is not "in sync" (h503 #3).
    box_unnamed: tuple[str, ...] = ()
    # What stands on the box where the tree puts a file, no sync can move past it (a
    # symlinked folder, a folder where the tree has a file), in the switch's words:
    # "" when nothing does. A check that said "sync" here sent every file for the
    # switch to refuse (h573 #4).
    in_the_way: str = ""

    @property
    def in_sync(self) -> bool:
        """The box holds every listed file with the same content and executable bit, and
        no other file the rules would send."""
        return not self.differs and not self.box_only and not self.box_unnamed

    def problem(self) -> str | None:
        """What stands between this code and a launch, with the fix; None when the box
        holds the local tree and that tree has no uncommitted changes."""
        parts: list[str] = []
        if self.in_the_way:
            # Alone (but for uncommitted changes): the sync each other part names is
            # refused while it stands, and a code_exclude for a blocking folder would
            # leave the tree's own folder of that name unsent (h585 #5).
            parts.append(f"{self.in_the_way} — {self._move_aside()}")
            if self.local.dirty:
                parts.append(self._uncommitted_problem())
            return "; ".join(parts)
        if self.differs:
            count = max(self.differ_count, len(self.differs))
            named = _first(self.differs, count)
            where = "" if self.box is not None else " (its workdir does not exist)"
            parts.append(
                f"the code on {self.host}{where} differs from {self.code_dir or 'the local tree'}: "
                f"{count} file{'s' if count != 1 else ''} missing or changed ({named}) "
                f"— rgt-tui sync {self.host}"
            )
        if self.box_edited:
            parts.append(_overwrite_warning(self.box_edited, f"rgt-tui sync {self.host}"))
        if self.box_found:
            found, one = self.box_found, len(self.box_found) == 1
            named = _first(found)
            parts.append(
                f"{named} {'is' if one else 'are'} on the box, not put there by a sync: "
                f"rgt-tui sync {self.host} replaces {'it' if one else 'them'}, keeping the "
                f"box's {'copy' if one else 'copies'} in ~/.rgt/sync-kept/ there"
            )
        if self.box_only:
            parts.append(self._box_only_problem())
        if self.box_unnamed:
            parts.append(self._unnamed_problem())
        if self.local.dirty:
            parts.append(self._uncommitted_problem())
        return "; ".join(parts) or None

    def unsent_note(self) -> str:
        """What an earlier sync left on the box that the next one removes (``unsent_left``)."""
        left, one = self.unsent_left, len(self.unsent_left) == 1
        named = _first(left)
        return (
            f"on the box from an earlier sync, no longer sent: {named} — rgt-tui sync "
            f"{self.host} removes {'it' if one else 'them'}"
        )

    def _unnamed_problem(self) -> str:
        odd, one = self.box_unnamed, len(self.box_unnamed) == 1
        named = _first(odd)
        return (
            f"on the box only, named with control characters or bytes that are no text: "
            f"{named} — no sync compares or removes {'it' if one else 'them'}: look in a "
            f"shell (rgt-tui shell {self.host}) and remove {'it' if one else 'them'} there"
        )

    def _uncommitted_problem(self) -> str:
        count = max(self.uncommitted_count, len(self.uncommitted))
        named = _first(self.uncommitted, count)
        files = f": {named} ({count} file{'s' if count != 1 else ''})" if count else ""
        return (
            f"uncommitted changes in {self.code_dir or 'the local tree'}{files} — commit "
            "them, or acknowledge the code check"
        )

    def fix(self) -> str:
        """The one step that fixes the first problem: a sync, removing box-only files by
        hand, or committing (acknowledging) the local changes."""
        if self.in_the_way:
            return self._move_aside()
        if self.differs or (self.box_only and self.box_only_synced):
            return f"rgt-tui sync {self.host}"
        if self.box_unnamed and not self.box_only:
            return f"remove the oddly named files on {self.host} in a shell, then check again"
        if self.box_only:
            return (
                f"remove {self.box_only[0]}{' and the others' if len(self.box_only) > 1 else ''} "
                f"on {self.host} (or add it to code_exclude), then check again"
            )
        return f"commit the changes in {self.code_dir or 'the code tree'}, or acknowledge the code check"

    def _move_aside(self) -> str:
        return (
            f"move each aside on the box (rgt-tui shell {self.host}), then rgt-tui sync {self.host}"
        )

    def _box_only_problem(self) -> str:
        count = max(self.box_only_count, len(self.box_only))
        named = _first(self.box_only, count)
        text = f"on the box only: {named} ({count} file{'s' if count != 1 else ''} the local tree does not have)"
        by_hand = count - self.box_only_synced
        if not by_hand:
            return f"{text} — rgt-tui sync {self.host} removes {'it' if count == 1 else 'them'}"
        hand = (
            "not put there by rgt-tui sync (or changed on the box since): remove "
            f"{'it' if by_hand == 1 else 'them'} on the box, or add to code_exclude"
        )
        if self.box_only_synced:
            return f"{text} — rgt-tui sync {self.host} removes {self.box_only_synced}; {by_hand} {hand}"
        return f"{text} — {hand}"


@dataclass(frozen=True)
class SyncResult:
    """What a sync did. ``method``: "rsync" or "sftp" (or "copy" for this machine);
    ``identity``: the code now in the workdir, re-hashed there after the switch."""

    host: str
    identity: CodeIdentity
    method: str
    files_sent: int
    bytes_sent: int
    files_total: int = 0  # files in the local listing
    skipped: tuple[str, ...] = ()  # local entries left out: symlinks, special files, names
    note: str = ""  # why rsync was not used, when it was not
    removed: tuple[str, ...] = ()  # files an earlier sync installed that the tree dropped
    left: tuple[str, ...] = ()  # "path (why)": box-only files the rules would send, kept
    # Files an earlier sync put there that the rules now leave out (code_exclude, a
    # .gitignore line): kept on the box, dropped from the record (the user's data now,
    # not code; h512 #2).
    excluded: tuple[str, ...] = ()
    # The fleet file, its queue files and its results_dir ("results/") in the tree: not sent.
    withheld: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()  # secret files in the tree (.env, .netrc, …): not sent
    # Secrets an older rgt-tui's sync put on the box: left there (a run may read them).
    secrets_left: tuple[str, ...] = ()
    # Files a sync installed that were changed on the box since, replaced by this one;
    # the box's edited copies were kept first in ``kept_in`` (a folder on the box).
    overwritten: tuple[str, ...] = ()
    # Files the box held that no sync put there, replaced by this one (kept first too).
    replaced_found: tuple[str, ...] = ()
    kept_in: str = ""
    finished: float = field(default_factory=time.time)  # when it ended (epoch seconds)

    @property
    def box_differs(self) -> bool:
        """The box still holds files the local tree does not have (``left``): it differs
        from the local tree, and ``--check`` fails until they are removed."""
        return bool(self.left)

    def headline(self) -> str:
        """What was sent, without the "by none" of a sync that sent nothing:
        ``sent 2 of 5 files, 1.7K, by rsync`` / ``nothing to send (5 files already
        there)`` / ``already in sync (5 files), nothing sent``."""
        if self.files_sent:
            return (
                f"sent {self.files_sent} of {self.files_total} files, "
                f"{fmt_bytes(self.bytes_sent)}, by {self.method}"
            )
        if self.removed or self.left:
            return f"nothing to send ({self.files_total} files already there)"
        return f"already in sync ({self.files_total} files), nothing sent"

    def overwritten_note(self) -> str:
        """``train.py was changed on the box since the last sync: replaced; the box's copy
        is kept in ~/.rgt/sync-kept/<token>/`` (and the same for files no sync put
        there); "" when none was replaced."""
        notes = []
        if self.overwritten:
            notes.append(_overwrite_warning(self.overwritten, kept_in=self.kept_in))
        if self.replaced_found:
            found = self.replaced_found
            named = _first(found)
            where = self.kept_in or "no folder (the box's copy was gone by the switch)"
            notes.append(
                f"{named} {'was' if len(found) == 1 else 'were'} on the box, not put there by "
                f"a sync: replaced by the tree's; the box's {'copy is' if len(found) == 1 else 'copies are'} "
                f"kept in {where} (not pulled: copy what you need home)"
            )
        return "; ".join(notes)

    def still_differs_note(self, name: str) -> str:
        """Why a sync that ran leaves the box different from the local tree."""
        count = len(self.left)
        return (
            f"the box still differs: {count} file{'s' if count != 1 else ''} left on it, "
            f"not in the tree; rgt-tui sync {name} --check (and preflight's code check) "
            f"fails until {'it is' if count == 1 else 'they are'} removed"
        )


def _overwrite_warning(paths: tuple[str, ...], by: str = "", kept_in: str = "") -> str:
    """``train.py was changed on the box since the last sync: replaced; the box's copy is
    kept in DIR`` (``by``: the command that would replace it, for a check)."""
    named = _first(paths)
    one = len(paths) == 1
    was = "was" if one else "were"
    copy = "copy is" if one else "copies are"
    if by:
        it = "it" if one else "them"
        return (
            f"{named} {was} changed on the box since the last sync: {by} replaces {it}, "
            f"keeping the box's {copy.split()[0]} in ~/.rgt/sync-kept/ there"
        )
    where = f"kept in {kept_in}" if kept_in else "kept nowhere (gone from the box by the switch)"
    return (
        f"{named} {was} changed on the box since the last sync: replaced; the box's {copy} "
        f"{where} (not pulled: copy what you need home)"
    )


def secrets_note(secrets: tuple[str, ...], left: tuple[str, ...] = ()) -> str:
    """Why a sync left the tree's secret files here, naming them, and the way a box gets a
    token instead; ``left``: those an older sync put on the box, left there."""
    more = len(secrets) - _NAMED
    named = ", ".join(secrets[:_NAMED]) + (f" and {more} more" if more > 0 else "")
    note = (
        f"not sent: {named} — files named like secrets never go to a box "
        "(docs/security.md); give runs a token through [fleet.credentials] (sent over "
        "stdin into a 0600 file)"
    )
    if left:
        on_box = _first(left)
        note += (
            f"; an earlier sync put {on_box} on the box: left there (remove "
            f"{'it' if len(left) == 1 else 'them'} on the box once no run reads "
            f"{'it' if len(left) == 1 else 'them'})"
        )
    return note


def skipped_note(skipped: tuple[str, ...]) -> str:
    """The tree's entries a sync cannot send (a symlink, a name with control characters,
    an unreadable file), each with why: said beside the summary, not only on stderr with
    the progress lines — a symlinked file the run reads was missed (s36 acts hour #7)."""
    named = _first(skipped)
    ways = []
    if any(s.endswith("(a symlink: not followed)") for s in skipped):
        ways.append("a symlink's target is never followed: put the file itself in the tree")
    if any("(a git repository inside the tree" in s for s in skipped):
        ways.append("a repository inside the tree: install it on the box, or vendor its files")
    if any("(a name with control characters" in s for s in skipped):
        ways.append("rename a file whose name is not plain text")
    way = "; ".join(ways) or "a run that needs one needs it as a plain file in the tree"
    return f"not sent, so not on the box: {named} — {way}"


def withheld_note(withheld: tuple[str, ...]) -> str:
    """Why a sync left the fleet file, its queue files and its results_dir (a folder,
    named with a trailing "/") in the tree out, naming them."""
    files = [w for w in withheld if not w.endswith("/")]
    folders = [w for w in withheld if w.endswith("/")]
    parts: list[str] = []
    if files:
        named = _first(files)
        parts.append(
            f"{named} — the fleet file, its queue files and copies of them are never sent "
            "(they name every box)"
        )
    if folders:
        parts.append(
            f"{', '.join(folders)} — the fleet's results_dir (pulled results are never sent "
            "back to a box, nor count as code)"
        )
    what = "them" if len(files) + len(folders) > 1 else "it"
    return f"not sent: {'; '.join(parts)}; keep {what} out of git with a .gitignore line"
