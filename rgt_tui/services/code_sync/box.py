"""The box's side of code sync: the ``code-*`` verbs of ``scripts/queue_ctl.sh``.

Sent whole like every queue verb (``queue_box.script_text``), so the running rule a sync
obeys is the one a launch obeys (``running_reason``, under the same lock). Paths go on
stdin, NUL-separated, relative to the directory; the box answers one line per path,
read as hostile input: only paths that were asked about count, and the output is bounded
by what was asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rgt_tui.domain.code_identity import FileHash
from rgt_tui.domain.text import printable
from rgt_tui.services.box_ctl import CTL_TIMEOUT_S, refusal
from rgt_tui.services.box_script import run_box_script, script_text
from rgt_tui.services.code_sync.types import SyncError
from rgt_tui.transport import CommandResult, Transport

_HEX64 = re.compile(r"[0-9a-f]{64}")
_BLOCKED = re.compile(r"(link|file|dir):([0-9]{1,4})")
# Per path the box prints at most a hash, a flag, the path and tabs: this much per line.
_LINE_OVERHEAD = 80
# Hashing a large tree reads every byte of it: allow time for that, not a fixed minute.
HASH_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class BoxHashes:
    """The box's answer for the paths asked about."""

    dir_exists: bool
    running: str  # why the queue counts as running; "" when it does not (or not asked)
    files: dict[str, FileHash]  # path -> hash, for regular files reached without a link
    other: dict[str, str]  # path -> "missing" | "link" | "other" | "blocked"
    # path -> (kind, the path in the way): what no switch can put it past (code_blocker):
    # "link", a parent is a symlink; "file", a parent is a file; "dir", it is a folder.
    blocked: dict[str, tuple[str, str]] = field(default_factory=dict)


async def run_code_verb(
    transport: Transport,
    verb: str,
    *args: str,
    paths: Iterable[str] = (),
    timeout: float = CTL_TIMEOUT_S,
    max_output: int | None = None,
) -> CommandResult:
    """Run ``code-<verb>`` of queue_ctl.sh with ``paths`` NUL-separated on stdin."""
    payload = "".join(p + "\0" for p in paths)
    script = script_text("queue_ctl.sh")
    return await run_box_script(
        transport,
        script,
        "queue_ctl",
        f"code-{verb}",
        *args,
        input=payload,
        timeout=timeout,
        max_output=max_output,
    )


def checked(host: str, result: CommandResult, what: str) -> CommandResult:
    """``result`` when the box did what was asked; SyncError with its reason otherwise."""
    error = refusal(host, result)
    if error is None:
        return result
    if error.code == "running":
        raise SyncError(
            host,
            f"the queue on {host} is running ({error.message}): a sync never rewrites "
            "files a running queue uses",
            f"wait for the queue to finish (or stop it), then rgt-tui sync {host}",
        )
    if error.code == "no-sha256sum":  # h543 #7: the only refusal with no fix line
        raise SyncError(
            host,
            f"{what}: {error.message}",
            f"install coreutils on the box (rgt-tui shell {host}; apt-get install coreutils "
            "or the image's own package manager), then sync again",
        )
    raise SyncError(host, f"{what}: {error.message}")


async def hash_on_box(
    transport: Transport, host: str, directory: str, paths: list[str], *, session: str = ""
) -> BoxHashes:
    """The box's hashes of ``paths`` under ``directory`` (a symlink on the way counts as
    "link", never followed); with ``session``, whether that queue runs."""
    bound = sum(len(p.encode()) + _LINE_OVERHEAD for p in paths) + 4096
    args = [directory] + ([session] if session else [])
    result = await run_code_verb(
        transport,
        "hash",
        *args,
        paths=paths,
        timeout=HASH_TIMEOUT_S,
        max_output=max(bound, 1 << 16),
    )
    checked(host, result, f"cannot hash the code in {directory}")
    asked = set(paths)
    files: dict[str, FileHash] = {}
    other: dict[str, str] = {}
    blocked: dict[str, tuple[str, str]] = {}
    running = ""
    dir_exists = False
    for line in result.stdout.splitlines():
        key, _, rest = line.partition("\t")
        if key == "running":
            running = rest
            continue
        if key == "dir":
            dir_exists = rest == "1"
            continue
        flag, _, path = rest.partition("\t")
        if path not in asked:
            continue  # only what was asked about counts
        if key in ("missing", "link", "other"):
            other[path] = key
        elif key == "blocked" and (kind := _BLOCKED.fullmatch(flag)):
            parts = path.split("/")
            depth = int(kind[2])
            # The path in the way: a parent (link, file) or the path itself (dir).
            if (depth == len(parts)) == (kind[1] == "dir") and depth >= 1:
                other[path] = key
                blocked[path] = (kind[1], "/".join(parts[:depth]))
        elif _HEX64.fullmatch(key) and flag in ("x", "-"):
            files[path] = FileHash(path, key, flag == "x")
    for path in asked - files.keys() - other.keys():
        other[path] = "other"  # no answer: unreadable, or it changed while being hashed
    return BoxHashes(dir_exists, running, files, other, blocked)


async def stage_on_box(
    transport: Transport, host: str, workdir: str, token: str, session: str, dirs: list[str]
) -> tuple[str, bool]:
    """Create the staging dir (refused while the queue runs; earlier ones removed) and
    its ``dirs``; return its path on the box and whether the box has rsync."""
    result = checked(
        host,
        await run_code_verb(transport, "stage", workdir, token, session, paths=dirs),
        f"cannot stage the code in {workdir}",
    )
    fields = dict(line.partition("\t")[::2] for line in result.stdout.splitlines())
    staged = fields.get("staged", "")
    if not staged.endswith(f"/.rgt-sync.{token}"):
        raise SyncError(host, f"the box did not say where it staged the code in {workdir}")
    return staged, bool(fields.get("rsync"))


@dataclass(frozen=True)
class Switched:
    """What the box's switch did: files moved into place, and the box's own copies it
    kept first (in ``kept_in``, "" when none): ``edited``, a sync put them there and
    they changed since; ``found``, no sync put them there."""

    moved: int
    kept_in: str = ""
    edited: tuple[str, ...] = ()
    found: tuple[str, ...] = ()


async def switch_on_box(
    transport: Transport,
    host: str,
    workdir: str,
    token: str,
    session: str,
    paths: list[str],
    record: Mapping[str, FileHash] | None = None,
) -> Switched:
    """Move the staged ``paths`` into place (refused while the queue runs). The box
    first copies aside each file it holds at such a path that is not what ``record``
    (the last sync's) says a sync put there: decided on the box under the queue lock, so
    an edit made there while the files were sent is kept too (a scan taken before the
    upload would miss it)."""
    record = record or {}
    entries = []
    for path in paths:
        rec = record.get(path)
        mark = f"{rec.sha256}\t{'x' if rec.executable else '-'}" if rec else "-\t-"
        entries.append(f"{mark}\t{path}")
    result = checked(
        host,
        await run_code_verb(
            transport,
            "switch",
            workdir,
            token,
            session,
            paths=entries,
            timeout=HASH_TIMEOUT_S,
            # A "keptfile" line a path at most (a first sync over a big clone keeps many).
            max_output=max(sum(len(p.encode()) + _LINE_OVERHEAD for p in paths), 1 << 16),
        ),
        f"cannot switch the code in {workdir}",
    )
    asked = set(paths)
    kept, kept_files = "", {"edited": [], "found": []}
    for line in result.stdout.splitlines():
        key, _, value = line.partition("\t")
        if key == "kept" and value.endswith(f"/.rgt/sync-kept/{token}"):
            kept = printable(value, None)  # the box's text: shown, never acted on
        elif key == "keptfile":
            why, _, path = value.partition("\t")
            if why in kept_files and path in asked:  # only what was asked about counts
                kept_files[why].append(path)
        elif key == "switched" and re.fullmatch(r"[0-9]{1,9}", value):  # "²" is a digit too
            edited, found = kept_files["edited"], kept_files["found"]
            return Switched(int(value), kept, tuple(edited), tuple(found))
    raise SyncError(host, f"the box did not confirm the switch in {workdir}")


async def drop_on_box(transport: Transport, workdir: str, token: str) -> None:
    """Remove this sync's staging dir after a failure (best effort: the next sync also
    removes leftovers)."""
    try:
        await run_code_verb(transport, "drop", workdir, token)
    except Exception:  # noqa: BLE001 - the connection may be what failed
        pass
