"""A torn-down host's Queue tab says the box is no longer read, with the way back,
rather than "reading the queue…" forever: nothing polls a torn-down box."""

from __future__ import annotations

import time
from pathlib import Path

from support.pilot import SIZE, screen_text, wait_for

from rgt_tui.app import RgtApp
from rgt_tui.demo.loopback import LoopbackFleet
from rgt_tui.paths import journal_dir
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal, TeardownRecord


async def test_a_torn_down_hosts_queue_tab_says_it_is_not_read(
    tmp_path: Path, state_dir: Path
) -> None:
    queues = tmp_path / "queues"
    queues.mkdir()
    (queues / "box1.txt").write_text("configs/a.yaml cls 1\n")
    async with LoopbackFleet(1, tmp_path / "fleet", queue_dir=queues, run="true") as boxes:
        torn_at = float(int(time.time())) - 600
        record = TeardownRecord(torn_at, "true", 0, "", True)
        Journal(journal_dir(boxes.hosts_file)).add_teardown("box1", record)
        await boxes.box("box1").stop()  # gone, as a destroyed box is
        app = RgtApp(load_fleet(boxes.hosts_file), config_dir=tmp_path / "config")
        async with app.run_test(size=SIZE) as pilot:
            pane = app.fleet_screen.panes["box1"]
            await wait_for(lambda: pane.has_class("-torn-down"), pilot=pilot)
            app.open_host("box1")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            assert isinstance(app.screen, HostDetailScreen)
            await pilot.press("7")  # the Queue tab
            when = time.strftime("%H:%M", time.localtime(torn_at))
            await wait_for(lambda: "was torn down at" in screen_text(app), pilot=pilot)
            text = screen_text(app)
            assert "reading the queue" not in text
            assert when in text and "r reads the box again" in text
            # a: refused as torn down, before any connection (h542 #3: it read
            # "connection refused … try again once it is back").
            await pilot.press("a")
            await wait_for(
                lambda: any(n.title == "box1: append refused" for n in app._notifications),
                pilot=pilot,
            )
            (refused,) = [n for n in app._notifications if n.title == "box1: append refused"]
            assert "is recorded as torn down" in str(refused.message), refused.message
            assert "connection refused" not in str(refused.message)


async def test_a_box_down_since_the_start_says_so_on_its_queue_tab_then_reads_it(
    tmp_path: Path, state_dir: Path
) -> None:
    """h614 #6: a box down since the app started read "reading the queue…" for good: the
    tab says it does not answer, and reads the queue once the box is back."""
    queues = tmp_path / "queues"
    queues.mkdir()
    (queues / "box1.txt").write_text("configs/a.yaml cls 1\n")
    async with LoopbackFleet(1, tmp_path / "fleet", queue_dir=queues, run="true") as boxes:
        box = boxes.box("box1")
        await box.stop()
        app = RgtApp(load_fleet(boxes.hosts_file), config_dir=tmp_path / "config")
        async with app.run_test(size=SIZE) as pilot:
            app.open_host("box1")
            await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
            await pilot.press("7")  # the Queue tab
            await wait_for(lambda: "box1 does not answer" in screen_text(app), pilot=pilot)
            text = screen_text(app)
            assert "reading the queue" not in text and "r tries now" in text, text
            assert "queues/box1.txt" in text, text
            await box.start()
            await pilot.press("r")
            await wait_for(
                lambda: (
                    "box1 does not answer" not in screen_text(app)
                    and "not sent" in screen_text(app)
                ),
                what="the queue read once the box is back",
                pilot=pilot,
            )


def test_a_torn_down_hosts_queue_lines_offer_no_launch_or_retry() -> None:
    """h542 #3: a queue read before the teardown still offered "R retry or resume a cell"
    and "L relaunch", which the box refuses: the hint says it is torn down, and m."""
    from rgt_tui.content.queue_text import queue_lines
    from rgt_tui.domain.queue_records import (
        cells_tsv_line,
        parse_cell_state,
        parse_cells_tsv,
        parse_runner_state,
    )
    from rgt_tui.domain.queue_state import derive_view

    boot = "boot-1"
    deployed = parse_cells_tsv(cells_tsv_line(0, "a", "run a") + cells_tsv_line(1, "b", "run b"))
    launches = parse_runner_state(f"launch 1000 {boot} tmux 0 /r/run_queue.x.sh 42\n")
    attempts = {"a": parse_cell_state(f"start 1000 {boot} 4710\nend 1010 1\n")}
    view = derive_view(
        "box1", deployed, launches, attempts, boot_id=boot, now=1100, runner_alive=False
    )
    before = "\n".join(str(line) for line in queue_lines(view))
    assert "R retry or resume" in before and "L relaunch" in before  # the test's premise
    text = "\n".join(str(line) for line in queue_lines(view, torn_down_at=1050.0))
    assert "torn down at " in text and "m moves an unfinished cell to another box" in text
    assert "R retry" not in text and "L relaunch" not in text and "resume from index" not in text
    # Lines the box was never sent: no L or a for them either (review h544 #3).
    from dataclasses import replace

    from rgt_tui.content.queue_text import not_sent_lines
    from rgt_tui.domain.queue_file import parse_queue_line
    from rgt_tui.domain.queue_prefix import NotSent

    cell = parse_queue_line("configs/c.yaml c 1", file="q.txt", line=3, default_epochs=1)
    view = replace(view, not_sent=NotSent("q.txt", ((2, cell),)))
    live = "\n".join(str(line) for line in not_sent_lines(view))
    assert "L (Launch) sends and runs it" in live  # the test's premise
    torn = "\n".join(str(line) for line in not_sent_lines(view, torn_down=True))
    assert "L (Launch)" not in torn and "a (Append)" not in torn and "a only" not in torn
    assert "the box is torn down, so nothing sends it: m moves a cell to another box" in torn
    # Never launched at all: no "press L to launch" either (h545 #2).
    empty = derive_view("box1", (), (), {}, boot_id=boot, now=1100, runner_alive=False)
    assert "press L" in "\n".join(str(line) for line in queue_lines(empty))  # the premise
    text = "\n".join(str(line) for line in queue_lines(empty, torn_down_at=1050.0))
    assert "press L" not in text and "with no cells on the box" in text, text
