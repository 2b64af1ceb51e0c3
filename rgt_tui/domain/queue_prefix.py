"""The prefix rule: a box's copy of a queue file must be a prefix of the local file.

The box runs its copy; an append sends only what follows it. Line by line, each line the
box holds must be the local line, or that line rewritten as ``#moved-to HOST: <line>``
(``queue move``: a moved cell keeps its index). ``sent_prefix_end`` says where that copy
ends in the local file, ``prefix_problem`` names the lines that break the rule, and
``NotSent`` holds the cells the local file has beyond it. Pure: text in, offsets and
words out.
"""

from __future__ import annotations

from dataclasses import dataclass

from rgt_tui.domain.queue_file import QueueCell, split_moved
from rgt_tui.domain.text import printable


@dataclass(frozen=True)
class NotSent:
    """The local queue file's cells its box's copy does not hold yet: lines added since
    the last launch or append, which nothing runs until one sends them (hour s25a #6:
    `queue show` listed only the box's cells, and a user who had just edited the file
    could not tell whether the new lines would run)."""

    file: str  # the queue file, as messages show it
    cells: tuple[tuple[int, QueueCell], ...]  # (the index it takes on the box, the cell)
    problems: int = 0  # lines `queue check`, append or launch find at fault
    # Of those, the listed cells' lines (a name used twice, a config the code tree lacks):
    # marked at fault in their rows, so "2 cells … and 3 lines at fault" is not read as 5.
    faulty: frozenset[int] = frozenset()
    # Their configs the box does not hold as here (read only by `queue show`, which asks
    # the box): a running queue's code is never synced, so an append refuses them.
    stale: tuple[str, ...] = ()

    @property
    def span(self) -> str:
        """`` (lines 7–8)``, `` (line 7)``, or "" when only faulty lines were added."""
        if not self.cells:
            return ""
        first, last = self.cells[0][1].line, self.cells[-1][1].line
        return f" (line {first})" if first == last else f" (lines {first}–{last})"

    def label(self, cell: QueueCell) -> str:
        """A listed cell's state column: ``not sent``, or ``at fault`` for one of its
        lines at fault (append and launch refuse it as written)."""
        return "at fault" if cell.line in self.faulty else "not sent"

    def faults_said(self, where: str, *, added: bool = True) -> str:
        """``3 lines added to q.txt cannot run as written (2 of them listed above, at
        fault): rgt-tui queue check q.txt says why`` (``added`` False: a file never sent,
        "3 lines of q.txt")."""
        listed = len(self.faulty)
        above = (
            " (listed above, at fault)"
            if listed == self.problems
            else f" ({listed} of them listed above, at fault)"
            if listed
            else ""
        )
        lines = f"{self.problems} line" + ("" if self.problems == 1 else "s")
        return (
            f"{lines} {'added to' if added else 'of'} {where} cannot run as written{above}: rgt-tui queue check "
            f"{where} says why"
        )

    def stale_said(self, where: str, *, running: bool = True) -> str:
        """``cfg/a.json is not on box1 as here, and a running queue's code is never
        synced``: why an append refuses these cells now (``where``: the box's name as the
        reader knows it; ``running`` False: a queue that does not run, which a sync may
        update). Its first three configs, made printable."""
        names = ", ".join(printable(p, 120) for p in self.stale[:3])
        verb = "is" if len(self.stale) == 1 else "are"
        why = ", and a running queue's code is never synced" if running else ""
        return f"{names} {verb} not on {where} as here{why}"


def _same_or_moved(box_line: str, local_line: str) -> bool:
    """The local line is the box's, or exactly its ``#moved-to HOST:`` rewrite, whatever
    its line ending: a line is parsed without its ``\r``, so a file converted by dos2unix
    after its CRLF lines were sent holds the same cells (h553 #1: the launch then refused
    every line as changed, after following the append's own advice to convert)."""
    box_line, local_line = box_line.removesuffix("\r"), local_line.removesuffix("\r")
    if box_line == local_line:
        return True
    marker = split_moved(local_line)
    return marker is not None and marker[1] == box_line


def _last_line_same(old: str, new: str, *, ended: bool, more: bool) -> bool:
    """The box's last line ``old`` is the local line ``new`` with the line ending aside.

    Two cases only, shared by ``sent_prefix_end`` and ``prefix_problem`` so that they
    never disagree: the box's unended last line was sent before its CRLF was typed
    (``more``: a newline follows the local line), or the local file only lacks the box
    copy's final line ending (``ended`` and nothing follows locally).
    """
    if not ended and more and new.endswith("\r"):
        return _same_or_moved(old, new[:-1])
    if ended and not more:
        return _same_or_moved(old.removesuffix("\r"), new.removesuffix("\r"))
    return False


def sent_prefix_end(box_text: str, local_text: str) -> int | None:
    """Where, in the local file, the part the box already holds ends; None when the box's
    copy is not a prefix of it ending on a line boundary.

    Line by line, each line the box holds must be the local line, or that line rewritten
    as ``#moved-to HOST: <line>`` (a moved cell keeps its index); nothing else. What
    follows the returned offset is what an append sends. Line endings: the box's last,
    unended line also matches a local line ended by CRLF (sent before its ending was
    typed; the match ends before the ``\r\n``), and a local file that only lacks the
    box copy's final line ending is that copy (nothing follows it to send).
    """
    box_lines = box_text.split("\n")
    local_lines = local_text.split("\n")
    ended = box_lines[-1] == ""  # the box's copy ended on a newline (or is empty)
    if ended:
        box_lines.pop()
    if len(local_lines) < len(box_lines):
        return None
    end = 0
    for number, old in enumerate(box_lines):
        new = local_lines[number]
        more = number < len(local_lines) - 1  # a newline follows this local line
        if number == len(box_lines) - 1:
            if _last_line_same(old, new, ended=ended, more=more):
                # unended: the match stops before the local line's \r
                return end + len(new) - (0 if ended else 1)
            if ended and not more:
                return None
        if not _same_or_moved(old, new):
            return None
        end += len(new) + (1 if ended or number < len(box_lines) - 1 else 0)
    return end


def prefix_problem(box_text: str, local_text: str) -> str | None:
    """Why the box's copy is not a prefix of the local file ending on a line boundary.

    Returns None when the local file only grew (lines appended) or a sent line became
    its ``#moved-to`` line. Otherwise a message with the first differing lines,
    numbered, as they are on the box and locally.
    """
    if sent_prefix_end(box_text, local_text) is not None:
        return None
    box_lines = box_text.split("\n")
    ended = box_lines[-1] == ""  # what follows the box copy's last newline is no line of it
    if ended:
        box_lines.pop()
    local_lines = local_text.split("\n")
    shown: list[str] = []
    for number, old in enumerate(box_lines, start=1):
        new = local_lines[number - 1] if number <= len(local_lines) else None
        if new is not None and _same_or_moved(old, new):
            continue
        last = number == len(box_lines)  # compared with its ending aside (sent_prefix_end)
        more = number < len(local_lines)  # a newline follows the local line
        if last and new is not None and _last_line_same(old, new, ended=ended, more=more):
            continue
        shown.append(f"  line {number} on the box: {old!r}")
        # The empty text after the local file's last newline is no line: a deleted last
        # sent line read as '' (s42's hour).
        gone = new is None or (new == "" and number == len(local_lines))
        shown.append(f"  line {number} locally:    {'(missing)' if gone else repr(new)}")
        if len(shown) >= 10:
            break
    if box_lines and _only_quiet_lines_differ(box_lines, local_lines):
        # A comment added at the top is the usual way in (a user's hour): say it is one.
        shown.append(
            "  only comment or blank lines differ: the lines already sent must stay as they "
            f"were sent, comments included; put new comments below the last line sent "
            f"({box_lines[-1]!r})"
        )
    return "\n".join(shown)


def _quiet(line: str) -> bool:
    """A blank or comment line (not a ``#moved-to`` line, which keeps a cell's index)."""
    bare = line.strip()
    return not bare or (bare.startswith("#") and split_moved(line) is None)


def _only_quiet_lines_differ(box_lines: list[str], local_lines: list[str]) -> bool:
    """The box's lines and the local file's hold the same cell lines in the same order
    up to the last one sent: only blank or comment lines were added, changed or dropped."""
    sent = [line for line in box_lines if not _quiet(line)]
    local = [line for line in local_lines if not _quiet(line)][: len(sent)]
    return len(local) == len(sent) and all(map(_same_or_moved, sent, local))


def unsent_text(box_text: str, text: str) -> str:
    """The local file's text after the part the box holds (a checked prefix; "" if not)."""
    end = sent_prefix_end(box_text, text)
    return "" if end is None else text[end:]


def held_lines(box_text: str, text: str) -> int | None:
    """How many lines of the local file the box's copy holds (its last, unended line
    counts); None when that copy is not a prefix of the file (``sent_prefix_end``)."""
    end = sent_prefix_end(box_text, text)
    return None if end is None else lines_before(text, end)


def lines_before(text: str, end: int) -> int:
    """How many lines of ``text`` lie before ``end`` (a last, unended line counts)."""
    sent = text[:end]
    return sent.count("\n") + (1 if sent and not sent.endswith("\n") else 0)
