"""The TUI says a host's own action as its key, not as the command line's words (a
user's hour: "fix: rgt-tui sync box1" under the Queue tab, where y syncs; "run `rgt-tui
pull box1` and `rgt-tui verify box1` first" in the disk dialog, a key away from both).
Another host's command, or one with options, stays as written: no key does that."""

from __future__ import annotations

from rgt_tui.content.key_words import in_keys
from rgt_tui.content.ready_text import failure_lines, preflight_lines
from rgt_tui.domain.preflight import Check, PreflightReport
from rgt_tui.screens.launch_confirm import preflight_notes
from rgt_tui.services.queue.launch import LaunchPlan


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


def test_a_dialog_says_the_esc_that_reaches_the_key_once() -> None:
    """Hour s30 #7: "fix: y (sync)" in the launch dialog, where y does nothing; the disk
    dialog's "press p (pull)" typed p into its input."""
    said = in_keys(
        "run `rgt-tui pull box1` and `rgt-tui verify box1` first", "box1", in_dialog=True
    )
    assert said == "press Esc, then p (pull) and v (verify) first"
    assert in_keys("rgt-tui pull box2", "box1", in_dialog=True) == "rgt-tui pull box2"


def test_preflight_fixes_are_said_where_they_are_read() -> None:
    report = PreflightReport(
        host="box1",
        checks=(Check("code", ok=False, detail="the box's code differs", fix="rgt-tui sync box1"),),
    )

    def fix(keys: str) -> str:
        return preflight_lines(report, keys=keys)[-1].plain  # type: ignore[arg-type]

    assert fix("screen") == "    fix: y (sync)"  # the Queue tab: y syncs there
    assert fix("dialog") == "    fix: Esc, then y (sync)"  # the launch dialog over it
    # The move dialog's destination: the keys behind it are the origin's.
    assert fix("commands") == "    fix: rgt-tui sync box1"


def test_the_launch_dialogs_preflight_says_esc_first() -> None:
    report = PreflightReport(
        host="box1",
        checks=(Check("code", ok=False, detail="the box's code differs", fix="rgt-tui sync box1"),),
    )
    plan = LaunchPlan(
        host="box1",
        cells=(),
        start_index=0,
        detach="tmux",
        session="rgt-box1",
        box_queue_dir="",
        workdir="",
        preflight=report,
    )
    assert preflight_notes(plan).plain.endswith("fix: Esc, then y (sync)")
