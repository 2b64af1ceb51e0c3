"""A cell's last "saved …" log line, checked against what the box held (principle 3, U33).

"saved / wrote / checkpoint …" in a log is a claim; a full disk or a swallowed error
makes it lie. ``verify`` counts a cell present once one of its artifacts loads, so a run
that logged ``saved …/ckpt_epoch2.pt`` and wrote nothing passed on its older epochs
(hour s23b #1), and the box was torn down. Only the *last* claim of each kind of file
(by its suffix: ``.pt``, ``.json``, none for a folder) in a cell's log is checked: runs
that keep the newest k checkpoints delete the older ones they once said they saved, but
the newest must be there. The last claim alone let a failed checkpoint save pass when a
metrics file was written after it (h511 #4: the demo's own log shape). Only absolute
paths under a pull root are checked: anything else cannot be placed in the pulled copy.

Pure: the log's text and the manifest in, the claim and where it lands out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from rgt_tui.domain.manifest import Manifest

# A line that says something was written; the path right after the word is what it
# claims, or one after "to"/"into"/"as" that follows ("copied /tmp/x to /out/y").
_CLAIM = re.compile(
    r"(?i)\b(?:saved|saving|wrote|written|writing|checkpointed|exported|copied|moved|stored)\b"
)
# An absolute path of two parts at least ("/2" in "epoch 2/2" and "/s" in "12.3 it/s" are
# none), not the tail of a URL ("https://wandb.ai/...") or of a relative path.
_PART = r"[^\s'\"`,;()\[\]{}<>|/]+"
_PATH = re.compile(rf"(?<![\w:/.~-])/{_PART}(?:/{_PART})+/?")
_DEST = re.compile(r"(?i)\b(?:to|into|as)\s+$")
_NEXT = re.compile(r"[;|]")  # "saved A; removed old B": B is no claim
# Of a log: its last claims are near its end; an evaluation's output after the final
# save is rarely longer (256 KiB let a claim before 350 KB of eval output pass: h511 #4).
# Reading it costs ~40 ms a log (2 MiB took 150 ms: a verify of many cells; review h514).
TAIL_BYTES = 512 << 10


@dataclass(frozen=True)
class SavedClaim:
    """The log's last claim: its line number (in the text read) and the box path; ``more``:
    the line's text after the path (up to a ";" or "|"), where a path with a space in it
    goes on (``candidates``)."""

    line: int
    path: str
    more: str = ""
    base: str = ""  # the path read up to its first space ("": ``path``)

    def candidates(self) -> list[str]:
        """The path read up to its first space, then with each further word of the line
        while the words read as parts of a path: "saved /r/your run/ckpt.pt" claims
        "/r/your run/ckpt.pt", which the first space cut to "/r/your", a file the box
        never held — a failed save, said of a cell whose results were all there (h535
        #1). Which one the box holds decides (``verify.claims``)."""
        base = self.base or self.path
        out = [base]
        for word in list(_WORD.finditer(self.more))[:MAX_WORDS]:
            if not _PATHISH.fullmatch(word.group(0).rstrip(_PATH_END)):
                break  # "(epoch", "[12.3", "https://…": the path ended before
            out.append((base + self.more[: word.end()]).rstrip(_PATH_END))
        return out


_WORD = re.compile(r"\S+")
_PATHISH = re.compile(r"[\w.@+=-]+(?:/[\w.@+=-]+)*/?")  # a word that can go on a path
MAX_WORDS = 8  # a path's spaces a claim is read over
_PATH_END = ".:/'\"`,;)]}>"  # what ends a claimed path in a log's line, not part of it


def last_claim(text: str) -> SavedClaim | None:
    """The last line of ``text`` that claims a write of an absolute path, and that path:
    the first after the claim's word, or one after a "to"/"into"/"as" ("copied /tmp/x to
    /out/y" claims /out/y; "saved /out/a; removed old /out/b" claims /out/a)."""
    claims = _claims(text)
    return claims[-1] if claims else None


def last_claims(text: str) -> list[SavedClaim]:
    """The last claim of each kind of file (``_kind``), latest first."""
    last = {_kind(c.path): c for c in _claims(text)}
    return sorted(last.values(), key=lambda c: -c.line)


# The suffixes that make a kind of their own; any other (``model.ckpt-1000``,
# ``run.2024-05-01``) is one kind with folders and bare names, or each step a rotating
# run deleted would read as its kind's last claim (review h514 #7).
_KINDS = frozenset({
    ".pt", ".pth", ".ckpt", ".bin", ".safetensors", ".json", ".jsonl", ".ndjson", ".npz",
    ".npy", ".h5", ".hdf5", ".pkl", ".pickle", ".msgpack", ".onnx", ".gguf", ".tar", ".gz",
    ".zip", ".csv", ".parquet", ".yaml", ".yml", ".txt",
})  # fmt: skip


def _kind(path: str) -> str:
    """A claimed path's kind: its suffix when a known one (``.pt``, ``.json``), else ""
    (a folder, a bare name, a numbered step): what a run rotates is one kind."""
    name = path.rsplit("/", 1)[-1]
    suffix = name[name.rfind(".") :].lower() if "." in name.lstrip(".") else ""
    return suffix if suffix in _KINDS else ""


def _claims(text: str) -> list[SavedClaim]:
    """Every claim, in order: one per line, or per piece of a line a "\r" ends (lines
    are numbered at "\n", as an editor numbers them). The claim words are found in the
    whole text at once, not line by line."""
    found = []
    number, counted, done = 1, 0, -1
    for claim in _CLAIM.finditer(text):
        # A "\r" ends a claim too (a progress bar rewritten in place holds one save per
        # redraw, the last one the newest: review h516 #6), but not a numbered line.
        start = max(text.rfind("\n", 0, claim.start()), text.rfind("\r", 0, claim.start())) + 1
        if start <= done:
            continue  # the piece's first claim word was taken
        ends = [i for i in (text.find("\n", claim.end()), text.find("\r", claim.end())) if i >= 0]
        end = min(ends, default=len(text))
        number += text.count("\n", counted, start)
        counted, done = start, end
        line = text[start:end]
        rest = _NEXT.split(line[claim.start() - start + len(claim.group()) :], maxsplit=1)[0]
        paths = list(_PATH.finditer(rest))
        if not paths:
            continue
        chosen = paths[0]
        for later in paths[1:]:
            if _DEST.search(rest[: later.start()]):
                chosen = later
        base = chosen.group(0).rstrip(".:/")
        claim = SavedClaim(number, base, rest[chosen.end() :], base)
        # Shown (and its kind read) as the longest reading over the line's spaces that
        # names a known kind of file ("/r/my run/ck.pt", not "/r/my": h535 #1); whether
        # the box held it is asked of every reading (``candidates``).
        typed = [c for c in claim.candidates()[1:] if _kind(c)]
        found.append(replace(claim, path=typed[-1]) if typed and not _kind(base) else claim)
    return found


def claimed_local(manifest: Manifest, box_path: str) -> str | None:
    """Where ``box_path`` lands in the pulled copy (relative to the host's folder), or
    None when no pull root holds it (it cannot be checked here)."""
    path = box_path.rstrip("/")
    for index, root in enumerate(manifest.roots):
        base = root.path.rstrip("/")
        if path.startswith(base + "/") and ".." not in path[len(base) + 1 :].split("/"):
            return manifest.local_relpath(index, path[len(base) + 1 :])
    return None


def holds(local_paths: set[str], local: str) -> bool:
    """Whether the pulled files hold ``local``: the file, or a folder of files."""
    return local in local_paths or any(p.startswith(local + "/") for p in local_paths)
