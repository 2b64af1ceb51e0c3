"""The notices list (issue 43.3), Textual-free: newest first, bounded, never the same
notice of a host twice in a row, box text made printable; and what starts a host's
periodic pulls (pull_schedule's pure rules)."""

from __future__ import annotations

import dataclasses

from rgt_tui.controllers.notices import NoticeList
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_state import DONE, PENDING, RUNNING, CellView, QueueView
from rgt_tui.services.watch.drivers.periodic_pull import no_pull_folders, results_shown


def test_newest_first_bounded_and_never_twice_in_a_row_per_host() -> None:
    now = [100.0]
    notices = NoticeList(kept=3, clock=lambda: now[0])
    assert notices.add("box1", "box1: periodic pull failed", "no such folder")
    now[0] += 300
    assert not notices.add("box1", "box1: periodic pull failed", "no such folder")
    assert notices.add("box2", "box2: periodic pull failed", "no such folder")  # another host
    assert notices.add("box1", "box1: periodic pull failed", "nothing was pulled")
    assert [(n.host, n.text) for n in notices.items()] == [
        ("box1", "nothing was pulled"),
        ("box2", "no such folder"),
        ("box1", "no such folder"),
    ]
    assert notices.items()[-1].at == 100.0  # the repeat added nothing, not even a time
    # Back to the earlier failure: not the latest any more, so listed again.
    assert notices.add("box1", "box1: periodic pull failed", "no such folder")
    assert len(notices) == 3 and notices.items()[-1].host == "box2"  # the oldest went
    assert notices.added == 4


def test_a_notice_of_an_earlier_time_takes_its_place_and_one_older_than_all_is_dropped() -> None:
    """What `watch` did overnight is listed at its own time, among the newer notices (an
    overnight hour, s39 watch #4); on a full list one older than every kept is dropped."""
    notices = NoticeList(kept=3, clock=lambda: 1000.0)
    assert notices.add("box1", "now", "a")
    assert notices.add("box2", "at night", "b", at=400.0)
    assert notices.add("box3", "at dusk", "c", at=200.0)
    assert [(n.title, n.at) for n in notices.items()] == [
        ("now", 1000.0), ("at night", 400.0), ("at dusk", 200.0),
    ]  # fmt: skip
    assert not notices.add("box4", "long ago", "d", at=100.0)  # full, older than all
    assert notices.add("box4", "at midnight", "e", at=300.0)  # the oldest gives way
    assert [n.title for n in notices.items()] == ["now", "at night", "at midnight"]


def test_box_text_is_listed_printable() -> None:
    notices = NoticeList()
    notices.add("box1", "box1\x1b[2J", "gone\x1b]52;c;AAAA\x07\nfix: p")
    (notice,) = notices.items()
    assert "\x1b" not in notice.title + notice.text and "\x07" not in notice.text
    assert notice.text.endswith("\nfix: p")  # lines kept, each printable


def _view(*cells: CellView, now: int = 10_000) -> QueueView:
    return QueueView("box1", "running", cells, None, "boot", now, None)


def test_results_are_a_cell_that_ended_or_ran_a_whole_cadence() -> None:
    assert not results_shown(None, 1800)
    assert not results_shown(_view(CellView(0, "a", PENDING)), 1800)
    young = CellView(0, "a", RUNNING, started_at=10_000 - 1799)
    assert not results_shown(_view(young), 1800)
    assert results_shown(_view(dataclasses.replace(young, started_at=10_000 - 1800)), 1800)
    assert results_shown(_view(CellView(0, "a", DONE), CellView(1, "b", PENDING)), 1800)


def test_pull_folders_are_the_configs() -> None:
    host = HostConfig(
        "h", None, None, None, "vastai", None, None, "~", "~", (), None, None, ("/data/runs",),
        None, 1,
    )  # fmt: skip
    assert no_pull_folders(host) is None
    assert "names no pull folders" in (no_pull_folders(dataclasses.replace(host, pull=())) or "")
    refused = dataclasses.replace(host, pull_refused="hosts.toml:3: pull: the whole home")
    assert no_pull_folders(refused) == "hosts.toml:3: pull: the whole home"


def test_a_box_that_drops_after_its_queue_finished_is_not_listed_as_maybe_alive() -> None:
    """Hour s24c #5: the pane said its queue had finished; the n list "a run there may
    still be alive (GEN8)"."""
    from support.samples import agent_sample, make_update

    from rgt_tui.controllers.notices import ConnectionNotices, NoticeList
    from rgt_tui.services.telemetry import ConnectionState

    notices = NoticeList()
    listed = ConnectionNotices(notices)
    lost = ConnectionState("reconnecting", 1_000_000.0, attempt=1)
    done = agent_sample("box1", cell=None, queue_done_at=999_000.0)
    listed.host_updated(make_update("box1", done, lost))
    running = agent_sample("box2", cell="lr02")
    listed.host_updated(make_update("box2", running, lost))
    text = {n.host: n.text for n in notices.items()}
    assert "Its queue had finished at its last sample" in text["box1"]
    assert "may still be alive" not in text["box1"]
    assert "may still be alive (GEN8)" in text["box2"]
