"""Each present cell's last "saved …" log line checked against the pulled manifest
(``domain.saved_claims``; hour s23b #1): a cell whose claim names a file the box did not
hold is missing, said with the log, the line and the way on."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from rgt_tui.domain.manifest import Manifest
from rgt_tui.domain.roster import RosterCheck
from rgt_tui.domain.saved_claims import TAIL_BYTES, claimed_local, holds, last_claim
from rgt_tui.domain.text import printable
from rgt_tui.services.records import pulled_cell_log


def claims_kept(
    folder: Path,
    manifest: Manifest,
    rost: RosterCheck,
    pulled: set[str],
    *,
    ran_at_pull: set[str] = frozenset(),  # type: ignore[assignment]
    added: set[str] = frozenset(),  # type: ignore[assignment]
) -> RosterCheck:
    """``rost`` with each present cell whose log's last "saved …" names a file the box
    did not hold made missing, saying so (``domain.saved_claims``); a cell missing for
    another reason gets the claim added to its reason (s38 disk hour #5: "holds 1 file
    but none loaded" hid that its log claimed a save that never happened). Blocking.

    Not of a cell that ran at the pull (``ran_at_pull``) or runs or is unfinished now
    (``rost.unfinished``): its log was pulled after the listing and may name a save the
    listing predates, and its line says its state (h491 #4). A claimed file the re-scan
    found new on the box since the listing (``added``: local paths) was saved after it:
    the way on is a pull, not a retry."""
    missing = []
    skip = ran_at_pull | {n for n, _ in rost.unfinished}
    names = [n for n in (*rost.present, *(n for n, _ in rost.missing)) if n not in skip]
    said = _claims(folder, manifest, pulled, names, added)
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


def _claims(
    folder: Path, manifest: Manifest, pulled: set[str], names: list[str], added: set[str]
) -> dict[str, str]:
    """Each of ``names`` whose log's last "saved …" names a file the box did not hold,
    with the words that say so."""
    found = {}
    for name in names:
        log = folder / pulled_cell_log(name)
        try:
            with open(log, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(max(0, size - TAIL_BYTES))
                text = f.read(TAIL_BYTES).decode("utf-8", "replace")
        except OSError:
            continue  # no log pulled: nothing claimed here
        claim = last_claim(text)
        local = claimed_local(manifest, claim.path) if claim is not None else None
        if claim is None or local is None or holds(pulled, local):
            continue
        where = f"line {claim.line} of" if size <= TAIL_BYTES else "the end of"
        said = (
            f"{where} its log ({pulled_cell_log(name)}) says it saved {printable(claim.path, 300)}"
        )
        found[name] = (
            f"{said}, which the box holds now but did not when the pull listed it — pull again"
            if local in added
            else f"{said}, and the box held no such file: the save failed (a full disk, an "
            "error swallowed) — retry the cell, or accept it as missing"
        )
    return found
