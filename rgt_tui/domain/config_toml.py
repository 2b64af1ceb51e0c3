"""A line-aware reader of one fleet file's TOML: typed, checked access to each table,
every mistake pointing at its key's line (``LineIndex``) and saying what to write.

``Table`` collects the whole file's mistakes (``checked``) so one run reports them all; a
key written in the wrong table (``poll_seconds`` at the top, a fleet key after a
``[[hosts]]`` header) is told where it belongs. ``syntax_error`` turns tomllib's message
into a ``ConfigError`` on the line it names. Pure: the text is given.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypeVar

from rgt_tui.domain.config import (
    FLEET_KEYS,
    GROUP_ONLY_KEYS,
    HOST_KEYS,
    THRESHOLD_KEYS,
    TOP_KEYS,
    ConfigError,
)
from rgt_tui.domain.toml_lines import LineIndex

# Keys people write for what the one `ssh` string holds (ssh_config's words among them).
_PARTS_OF_SSH = {
    "port": "port", "user": "user", "username": "user", "host": "address",
    "hostname": "address", "address": "address", "ip": "address",
}  # fmt: skip

# Where each key belongs (its label in messages, its table), for a key written in the
# wrong table: it is told where to move, not only that it is unknown there.
_HOMES: dict[str, tuple[str, str]] = {
    **{k: ("[fleet]", "fleet") for k in FLEET_KEYS},
    **{k: ("[fleet.thresholds]", "fleet.thresholds") for k in THRESHOLD_KEYS},
    **{k: ("host", "hosts") for k in HOST_KEYS},
    **{k: ("[[groups]]", "groups") for k in GROUP_ONLY_KEYS},
}
# How each top-level key is written as a table header.
_TOP_HEADERS = {"fleet": "[fleet]", "hosts": "[[hosts]]", "groups": "[[groups]]"}
T = TypeVar("T")


def syntax_error(path: Path, text: str, exc: Exception) -> ConfigError:
    """Turn tomllib's message into a ConfigError, taking the line from "(at line N, column M)".

    A value or table given twice is said in TOML's words with the line of the first one
    (tomllib's own words name a table as a Python tuple); the rest are syntax slips,
    whose fix is in the line's quotes, brackets and commas."""
    message = str(exc)
    line: int | None = None
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", message)
    if match:
        line = int(match.group(1))
        message = f"{message[: match.start()]} (column {match.group(2)})"
    elif message.endswith("(at end of document)"):
        line = max(1, len(text.splitlines()))
    key = None
    lines = text.splitlines()
    opened = _array_opened(lines, line) if message.startswith("Unclosed array") else None
    if opened is not None:
        # tomllib names where it gave up (the next table's header), not the line that
        # opened the array: "line 30" for `autstop = [2` on line 28 (h472 #7).
        message = f"Unclosed array: opened here with [ and never closed with ] (tomllib stopped at line {line})"
        line = opened
    if line is not None and line <= len(lines):
        key_match = LineIndex.KEY.match(lines[line - 1])
        key = next((g for g in key_match.groups() if g is not None), None) if key_match else None
    twice = _given_twice(str(exc), lines, line, key)
    if twice is not None:
        return ConfigError(path, twice, line=line, key=key)
    return ConfigError(
        path,
        f"TOML syntax error: {_dotted_names(message)} — check this line's quotes, brackets and "
        "commas (each setting is key = value; strings need closing quotes)",
        line=line,
        key=key,
    )


_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')


def _array_opened(lines: list[str], upto: int | None) -> int | None:
    """The last line at or before ``upto`` whose value opens more ``[`` than it closes
    (``key = [2``): where an unclosed array begins. None when none does."""
    if upto is None:
        return None
    for number in range(min(upto, len(lines)), 0, -1):
        # Brackets and # inside a quoted string are text, not TOML (review h473 #7).
        text = _QUOTED.sub('""', lines[number - 1]).split("#", 1)[0]
        if "=" in text and text.count("[") > text.count("]"):
            return number
    return None


# tomllib names a table by its key parts as a Python tuple: ('fleet', 'thresholds').
_TUPLE = re.compile(r"\((?:'[^']*'(?:, )?)+,?\)")


def _dotted(name: str) -> str:
    return ".".join(re.findall(r"'([^']*)'", name))


def _dotted_names(message: str) -> str:
    """tomllib's message with each tuple of key parts written as TOML does: a.b."""
    return _TUPLE.sub(lambda m: _dotted(m.group(0)), message)


def _headers(lines: list[str], upto: int) -> list[tuple[int, str, str]]:
    """(line, "[" or "[[", dotted name) of each table header before line ``upto``."""
    found = []
    for number, text in enumerate(lines[: upto - 1], start=1):
        header = LineIndex.HEADER.match(text)
        if header:
            parts = [p.strip().strip("\"'") for p in header.group(2).split(".")]
            found.append((number, header.group(1), ".".join(parts)))
    return found


def _given_twice(message: str, lines: list[str], line: int | None, key: str | None) -> str | None:
    """What to say when tomllib refused a key or table given twice; None for the rest."""
    if line is None or line > len(lines):
        return None
    if message.startswith("Duplicate inline table key"):
        name = re.search(r"key '([^']*)'", message)
        return (
            f"{name.group(1) if name else 'a key'} is set twice in one inline table {{…}}: keep one"
        )
    header = LineIndex.HEADER.match(lines[line - 1])
    before = _headers(lines, line)
    declared = re.match(r"Cannot declare (\(.*\)) twice", message)
    if declared:
        name = _dotted(declared.group(1))
        earlier = [(n, b) for n, b, h in before if h == name]
        if any(b == "[[" for _, b in earlier):
            first = next(n for n, b in earlier if b == "[[")
            return (
                f"[{name}] declares a table named {name}, but [[{name}]] at line {first} already "
                f"made {name} an array of tables (a list of entries) — write [[{name}]], with "
                "double brackets, to add an entry"
            )
        if earlier:
            return (
                f"the table [{name}] is declared twice (first at line {earlier[0][0]}) — "
                f"keep one [{name}] header and put all its keys under it"
            )
        return (
            f"the table [{name}] is declared twice: a dotted key ({name}.… = …) or an inline "
            f"table above already made it — declare each table once"
        )
    if not message.startswith("Cannot overwrite a value"):
        return None
    if header is not None and header.group(1) == "[[":
        name = ".".join(p.strip().strip("\"'") for p in header.group(2).split("."))
        first = next((n for n, b, h in before if h == name and b == "["), None)
        where = f" at line {first}" if first is not None else ""
        return (
            f"[[{name}]] adds an entry to an array of tables named {name}, but {name} is "
            f"already a table{where} ([{name}], single brackets) — write every {name} "
            f"header as [[{name}]]"
        )
    if key is None:  # a dotted key (a.b = …) under a key that holds a value
        return (
            "this line sets a key that an earlier line already set (a dotted key a.b = … "
            "cannot go under a key a that holds a value): keep one"
        )
    start = before[-1][0] if before else 0  # the same table: from its header on
    first = next(
        (
            n
            for n in range(start + 1, line)
            if (m := LineIndex.KEY.match(lines[n - 1]))
            and next(g for g in m.groups() if g is not None) == key
        ),
        None,
    )
    if first is None:
        return f"{key} is set twice in this table: keep one"
    return f"{key} is set twice (line {first}): keep one"


def _describe(value: Any) -> str:
    """A short phrase for a wrong value, in TOML's terms."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f'the string "{value}"'
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (datetime, date)):
        return "a date"
    return repr(value)


class Table:
    """Typed, checked access to one table of the file; errors point at the key's line."""

    def __init__(
        self,
        path: Path,
        index: LineIndex,
        section: str,
        data: Mapping[str, Any],
        fallback: int | None,
        problems: list[ConfigError],
    ) -> None:
        self.path, self.index, self.section, self.data = path, index, section, data
        self.fallback = fallback  # line to blame when the table has no header of its own
        self.problems = problems  # the whole file's mistakes, shared by all its tables

    def sub(self, section: str, data: Mapping[str, Any], fallback: int | None) -> Table:
        """Another table of the same file, reporting into the same problems."""
        return Table(self.path, self.index, section, data, fallback, self.problems)

    def checked(self, check: Callable[[], T], fallback: T) -> T:
        """``check()``'s value; when it finds a mistake, record it and go on with
        ``fallback``, so one run reports every mistake of the file."""
        try:
            return check()
        except ConfigError as error:
            self.problems.append(error)
            return fallback

    def line(self, key: str | None = None) -> int | None:
        """Line of ``key`` (or of this table) in the file."""
        found = self.index.line(self.section, key)
        return found if found is not None else self.fallback

    def error(self, key: str | None, message: str) -> ConfigError:
        """A ConfigError at ``key``'s line."""
        return ConfigError(self.path, message, line=self.line(key), key=key)

    def reject_unknown(self, allowed: Iterable[str]) -> None:
        """Record one mistake per key not in ``allowed``: a key of another table is told
        where to move it, a typo gets the closest allowed key."""
        allowed = tuple(allowed)
        for key in self.data:
            if key not in allowed:
                self.problems.append(self.error(key, self._unknown(key, allowed)))

    def _unknown(self, key: str, allowed: tuple[str, ...]) -> str:
        """What to say about ``key``, unknown in this table."""
        home = _HOMES.get(key)
        if home is not None:
            label, table = home
            if isinstance(self.data[key], dict) and table == "fleet":
                return f"{key!r} is a table of [fleet] — write its header as [fleet.{key}]"
            move = (
                f"into a [[{table}]] entry" if table in ("hosts", "groups") else f"under [{table}]"
            )
            if not self.section:
                why = " (only [fleet] and [[hosts]] entries go at the top level)"
            elif self.section.startswith("hosts["):
                why = (
                    " (a key belongs to the nearest table header above it: here the "
                    f"[[hosts]] entry at line {self.line()})"
                )
            else:
                why = ""
            return f"{key!r} is a {label} setting — move it {move}{why}"
        if not self.section:
            return _unknown_top(key, self.data[key])
        if "ssh" in allowed and key.lower() in _PARTS_OF_SSH:
            # `port = 22` met ~60 keys and no word of where the port goes (hour s33 CLI #14).
            return (
                f"unknown key {key!r} — a host's {_PARTS_OF_SSH[key.lower()]} goes in its ssh "
                'key: ssh = "user@host:port" (or a pasted "ssh -p PORT user@host")'
            )
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"expected one of: {', '.join(allowed)}"
        return f"unknown key {key!r} — {hint}"

    def text(self, key: str, default: str, *, example: str = "...") -> str:
        """A non-empty string, or ``default`` when absent; ``example`` shows the fix."""
        return self.maybe(key, example=example) or default

    def maybe(self, key: str, *, example: str = "...") -> str | None:
        """A non-empty string, or None when absent."""
        value = self.data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            got = _describe(value)
            raise self.error(
                key, f'expected a non-empty string like {key} = "{example}", got {got}'
            )
        return value

    def required(self, key: str, example: str) -> str:
        """A non-empty string that must be present."""
        if key not in self.data:
            where = " to this [[hosts]] entry" if self.section.startswith("hosts[") else ""
            raise self.error(key, f'missing required key {key!r} — add {key} = "{example}"{where}')
        return self.text(key, "", example=example)

    def number(self, key: str, default: float | None, *, allow_zero: bool = False) -> float | None:
        """A number (int or float) above zero, or at least zero with ``allow_zero``."""
        if key not in self.data:
            return default
        value = self.data[key]
        bound = "≥ 0" if allow_zero else "> 0"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            bare = _as_number_text(value)
            fix = f" — drop the quotes: {key} = {bare}" if bare else ""
            raise self.error(key, f"expected a number {bound}, got {_describe(value)}{fix}")
        if not math.isfinite(value):  # "a number > 0, got inf" read as a contradiction
            raise self.error(key, f"expected a finite number {bound}, got {value}")
        if value < 0 or (value == 0 and not allow_zero):
            fix = f" — write {key} = {-value}" if value < 0 else ""
            raise self.error(key, f"expected a number {bound}, got {value}{fix}")
        return float(value)

    def integer(self, key: str, default: int) -> int:
        """A whole number above zero."""
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            fix = f" — drop the quotes: {key} = {value}" if _is_number_text(value) else ""
            raise self.error(key, f"expected a whole number > 0, got {_describe(value)}{fix}")
        return value

    def text_list(
        self, key: str, default: list[str], *, example: str = '["/workspace"]', what: str = "paths"
    ) -> tuple[str, ...]:
        """A non-empty list of non-empty strings, duplicates dropped, order kept."""
        value = self.data.get(key, default)
        if not isinstance(value, list) or not value:
            raise self.error(
                key,
                f"expected a non-empty list of {what} such as {key} = {example}, got {_describe(value)}",
            )
        for i, item in enumerate(value, 1):  # the item named: "got a list" said nothing
            if not (isinstance(item, str) and item.strip()):
                raise self.error(
                    key,
                    f"item {i} of {key} is {_describe(item)}, not one of the {what} — write "
                    f"each as a quoted string, e.g. {key} = {example}",
                )
        return tuple(dict.fromkeys(value))

    def table(self, key: str) -> Mapping[str, Any]:
        """A sub-table (``[section.key]`` or an inline table), empty when absent."""
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            header = f"{self.section}.{key}" if self.section else key
            raise self.error(key, f"expected a table written [{header}], got {_describe(value)}")
        return value


def _as_number_text(value: Any) -> str:
    """The number a quoted value means, written bare ("" when it means none): "2.49",
    and "$2.49" or "2.49 USD" with the currency dropped (h513 #12: no fix was said)."""
    if not isinstance(value, str):
        return ""
    text = value.strip().strip("$€£¥").strip()
    for unit in ("USD", "EUR", "CNY", "RMB", "/h", "/hr"):
        text = text.removesuffix(unit).strip()
    return text if _is_number_text(text) else ""


def _is_number_text(value: Any) -> bool:
    """True for a string that would be a valid number without its quotes."""
    try:
        return isinstance(value, str) and float(value) == float(value)
    except ValueError:
        return False


def _unknown_top(key: str, value: Any) -> str:
    """What to say about an unknown top-level key: a misspelt table is the usual cause."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        written = f"table [[{key}]]"
    elif isinstance(value, dict):
        written = f"table [{key}]"
    else:
        written = f"key {key!r}"
    close = difflib.get_close_matches(key, TOP_KEYS, n=1)
    hint = (
        f"did you mean {_TOP_HEADERS[close[0]]}?"
        if close
        else "the top level holds only the [fleet] table and [[hosts]] entries"
    )
    return f"unknown {written} — {hint}"
