"""The record of which code made a host's pulled results (U42): its lines, and a record
that round-trips and reads a damaged copy as unknown (the loopback flow is in
test_result_code_loopback.py)."""

from __future__ import annotations

import json
import time

from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.queue_state import CODE_UNKNOWN
from rgt_tui.services.result_code import (
    NO_RECORD,
    CellCode,
    ResultCode,
    code_path,
    load_result_code,
    result_code_lines,
    save_result_code,
)

A = CodeIdentity("a" * 64, "89abcdef0123", False)
B = CodeIdentity("b" * 64, "", False)
DIRTY = CodeIdentity("c" * 64, "0123456789", True)


def test_result_lines_name_each_cells_code_and_why_one_is_unknown():
    record = ResultCode(
        1.0,
        (CellCode("a", "done", A), CellCode("c", "done", A), CellCode("b", "failed", None)),
    )
    assert result_code_lines(record) == [
        f"cells a, c: code {A.short()}",
        f"cell b: {CODE_UNKNOWN}",
    ]
    # Verify names the roster's cells: one that never ran is said too.
    assert result_code_lines(record, ["a", "gone"]) == [
        f"cell a: code {A.short()}",
        "cell gone: code unknown (not in the box's queue records as read at "
        f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(1.0))})",
    ]  # not "it never ran": a pull cut short keeps an older read (h472 #5)
    many = ResultCode(1.0, tuple(CellCode(f"c{i}", "done", B) for i in range(11)))
    assert result_code_lines(many) == [
        f"cells c0, c1, c2, c3, c4, c5, c6, c7 +3 more: code {B.short()}"
    ]
    assert result_code_lines(None) == [NO_RECORD]
    assert result_code_lines(None, []) == []  # no queue, nothing expected: nothing to say
    assert result_code_lines(ResultCode(1.0)) == []  # no queue ever ran on the box
    unread = ResultCode(1.0, problem="could not read box1's queue records: timed out")
    assert result_code_lines(unread, ["a"]) == [
        "code: not known — could not read box1's queue records: timed out"
    ]


def test_the_record_round_trips_and_a_damaged_one_counts_as_unknown(tmp_path):
    record = ResultCode(5.0, (CellCode("a", "done", DIRTY), CellCode("b", "failed", None)))
    save_result_code(tmp_path, record)
    assert load_result_code(tmp_path) == record
    path = code_path(tmp_path)
    data = json.loads(path.read_text())
    data["cells"][0]["code"]["tree"] = "not hex"
    data["cells"].append({"name": ["x"]})
    data["cells"].append("junk")
    path.write_text(json.dumps(data))
    loaded = load_result_code(tmp_path)
    assert loaded is not None and [(c.name, c.code) for c in loaded.cells] == [
        ("a", None), ("b", None),
    ]  # fmt: skip
    for junk in ("{", "[]", '{"version": 9, "cells": []}', "[" * 100_000):
        path.write_text(junk)
        assert load_result_code(tmp_path) is None, junk[:20]
    path.unlink()
    assert load_result_code(tmp_path) is None
