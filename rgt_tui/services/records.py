"""Where a host's pulled results and rgt-tui's records about them live on this machine.

Everything for host H sits under ``<results_dir>/H/``: the pulled files (layout in
``rgt_tui.domain.manifest``) and, in ``.rgt/``, the records that travel with them:

- ``manifest.json``      the box's manifest the last pull was checked against, with the
                         box's id and host key (``rgt_tui.domain.box_identity``);
- ``pulled.json``        files pulled so far: local path → SHA-256, size, local mtime;
- ``code.json``          which code each queue cell ran, read from the box at the pull
                         (``services.result_code``, U42);
- ``verification.json``  the outcome of the last ``verify`` (the teardown gate reads it),
                         tied to one manifest, and so to one box, by its digest;
- ``reclaimed.json``     files a reclaim deleted on the box after they verified, whose
                         only copy is here (``services.reclaimed``);
- ``replaced/``          older pulled copies set aside when the box's file changed.

Records sit beside the results rather than under ``state_dir()`` so that moving or
archiving a results folder keeps its evidence with it. The teardown gate uses them only
for the box answering under the host's name now: a box re-created under the same name
finds the old box's records here and does not count them. ``pulled.json`` needs no box:
it only lets a pull skip files whose SHA-256 already matches the manifest's. Every record is written atomically
(tmp → fsync → rename): a crash leaves the previous version, never half a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.manifest import (
    RECORDS_DIR,
    Manifest,
    ManifestError,
    manifest_from_json,
    manifest_to_json,
)
from rgt_tui.fsutil import LockBusy, atomic_write, file_lock

MANIFEST_FILE = "manifest.json"
PULLED_FILE = "pulled.json"
VERIFICATION_FILE = "verification.json"
REPLACED_DIR = "replaced"
PARTS_DIR = f"{RECORDS_DIR}/parts"  # files being pulled (pull.plan.part_path)
BOX_LOGS_DIR = f"{RECORDS_DIR}/box-logs"  # the box's queue logs a pull brings (pull.box_logs)


def pulled_cell_log(name: str, suffix: str = ".log") -> str:
    """Where a pull puts cell ``name``'s log (``suffix`` ``.state``: its state record),
    relative to the host's results folder (the box's ``~/.rgt/queue/cells/NAME.log``,
    under ``BOX_LOGS_DIR``)."""
    return f"{BOX_LOGS_DIR}/cells/{name}{suffix}"


def host_results_dir(results_dir: Path, host: HostConfig | str) -> Path:
    """``<results_dir>/<host>/``, where the host's pulled files land."""
    name = host if isinstance(host, str) else host.name
    return Path(results_dir) / name


def records_dir(host_dir: Path) -> Path:
    """``<host_dir>/.rgt/``."""
    return Path(host_dir) / RECORDS_DIR


def pull_lock_path(host_dir: Path) -> Path:
    """``<host_dir>/.rgt/pull.lock``: held (flock) by the pull writing into the folder."""
    return records_dir(host_dir) / "pull.lock"


def pull_running(host_dir: Path) -> bool:
    """A pull (of any process) holds the folder's pull lock now. Blocking (a try-lock)."""
    lock = pull_lock_path(host_dir)
    if not lock.exists():
        return False
    try:
        with file_lock(lock, 0):
            return False
    except LockBusy:
        return True
    except OSError:  # unreadable: not this check's to say (the caller names what it cannot read)
        return False


def manifest_path(host_dir: Path) -> Path:
    """Where the host's manifest record is kept."""
    return records_dir(host_dir) / MANIFEST_FILE


def verification_path(host_dir: Path) -> Path:
    """Where the host's verification record is kept (the teardown gate reads it)."""
    return records_dir(host_dir) / VERIFICATION_FILE


def pulled_path(host_dir: Path) -> Path:
    """Where the record of files pulled so far is kept."""
    return records_dir(host_dir) / PULLED_FILE


def fleet_host_dir(fleet: Fleet, host: HostConfig | str) -> Path:
    """The host's results folder in this fleet."""
    return host_results_dir(fleet.results_dir, host)


def atomic_write_json(path: Path, data: Any) -> None:
    """Write JSON to ``path`` with the one atomic write (tmp, fsync, rename, fsync the folder)."""
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write(path, text)


def read_json(path: Path) -> Any | None:
    """The JSON in ``path``, or None when the file does not exist."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def save_manifest(host_dir: Path, manifest: Manifest) -> Path:
    """Keep the manifest with the host's results; returns its path."""
    path = manifest_path(host_dir)
    atomic_write_json(path, manifest_to_json(manifest))
    return path


def load_manifest(host_dir: Path) -> Manifest | None:
    """The kept manifest, None when there is none; ManifestError when it is unreadable."""
    try:
        data = read_json(manifest_path(host_dir))
    except ValueError as exc:
        raise ManifestError(f"{manifest_path(host_dir)} is not valid JSON ({exc})") from None
    return None if data is None else manifest_from_json(data)


def load_verification(host_dir: Path) -> dict[str, Any] | None:
    """The last verification record (``verify_report`` documents its keys), or None.

    A record that does not parse is treated as missing: the caller must then consider the
    host unverified, never verified.
    """
    try:
        data = read_json(verification_path(host_dir))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
