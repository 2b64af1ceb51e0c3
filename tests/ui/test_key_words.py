"""The TUI says a host's own action as its key, not as the command line's words (a
user's hour: "fix: rgt-tui sync box1" under the Queue tab, where y syncs; "run `rgt-tui
pull box1` and `rgt-tui verify box1` first" in the disk dialog, a key away from both).
Another host's command, or one with options, stays as written: no key does that."""

from __future__ import annotations

from rgt_tui.content.key_words import in_keys
from rgt_tui.content.ready_text import failure_lines


def test_the_hosts_own_commands_become_its_keys() -> None:
    said = in_keys("run `rgt-tui pull box1` and `rgt-tui verify box1` first", "box1")
    assert said == "press p (pull) and v (verify) first"
    assert in_keys("fix: rgt-tui sync box1", "box1") == "fix: y (sync)"
    assert in_keys("fix it, then `rgt-tui sync box1`; it was", "box1") == (
        "fix it, then y (sync); it was"
    )


def test_another_hosts_command_or_one_with_options_stays_as_written() -> None:
    for text in (
        "rgt-tui pull box2",  # not this screen's host
        "rgt-tui pull box10",  # a longer name that starts alike
        "rgt-tui verify box1 --all lists every file",  # options: no key does that
        "rgt-tui queue retry box1 alpha",  # no key of its own
    ):
        assert in_keys(text, "box1") == text


def test_the_queue_tabs_failed_sync_names_the_key() -> None:
    lines = failure_lines("sync", "the box ran out of space", "rgt-tui sync box1", host="box1")
    assert lines[-1].plain == "  fix: y (sync)", lines[-1].plain
