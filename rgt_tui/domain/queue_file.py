"""Queue files: one cell per line, ``<cfg_path> <task> [epochs]`` (DESIGN.md, Queues).

The format is the one existing sweep files use (parallel_ablation.md §5): whitespace
separates fields, blank lines and ``#`` comments are ignored, and the cell name is the
config's file stem. Two things are added and kept backward compatible: a ``#`` at the
start of a word also starts a comment after the fields (a ``#`` inside a word, as in
``run#2.yaml``, stays part of it, as bash ``read`` would keep it), and shell-style quotes
let a path hold spaces.

Pure: text in, cells and problems out. The name is each cell's isolation key (its output
directory), so names must be unique across every queue of the fleet; ``duplicate_names``
finds the collisions with every place each one occurs.

A cell moved to another host after its line was sent to the box (``queue move``) keeps
its line as ``#moved-to HOST: <the original line>``. Old readers see a comment; this
parser still counts it as cell k (``ParsedQueue.moved``, ``slots``), because the box's
copy must stay a prefix of the file and cell k must keep its index (``sent_prefix_end``
(queue_prefix) accepts exactly this rewrite of a sent line). A moved cell is not live: it takes no part
in the name check and runs nowhere (its box records a skip).

Just past 450 lines on purpose: the line format, the name rules and the ``run``
template's parts and rendering are one grammar, read together when any of it changes.
"""

from __future__ import annotations

import re
import shlex
import string
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from rgt_tui.domain.text import printable

FORMAT_HINT = "write <cfg_path> <task> [epochs]"

# ``#moved-to box2: configs/x.yaml det 5``: a sent line whose cell now runs on box2. The
# host part is a host name's characters (domain.config_hosts.NAME_RE).
MOVED_PREFIX = "#moved-to "
_MOVED_RE = re.compile(r"#moved-to ([A-Za-z0-9._-]+): (.*)", re.DOTALL)


@dataclass(frozen=True)
class QueueCell:
    """One runnable line of a queue file."""

    file: str
    line: int
    name: str
    cfg: str
    task: str
    epochs: int
    epochs_given: bool  # False: the host's default filled it in
    moved_to: str = ""  # the host it was moved to (a ``#moved-to`` line); "" for a live cell

    @property
    def where(self) -> str:
        """``file:line`` for messages."""
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class QueueProblem:
    """A mistake in a queue file, with where it is and what to write instead."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class ParsedQueue:
    """Every cell of one queue file and every problem found in it."""

    file: str
    cells: tuple[QueueCell, ...]  # the live cells (moved ones apart)
    problems: tuple[QueueProblem, ...]
    moved: tuple[QueueCell, ...] = ()  # ``#moved-to`` lines: cells that keep their index only

    @property
    def slots(self) -> tuple[QueueCell, ...]:
        """Every cell that holds an index on the box, moved ones included, in file order:
        slot k is line k of the box's ``cells.tsv``."""
        if not self.moved:
            return self.cells
        return tuple(sorted((*self.cells, *self.moved), key=lambda c: c.line))


def strip_comment(line: str) -> str:
    """The line up to a ``#`` that starts a word outside quotes (the comment is dropped)."""
    quote: str | None = None
    word_start = True
    i = 0
    while i < len(line):
        c = line[i]
        if quote is not None:
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"':
                i += 1
            word_start = False
        elif c == "\\":
            i += 1
            word_start = False
        elif c in "'\"":
            quote = c
            word_start = False
        elif c == "#" and word_start:
            return line[:i]
        else:
            word_start = c.isspace()
        i += 1
    return line


def cell_name(cfg: str) -> str:
    """The cell's name: the config file's stem (``configs/ablation/no_aug.yaml`` → ``no_aug``)."""
    return PurePosixPath(cfg).stem


# A cell's name is a file name on the box (its log, state and output folders, and a
# retry's ``{out}.before-retry-YYYYmmdd-HHMMSS``, 29 bytes more), under 255 bytes: a
# longer one passed every check and failed on the box (a user's hour).
MAX_CELL_NAME_BYTES = 200

# A line holds a config path (PATH_MAX is 4096 bytes), a task and epochs. A longer one is
# a mistake (a pasted log, a joined file), and is refused by length before shlex reads it:
# shlex builds each word a character at a time, so a 1 MB line took 14 s to refuse and a
# 10 MB one did not finish (hour s33 CLI #2).
MAX_LINE_CHARS = 8192

# Epochs beyond a 32-bit int are a typo, and a training script's int() or argparse would
# take them as given; int() of 4300 digits or more raised ValueError here (a traceback,
# hour s33 CLI #1), so the digits are counted before they are converted.
MAX_EPOCHS = 2**31 - 1

# shlex's own words for a line it cannot split, in the terms of the fix.
_SHLEX_WORDS = {
    "No closing quotation": "a quote is not closed — close it, or quote the whole path: "
    "'my cfg.yaml'",
    "No escaped character": "the line ends in a backslash — remove it, or quote the path",
}


def _has_control(text: str) -> bool:
    """Any character ``printable`` would escape (C0, DEL, C1, line separators, bidi and
    zero-width format characters): the rule the launch's records apply, so `queue
    check` refuses by file:line what `launch` would (hour s20a #5)."""
    return printable(text, None) != text


def parse_queue_line(
    raw: str, *, file: str, line: int, default_epochs: int
) -> QueueCell | QueueProblem | None:
    """One line: a cell, a problem, or None for a blank or comment line."""

    def problem(message: str) -> QueueProblem:
        return QueueProblem(file, line, message)

    if "\ufeff" in raw:  # a second file's BOM, after `cat a.txt b.txt`: part of a path
        return problem(
            "a UTF-8 byte-order mark inside the line (files joined together?) — remove it, "
            "saving the file as UTF-8 without BOM"
        )
    if len(raw) > MAX_LINE_CHARS and not raw.lstrip().startswith("#"):
        return problem(
            f"the line is {len(raw)} characters long; a queue line is <cfg_path> <task> "
            f"[epochs], at most {MAX_LINE_CHARS} characters — was a log or another file "
            "pasted in?"
        )
    try:
        fields = shlex.split(strip_comment(raw), comments=False, posix=True)
    except ValueError as exc:
        return problem(_SHLEX_WORDS.get(str(exc), f"{exc} — quote the whole path: 'my cfg.yaml'"))
    if not fields:
        return None
    if len(fields) == 1:
        return problem(f"missing task after {fields[0]!r} — {FORMAT_HINT}")
    if len(fields) > 3:
        extra = " ".join(fields[3:])
        return problem(
            f"too many fields ({len(fields)}; extra: {extra!r}) — {FORMAT_HINT}; "
            "quote a path that contains spaces"
        )
    cfg, task = fields[0], fields[1]
    for label, value in (("config path", cfg), ("task", task)):
        if not value:
            return problem(f"the {label} is empty ('') — {FORMAT_HINT}")
        if _has_control(value):
            return problem(
                f"the {label} {value!r} holds a control character — "
                "write it with printable characters only (rename the file if it has one)"
            )
        odd = next((ch for ch in value if ch != " " and unicodedata.category(ch) == "Zs"), None)
        if odd is not None:
            # A no-break space pasted from a chat or a web page looks like a space, yet
            # splits nothing: "configs/a.json t" read as one path (hour s45b #7).
            return problem(
                f"the {label} {value!r} holds a {unicodedata.name(odd, 'space').lower()} "
                f"(U+{ord(odd):04X}), which looks like a space but splits nothing: fields are "
                "split on plain spaces and tabs — type a plain space there"
            )
    epochs, given = default_epochs, len(fields) == 3
    if given:
        text = fields[2]
        if not (text.isascii() and text.isdigit()) or not text.lstrip("0"):
            # What the line was read as: `!retry cfg.yaml recon` named its epochs only.
            return problem(
                f"bad epochs {text[:40]!r} (the line reads config {cfg[:60]!r}, task "
                f"{task[:40]!r}) — expected a whole number > 0, or leave it out"
            )
        if len(text.lstrip("0")) > 10 or int(text) > MAX_EPOCHS:
            return problem(
                f"epochs {text[:20]}{'…' if len(text) > 20 else ''} is more than "
                f"{MAX_EPOCHS} — a typo? write the number of epochs, or leave it out"
            )
        epochs = int(text)
    name = cell_name(cfg)
    if name in ("", ".", ".."):
        return problem(
            f"the config path {cfg!r} has no file stem to name the cell — "
            "name a config file such as configs/baseline.yaml"
        )
    if name.startswith("-"):
        # Every command that names a cell (queue kill/retry/move, logs, teardown's
        # --ack-missing) would read it as an option: `queue retry HOST -rf` failed with
        # "the following arguments are required: CELL" (h583 #4).
        return problem(
            f"the cell name {name[:40]!r} (the config file's stem) starts with '-', which "
            "every rgt-tui command that names a cell would read as an option — rename the "
            "config file"
        )
    if len(name.encode("utf-8")) > MAX_CELL_NAME_BYTES:
        return problem(
            f"the cell name {name[:40]!r}… is {len(name.encode('utf-8'))} bytes: a cell's "
            f"name makes its folders and logs on the box (at most {MAX_CELL_NAME_BYTES} "
            "bytes, room for '.before-retry-…' in 255) — rename the config file shorter"
        )
    return QueueCell(file, line, name, cfg, task, epochs, given)


def moved_marker(host: str, raw: str) -> str:
    """The line a sent line becomes when its cell moves to ``host`` (``raw`` keeps its CR)."""
    return f"{MOVED_PREFIX}{host}: {raw}"


def split_moved(raw: str) -> tuple[str, str] | None:
    """``(host, original line)`` of a ``#moved-to`` line; None for any other line."""
    found = _MOVED_RE.fullmatch(raw)
    return (found.group(1), found.group(2)) if found else None


def parse_queue_text(text: str, *, file: str, default_epochs: int) -> ParsedQueue:
    """Every cell and problem of a queue file's text (CRLF line ends are accepted)."""
    cells: list[QueueCell] = []
    moved: list[QueueCell] = []
    problems: list[QueueProblem] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        marker = split_moved(raw)
        inner = marker[1] if marker else raw
        found = parse_queue_line(inner, file=file, line=number, default_epochs=default_epochs)
        if isinstance(found, QueueCell):
            if marker:
                moved.append(replace(found, moved_to=marker[0]))
            else:
                cells.append(found)
        elif isinstance(found, QueueProblem):
            if marker:
                found = replace(found, message=f"in the #moved-to line: {found.message}")
            problems.append(found)
    return ParsedQueue(file, tuple(cells), tuple(problems), tuple(moved))


PLACES_SHOWN = 5


@dataclass(frozen=True)
class DuplicateName:
    """A cell name used by more than one line of the fleet's queues."""

    name: str
    places: tuple[QueueCell, ...]

    def message(self) -> str:
        """One line naming the places (the first few: a name repeated 200,000 times made
        a 3.9 MB line, hour s45b #6), and why it matters."""
        shown = [c.where for c in self.places[:PLACES_SHOWN]]
        more = len(self.places) - len(shown)
        where = " and ".join(shown) + (f" and {more} more" if more else "")
        return (
            f"cell name {self.name!r} is used {len(self.places)} times: {where} — "
            "each name is a cell's isolation key (its output directory), so these cells "
            "would interleave their checkpoints; rename one config"
        )


def duplicate_names(cells: Iterable[QueueCell]) -> tuple[DuplicateName, ...]:
    """Names that occur on more than one line, in order of first occurrence."""
    by_name: dict[str, list[QueueCell]] = defaultdict(list)
    for cell in cells:
        by_name[cell.name].append(cell)
    return tuple(DuplicateName(n, tuple(c)) for n, c in by_name.items() if len(c) > 1)


def expand_home(path: str, home: str) -> str:
    """``~`` and ``~/x`` resolved against the box's HOME; other paths unchanged."""
    if path == "~":
        return home
    if path.startswith("~/"):
        return home.rstrip("/") + path[1:]
    return path


def template_problem(template: str) -> str | None:
    """Why a ``run`` template cannot make a one-line command, or None when it can."""
    if "\n" in template or "\r" in template:
        return "the run template spans several lines; write it on one line (join with ; or &&)"
    try:
        list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"bad braces in the run template ({exc})"
    return bracket_problem(template)


@dataclass(frozen=True)
class TemplatePart:
    """A stretch of a ``run`` template: plain text, or an optional ``[...]`` part."""

    text: str  # without the brackets
    optional: bool
    fields: frozenset[str]


def bracket_problem(template: str) -> str | None:
    """Why the template's ``[...]`` optional parts are malformed, or None when they are fine."""
    try:
        template_parts(template)
    except ValueError as exc:
        return str(exc)
    return None


def template_parts(template: str) -> tuple[TemplatePart, ...]:
    """The template cut into plain text and optional ``[...]`` parts (U32).

    A bracketed stretch holding a ``{field}`` is an optional part: it is dropped when the
    cell has no value for a field in it (only ``{epochs}`` can be missing: a line may leave
    it out), so it must hold ``{epochs}``. Brackets with no field inside stay plain shell
    text (``[ -f x ]``, ``[0-9]``), so existing templates keep working. Raises ValueError
    (the message names the fix) for unbalanced brackets, and for nested brackets or a
    bracketed part without ``{epochs}`` around a field. Braces are assumed well formed.
    """
    parts: list[TemplatePart] = []
    start = 0  # where the current plain stretch began
    opened: int | None = None  # index of the outermost open "["
    depth = nested = 0
    fields: set[str] = set()
    i = 0
    while i < len(template):
        ch = template[i]
        if ch == "{":
            if template.startswith("{{", i):
                i += 2
                continue
            end = template.index("}", i)
            if opened is not None:
                fields.add(template[i + 1 : end])
            i = end + 1
            continue
        if ch == "[":
            if opened is None:
                opened, fields = i, set()
            depth += 1
            nested = max(nested, depth)
        elif ch == "]":
            if opened is None:
                raise ValueError(
                    f"a ']' at character {i + 1} of the run template closes no '[' — "
                    "optional parts are written [--epochs {epochs}]"
                )
            depth -= 1
            if depth == 0:
                body = template[opened + 1 : i]
                if fields:
                    _check_optional(body, fields, nested)
                    parts.append(TemplatePart(template[start:opened], False, frozenset()))
                    parts.append(TemplatePart(body, True, frozenset(fields)))
                    start = i + 1
                opened, nested = None, 0
        i += 1
    if opened is not None:
        raise ValueError(
            f"the '[' at character {opened + 1} of the run template is never closed — "
            "close it: optional parts are written [--epochs {epochs}]"
        )
    parts.append(TemplatePart(template[start:], False, frozenset()))
    return tuple(p for p in parts if p.text or p.optional)


def _check_optional(body: str, fields: set[str], nested: int) -> None:
    """Refuse an optional part that is nested or that no missing value could drop."""
    if nested > 1:
        raise ValueError(
            f"nested brackets around a placeholder in the run template ([{body}]) — "
            "write one level: [--epochs {epochs}] (put shell tests such as [[ ... ]] in a script)"
        )
    if "epochs" not in fields:
        raise ValueError(
            f"the optional part [{body}] holds no {{epochs}}, the only value a queue line may "
            "leave out, so it would never be dropped — write [--epochs {epochs}], or drop the "
            "brackets (put shell tests such as [ -d {out} ] in a script)"
        )


def epochs_note(template: str, cell: QueueCell) -> str:
    """Which epochs the cell's command passes and where the value came from (U32)."""
    parts = template_parts(template)
    bare = any(
        f == "epochs"
        for p in parts
        if not p.optional
        for _, f, _, _ in string.Formatter().parse(p.text)
    )
    optional = any("epochs" in p.fields for p in parts if p.optional)
    if not (bare or optional):
        return "epochs: none passed (the run template has no {epochs})"
    if cell.epochs_given:
        return f"epochs {cell.epochs} (the line)"
    if bare:
        return f"epochs {cell.epochs} (the host's default: the line gives none)"
    return "epochs: none passed (the config decides)"


def writes_out(template: str | None) -> bool:
    """Whether a ``run`` template names ``{out}``: its cells write into
    ``<durable_dir>/<name>`` (a template that cannot be read names nothing)."""
    try:
        return any(f == "out" for _, f, _, _ in string.Formatter().parse(template or ""))
    except ValueError:
        return False


def render_command(template: str, cell: QueueCell, durable_dir: str) -> str:
    """The shell command for one cell: every substituted value is shell-quoted.

    An optional ``[...]`` part (``template_parts``) is dropped when the line gives no
    epochs and kept, brackets removed, when it does; a bare ``{epochs}`` gets the host's
    default for a line without one.

    ``{out}`` is ``<durable_dir>/<name>``, the cell's own output directory; pass a
    ``durable_dir`` already resolved on the box (``expand_home``), because a quoted ``~``
    would not expand.
    """
    out = durable_dir.rstrip("/") + "/" + cell.name if durable_dir != "/" else "/" + cell.name
    values = {
        "cfg": cell.cfg,
        "task": cell.task,
        "epochs": str(cell.epochs),
        "name": cell.name,
        "out": out,
    }
    missing = set() if cell.epochs_given else {"epochs"}
    kept = "".join(
        p.text for p in template_parts(template) if not (p.optional and p.fields & missing)
    )
    return kept.format(**{k: shlex.quote(v) for k, v in values.items()})
