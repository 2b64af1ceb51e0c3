"""The name policy for what the box lists: which names may be written locally, which
are secrets never pulled, and the local sub-folder each pull root gets.

The box is not trusted (someone else's container): a name is refused when it is empty,
absolute, has a ``.``/``..``/empty component, a NUL or any control character (C0, DEL, C1),
a bidirectional override or isolate, or is not valid UTF-8 (``unsafe_path_reason``), and
when it is a secret (``SECRET_PATHS``, ``secret_reason``), whatever the box's scan said.

A name the box may have can still be one this machine cannot write: a component longer
than the local file system's NAME_MAX (the box's may allow more, or a crafted listing
says so), or a whole path past PATH_MAX once the results folder is put before it.
``local_name_reason`` says why; ``refuse_unwritable`` moves such entries and links of a
manifest to its refusals, so each is named with its fix and the rest of the pull goes on.
The limits are the caller's (the local folder's ``pathconf``). On a file system that does
not tell names apart by case (macOS's default, exFAT, Windows: the caller probes it), two
names the box tells apart only by case or Unicode form (``Model.pt``, ``model.pt``) would
be one file here: the one already here (the caller says which), else the first in sorted
order, is pulled and the others are refused (``CASE_TWIN``), never written over it.

Local sub-folders (``root_labels``): with one pull root, none; with several, the root's
base name (``/workspace/runs`` → ``runs``), ``root<N>`` when the base name says nothing
(``/``, ``~``, ``.``), and ``<name>-<N>`` when two roots share a base name (N is the
1-based position in ``pull``). ``.rgt`` is reserved for rgt-tui's own records, so a
remote path that would land there is refused (compared case-folded by ``folded``: the
local file system may not tell ``.RGT`` from ``.rgt``).

Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Collection, Sequence
from pathlib import PurePosixPath

# Never pulled, wherever they appear in a pulled path (compared per component, ASCII
# case-folded): credentials a home keeps. Matched against the whole remote path (the
# root's resolved path, then the path below it), so ``pull = ["~"]``, ``["/"]``,
# ``["/home"]`` or a copy of a home under a results folder all skip them. The box's scan
# skips them without reading them (``rgt_tui.agent.manifest``); the client refuses them
# again here, since the scan's output is not trusted. One list, kept with the scan (the
# agent imports nothing of ours, so the list lives on its side).
from rgt_tui.agent.secret_paths import SECRET_PATHS, SECRET_RULE, names_match
from rgt_tui.domain.manifest import RECORDS_DIR, Manifest, ManifestEntry, ManifestLink, Refusal

_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f]")  # C0, DEL, C1
# Bidirectional embeddings, overrides and isolates: a name holding one reads reversed in
# a file manager or ``ls`` ("report\u202etxt.exe" shows as "reportexe.txt"; the "Trojan
# Source" trick). No result name needs one; the marks (LRM, RLM) are left.
_BIDI_RE = re.compile("[\u202a-\u202e\u2066-\u2069]")
_SECRETS = tuple(tuple(p.split("/")) for p in SECRET_PATHS)
# Every secret's first component, as written (none is a pattern): a path holding none of
# them is no secret, and most result paths hold none (one set look, not a scan per secret).
_FIRST = frozenset(s[0] for s in _SECRETS)
assert not any(s.endswith("*") for s in _FIRST), "a pattern first: secret_reason's shortcut"


def root_labels(given: Sequence[str]) -> tuple[str, ...]:
    """Local sub-folder names for the pull roots (see the module docstring)."""
    if len(given) <= 1:
        return ("",) * len(given)
    bases = []
    for i, root in enumerate(given):
        base = PurePosixPath(root.rstrip("/") or "/").name
        plain = base not in ("", "~", ".", "..") and folded(base) != RECORDS_DIR
        bases.append(base if plain else f"root{i + 1}")
    labels = [f"{base}-{i + 1}" if bases.count(base) > 1 else base for i, base in enumerate(bases)]
    # A suffix can meet another root's own name (runs, runs, runs-2): suffix again until
    # no two roots share a folder, or one root's files would land on another's.
    for i, label in enumerate(labels):
        n = 2
        while folded(labels[i]) in {folded(x) for x in labels[:i]}:
            labels[i] = f"{label}-{n}"
            n += 1
    return tuple(labels)


def unsafe_path_reason(path: str) -> str | None:
    """Why a relative path from the box must not be written locally, or None when fine.

    The box is not trusted to keep writes inside the results folder: an absolute path or a
    ``..`` component would let a listing place files anywhere on this machine, and a
    control character in a name would reach the user's terminal.
    """
    if not isinstance(path, str):
        return "the name is not text"
    if not path:
        return "empty name"
    if "\x00" in path:
        return "NUL in name"
    control = _CONTROL_RE.search(path)
    if control:
        return f"control character in name ({control.group()!r})"
    bidi = _BIDI_RE.search(path)
    if bidi:
        return (
            f"bidirectional control character in name (U+{ord(bidi.group()):04X}): it shows "
            "the name reversed"
        )
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "name is not valid UTF-8"
    if path.startswith("/"):
        return "absolute path"
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "'..', '.' or empty component in path"
    return None


NAME_TOO_LONG = "name too long for this machine"  # how the reasons below start


def local_name_reason(rel: str, name_max: int, path_room: int) -> str | None:
    """Why the local path ``rel`` (below the host's results folder) cannot be written on
    this machine: a component over ``name_max`` bytes, or more than ``path_room`` bytes
    in all (what PATH_MAX leaves after the results folder); None when it can."""
    data = rel.encode("utf-8")
    if len(data) <= min(name_max, path_room):
        return None  # most names: one look
    longest = max(len(part) for part in data.split(b"/"))
    if longest > name_max:
        return (
            f"{NAME_TOO_LONG} (one name in its path is {longest} bytes; this file system "
            f"allows {name_max})"
        )
    if len(data) > path_room:
        return (
            f"{NAME_TOO_LONG} (its path below the results folder would be {len(data)} "
            f"bytes; this system allows {path_room} there)"
        )
    return None


CASE_TWIN = "differs only by case from"  # how a case-folding disk's refusal starts


def _folded_key(rel: str) -> str:
    """One file on a disk that folds case (and, as macOS does, Unicode forms): simple
    case mapping, as APFS, exFAT and NTFS use (``straße`` and ``strasse`` stay two names
    there, which ``casefold`` would join; review s35)."""
    return unicodedata.normalize("NFD", rel).lower()


def _case_twins(
    manifest: Manifest, prefer: Collection[str] = frozenset()
) -> dict[tuple[str, str], str]:
    """(root, path) of each entry or link that a case-folding disk would write over an
    earlier one -> that one's local path. The one kept is the one in ``prefer`` (already
    here under that very name: review s35 found a verified ``model.pt`` refused for a new
    ``Model.pt``), else the first in sorted order (the same one every pull). A file and a
    folder of one folded name collide too (``Model`` and ``model/x``); two folders of one
    folded name merge, losing nothing, and are left."""
    items = sorted(
        ((manifest.local_relpath(i.root, i.path), i) for i in (*manifest.entries, *manifest.links)),
        key=lambda pair: (pair[0] not in prefer, pair[0]),
    )
    files: dict[str, str] = {}  # folded path -> the local path kept
    folders: dict[str, str] = {}  # folded folder -> a local path below it
    twins: dict[tuple[str, str], str] = {}
    for rel, item in items:
        key = _folded_key(rel)
        parts = key.split("/")
        above = ["/".join(parts[:n]) for n in range(1, len(parts))]
        first = files.get(key) or folders.get(key)
        first = first or next((files[f] for f in above if f in files), None)
        if first is not None:
            twins[(item.root, item.path)] = first
            continue
        files[key] = rel
        for folder in above:
            folders.setdefault(folder, rel)
    return twins


def case_twin_names(manifest: Manifest) -> list[str]:
    """The local paths of every entry or link a case-folding disk would make one with
    another (both sides): the names ``refuse_unwritable``'s ``prefer`` may be asked of."""
    twins = _case_twins(manifest)
    return sorted({*twins.values(), *(manifest.local_relpath(r, p) for r, p in twins)})


def refuse_unwritable(
    manifest: Manifest,
    name_max: int,
    path_room: int,
    *,
    folds_case: bool = False,
    prefer: Collection[str] = frozenset(),
) -> Manifest:
    """``manifest`` with each entry and link that cannot be written here
    (``local_name_reason``; with ``folds_case``, a case twin of another) moved to its
    refusals; the same manifest when none is."""
    refused = []
    twins = _case_twins(manifest, prefer) if folds_case else {}

    def writable(item: ManifestEntry | ManifestLink) -> bool:
        why = local_name_reason(manifest.local_relpath(item.root, item.path), name_max, path_room)
        twin = twins.get((item.root, item.path))
        if why is None and twin is not None:
            why = (
                f"{CASE_TWIN} {twin}, and this machine's file system does not tell names "
                "apart by case: one would be written over the other"
            )
        if why is not None:
            refused.append(Refusal(item.root, item.path, why))
        return why is None

    entries = tuple(e for e in manifest.entries if writable(e))
    links = tuple(ln for ln in manifest.links if writable(ln))
    if not refused:
        return manifest
    return dataclasses.replace(
        manifest,
        entries=entries,
        links=links,
        refused=(*manifest.refused, *refused),
    )


def secret_reason(root_path: str, path: str) -> str | None:
    """``SECRET_RULE`` and the secret's name when ``root_path/path`` is (or is below) one of
    ``SECRET_PATHS``; None otherwise."""
    parts = [_asciifolded(p) for p in f"{root_path}/{path}".split("/") if p]
    if _FIRST.isdisjoint(parts):
        return None
    for secret in _SECRETS:
        n = len(secret)
        for i in range(len(parts) - n + 1):
            if names_match(secret, parts[i : i + n]):
                return f"{SECRET_RULE} ({'/'.join(secret)})"
    return None


def _asciifolded(part: str) -> str:
    return part.lower() if part.isascii() else part


def folded(name: str) -> str:
    """How a case-insensitive, normalising file system may see ``name`` (``.RGT``,
    ``．ｒｇｔ`` and ``.rg\u200bt`` all fold to ``.rgt``)."""
    text = unicodedata.normalize("NFKC", name)
    return "".join(c for c in text if unicodedata.category(c) != "Cf").casefold()


__all__ = [
    "CASE_TWIN", "NAME_TOO_LONG", "SECRET_PATHS", "SECRET_RULE", "case_twin_names", "folded",
    "local_name_reason", "refuse_unwritable", "root_labels", "secret_reason",
    "unsafe_path_reason",
]  # fmt: skip
