"""Line numbers for TOML keys, which tomllib does not report."""

from __future__ import annotations

import re


class LineIndex:
    """Line numbers of table headers and ``key =`` lines, since tomllib reports none.

    Sections are named after the data they hold: ``""`` (top level), ``"fleet"``,
    ``"fleet.thresholds"``, and ``"hosts[0]"``, ``"hosts[1]"``… counted by ``[[hosts]]``
    headers in order, matching tomllib's list (``"groups[0]"``… the same for ``[[groups]]``). A header also counts as the line of its last
    name part in the parent section (``[fleet.thresholds]`` is key ``thresholds`` of
    ``fleet``). Quoted keys are handled simply; dotted keys, keys inside inline tables and
    keys inside multi-line strings are not recorded, so lookups fall back to the block.
    """

    HEADER = re.compile(r"\s*(\[\[?)\s*([^\[\]=]+?)\s*\]\]?\s*(?:#.*)?$")
    KEY = re.compile(r"""\s*(?:"([^"\\]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*=""")

    def __init__(self, text: str) -> None:
        self.keys: dict[tuple[str, str], int] = {}
        self.sections: dict[str, int] = {}
        section, open_quote = "", ""
        arrays = {"hosts": -1, "groups": -1}  # [[hosts]] and [[groups]] entries counted
        for number, line in enumerate(text.splitlines(), start=1):
            if open_quote:  # inside a multi-line string: nothing here is structure
                if line.count(open_quote) % 2:
                    open_quote = ""
                continue
            header = self.HEADER.match(line)
            if header:
                parts = [p.strip().strip("\"'") for p in header.group(2).split(".")]
                parent, leaf = ".".join(parts[:-1]), parts[-1]
                if header.group(1) == "[[" and not parent and leaf in arrays:
                    arrays[leaf] += 1
                    section = f"{leaf}[{arrays[leaf]}]"
                else:
                    head = parent.split(".")[0]
                    if head in arrays and arrays[head] >= 0:
                        parent = f"{head}[{arrays[head]}]" + parent[len(head) :]
                    section = f"{parent}.{leaf}" if parent else leaf
                self.keys.setdefault((parent, leaf), number)
                self.sections.setdefault(section, number)
                continue
            key = self.KEY.match(line)
            if key:
                name = next(g for g in key.groups() if g is not None)
                self.keys.setdefault((section, name), number)
                rest = line[key.end() :]
                open_quote = next((q for q in ('"""', "'''") if rest.count(q) % 2), "")

    def line(self, section: str, key: str | None = None) -> int | None:
        """The line of ``key`` in ``section``, else of the section's header, else None."""
        if key is not None and (section, key) in self.keys:
            return self.keys[(section, key)]
        return self.sections.get(section)
