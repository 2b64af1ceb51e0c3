"""verify's "not listed" counts only what no line names (h618 #5): a zero-byte file and a
leftover `*.tmp` are listed by their flags (`empty`, `leftover`), by their local paths,
and were counted "not listed: 2 hash-only" above them as well."""

from __future__ import annotations

from support.pulls import box_results, fast, host_of, pull

from rgt_tui.services.verify.report import format_report
from rgt_tui.services.verify.run import verify_host


async def test_files_a_flag_lists_are_not_counted_as_not_listed(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    for name in ("a.json", "b.json", "c.json"):
        (res / name).write_text('{"acc": 0.9}')
    (res / "empty.txt").write_text("")
    (res / "leftover.pt.tmp").write_text("half a save")
    await pull(host_of(fleet), tmp_path, options=fast())

    report = await verify_host(host_of(fleet), tmp_path, roster=[])
    text = format_report(report)
    lines = text.splitlines()
    assert any(line.split()[:2] == ["empty", "empty.txt"] for line in lines), text
    assert any(line.split()[:2] == ["leftover", "leftover.pt.tmp"] for line in lines), text
    # Both flagged files are hash-only, and both are listed: only the three JSON files go
    # unlisted (the first line still counts every file by status).
    assert "  not listed: 3 verified (nothing to look at" in text, text
    assert lines[0] == "box1: files: 2 hash-only, 3 verified", text


async def test_the_pulls_tab_counts_the_same_as_the_command_line(make_loopback_fleet, tmp_path):
    """The TUI's Pulls tab said "2 hash-only files not listed" above the same two flagged
    files (h618's note): it counts what the command line counts."""
    from rgt_tui.content.pull_view import verify_lines

    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "notes.txt").write_text("plain text\n")  # hash-only, named by no line
    (res / "empty.txt").write_text("")
    (res / "leftover.pt.tmp").write_text("half a save")
    await pull(host_of(fleet), tmp_path, options=fast())
    report = await verify_host(host_of(fleet), tmp_path, roster=[])
    text = "\n".join(str(line) for line in verify_lines(report))
    assert "1 hash-only file not listed" in text, text
