"""A cell moved on before the box it was moved to ever held it (box1 → box3, never sent,
→ box2): box3's line is deleted, and box1's ``#moved-to box3: …`` line is turned to
``#moved-to box2: …``, so box1's views, its teardown gate and the cell's origin follow
the cell (hour s25a #1, #2: box1 kept reading "moved to box3", and its gate stayed
locked on "no move is on record: box3's queue file holds no cell box1_wide", with fixes
that added the line a second time).

The origin's line is found when the move is planned and rewritten, with every other byte
kept, after the move's own two files; a file changed since is left as it is, said.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.queue_file import moved_marker, split_moved
from rgt_tui.fsutil import atomic_write
from rgt_tui.services.queue.check import display_path, read_queue_file


@dataclass(frozen=True)
class OriginMark:
    """One origin's ``#moved-to`` line to point at the move's destination."""

    host: str
    cell: str
    path: Path
    text: str  # the file's text when the move was planned
    line: int  # 1-based
    new: str  # the line as it becomes (its CR kept)

    def says(self) -> str:
        return f"{display_path(self.path)}:{self.line} now reads '{self.new.rstrip()}'"


def origin_marks(
    fleet: Fleet, source: str, dest: str, names: Iterable[str]
) -> tuple[OriginMark, ...]:
    """The ``#moved-to SOURCE`` lines of other hosts' queue files for ``names`` (cells
    ``source`` never held, moved on to ``dest``). Blocking: reads the files; one that
    cannot be read or parsed has no line here (its own views say what is wrong)."""
    wanted = set(names)
    marks = []
    for host in fleet.hosts:
        if host.queue is None or host.name in (source, dest) or not wanted:
            continue
        try:
            parsed = read_queue_file(host.queue, host=host.name, default_epochs=host.epochs)
        except (OSError, ValueError):
            continue
        lines = (parsed.text or "").split("\n")
        for cell in parsed.parsed.moved:
            if cell.moved_to != source or cell.name not in wanted or cell.line > len(lines):
                continue
            raw = lines[cell.line - 1]
            found = split_moved(raw.removesuffix("\r"))
            if found is None:
                continue
            cr = "\r" if raw.endswith("\r") else ""
            marks.append(
                OriginMark(host.name, cell.name, host.queue, parsed.text or "", cell.line,
                           moved_marker(dest, found[1]) + cr)
            )  # fmt: skip
            wanted.discard(cell.name)
    return tuple(marks)


def rewrite_origins(marks: Iterable[OriginMark]) -> tuple[str, ...]:
    """Write each origin's line; what was done, or why not, one line each. Blocking."""
    said = []
    for mark in marks:
        try:
            text = mark.path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            said.append(f"{display_path(mark.path)} not updated ({exc})")
            continue
        if text != mark.text:
            said.append(
                f"{display_path(mark.path)} changed since the move was planned: line "
                f"{mark.line} not updated — make it read '{mark.new.rstrip()}'"
            )
            continue
        lines = text.split("\n")
        lines[mark.line - 1] = mark.new
        try:
            atomic_write(mark.path, "\n".join(lines))
        except OSError as exc:
            said.append(
                f"{display_path(mark.path)} not updated ({exc}): make line {mark.line} read "
                f"'{mark.new.rstrip()}'"
            )
            continue
        said.append(mark.says())
    return tuple(said)
