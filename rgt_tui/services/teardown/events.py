"""The gate's facts from the records: a manifest, a verification record and a re-scan,
each turned into the events ``domain.teardown_gate`` applies (pure: no I/O).

Paths become local paths (``Manifest.local_relpath``), and text from the box (refused
names, reasons, link targets) is made printable before it becomes a fact.
"""

from __future__ import annotations

from typing import Any

from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.manifest import Manifest, verified_here
from rgt_tui.domain.roster import EMPTY_RESULTS
from rgt_tui.domain.text import printable


def _local(manifest: Manifest, root: int | None, path: str) -> str:
    """Where a listed path lands locally (a refusal may name no root: its path alone)."""
    return manifest.local_relpath(root, path) if isinstance(root, int) else path


def _refused_and_links(
    manifest: Manifest,
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """What the scan refused (local path, reason) and the links it kept (local path,
    target), as the gate compares them; the box's text made printable."""
    refused = tuple(
        sorted(
            (printable(_local(manifest, r.root, r.path), None), printable(r.reason))
            for r in manifest.refused
        )
    )
    links = tuple(
        sorted(
            (printable(_local(manifest, ln.root, ln.path), None), printable(ln.target, None))
            for ln in manifest.links
        )
    )
    return refused, links


def manifest_event(manifest: Manifest) -> g.ManifestTaken:
    """The gate's view of a pull manifest: local paths with size, mtime and hash, and
    what it refused and the links it kept."""
    files = tuple(
        sorted(
            (manifest.local_relpath(e.root, e.path), g.FileFacts(e.size, e.mtime, e.sha256 or ""))
            for e in manifest.entries
        )
    )
    refused, links = _refused_and_links(manifest)
    return g.ManifestTaken(
        files,
        taken_at=manifest.taken_at,
        last_write=manifest.last_write or 0.0,
        refused=refused,
        links=links,
        finished_at=manifest.finished_at or 0.0,
    )


def verification_events(record: Any, manifest: Manifest) -> list[g.GateEvent]:
    """The facts in the verification record of this manifest: files pulled and hashed,
    artifacts loaded, the roster, and every problem verify named (``VerificationRead``).

    A record of another manifest (or box), or none, proves nothing: it gives a
    ``VerificationRead`` that is not ok, saying to run verify.
    """
    run_verify = f"run `rgt-tui verify {manifest.host}`"
    if not isinstance(record, dict):
        return [g.VerificationRead(False, (f"no verification of this pull: {run_verify}",))]
    verified = record.get("manifest")
    if not verified_here(verified, manifest):
        why = "the verification record is of an earlier pull"
        return [g.VerificationRead(False, (f"{why}: {run_verify}",))]
    if "box_id" in record and record["box_id"] != manifest.box_id:
        why = "the verification record is of another box"
        return [g.VerificationRead(False, (f"{why}: {run_verify}",))]
    try:
        return _record_facts(record)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        return [g.VerificationRead(False, (f"the verification record is malformed ({exc!r})",))]


def _record_facts(record: dict[str, Any]) -> list[g.GateEvent]:
    events: list[g.GateEvent] = []
    for check in record.get("checks", []):
        if check.get("sha256"):
            events.append(g.FilePulled(check["path"], check["sha256"]))
        events.append(
            g.ArtifactChecked(
                check["path"],
                bool(check.get("loadable")),
                bool(check.get("ok")),
                check.get("detail") or "",
            )
        )
    roster = record.get("roster")
    roster_lines: dict[str, str] = {}
    if roster is not None:
        events.append(
            g.RosterChecked(tuple(roster.get("expected", [])), tuple(roster.get("present", [])))
        )
        # A missing cell is the roster condition's, where the user may acknowledge it by
        # name; verify's line for it must not keep the gate locked after that.
        roster_lines = {
            f"cell {m['name']} missing: {m['why']}": str(m["name"])
            for m in roster.get("missing", [])
        }
    else:
        events.append(g.RosterChecked((), ()))  # no queue: nothing to reconcile
    problems = record.get("problems")
    if not isinstance(problems, list):
        return [*events, g.VerificationRead(False, ("the verification record lists no problems",))]
    # Empty, and every cell of the roster missing: the roster's acknowledgements rule
    # that too (``VerificationRead.empty_left_to_roster``).
    expected = roster.get("expected", []) if roster is not None else []
    empty = (
        bool(expected) and set(roster_lines.values()) >= set(expected) and not record.get("checks")
    )
    others = tuple(
        str(p)
        for p in problems
        if p not in roster_lines and not (empty and str(p).startswith(EMPTY_RESULTS))
    )
    left = tuple(dict.fromkeys(roster_lines[p] for p in problems if p in roster_lines))
    # ok in the record is false while a cell is missing; the roster condition rules that.
    ok = not others and (record.get("ok") is True or len(problems) > 0)
    if not others and not ok:
        others = ("verify did not report success",)
    events.append(g.VerificationRead(ok, others, left, empty_left_to_roster=empty))
    return events


def rescan_event(
    rescan: Manifest, at: float, *, attempt: str = "", box_id: str | None = None
) -> g.Rescanned:
    """A fresh listing in the gate's terms (local paths, sizes, mtimes, and what it
    refused and the links it found), for the confirmation ``attempt`` ("" for a
    checklist check) of the box ``box_id``."""
    refused, links = _refused_and_links(rescan)
    return g.Rescanned(
        tuple(
            sorted((rescan.local_relpath(e.root, e.path), e.size, e.mtime) for e in rescan.entries)
        ),
        at,
        attempt,
        box_id,
        refused,
        links,
    )
