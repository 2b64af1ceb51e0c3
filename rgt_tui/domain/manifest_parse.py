"""The hostile-input parser: the box's scan output (JSON lines) into a ``Manifest``.

Nothing the box prints is trusted (it is someone else's container). The whole output
fails (``ManifestError``, naming the host and the cap) when a line is over
``MAX_LINE_BYTES``, when it has more than ``MAX_LINES`` lines or more than
``MAX_MANIFEST_BYTES`` in all (every line counts, empty ones too, with its newline):
never a silent truncation. A whole number of more than 30 digits is never turned into an
int (it is no true value; a size so long is refused by name), and a file line that is
not JSON but names its file is refused by that name. Within it, an entry is refused
by name (a ``Refusal``, never counted in any total) when its name is unsafe or a secret
(the name policy, ``rgt_tui.domain.manifest_names``); when its size is not a whole number
in ``[0, MAX_FILE_SIZE]``, its mtime not a finite number or its SHA-256 not 64 lowercase
hex digits; when it is listed twice, or below a name that is itself a file. Text from
the box shown to the user (refused names, reasons) has its control characters escaped
(``printable``).

Everything here is pure: no I/O, no clock. Over 400 lines on purpose: one reader of one
hostile format, every rule beside the others it interacts with.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from rgt_tui.domain.box_identity import valid_box_id
from rgt_tui.domain.manifest import (
    MANIFEST_VERSION,
    RECORDS_DIR,
    Manifest,
    ManifestEntry,
    ManifestError,
    ManifestLink,
    PullRoot,
    Refusal,
)
from rgt_tui.domain.manifest_names import folded, root_labels, secret_reason, unsafe_path_reason
from rgt_tui.domain.text import printable

# Caps on the scan's output. A legitimate line is a few hundred bytes (a path is at most
# 4096), a legitimate manifest about 250 bytes a file.
MAX_LINE_BYTES = 64 * 1024  # one line of the scan's output
# Lines of the scan's output: entries (twice for a pull: listed, then hashed), a few
# header lines, ticks.
MAX_LINES = 2_000_000
MAX_MANIFEST_BYTES = 512 * 1024 * 1024  # the whole output
MAX_FILE_SIZE = 2**50  # 1 PiB: a size above this is a lie, not a checkpoint

_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_MAX_DIGITS = 30  # a JSON whole number longer than this is refused, never int()'d
_PATH_RE = re.compile(r'"path"\s*:\s*("(?:[^"\\]|\\.){0,8192}")')
_ROOT_RE = re.compile(r'"root"\s*:\s*(\d{1,6})\b')


class ManifestLimits:
    """Counts a manifest's lines as they arrive and enforces the caps on them.

    ``take(line)`` raises ManifestError naming the host and the cap when ``line`` is over
    ``MAX_LINE_BYTES``, or when the output so far is over ``MAX_LINES`` lines or
    ``MAX_MANIFEST_BYTES``. Every line counts, empty or not, with its newline: a box
    printing a flood of empty lines meets the caps as fast as any other. The reader calls
    it on each line as it is received (so a hostile box cannot make it hold more), and
    ``parse_manifest_lines`` does again.
    """

    def __init__(self, host: str) -> None:
        self.host = host
        self.lines = 0
        self.bytes = 0

    def take(self, line: str) -> None:
        """Count ``line`` (as received, before anything strips it) against the caps."""
        size = len(line) if line.isascii() else len(line.encode("utf-8", "surrogatepass"))
        if size > MAX_LINE_BYTES:
            raise ManifestError(
                f"{self.host}: a manifest line is over {MAX_LINE_BYTES // 1024} KiB "
                f"({size} bytes); the box's scan output is refused whole"
            )
        self.bytes += size + 1  # and its newline
        if self.bytes > MAX_MANIFEST_BYTES:
            raise ManifestError(
                f"{self.host}: the manifest is over {MAX_MANIFEST_BYTES // 2**20} MiB; "
                "the box's scan output is refused whole (pull fewer folders at once)"
            )
        self.lines += 1
        if self.lines > MAX_LINES:
            raise ManifestError(
                f"{self.host}: the box's scan printed over {MAX_LINES:,} lines (empty ones "
                "count too); its output is refused whole (pull fewer folders at once)"
            )


def parse_manifest_lines(host: str, lines: Iterable[str], *, listing: bool = False) -> Manifest:
    """Build a Manifest from the on-box script's JSON lines.

    Raises ManifestError when the output is not a complete manifest (no ``done`` line: the
    scan was cut off, and a partial list must never pass for the whole), when it is over a
    cap (``ManifestLimits``) or garbled. An entry that is wrong in itself is refused by
    name instead (see the module's doc).

    ``listing``: the walk's ``entry`` lines instead (``--list-first``), complete once its
    ``listed`` line came: every file with its size and mtime, no SHA-256 yet. A pull
    starts copying on them; nothing it copies counts until the complete manifest agrees.
    """
    try:
        return _parse(host, lines, listing)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        if isinstance(exc, ManifestError):
            raise
        raise ManifestError(f"{host}: manifest output is malformed ({exc!r:.200})") from None


def _parse(host: str, lines: Iterable[str], listing: bool = False) -> Manifest:
    start: dict[str, Any] | None = None
    done: dict[str, Any] | None = None
    wanted = "entry" if listing else "file"  # the lines that list files
    last = "listed" if listing else "done"  # the line that says the list is whole
    roots: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    told: list[dict[str, Any]] = []  # the box's own refusals
    garbled: list[tuple[int, str, str]] = []  # file lines that are not JSON, by name
    limits = ManifestLimits(host)
    for raw in lines:
        limits.take(raw)
        line = raw.strip()
        if not line:
            continue
        try:
            # Every whole number goes through _json_int: int() of thousands of digits is
            # slow (and refused by Python 3.11), and no true value has more than a few.
            obj = json.loads(line, parse_int=_json_int)
        except (ValueError, RecursionError):
            named = _garbled_file(line)
            if named is None:
                shown = printable(line, 80)
                raise ManifestError(f"{host}: manifest line is not JSON: {shown!r}") from None
            garbled.append(named)
            continue
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind == "start":
            if obj.get("v") != MANIFEST_VERSION:
                seen = printable(repr(obj.get("v")), 40)
                raise ManifestError(f"{host}: manifest protocol {seen} not understood")
            start = obj
        elif kind == "root":
            roots.append(obj)
        elif kind == wanted:
            files.append(obj)
        elif kind == "link":
            links.append(obj)
        elif kind == "refused":
            told.append(obj)
        elif kind == last:
            done = obj
    if start is None or done is None:
        raise ManifestError(f"{host}: the manifest scan did not finish (output cut off)")
    box_id, box_id_error = _box_id(start)
    if listing:
        done = {}  # the listing's line has counts only; the start line has taken_at
    pull_roots = _roots(host, roots)
    refused = [_told(host, pull_roots, obj) for obj in told]
    refused += [
        Refusal(root if root < len(pull_roots) else -1, name, why) for root, name, why in garbled
    ]
    # Files come out small ones first when asked; ``n`` is their place in the walk.
    files.sort(key=lambda f: _whole(f.get("n")) or 0)
    entries: list[ManifestEntry] = []
    kept_links: list[ManifestLink] = []
    taken: set[tuple[int, str]] = set()
    hashed = True
    for f in files:
        entry, reason = _entry(pull_roots, f)
        if reason is None:
            reason = _clash(taken, entry.root, entry.path)
        if reason:
            refused.append(Refusal(_root_or_none(f), printable(_name(f), None), reason))
            continue
        hashed = hashed and entry.sha256 is not None
        entries.append(entry)
    for ln in links:
        link, reason = _link(pull_roots, ln)
        if reason is None:
            reason = _clash(taken, link.root, link.path)
        if reason:
            refused.append(Refusal(_root_or_none(ln), printable(_name(ln), None), reason))
        else:
            kept_links.append(link)
    entries, kept_links = _below_a_file(entries, kept_links, refused)
    for r in pull_roots:
        if r.error:
            refused.append(Refusal(r.index, ".", f"pull root {r.given}: {r.error}"))
    return Manifest(
        host=host,
        roots=pull_roots,
        entries=tuple(entries),
        links=tuple(kept_links),
        refused=tuple(refused),
        taken_at=_time(host, "taken_at", done.get("taken_at", start.get("taken_at", 0.0))),
        finished_at=_time(host, "finished_at", done.get("finished_at", 0.0)),
        hashed=hashed,
        box_id=box_id,
        box_id_error=box_id_error,
    )


def _roots(host: str, roots: Sequence[dict[str, Any]]) -> tuple[PullRoot, ...]:
    """The root lines as PullRoots; one whose resolved path is unusable gets an error (and
    every entry under it is refused)."""
    given = [printable(str(r["given"]), None) for r in roots]
    labels = root_labels(given)
    out = []
    for i, r in enumerate(roots):
        if r.get("index") != i or isinstance(r.get("index"), bool):
            raise ManifestError(f"{host}: manifest root line {i + 1} has index {r.get('index')!r}")
        path, error = r.get("path"), r.get("error")
        error = None if error is None else printable(str(error), 200)
        if not isinstance(path, str) or not path.startswith("/") or printable(path, None) != path:
            error = error or "the box reported an unusable resolved path"
            path = printable(str(path), None)
        secret = secret_reason(path, "")
        if secret and not error:
            error = secret
        out.append(PullRoot(i, given[i], path, labels[i], error))
    return tuple(out)


def _told(host: str, roots: Sequence[PullRoot], obj: dict[str, Any]) -> Refusal:
    """A refusal the box reported itself (its text shown escaped)."""
    root = obj.get("root")
    if _whole(root) is None or not 0 <= root < len(roots):
        raise ManifestError(
            f"{host}: a refused line names no pull root ({printable(repr(root), 40)})"
        )
    return Refusal(root, printable(_name(obj), None), printable(str(obj.get("reason")), 300))


def _entry(roots: Sequence[PullRoot], f: dict[str, Any]) -> tuple[ManifestEntry, str | None]:
    """The file line as an entry, and why it is refused (None: it is not)."""
    root, path = _root_or_none(f), f.get("path")
    reason = _refuse_reason(roots, root, path)
    size, mtime, sha = f.get("size"), f.get("mtime"), f.get("sha256")
    if reason is None:
        reason = _size_reason(size) or _mtime_reason(mtime) or _sha_reason(sha)
    if reason:
        return ManifestEntry(-1, "", 0, 0.0, None), reason
    mode = f.get("mode")  # a lie here can only narrow: the pull never widens (copy.local_mode)
    mode = mode if type(mode) is int and 0 <= mode <= 0o7777 else None
    # Only a hashed entry can be a growing file's first bytes; a lie here changes nothing
    # the pull checks (the size and hash still decide), only how the summary words it.
    growing = f.get("growing") is True and sha is not None
    return ManifestEntry(root, path, size, float(mtime), sha, mode, growing), None


def _link(roots: Sequence[PullRoot], ln: dict[str, Any]) -> tuple[ManifestLink, str | None]:
    root, path, target = _root_or_none(ln), ln.get("path"), ln.get("target")
    reason = _refuse_reason(roots, root, path)
    if reason is None:
        unsafe = unsafe_path_reason(target)
        if unsafe:
            reason = f"unsafe link target from the box: {unsafe}"
        elif not roots[root].label and folded(target.split("/")[0]) == RECORDS_DIR:
            # Made here, it would point into rgt-tui's own records (a user's hour: a box
            # link to its ~/.rgt came home as a link to results/HOST/.rgt).
            reason = (
                f"a link into '{RECORDS_DIR}', reserved for rgt-tui's records in the local copy"
            )
        else:
            reason = secret_reason(roots[root].path, target)
    if reason:
        return ManifestLink(-1, "", ""), reason
    return ManifestLink(root, path, target), None


def _size_reason(size: Any) -> str | None:
    if isinstance(size, _LongNumber):
        return f"absurd size from the box ({size!r}, over {MAX_FILE_SIZE} bytes)"
    if _whole(size) is None:
        return f"size from the box is not a whole number ({printable(repr(size), 40)})"
    if size < 0:
        return f"negative size from the box ({size})"
    if size > MAX_FILE_SIZE:
        return f"absurd size from the box ({size} bytes, over {MAX_FILE_SIZE})"
    return None


def _mtime_reason(mtime: Any) -> str | None:
    if _finite(mtime) is None:
        return f"mtime from the box is not a finite number ({printable(repr(mtime), 40)})"
    return None


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite JSON number; else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) else None


def _sha_reason(sha: Any) -> str | None:
    if sha is None or (isinstance(sha, str) and _SHA256_RE.fullmatch(sha)):
        return None
    return f"SHA-256 from the box is not 64 lowercase hex digits ({printable(repr(sha), 80)})"


def _clash(taken: set[tuple[int, str]], root: int, path: str) -> str | None:
    """Why a name cannot be kept because the box already listed it (None: first time)."""
    if (root, path) in taken:
        return "listed twice by the box"
    taken.add((root, path))
    return None


def _below_a_file(
    entries: list[ManifestEntry], links: list[ManifestLink], refused: list[Refusal]
) -> tuple[list[ManifestEntry], list[ManifestLink]]:
    """Refuse what the box listed below a name it also listed as a file or link: a name
    is a file or a folder, never both (a box claiming both is lying about one)."""
    names = {(e.root, e.path) for e in entries} | {(ln.root, ln.path) for ln in links}

    def under(root: int, path: str) -> str | None:
        parts = path.split("/")
        for i in range(1, len(parts)):
            if (root, "/".join(parts[:i])) in names:
                return "/".join(parts[:i])
        return None

    kept_entries, kept_links = [], []
    for item in [*entries, *links]:
        above = under(item.root, item.path)
        if above is not None:
            why = f"listed below {above}, which the box also listed as a file or link"
            refused.append(Refusal(item.root, item.path, why))
        elif isinstance(item, ManifestEntry):
            kept_entries.append(item)
        else:
            kept_links.append(item)
    return kept_entries, kept_links


class _LongNumber:
    """A JSON whole number too long to be any true value: kept as its length, never
    turned into an int (the refusal shows it as such)."""

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"<a number of {self.digits} digits>"


def _json_int(text: str) -> int | _LongNumber:
    """A JSON whole number as json.loads would give it, unless it has more than
    ``_MAX_DIGITS`` digits (``MAX_FILE_SIZE`` has 16)."""
    return int(text) if len(text) <= _MAX_DIGITS else _LongNumber(len(text))


def _garbled_file(line: str) -> tuple[int, str, str] | None:
    """(root index or -1, printable name, reason) for a file line that is not JSON but
    still names its file (a size such as ``²``), so the file is refused by name; None
    when it names none (the whole output is refused then)."""
    if '"file"' not in line:
        return None
    found = _PATH_RE.search(line)
    if found is None:
        return None
    try:
        name = json.loads(found.group(1))
    except (ValueError, RecursionError):
        return None
    root = _ROOT_RE.search(line)
    shown = printable(line, 120)
    reason = f"the box's line for this file is not valid JSON ({shown!r})"
    return (int(root.group(1)) if root else -1), printable(str(name), None), reason


def _whole(value: Any) -> int | None:
    """``value`` when it is a JSON whole number (not a boolean, not a float); else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _root_or_none(obj: dict[str, Any]) -> int:
    root = _whole(obj.get("root"))
    return -1 if root is None else root


def _name(obj: dict[str, Any]) -> str:
    path = obj.get("path")
    return path if isinstance(path, str) else repr(path)


def _time(host: str, key: str, value: Any) -> float:
    number = _finite(value)
    if number is None:
        raise ManifestError(f"{host}: the manifest's {key} is not a finite number")
    return number


def _box_id(start: dict[str, Any]) -> tuple[str | None, str | None]:
    """The box id of a start line, or why there is none (the box's text is untrusted)."""
    if "box_id" not in start:
        return None, None  # the scan was not asked for it
    raw = start.get("box_id")
    if raw is None:
        why = start.get("box_id_error")
        return None, printable(str(why), 200) if why else "the box reported no id"
    if valid_box_id(raw) is None:
        return None, f"~/.rgt/box-id on the box holds no valid id ({printable(str(raw), 40)!r})"
    return raw, None


def _refuse_reason(roots: Sequence[PullRoot], root: int, path: Any) -> str | None:
    if not 0 <= root < len(roots):
        return f"unknown root index {root}"
    unsafe = unsafe_path_reason(path)
    if unsafe:
        return f"unsafe path from the box: {unsafe}"
    if roots[root].error:
        return f"its pull root has an error ({roots[root].error})"
    if not roots[root].label and folded(path.split("/")[0]) == RECORDS_DIR:
        return f"'{RECORDS_DIR}' is reserved for rgt-tui's records in the local copy"
    return secret_reason(roots[root].path, path)


__all__ = [
    "MAX_FILE_SIZE", "MAX_LINES", "MAX_LINE_BYTES", "MAX_MANIFEST_BYTES", "ManifestLimits",
    "parse_manifest_lines",
]  # fmt: skip
