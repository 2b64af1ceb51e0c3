"""Each present cell's last "saved …" log line checked against the pulled manifest
(``domain.saved_claims``; hour s23b #1): a cell whose claim names a file the box did not
hold is missing, said with the log, the line and the way on."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from rgt_tui.domain.checkpoints import is_checkpoint
from rgt_tui.domain.manifest import Manifest
from rgt_tui.domain.roster import RosterCheck
from rgt_tui.domain.saved_claims import (
    TAIL_BYTES,
    SavedClaim,
    claimed_local,
    holds,
    last_claims,
)
from rgt_tui.domain.text import printable
from rgt_tui.services.pull.box_logs import TAIL_SUFFIX, UNREAD_SUFFIX
from rgt_tui.services.records import pulled_cell_log


def claims_kept(
    folder: Path,
    manifest: Manifest,
    rost: RosterCheck,
    pulled: set[str],
    *,
    added: set[str] | None = None,
    workdir: str | None = None,
) -> RosterCheck:
    """``rost`` with each present cell whose log's last "saved …" names a file the box
    did not hold made missing, saying so (``domain.saved_claims``); a cell missing for
    another reason gets the claim added to its reason (s38 disk hour #5: "holds 1 file
    but none loaded" hid that its log claimed a save that never happened). Blocking.

    The logs come after the listing, so a claim may name a save the listing predates
    (h491 #4: "the save failed — retry the cell" of a cell that saved during the pull).
    ``added``: the local paths of the files the re-scan found new on the box since the
    listing (None: no re-scan); a claimed one was saved after it, and the way on is a
    pull; with no re-scan the words say both ways it can be. Any other claimed file the
    box did not hold keeps the cell missing (a failed
    save must never pass, whatever ran at the pull: review h492 #1). A cell unfinished or
    running now (offline: at the pull) is missing by its state already: its claim is not
    added to that.

    ``workdir``: the host's, given only when its run template has no ``{out}``; a cell
    whose log's saves all lie outside the pull folders, a checkpoint under the workdir
    among them, is then missing (h522 #1). With ``{out}`` the roster places the cell's
    folder itself (review h524 #1, #2: a linked pull root or a cache save read as
    "outside")."""
    missing = []
    skip = {n for n, _ in rost.unfinished}
    names = [n for n in (*rost.present, *(n for n, _ in rost.missing)) if n not in skip]
    said = _claims(folder, manifest, pulled, names, added, workdir)
    for name in rost.present:
        if name in said:
            missing.append((name, said[name]))
    if not missing and not any(n in said for n, _ in rost.missing):
        return rost
    gone = {name for name, _ in missing}
    before = tuple((n, f"{why}; also, {said[n]}" if n in said else why) for n, why in rost.missing)
    return replace(
        rost,
        present=tuple(n for n in rost.present if n not in gone),
        missing=(*before, *missing),
    )


def under_workdir(path: str, workdir: str | None, homes: tuple[str, ...] = ()) -> bool:
    """Whether box path ``path`` lies under ``workdir`` as the fleet file writes it. A
    workdir under the home (``~/proj``, ``$HOME/proj``) is placed under each of
    ``homes`` (the box's, as the pull roots written with ``~`` resolved it), ``/root``
    and ``/home/<user>``: never anywhere a folder of that name lies (review h526 #2:
    ``/mnt/shared/proj`` read as ``~/proj``). False without a workdir, and for the home
    or the root as the workdir (every path would be under it)."""
    if not workdir:
        return False
    for tilde in ("~", "$HOME", "${HOME}"):
        if workdir == tilde or workdir.startswith(tilde + "/"):
            inner = workdir[len(tilde) :].strip("/")
            if not inner:
                return False
            for home in (*homes, "/root"):
                if path.startswith(f"{home.rstrip('/')}/{inner}/"):
                    return True
            parts = path.split("/")  # "", "home", user, ...
            rest = "/".join(parts[3:])
            return len(parts) > 3 and parts[1] == "home" and rest.startswith(inner + "/")
    root = workdir.rstrip("/")
    return bool(root) and path.startswith(root + "/")


def box_homes(manifest: Manifest) -> tuple[str, ...]:
    """The box's home as the pull roots written with ``~`` resolved it (``~/runs`` at
    ``/gpfs/home/u/runs``: ``/gpfs/home/u``)."""
    homes = []
    for root in manifest.roots:
        given = root.given.rstrip("/")
        if given.startswith("~/") and root.path.rstrip("/").endswith(given[1:]):
            homes.append(root.path.rstrip("/")[: -len(given[1:])] or "/")
    return tuple(dict.fromkeys(homes))


def _claims(
    folder: Path,
    manifest: Manifest,
    pulled: set[str],
    names: list[str],
    added: set[str] | None,
    workdir: str | None = None,
) -> dict[str, str]:
    """Each of ``names`` whose log's last "saved …" of some kind of file names a file
    the box did not hold, with the words that say so."""
    found = {}
    homes = box_homes(manifest) if workdir else ()
    for name in names:
        # A log the pull's caps left on the box: its end, read at the pull, is newer than
        # any whole copy an earlier pull left here (h511 #3).
        tail = pulled_cell_log(name, ".log" + TAIL_SUFFIX)
        unread = folder / pulled_cell_log(name, ".log" + UNREAD_SUFFIX)
        if unread.is_file():
            # Its end could not be read at the last pull: no older copy stands for it.
            why = printable(unread.read_text(errors="replace"), 200)
            found[name] = (
                f"the end of its log on the box could not be read at the last pull ({why}), "
                'so its last "saved …" was not checked — pull again once the box lets it '
                "be read, or accept it as missing"
            )
            continue
        shown = tail if (folder / tail).is_file() else pulled_cell_log(name)
        try:
            with open(folder / shown, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(max(0, size - TAIL_BYTES))
                text = f.read(TAIL_BYTES).decode("utf-8", "replace")
        except OSError:
            continue  # no log pulled: nothing claimed here
        claims = [_as_held(c, manifest, pulled) for c in last_claims(text)]
        placed = [(c, claimed_local(manifest, c.path)) for c in claims]
        whole = size <= TAIL_BYTES and shown != tail
        where = "line {} of" if whole else "the end of"
        elsewhere = [
            c
            for c, local in placed
            if local is None and is_checkpoint(c.path) and under_workdir(c.path, workdir, homes)
        ]
        if elsewhere and all(local is None for _, local in placed):
            # Every save it names lies outside the pull folders, a checkpoint under the
            # workdir among them: what the roster matched by the cell's name is not what
            # this run wrote (h522 #1: a run template without {out} saved into the
            # workdir, and the gate opened over an earlier run's files of the same names).
            claim = elsewhere[0]  # the newest
            roots = ", ".join(r.given for r in manifest.roots) or "none"
            found[name] = (
                f"{where.format(claim.line)} its log ({shown}) says it saved "
                f"{printable(claim.path, 300)}, which is under no pull folder ({roots}): "
                "this run's results were not pulled — add that folder to the host's pull "
                "(and {out} to its run template), then pull and verify, or accept it as "
                "missing"
            )
            continue
        # The latest claim of each kind whose file the box did not hold.
        failed = (
            (claim, local)
            for claim, local in placed
            if local is not None and not holds(pulled, local)
        )
        claim, local = next(failed, (None, ""))
        if claim is None:
            continue
        said = f"{where.format(claim.line)} its log ({shown}) says it saved {printable(claim.path, 300)}"
        if added is not None and local in added:
            found[name] = (
                f"{said}, which the box holds now but did not when the pull listed it — pull again"
            )
        elif added is not None:  # the re-scan saw the box now: it still lacks the file
            found[name] = (
                f"{said}, and the box held no such file: the save failed (a full disk, an "
                "error swallowed) — retry the cell, or accept it as missing"
            )
        else:
            # No re-scan (offline, or the box did not answer it): only the listing speaks,
            # and a save after it looks the same as one that failed (s49 note).
            found[name] = (
                f"{said}, and the box held no such file when the pull listed it: the save "
                "failed (a full disk, an error swallowed) or came after the listing — pull "
                "again to see which, then retry the cell or accept it as missing"
            )
    return found


def _as_held(claim: SavedClaim, manifest: Manifest, pulled: set[str]) -> SavedClaim:
    """``claim`` as the reading of its path the pulled files hold (``SavedClaim.
    candidates``: up to its first space, or over the spaces after it); as it was when
    they hold none."""
    for path in claim.candidates():
        local = claimed_local(manifest, path)
        if local is not None and holds(pulled, local):
            return replace(claim, path=path)
    return claim
