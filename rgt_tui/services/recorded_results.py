"""The last pull and verification of a host as its records say, whoever ran them.

A pull or verify run from the command line (or another TUI) leaves its outcome only in
the records beside the results (``services.records``: ``manifest.json``, ``pulled.json``,
``verification.json``), not in this process's job state. ``read_recorded`` reads them
back so the TUI's Pulls tab shows the last pull and verification of the host, not only
its own (issue 43.10f); the records watch (``records_watch``) says when to read again.

Read only, never written; blocking (call it in a thread). An unreadable record is
reported as such (``problem``), never taken as a good outcome. Text that came from a
box (a verification's problems, missing cells' reasons) is kept as found: whoever shows
it makes it printable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rgt_tui.domain.manifest import Manifest, ManifestError, verified_here
from rgt_tui.domain.manifest_refusals import unpulled, unpulled_line
from rgt_tui.services.records import (
    load_manifest,
    load_verification,
    manifest_path,
    pulled_path,
    read_json,
    verification_path,
)
from rgt_tui.services.result_code import code_path, load_result_code, running_line

MAX_SHOWN = 8  # problems and missing cells kept from a record


@dataclass(frozen=True)
class RecordedPull:
    """The last pull's records: the manifest it pulled against and what is here."""

    at: float  # this machine's clock: the records' last write
    files: int  # in the manifest
    bytes: int
    here: int  # of them, recorded pulled with the manifest's SHA-256
    # Results the box refused by name (manifest_refusals.unpulled_line: where, why, the
    # fix), at most MAX_SHOWN; refused_n of them in all. A pull with any is incomplete.
    refused: tuple[str, ...] = ()
    refused_n: int = 0
    # ``running_line`` of the pull's code record: cells that ran on the box at the pull
    # (a pull by the command line read "✓ pull complete" here without it: hour s42).
    running: str = ""

    @property
    def complete(self) -> bool:
        """Every file of the manifest is here and nothing was refused but by rule."""
        return self.here == self.files and not self.refused_n


@dataclass(frozen=True)
class RecordedVerify:
    """The last verification's record (``verify_report`` documents its keys)."""

    at: float  # checked_at, this machine's clock
    ok: bool
    counts: tuple[tuple[str, int], ...]  # status → files, sorted
    problems: tuple[str, ...]  # at most MAX_SHOWN
    n_problems: int
    missing: tuple[str, ...]  # cells without verified results, at most MAX_SHOWN
    current: bool  # about the manifest kept now (False: an older pull's)


@dataclass(frozen=True)
class RecordedResults:
    """A host's last pull and verification as recorded; None where there is none."""

    pull: RecordedPull | None = None
    verify: RecordedVerify | None = None
    problem: str | None = None  # a record there that could not be read


def _mtime(path: Path) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _here(manifest: Manifest, host_dir: Path) -> int:
    try:
        data = read_json(pulled_path(host_dir))
    except ValueError:
        return 0  # unreadable: nothing is vouched for
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return 0
    count = 0
    for rel, entry in manifest.by_local_path().items():
        rec = files.get(rel)
        if entry.sha256 and isinstance(rec, dict) and rec.get("sha256") == entry.sha256:
            count += 1
    return count


def _strs(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _verify(data: dict[str, Any], at: float, manifest: Manifest | None) -> RecordedVerify:
    counts = data.get("counts")
    pairs = sorted(
        (k, v)
        for k, v in (counts.items() if isinstance(counts, dict) else ())
        if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
    )
    problems = _strs(data.get("problems"))
    roster = data.get("roster")
    missing_raw = roster.get("missing") if isinstance(roster, dict) else None
    missing = [
        m["name"]
        for m in (missing_raw if isinstance(missing_raw, list) else ())
        if isinstance(m, dict) and isinstance(m.get("name"), str)
    ]
    checked = data.get("checked_at")
    kept = data.get("manifest")
    return RecordedVerify(
        at=float(checked) if isinstance(checked, int | float) else at,
        ok=data.get("ok") is True,
        counts=tuple(pairs),
        problems=tuple(problems[:MAX_SHOWN]),
        n_problems=len(problems),
        missing=tuple(missing[:MAX_SHOWN]),
        current=manifest is not None and verified_here(kept, manifest),
    )


def read_recorded(host_dir: Path) -> RecordedResults:
    """The last pull and verification recorded under ``host_dir`` (blocking)."""
    problem = None
    try:
        manifest = load_manifest(host_dir)
    except ManifestError as exc:
        manifest, problem = None, f"{manifest_path(host_dir)}: {exc}"
    pull = None
    if manifest is not None:
        listed = _mtime(manifest_path(host_dir))
        stamps = [t for t in (listed, _mtime(pulled_path(host_dir))) if t]
        refused = [unpulled_line(manifest, r) for r in unpulled(manifest)]
        # The code record is written after the manifest by the same pull: an older one
        # belongs to an earlier pull (this one stopped before its copy ended).
        coded = _mtime(code_path(host_dir))
        same = listed is not None and coded is not None and coded >= listed
        pull = RecordedPull(
            at=max(stamps, default=0.0),
            files=len(manifest.entries),
            bytes=manifest.total_bytes,
            here=_here(manifest, host_dir),
            refused=tuple(refused[:MAX_SHOWN]),
            refused_n=len(refused),
            running=running_line(load_result_code(host_dir)) if same else "",
        )
    verify = None
    data = load_verification(host_dir)
    at = _mtime(verification_path(host_dir))
    if data is not None and at is not None:
        verify = _verify(data, at, manifest)
    elif data is None and at is not None and problem is None:
        problem = f"{verification_path(host_dir)} does not parse: verify again (v)"
    return RecordedResults(pull, verify, problem)
