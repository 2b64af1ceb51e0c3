"""A group's pane and Logs tab (issue 41): its boxes side by side, one line each from
each box's own latest sample, and a rank picker that follows the chosen rank's box;
under each box its rank's last line from the group's queue poll, and the Queue tab's
rank picker showing one rank's own records."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.pilot import make_app
from support.samples import FLEET_TOML, agent_sample, make_update, write_fleet
from support.waiting import wait_for
from textual.widgets import Select, Static

from rgt_tui.domain.group_run import RankView
from rgt_tui.domain.queue_records import RunnerLaunch
from rgt_tui.domain.queue_state import FAILED, RUNNING, CellView, QueueView
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.dialog import ConfirmScreen
from rgt_tui.screens.tabs.logs import LogsTab
from rgt_tui.screens.tabs.queue import QueueTab
from rgt_tui.services.telemetry import ConnectionState

GROUP = """
[[groups]]
name = "pair"
hosts = ["a100-train", "h100-eval"]
master_addr = "10.0.0.5"
"""


async def test_a_group_pane_shows_each_box_and_its_logs_tab_picks_a_rank(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path, FLEET_TOML + GROUP)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(160, 60)) as pilot:
        pane = app.fleet_screen.panes["pair"]
        app.post_message(HostUpdated(make_update("a100-train", agent_sample("a100-train"))))
        lost = ConnectionState("lost", 0.0, error="connection reset \x1b[2J")
        app.post_message(HostUpdated(make_update("h100-eval", agent_sample("h100-eval"), lost)))
        await wait_for(lambda: len(pane.member_lines) == 2, pilot=pilot)
        await wait_for(lambda: "lost" in pane.member_lines[1].plain, pilot=pilot)
        first, second = (line.plain for line in pane.member_lines)
        assert first.startswith("r0 a100-train") and "GPU " in first and "VRAM " in first
        assert second.startswith("r1 h100-eval") and "connection reset" in second
        assert "\x1b" not in second  # the box's error text, made printable
        assert not app.fleet_screen.panes["spot-4090"].member_lines  # a plain host: none

        app.open_host("pair", tab="logs")
        await wait_for(lambda: app.screen.query(LogsTab), pilot=pilot)
        tab = app.screen.query_one(LogsTab)
        await wait_for(lambda: tab.host is not None, pilot=pilot)
        ranks = tab.query_one("#logs-rank", Select)
        assert ranks.display and ranks.value == 0
        assert tab._box(tab.host) == "pair"  # rank 0: the group's own connection
        ranks.value = 1
        await wait_for(lambda: tab.rank == 1, pilot=pilot)
        assert tab._box(tab.host) == "h100-eval"  # rank 1's box, over its connection
        await pilot.press("escape")

        app.open_host("spot-4090", tab="logs")
        await wait_for(lambda: app.screen.query(LogsTab), pilot=pilot)
        plain = app.screen.query_one(LogsTab)
        await wait_for(lambda: plain.host is not None, pilot=pilot)
        assert not plain.query_one("#logs-rank", Select).display


QUEUED_GROUP = GROUP + 'queue = "q.txt"\nrun = "echo {name}"\n'


def _view(host: str, status: str, note: str = "") -> QueueView:
    exit_code = 1 if status == FAILED else None
    ended = 1200 if status == FAILED else None
    cell = CellView(0, "train", status, exit_code, 1000, ended, 1, note=note)
    return QueueView(host, "running", (cell,), None, "boot", 1300, None)


async def test_each_rank_s_last_line_is_under_its_box_and_the_queue_tab_picks_a_rank(
    tmp_path: Path,
) -> None:
    fleet = write_fleet(tmp_path, FLEET_TOML + QUEUED_GROUP)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(160, 60)) as pilot:
        pane = app.fleet_screen.panes["pair"]
        app.post_message(HostUpdated(make_update("a100-train", agent_sample("a100-train"))))
        await wait_for(lambda: len(pane.member_lines) == 2, pilot=pilot)
        # The group's poll read each rank: rank 0 runs, rank 1 died with its last line
        # (the box's text: an escape and markup in it).
        died = "RuntimeError: NCCL [bold]x\x1b[2J"
        app.runtime.queues.ranks["pair"] = (
            RankView(0, "a100-train", _view("a100-train", RUNNING)),
            RankView(1, "h100-eval", _view("h100-eval", FAILED, died)),
        )
        app.runtime.queue_viewed("pair", _view("pair", FAILED, "rank 1 failed first"))
        await pilot.pause()
        await wait_for(lambda: len(pane.member_lines) == 4, pilot=pilot)
        lines = [line.plain for line in pane.member_lines]
        assert lines[0].startswith("r0 a100-train") and "running train" in lines[1]
        assert lines[2].startswith("r1 h100-eval")
        assert "failed (exit 1) train" in lines[3] and "NCCL [bold]x" in lines[3]
        # A box running the group's cell is busy, not idle, on its own pane's meter too
        # (h501 #11: its footer read "idle 2m32s"); the one whose rank failed is not.
        panes = app.fleet_screen.panes
        assert panes["a100-train"].group_cell_running == {"pair": True}
        assert panes["h100-eval"].group_cell_running == {"pair": False}
        assert "\x1b" not in lines[3]  # made printable
        # A rank whose box did not answer says why, under its box.
        app.runtime.queues.ranks["pair"] = (
            RankView(0, "a100-train", _view("a100-train", RUNNING)),
            RankView(1, "h100-eval", None, "connection refused"),
        )
        app.runtime.queue_viewed("pair", _view("pair", RUNNING))
        await wait_for(lambda: "connection refused" in pane.member_lines[3].plain, pilot=pilot)

        app.open_host("pair", tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        tab = app.screen.query_one(QueueTab)
        await wait_for(lambda: tab.host is not None, pilot=pilot)
        body = tab.query_one(".queue-body", Static)
        ranks = tab.query_one("#queue-rank", Select)
        assert ranks.display and ranks.value == -1  # the whole group by default
        ranks.value = 1
        await wait_for(lambda: "connection refused" in str(body.render()), pilot=pilot)
        assert "rank 1 (h100-eval) was not read" in str(body.render())
        app.runtime.queues.ranks["pair"] = (
            RankView(0, "a100-train", _view("a100-train", RUNNING)),
            RankView(1, "h100-eval", _view("h100-eval", FAILED, died)),
        )
        app.runtime.queue_viewed("pair", _view("pair", FAILED, "rank 1 failed first"))
        await wait_for(lambda: "own records" in str(body.render()), pilot=pilot)
        assert "NCCL" in str(body.render())  # rank 1's own cell, its own last line
        ranks.value = -1
        await wait_for(lambda: "rank 1 failed first" in str(body.render()), pilot=pilot)
        await pilot.press("escape")

        app.open_host("spot-4090", tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        plain = app.screen.query_one(QueueTab)
        await wait_for(lambda: plain.host is not None, pilot=pilot)
        assert not plain.query_one("#queue-rank", Select).display


async def test_g_reaches_a_group_s_rank_picker_from_the_keyboard(tmp_path: Path) -> None:
    """ux-c #14: the Queue tab's rank picker had no key (a mouse click opened it)."""
    fleet = write_fleet(tmp_path, FLEET_TOML + QUEUED_GROUP)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(160, 60)) as pilot:
        app.runtime.queues.ranks["pair"] = (
            RankView(0, "a100-train", _view("a100-train", RUNNING, "rank 0 own")),
            RankView(1, "h100-eval", _view("h100-eval", RUNNING)),
        )
        app.open_host("pair", tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        tab = app.screen.query_one(QueueTab)
        await wait_for(lambda: tab.host is not None, pilot=pilot)
        app.runtime.queue_viewed("pair", _view("pair", RUNNING))
        body = tab.query_one(".queue-body", Static)
        await wait_for(lambda: "g picks a rank" in str(body.render()), pilot=pilot)
        ranks = tab.query_one("#queue-rank", Select)
        await pilot.press("g")
        await wait_for(lambda: ranks.expanded, pilot=pilot)
        await pilot.press("down", "enter")  # whole group → rank 0 (a100-train)
        await wait_for(lambda: tab.rank == 0, pilot=pilot)
        await wait_for(
            lambda: "rank 0 (a100-train)'s own records" in str(body.render()), pilot=pilot
        )

        # On the Logs tab, g opens that tab's rank picker.
        app.screen.action_show_tab("logs")  # type: ignore[attr-defined]
        logs = app.screen.query_one(LogsTab)
        await wait_for(lambda: logs.host is not None, pilot=pilot)
        await pilot.press("g")
        logs_ranks = logs.query_one("#logs-rank", Select)
        await wait_for(lambda: logs_ranks.expanded, pilot=pilot)
        await pilot.press("escape", "escape")
        await pilot.press("escape")

        app.open_host("spot-4090", tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        plain = app.screen.query_one(QueueTab)
        await wait_for(lambda: plain.host is not None, pilot=pilot)
        assert not app.screen.check_action("pick_rank", ())  # a plain host has no ranks


async def test_the_group_kill_dialog_says_it_kills_every_rank(tmp_path: Path) -> None:
    """ux-c, small: the dialog said only 'Kill cell train on pair now?'."""
    fleet = write_fleet(tmp_path, FLEET_TOML + QUEUED_GROUP)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(160, 60)) as pilot:
        app.open_host("pair", tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        screen = app.screen
        tab = screen.query_one(QueueTab)
        await wait_for(lambda: tab.host is not None, pilot=pilot)
        app.runtime.queue_viewed("pair", _view("pair", RUNNING))
        await wait_for(lambda: getattr(screen, "queue_view", None) is not None, pilot=pilot)
        await pilot.press("X")
        confirm = await wait_for(
            lambda: app.screen if isinstance(app.screen, ConfirmScreen) else None, pilot=pilot
        )
        said = str(confirm.query_one("#confirm-body", Static).render())
        assert "Kill cell train on pair now?" in said
        assert "killed on every rank at once (rank 0 (a100-train), rank 1 (h100-eval))" in said
        await pilot.press("escape")


async def test_a_groups_teardown_tab_offers_nothing_to_tear_down(tmp_path: Path) -> None:
    """The tab showed rank 0's platform and "Enter: tear it down" for a group, which is
    never torn down as one (a user's hour); the box stays, so typed keys stay text."""
    from textual.widgets import Input

    from rgt_tui.screens.tabs.teardown import GROUP_PLACEHOLDER, TeardownTab

    fleet = write_fleet(tmp_path, FLEET_TOML + GROUP)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(160, 60)) as pilot:
        app.open_host("pair", tab="teardown")
        await wait_for(lambda: app.screen.query(TeardownTab), pilot=pilot)
        tab = app.screen.query_one(TeardownTab)
        # Before any check (the tab opened with 6, not t): the group's words already.
        box = tab.query_one("#confirm-name", Input)
        await wait_for(lambda: box.placeholder == GROUP_PLACEHOLDER, pilot=pilot)
        app.jobs.request("pair", "gate", "")
        await wait_for(lambda: app.jobs.state("pair").gate is not None, 30, pilot=pilot)
        profile = tab.query_one("#teardown-profile", Static)
        await wait_for(lambda: "a group: each box's own" in str(profile.content), pilot=pilot)
        box = tab.query_one("#confirm-name", Input)
        assert box.placeholder == GROUP_PLACEHOLDER
        tab.take_focus()
        await wait_for(lambda: "Enter: nothing (a group)" in str(box.border_subtitle), pilot=pilot)
        # Nothing is acknowledged under a group's name (s39 groups hour #7: "Missing:
        # accept" recorded one in the group's journal): no button to press, and Enter in
        # the cell's box says where to acknowledge instead.
        from textual.widgets import Button

        from rgt_tui.screens.tabs.teardown import ACK_IDS, GROUP_ACKS_NOTHING

        assert all(tab.query_one(f"#{i}", Button).disabled for i in ACK_IDS)
        cell = tab.query_one("#ack-cell", Input)
        cell.focus()
        await pilot.press(*"g_fail", "enter")
        note = tab.query_one("#ack-note", Static)
        await wait_for(lambda: "each box's" in str(note.content), pilot=pilot)
        tab._send_ack("missing", "g_fail")  # as a button would: refused here, said
        assert tab._ack_said == GROUP_ACKS_NOTHING


async def test_a_groups_sample_adds_nothing_to_the_headers_counts(tmp_path: Path) -> None:
    """A group's sample is rank 0's: its alerts counted again made "4 warnings" of three
    boxes' (a user's hour), as its price once did."""
    from dataclasses import replace

    from support.samples import inode_update

    fleet = write_fleet(tmp_path, FLEET_TOML + GROUP)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(160, 60)) as pilot:
        box = inode_update()  # h100-eval: inodes 96 % used, alerted
        assert box.alerts
        app.post_message(HostUpdated(box))
        header = app.fleet_screen._header
        await wait_for(lambda: header.summary.connected == 1, pilot=pilot)
        alone = (header.summary.critical, header.summary.warnings)
        assert sum(alone) == len(box.alerts)
        app.post_message(HostUpdated(replace(box, host="pair")))  # the group's, the same
        await wait_for(lambda: "pair" in app.latest, pilot=pilot)
        await pilot.pause()
        app.fleet_screen._refresh_summary()
        assert (header.summary.critical, header.summary.warnings) == alone
        assert header.summary.connected == 1


async def test_the_header_counts_boxes_and_names_groups_apart(tmp_path: Path) -> None:
    """A group was counted as a host: three boxes and a group read "4 hosts ● 3 up" beside
    no host down, as if a box were missing (s35 Slurm hour #10)."""
    fleet = write_fleet(tmp_path, FLEET_TOML + GROUP)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(160, 60)) as pilot:
        header = app.fleet_screen._header
        for name in ("a100-train", "h100-eval", "spot-4090"):
            app.post_message(HostUpdated(make_update(name, agent_sample(name))))
        await wait_for(lambda: header.summary.connected == 3, pilot=pilot)
        app.fleet_screen._refresh_summary()
        said = str(header.render().plain)
        assert "3 hosts + 1 group  ● 3 up" in said, said
        assert "✖" not in said, said


async def test_the_kill_dialog_names_the_other_cells_running(tmp_path: Path) -> None:
    """A Slurm array runs several cells at once: X offered only the first, and nothing
    said how to kill another (a user's hour); then only the command line could (s35 Slurm
    hour #10). X asks which, as R does, and the question names the ones left running."""
    from rgt_tui.screens.queue_control import CellPickScreen

    extra = (
        '\n[[hosts]]\nname = "array"\nssh = "u@10.0.0.9"\nqueue = "q.txt"\nrun = "echo {name}"\n'
    )
    fleet = write_fleet(tmp_path, FLEET_TOML + extra)
    app = make_app(tmp_path, fleet=fleet)
    cells = tuple(
        CellView(i, name, RUNNING, None, 1000, None, 1) for i, name in enumerate(("a", "b", "c"))
    )
    async with app.run_test(size=(160, 60)) as pilot:
        app.open_host("array", tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        screen = app.screen
        await wait_for(lambda: screen.query_one(QueueTab).host is not None, pilot=pilot)
        app.runtime.queue_viewed(
            "array", QueueView("array", "running", cells, None, "b", 1300, None)
        )
        await wait_for(lambda: getattr(screen, "queue_view", None) is not None, pilot=pilot)
        await pilot.press("X")
        pick = await wait_for(
            lambda: app.screen if isinstance(app.screen, CellPickScreen) else None, pilot=pilot
        )
        assert [name for name, _ in pick.cells] == ["a", "b", "c"]
        assert pick.title_text == "Kill which cell on array? (3 run now)"
        await pilot.press("escape")  # nothing chosen: no question follows
        await wait_for(lambda: not isinstance(app.screen, CellPickScreen), pilot=pilot)
        assert not isinstance(app.screen, ConfirmScreen)

        await pilot.press("X")
        await wait_for(lambda: isinstance(app.screen, CellPickScreen), pilot=pilot)
        await pilot.press("down", "enter")
        confirm = await wait_for(
            lambda: app.screen if isinstance(app.screen, ConfirmScreen) else None, pilot=pilot
        )
        said = " ".join(str(confirm.query_one("#confirm-body", Static).render()).split())
        assert "Kill cell b on array now?" in said
        assert "Also running, and left to run: cell 0 (a), 2 (c)" in said
        await pilot.press("escape")


async def test_a_rank_box_sends_stop_and_kill_to_its_group(tmp_path: Path) -> None:
    """hour s22b #4: rank 0's own Queue tab said "S and X act on it", and X opened a kill
    of the group's cell on that box alone, which the box then refused as "launched by
    another host entry … keep one entry per account". It names the group instead."""
    fleet = write_fleet(tmp_path, FLEET_TOML + QUEUED_GROUP)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(160, 60)) as pilot:
        app.open_host("a100-train", tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        screen = app.screen
        tab = screen.query_one(QueueTab)
        await wait_for(lambda: tab.host is not None, pilot=pilot)
        launched = RunnerLaunch(1000, "boot", "tmux", 0, "run.sh", 42)  # by the group's launch
        rank_view = replace(_view("a100-train", RUNNING), launch=launched, runner_alive=True)
        app.runtime.queue_viewed("a100-train", rank_view)
        body = tab.query_one(".queue-body", Static)
        said = "a100-train is rank 0 of group pair: these are pair's cells — S, X and R act on pair"
        await wait_for(lambda: said in " ".join(str(body.render()).split()), pilot=pilot)
        assert "S and X act on it" not in str(body.render())
        await wait_for(lambda: getattr(screen, "queue_view", None) is not None, pilot=pilot)
        await pilot.press("X")
        told = "a100-train is rank 0 of group pair: its cells are pair's — kill them from pair"
        await wait_for(lambda: any(told in str(n.message) for n in app._notifications), pilot=pilot)
        assert not isinstance(app.screen, ConfirmScreen)
