"""The words messages are built from: counts agree with their nouns, times are local."""

from __future__ import annotations

import time

from rgt_tui.cli.preflight import format_report
from rgt_tui.content.disk_text import audit_lines
from rgt_tui.domain.preflight import Check, PreflightReport
from rgt_tui.domain.units import local_time, plural
from rgt_tui.services.disk.audit import DiskAudit, Reclaimable


def test_plural_agrees_with_the_count():
    assert plural(1, "file") == "1 file"
    assert plural(0, "file") == "0 files" and plural(3, "cell") == "3 cells"
    assert (
        plural(1, "entry", "entries") == "1 entry" and plural(2, "entry", "entries") == "2 entries"
    )


def test_local_time_is_human_not_epoch_seconds():
    at = 1795512237
    assert local_time(at) == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
    assert str(at) not in local_time(at)


def test_plural_writes_the_count_as_shown_and_agrees_with_it():
    assert plural(1, "inode", shown="1") == "1 inode"
    assert plural(12345, "inode", shown="12.3k") == "12.3k inodes"


def test_a_one_file_checkpoint_is_one_inode_and_the_names_stay_in_a_column():
    one = Reclaimable("/r/a/e1.pt", "checkpoint", "f", 1, 1, 4096, 1, "a/e1.pt")
    many = Reclaimable("/r/a/e0.pt", "checkpoint", "f", 1, 2, 4096, 3, "a/e0.pt")
    audit = DiskAudit("box1", "/root", "id", (), (), (), (one, many), ())
    rows = [line for line in audit_lines(audit) if "a/e" in line]
    assert "      1 inode " in rows[0] and "      3 inodes" in rows[1]
    assert rows[0].index("a/e1.pt") == rows[1].index("a/e0.pt")


def test_preflight_says_how_many_checks_failed_in_words_that_agree():
    def report(*failed: str) -> str:
        checks = tuple(Check(name, False, "seen", "fix it") for name in failed)
        return format_report(PreflightReport("box1", checks), ())

    assert "\n1 check failed: tmux — " in report("tmux")
    assert "\n3 checks failed: tmux, gpu, disk — " in report("tmux", "gpu", "disk")
    queue = format_report(PreflightReport("box1", ()), (), ["one problem"])
    assert "a launch refuses the 1 problem above" in queue
    # A failed check beside the queue file's problems: the last line names both, and that
    # no acknowledgement passes the queue file's (s36 acts hour #8).
    both = format_report(
        PreflightReport("box1", (Check("code", False, "seen", "fix it"),)), (), ["a", "b"]
    ).splitlines()[-1]
    assert both.startswith("1 check failed: code — a launch is refused until each is fixed"), both
    assert both.endswith(
        "; and the 2 problems of the queue file and credentials above, which only a fix passes"
    ), both
