"""`rgt-tui queue check`: read every queue file of the fleet (plus any given) and check them.

Reading files is the only I/O here; the rules live in ``domain.queue_file``. Format
problems carry ``file:line``; a cell name used twice anywhere in the fleet is reported
with every place it occurs, because the name is the cell's isolation key. Where a host
has a ``code`` tree, each cell's relative config must be a file of it that sync sends
(``missing_configs``): else the cell fails on the box, paid time spent.
"""

from __future__ import annotations

import posixpath
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.queue_file import (
    DuplicateName,
    ParsedQueue,
    QueueCell,
    QueueProblem,
    duplicate_names,
    parse_queue_text,
    template_problem,
)
from rgt_tui.services.code_sync.listing import LocalTree, list_tree
from rgt_tui.services.code_sync.rules import fleet_files
from rgt_tui.services.code_sync.types import SyncError


@dataclass(frozen=True)
class QueueSource:
    """One queue file read from disk: its text (exact bytes as UTF-8) and its cells."""

    path: Path
    host: str | None  # the host whose ``queue`` key names it; None for an extra file
    text: str | None  # None when it could not be read
    parsed: ParsedQueue
    # The first line ending in CRLF (a warning: the launch's crlf check fails it), read
    # also from a file whose byte-order mark keeps its text from being sent (h553 #8).
    crlf_line: int | None = None


def _crlf_line(text: str) -> int | None:
    return text[: text.index("\r\n")].count("\n") + 1 if "\r\n" in text else None


@dataclass(frozen=True)
class SharedQueue:
    """One queue file named by several hosts' ``queue`` keys (a copied [[hosts]] block):
    every cell of it would run on each of them. Said once, at the second host's block."""

    hosts: tuple[str, ...]
    problem: QueueProblem


@dataclass(frozen=True)
class FleetQueues:
    """Every queue file of a check, with all problems (format, unreadable, duplicates)."""

    sources: tuple[QueueSource, ...]
    duplicates: tuple[DuplicateName, ...]
    problems: tuple[QueueProblem, ...]  # format and read problems (duplicates apart)
    shared: tuple[SharedQueue, ...] = ()

    @property
    def cells(self) -> tuple[QueueCell, ...]:
        """Every parsed cell, file by file."""
        return tuple(c for s in self.sources for c in s.parsed.cells)

    @property
    def ok(self) -> bool:
        """No problem, no queue file named by two hosts and no duplicate name."""
        return not self.problems and not self.shared and not self.duplicates

    def messages(self) -> list[str]:
        """Every problem as one line, format problems first."""
        return (
            [str(p) for p in self.problems]
            + [str(s.problem) for s in self.shared]
            + [d.message() for d in self.duplicates]
        )

    def source_for(self, host: str) -> QueueSource | None:
        """The queue file of ``host``, if it has one."""
        return next((s for s in self.sources if s.host == host), None)


def display_path(path: Path) -> str:
    """The path as messages show it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _parse_undecodable(data: bytes, shown: str, default_epochs: int) -> ParsedQueue:
    """A file with bytes that are not UTF-8: each such line named by line and column, and
    every other line read as usual, so one check tells every mistake (the first bad byte
    hid the rest of the file: hour s33 CLI #7). Its cells are shown, never sent (the
    source's text stays None)."""
    lines: list[str] = []
    bad: list[QueueProblem] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            lines.append("")  # keeps the next lines' numbers
            byte = raw[exc.start : exc.start + 1].hex()
            bad.append(
                QueueProblem(
                    shown,
                    number,
                    f"byte 0x{byte} at column {exc.start + 1} is not UTF-8 — save the file as "
                    "UTF-8 text",
                )
            )
    parsed = parse_queue_text("\n".join(lines), file=shown, default_epochs=default_epochs)
    problems = sorted((*bad, *parsed.problems), key=lambda p: p.line or 0)
    return replace(parsed, problems=tuple(problems))


# A key's or certificate's own marks, wherever they stand (a byte-order mark before a PEM
# header, pkcs12's "Bag Attributes" lines first, PuTTY's format): review h494 #3.
KEY_MATERIAL = re.compile(
    r"-----BEGIN [A-Z0-9 ]*(KEY|CERTIFICATE)[A-Z0-9 ]*-----|^PuTTY-User-Key-File-\d|^Bag Attributes",
    re.MULTILINE,
)


def read_queue_file(
    path: Path, *, host: str | None, default_epochs: int, entry: str = ""
) -> QueueSource:
    """Read and parse one queue file; a missing or non-UTF-8 file becomes a problem.
    ``entry``: where the host's fleet-file entry is (``hosts.toml:12``), which a missing
    file's message names (its ``queue`` path is read from the fleet file's folder)."""
    shown = display_path(path)
    try:
        # Bytes, not read_text: universal newlines would turn CRLF into LF and the
        # box's copy must be the file byte for byte.
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        whose = f" (the queue of host {host}" + (f", whose entry is at {entry}" if entry else "")
        whose = f"{whose})" if host else ""
        fix = "fix the queue path in that entry" if entry else "fix the path"
        problem = QueueProblem(shown, None, f"queue file not found{whose} — create it or {fix}")
        return QueueSource(path, host, None, ParsedQueue(shown, (), (problem,)))
    except UnicodeDecodeError as exc:
        return QueueSource(path, host, None, _parse_undecodable(exc.object, shown, default_epochs))
    except OSError as exc:
        problem = QueueProblem(shown, None, f"cannot read it ({exc}); a queue file is UTF-8 text")
        return QueueSource(path, host, None, ParsedQueue(shown, (), (problem,)))
    if KEY_MATERIAL.search(text):
        # A key or certificate named as a queue (a slip of the completion): every line
        # would be echoed as "missing task after '<base64>'" (h493 #4). Never shown.
        problem = QueueProblem(
            shown, 1, "a key or certificate, not a queue file: its lines are not shown"
        )
        return QueueSource(path, host, None, ParsedQueue(shown, (), (problem,)))
    if text.startswith("\ufeff"):  # a Windows editor's byte-order mark: the box's copy
        # would carry it into the first cell's path, so it is named, not read past.
        problem = QueueProblem(
            shown,
            1,
            "the file starts with a UTF-8 byte-order mark (a Windows editor's) — save it "
            "as UTF-8 without BOM",
        )
        # The rest read too, for its own problems: they came only once the mark was gone,
        # one fix at a time (s36 faults #7). No text: nothing of it is sent as it is.
        rest = parse_queue_text(text[1:], file=shown, default_epochs=default_epochs)
        parsed = ParsedQueue(shown, rest.cells, (problem, *rest.problems))
        return QueueSource(path, host, None, parsed, _crlf_line(text))
    parsed = parse_queue_text(text, file=shown, default_epochs=default_epochs)
    return QueueSource(path, host, text, parsed, _crlf_line(text))


def check_fleet_queues(fleet: Fleet, extra_files: Iterable[Path] = ()) -> FleetQueues:
    """Parse every host's queue file and the extra files, and find duplicate names."""
    sources: list[QueueSource] = []
    seen: set[Path] = set()
    named_by: dict[Path, list[HostConfig]] = {}
    copies: set[int] = set()  # ids of the second and later reads of one host-named file
    for host in fleet.hosts:
        if host.queue is None:
            continue
        # Two hosts naming one file: each reads it (with its own default epochs, so its
        # own launch has its cells), but the file's cells and problems count once, and
        # the clash is said as that rather than as every cell's name used twice.
        path = host.queue.resolve()
        seen.add(path)
        entry = f"{display_path(fleet.path)}:{host.line}" if fleet.path and host.line else ""
        source = read_queue_file(
            host.queue, host=host.name, default_epochs=host.epochs, entry=entry
        )
        if path in named_by:
            copies.add(id(source))
        named_by.setdefault(path, []).append(host)
        sources.append(source)
    for path in extra_files:
        path = Path(path)
        if path.resolve() in seen:
            continue  # already read as a host's queue, with that host's default epochs
        seen.add(path.resolve())
        sources.append(read_queue_file(path, host=None, default_epochs=fleet.default_epochs))
    firsts = [s for s in sources if id(s) not in copies]
    problems = [p for s in firsts for p in s.parsed.problems]
    for host in fleet.hosts:
        if host.queue is not None and host.run is not None:
            why = template_problem(host.run)
            if why:
                problems.append(
                    QueueProblem(
                        str(fleet.path or "hosts.toml"), host.line, f"host {host.name}: {why}"
                    )
                )
    cells = [c for s in firsts for c in s.parsed.cells]
    shared = tuple(
        _shared(fleet, path, hosts) for path, hosts in named_by.items() if len(hosts) > 1
    )
    return FleetQueues(tuple(sources), duplicate_names(cells), tuple(problems), shared)


def _shared(fleet: Fleet, path: Path, hosts: list[HostConfig]) -> SharedQueue:
    names = [h.name for h in hosts]
    both = "both" if len(names) == 2 else "all"
    listed = ", ".join(names[:-1]) + f" and {names[-1]}"
    return SharedQueue(
        tuple(names),
        QueueProblem(
            str(fleet.path or "hosts.toml"),
            hosts[1].line,  # the second block: most likely the copy
            f"queue: hosts {listed} {both} name {display_path(path)} — give each host its "
            "own queue file",
        ),
    )


def host_problems(fleet: Fleet, host: HostConfig, checked: FleetQueues) -> list[str]:
    """What stops ``host``'s queue from running: missing keys, its format problems, and
    duplicate names that involve one of its cells."""
    where = f"{fleet.path or 'hosts.toml'}" + (f":{host.line}" if host.line else "")
    if host.queue is None or host.run is None:
        missing = " and ".join(
            k for k, v in (("queue", host.queue), ("run", host.run)) if v is None
        )
        return [
            f"host {host.name} has no {missing} — add "
            + ", ".join(
                example
                for key, example in (
                    ("queue", f'queue = "queues/{host.name}.txt"'),
                    # add's default interpreter, and U32's optional epochs (h553).
                    (
                        "run",
                        'run = "python3 train.py --config {cfg} [--epochs {epochs}] --out {out}"',
                    ),
                )
                if key in missing
            )
            + f" to its [[hosts]] block ({where})"
        ]
    source = checked.source_for(host.name)
    assert source is not None
    problems = [str(p) for p in source.parsed.problems]
    why = template_problem(host.run)
    if why:
        problems.append(f"{where}: host {host.name}: {why}")
    problems += [str(s.problem) for s in checked.shared if host.name in s.hosts]
    # By file:line, not identity: a host sharing another's file has its own read of it.
    mine = {c.where for c in source.parsed.cells}
    problems += [d.message() for d in checked.duplicates if any(c.where in mine for c in d.places)]
    return problems


# A listed code tree by (root, code_exclude): hosts sharing a tree list it once per check.
_Listings = dict[tuple[Path, tuple[str, ...]], "LocalTree | None"]


def missing_configs(
    fleet: Fleet, host: HostConfig, cells: Iterable[QueueCell], listings: _Listings | None = None
) -> list[QueueProblem]:
    """Each of ``cells`` whose config the box will not have: with the host's ``code`` set
    and ``{cfg}`` in its run template, a relative config path must name a file of the code
    tree (sync puts it in the workdir, where the cell runs) that sync sends (not
    git-ignored, not in ``code_exclude``, not a symlink: ``code_sync.listing``).

    Not checked: any config of a host without ``code`` (it may live only on the box), an
    absolute or ``~`` path, one that leaves the tree, and one not here that sync would
    not send either (git-ignored or excluded: it may be put on the box otherwise, and sync
    leaves it there). Blocking (the tree is listed): run it in a thread."""
    configs = tree_configs(host, cells)
    code, run = host.ready.code, host.run
    if not configs or code is None or run is None:
        return []
    root = code.expanduser()
    if not root.is_dir():
        return []  # sync and preflight's code check say that
    listings = {} if listings is None else listings
    fails = f"would fail on {host.name}"
    sub = _cfg_base(run, host.workdir)
    where = root / sub if sub else root  # where the run template reads {cfg} from
    problems: list[tuple[int, QueueProblem]] = []
    absent: dict[str, list[QueueCell]] = {}
    for rel, users in configs.items():
        try:
            mode = (root / rel).lstat().st_mode
        except OSError:
            absent[rel] = users
            continue
        tree = _listed(fleet, host, root, listings)
        if tree is None or rel in {f.path for f in tree.files}:
            continue
        why = next(
            (s.removeprefix(rel).strip(" ()") for s in tree.skipped if s.startswith(rel + " (")),
            "a folder" if stat.S_ISDIR(mode) else "git-ignored, or left out by code_exclude",
        )
        problems += [(cell.line, QueueProblem(
            cell.file, cell.line,
            f"{cell.cfg} is in {where} but sync does not send it ({why}): cell {cell.name} "
            f"{fails} — make it a file sync sends (track it; take it out of .gitignore or "
            "code_exclude), or fix the path on this line",
        )) for cell in users]  # fmt: skip
    if absent:
        tree = _listed(fleet, host, root, listings)
        try:
            sent = tree.rules.sent(absent, host.name) if tree and tree.rules else set()
        except SyncError:
            sent = set()
        for rel in sent:
            problems += [(cell.line, QueueProblem(
                cell.file, cell.line,
                f"{cell.cfg} is not in {where} ({host.name}'s code tree, which sync sends to "
                f"its workdir): cell {cell.name} {fails} — fix the path on this line, or add "
                "the file to the tree (then sync it: y, or rgt-tui sync)",
            )) for cell in absent[rel]]  # fmt: skip
    return [p for _, p in sorted(problems, key=lambda lp: lp[0])]


# The last ``cd DIR &&`` (or ``;``) before ``{cfg}`` in a run template.
_CD = re.compile(r"(?:^|[;&|]\s*)cd\s+(\S+)\s*(?:&&|;)")


def launch_refusals(fleet: Fleet, host: HostConfig) -> list[str]:
    """What the host's queue file holds that a launch refuses, as ``queue check`` says
    it: its format problems and duplicate names, and each cell whose config the host's
    code tree lacks. Empty without a queue and a run template (nothing to launch), so
    preflight (the command and the TUI's P) says "not ready" rather than "ready" for
    them (ux-h #16). Blocking: the code tree is listed."""
    if host.queue is None or host.run is None:
        return []
    checked = check_fleet_queues(fleet)
    source = checked.source_for(host.name)
    cells = source.parsed.cells if source is not None else ()
    return [*host_problems(fleet, host, checked), *map(str, missing_configs(fleet, host, cells))]


def tree_configs(
    host: HostConfig, cells: Iterable[QueueCell], *, without_code: bool = False
) -> dict[str, list[QueueCell]]:
    """The code tree's files that ``cells`` read as their config, by their path from the
    tree's top (the box's workdir: sync puts the tree there), each with the cells that
    read it. Only with the host's ``code`` set (or ``without_code``: the workdir's files,
    for a host with no tree) and ``{cfg}`` in its run template; never an absolute or
    ``~`` path, one that leaves the tree, or a moved cell's (pure)."""
    if host.ready.code is None and not without_code:
        return {}
    if host.run is None or "{cfg}" not in host.run:
        return {}
    sub = _cfg_base(host.run, host.workdir)
    if sub is None:
        return {}  # {cfg} is read from a folder the tree does not stand for: not ours to say
    found: dict[str, list[QueueCell]] = {}
    for cell in cells:
        rel = posixpath.normpath(posixpath.join(sub, cell.cfg))
        if cell.moved_to or cell.cfg.startswith(("/", "~", "$")) or rel.split("/")[0] == "..":
            continue
        found.setdefault(rel, []).append(cell)
    return found


def _cfg_base(run: str, workdir: str) -> str | None:
    """Where a relative ``{cfg}`` is read from, as a folder of the code tree ("" its top:
    a cell runs in the workdir, which holds the tree): the workdir itself, or the folder
    under it that the template's last ``cd`` before ``{cfg}`` goes to. None when that
    ``cd`` leaves the workdir (or cannot be read): the config is not the tree's then."""
    moves = _CD.findall(run[: run.index("{cfg}")])
    if not moves:
        return ""
    target = moves[-1].strip("'\"").rstrip("/")
    home = workdir.rstrip("/")
    if target in (home, "."):
        return ""
    if target.startswith(home + "/"):
        target = target[len(home) + 1 :]
    elif target.startswith(("/", "~", "$", "-")):
        return None
    rel = posixpath.normpath(target)
    return None if rel.split("/")[0] == ".." else ("" if rel == "." else rel)


def _listed(fleet: Fleet, host: HostConfig, root: Path, listings: _Listings) -> LocalTree | None:
    """The code tree as sync lists it (None: git cannot list it, which sync says itself)."""
    key = (root, host.ready.code_exclude)
    if key not in listings:
        try:
            listings[key] = list_tree(root, key[1], host.name, fleet_files(fleet))
        except SyncError:
            listings[key] = None
    return listings[key]


def fleet_missing_configs(fleet: Fleet, checked: FleetQueues) -> list[QueueProblem]:
    """``missing_configs`` of every host's queue file (``queue check``). Blocking."""
    listings: _Listings = {}
    found: list[QueueProblem] = []
    for host in fleet.hosts:
        source = checked.source_for(host.name)
        if source is not None:
            found += missing_configs(fleet, host, source.parsed.cells, listings)
    return found
