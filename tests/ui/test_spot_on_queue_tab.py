"""The Queue tab shows a running cell's work at risk (issue 40), as the pane does: its
newest checkpoint's age on the box and of the newest one verified here, named by cell,
and the Young/Daly line for an interruptible host; the same value as the pane, also in a
detail screen opened after the records were read."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pilot import make_app, screen_text, wait_for
from support.samples import FROZEN, agent_sample, make_update

from rgt_tui.domain.artifacts import CORRUPT, NOT_VERIFIED, VERIFIED
from rgt_tui.domain.manifest import Manifest, ManifestEntry, PullRoot
from rgt_tui.domain.preemption import Checkpoint
from rgt_tui.domain.queue_records import DeployedCell, parse_cell_state, parse_runner_state
from rgt_tui.domain.queue_state import QueueView, derive_view
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.tabs.queue import QueueTab
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.resumed_record import RECORD_FILE
from rgt_tui.services.records import (
    atomic_write_json,
    fleet_host_dir,
    records_dir,
    save_manifest,
    verification_path,
)
from rgt_tui.widgets.host_pane import HostPane

pytestmark = pytest.mark.usefixtures("utc")
HOST = "a100-train"
BOOT = "b0"


def fleet_in(folder: Path):
    """One interruptible vast.ai box with a queue."""
    (folder / "q.txt").write_text("cells/eta_long.py t 1\n")
    (folder / "hosts.toml").write_text(
        f'[[hosts]]\nname = "{HOST}"\nssh = "root@10.0.0.5:40022"\nprofile = "vastai"\n'
        f'interruptible = true\nqueue = "{folder / "q.txt"}"\nrun = "python {{cfg}} {{out}}"\n'
    )
    return load_fleet(folder / "hosts.toml")


def flat(app) -> str:
    return " ".join(" ".join(row.strip(" │┃║").split()) for row in screen_text(app).splitlines())


def running(now: int = int(FROZEN)) -> QueueView:
    """eta_long running in a live queue."""
    launches = parse_runner_state(f"launch {now - 900} {BOOT} tmux 0 /s.sh 42\n")
    attempts = {"eta_long": parse_cell_state(f"start {now - 900} {BOOT} 9\n")}
    return derive_view(
        HOST, (DeployedCell(0, "eta_long", "x"),), launches, attempts, boot_id=BOOT, now=now,
        runner_alive=True,
    )  # fmt: skip


async def test_the_queue_tab_shows_the_running_cells_checkpoint_ages(tmp_path: Path) -> None:
    writes = [[FROZEN - 180 - 600 * i, 30.0, 1 << 20] for i in (2, 1, 0)]
    ckpt = {"name": "checkpoint.pt", "mtime": FROZEN - 180, "size": 1 << 20, "writes": writes}
    app = make_app(tmp_path, fleet=fleet_in(tmp_path))
    async with app.run_test(size=(110, 50)) as pilot:
        app.post_message(
            HostUpdated(make_update(HOST, agent_sample(HOST, cell="eta_long", ckpt=ckpt)))
        )
        await wait_for(lambda: HOST in app.latest, pilot=pilot)
        app.open_host(HOST, tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        tab = app.screen.query_one(QueueTab)
        await wait_for(lambda: tab.query(".queue-body"), pilot=pilot)
        tab.show_queue(running())
        await wait_for(lambda: "ckpt 3m ago on box" in flat(app), pilot=pilot)
        assert "eta_long: ckpt 3m ago on box · none verified here" in flat(app)
        assert "checkpoints every 10 min; for this box W ≈" in flat(app)  # Young/Daly
        # The spot controller's look at the records, handed to every fleet view.
        screen = app.screen
        assert isinstance(screen, HostDetailScreen)
        screen.checkpoint_verified(
            HOST, "eta_long", Checkpoint("checkpoint.pt", FROZEN - 41 * 60, 1 << 20)
        )
        await wait_for(lambda: "41m ago verified here" in flat(app), pilot=pilot)
        assert "eta_long: ckpt 3m ago on box · 41m ago verified here" in flat(app)
        # Another cell's checkpoint is not this one's.
        screen.checkpoint_verified(HOST, "other", Checkpoint("c.pt", FROZEN - 60, 1))
        await wait_for(lambda: "none verified here" in flat(app), pilot=pilot)
        # A sample that names another cell than the running row (the agent's look lags
        # the queue's records) is not put under that row.
        app.post_message(
            HostUpdated(make_update(HOST, agent_sample(HOST, cell="old_cell", ckpt=ckpt)))
        )
        await wait_for(lambda: "ckpt 3m ago on box" not in flat(app), pilot=pilot)
        assert "old_cell" not in flat(app)


def records_of_a_failed_verify(fleet, host: str = HOST, ckpt_status: str = VERIFIED) -> None:
    """The last pull's manifest, and a verify of it that failed (a corrupt metrics file,
    an unchecked one) but passed eta_long's checkpoint, written 41 minutes ago (or gave it
    ``ckpt_status``)."""
    digest = "ab" * 32
    entries = (
        ManifestEntry(0, "eta_long/checkpoint.pt", 1 << 20, FROZEN - 41 * 60, digest),
        ManifestEntry(0, "eta_long/metrics.json", 10, FROZEN - 60, "cd" * 32),
        ManifestEntry(0, "eta_long/notes.bin", 10, FROZEN - 5, "ef" * 32),
    )
    root = PullRoot(0, "/workspace/out", "/workspace/out", "")
    manifest = Manifest(host, (root,), entries, taken_at=FROZEN - 30, finished_at=FROZEN - 20)
    folder = fleet_host_dir(fleet, host)
    save_manifest(folder, manifest)
    checks = [
        {"path": "eta_long/checkpoint.pt", "status": ckpt_status, "sha256": digest},
        {"path": "eta_long/metrics.json", "status": CORRUPT, "sha256": "cd" * 32},
        {"path": "eta_long/notes.bin", "status": NOT_VERIFIED, "sha256": "ef" * 32},
    ]
    record = {"version": 1, "host": host, "ok": False, "manifest": {"digest": manifest.digest},
              "checks": checks}  # fmt: skip
    atomic_write_json(verification_path(folder), record)


async def test_the_pane_and_the_queue_tab_say_the_same_verified_checkpoint(
    tmp_path: Path,
) -> None:
    # The records say eta_long's checkpoint passed the last verify (which failed on other
    # files): the pane shows it from the spot controller's look, and a detail screen
    # opened afterwards must say the same, not "none verified here" until the records
    # change again.
    (tmp_path / "q.txt").write_text("cells/eta_long.py t 1\n")
    (tmp_path / "hosts.toml").write_text(
        f'[fleet]\nresults_dir = "{tmp_path / "results"}"\n'
        f'[[hosts]]\nname = "{HOST}"\nssh = "root@10.0.0.5:40022"\nprofile = "vastai"\n'
        f'interruptible = true\nqueue = "{tmp_path / "q.txt"}"\nrun = "python {{cfg}} {{out}}"\n'
        'durable_dir = "/workspace/out"\npull = ["/workspace/out"]\n'
    )
    fleet = load_fleet(tmp_path / "hosts.toml")
    records_of_a_failed_verify(fleet)
    ckpt = {"name": "checkpoint.pt", "mtime": FROZEN - 180, "size": 1 << 20, "writes": []}
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(110, 50)) as pilot:
        app.post_message(
            HostUpdated(make_update(HOST, agent_sample(HOST, cell="eta_long", ckpt=ckpt)))
        )
        said = "ckpt 3m ago on box · 41m ago verified here"
        await wait_for(lambda: said in flat(app), pilot=pilot)  # the pane
        app.open_host(HOST, tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        tab = app.screen.query_one(QueueTab)
        await wait_for(lambda: tab.query(".queue-body"), pilot=pilot)
        tab.show_queue(running())
        await wait_for(lambda: "ckpt 3m ago on box" in flat(app), pilot=pilot)
        assert f"eta_long: {said}" in flat(app)


async def test_a_host_back_in_the_fleet_file_shows_its_verified_checkpoint_again(
    tmp_path: Path,
) -> None:
    """A host taken out of the fleet file and put back (an edit, a rename undone) gets a
    new pane; it shows the verified checkpoint the spot controller already found, as the
    old pane did. The look is not made again while the records are unchanged, so the new
    pane said 'none verified here' until the next pull or verify."""
    (tmp_path / "q.txt").write_text("cells/eta_long.py t 1\n")
    entry = (
        f'[[hosts]]\nname = "{HOST}"\nssh = "root@10.0.0.5:40022"\nprofile = "vastai"\n'
        f'interruptible = true\nqueue = "{tmp_path / "q.txt"}"\nrun = "python {{cfg}} {{out}}"\n'
        'durable_dir = "/workspace/out"\npull = ["/workspace/out"]\n'
    )
    other = '[[hosts]]\nname = "other"\nssh = "root@10.0.0.6:22"\n'
    top = f'[fleet]\nresults_dir = "{tmp_path / "results"}"\n'
    (tmp_path / "hosts.toml").write_text(top + entry + other)
    fleet = load_fleet(tmp_path / "hosts.toml")
    records_of_a_failed_verify(fleet)
    ckpt = {"name": "checkpoint.pt", "mtime": FROZEN - 180, "size": 1 << 20, "writes": []}
    sample = agent_sample(HOST, cell="eta_long", ckpt=ckpt)
    app = make_app(tmp_path, fleet=fleet)
    said = "ckpt 3m ago on box · 41m ago verified here"
    async with app.run_test(size=(110, 50)) as pilot:
        app.post_message(HostUpdated(make_update(HOST, sample)))
        await wait_for(lambda: said in flat(app), pilot=pilot)
        (tmp_path / "hosts.toml").write_text(top + other)
        app.runtime.adopt(load_fleet(tmp_path / "hosts.toml"))
        await wait_for(lambda: len(app.fleet_screen.query(HostPane)) == 1, pilot=pilot)
        assert said not in flat(app)  # its pane is gone
        (tmp_path / "hosts.toml").write_text(top + entry + other)
        app.runtime.adopt(load_fleet(tmp_path / "hosts.toml"))
        await wait_for(lambda: HOST in app.fleet_screen.panes, pilot=pilot)
        app.post_message(HostUpdated(make_update(HOST, sample)))
        await wait_for(lambda: "ckpt 3m ago on box" in flat(app), pilot=pilot)
        assert said in flat(app)


async def test_a_copy_from_another_host_is_looked_at_again_when_that_host_changes(
    tmp_path: Path,
) -> None:
    """Review s45 #8: a cell resumed here from box1's verified copy shows "(from box1's
    copy)"; a verify of box1 since that no longer passes it left that on the pane until
    this host's own records changed. The origin's records are watched too."""
    (tmp_path / "q.txt").write_text("cells/eta_long.py t 1\n")
    common = (
        'profile = "vastai"\ninterruptible = true\nrun = "python {cfg} {out}"\n'
        'durable_dir = "/workspace/out"\npull = ["/workspace/out"]\n'
    )
    (tmp_path / "hosts.toml").write_text(
        f'[fleet]\nresults_dir = "{tmp_path / "results"}"\n'
        f'[[hosts]]\nname = "{HOST}"\nssh = "root@10.0.0.5:40022"\nqueue = "{tmp_path / "q.txt"}"\n'
        + common
        + '[[hosts]]\nname = "box1"\nssh = "root@10.0.0.6:22"\n'
        + common
    )
    fleet = load_fleet(tmp_path / "hosts.toml")
    records_of_a_failed_verify(fleet, "box1")  # box1's copy, verified 41 minutes ago
    here = records_dir(fleet_host_dir(fleet, HOST))
    here.mkdir(parents=True, exist_ok=True)
    atomic_write_json(here / RECORD_FILE, {"eta_long": {"from": "box1"}})  # resumed here
    ckpt = {"name": "checkpoint.pt", "mtime": FROZEN - 180, "size": 1 << 20, "writes": []}
    sample = agent_sample(HOST, cell="eta_long", ckpt=ckpt)
    app = make_app(tmp_path, fleet=fleet)
    async with app.run_test(size=(110, 50)) as pilot:
        app.post_message(HostUpdated(make_update(HOST, sample)))
        said = "41m ago verified here (from box1's copy)"
        await wait_for(lambda: said in flat(app), pilot=pilot)
        # box1 verified again: its copy of the checkpoint no longer loads.
        records_of_a_failed_verify(fleet, "box1", CORRUPT)
        app.post_message(HostUpdated(make_update(HOST, sample)))
        await wait_for(lambda: "none verified here" in flat(app), pilot=pilot)
        assert said not in flat(app)


async def test_r_comes_into_the_footer_when_a_cell_it_can_take_appears(tmp_path: Path) -> None:
    """h461 #4: a kill that went on to the next cell left the footer without R (it was
    refreshed only when a cell started or stopped running), while the tab offered it."""
    now = int(FROZEN)
    launches = parse_runner_state(f"launch {now - 900} {BOOT} tmux 0 /s.sh 42\n")
    cells = (DeployedCell(0, "eta_long", "x"), DeployedCell(1, "next", "y"))

    def shown(attempts: dict) -> QueueView:
        return derive_view(
            HOST, cells, launches, attempts, boot_id=BOOT, now=now, runner_alive=True
        )  # fmt: skip

    first = shown({"eta_long": parse_cell_state(f"start {now - 900} {BOOT} 9\n")})
    killed = f"start {now - 900} {BOOT} 9\nkill {now - 60} user go-on\nend {now - 59} 143\n"
    later = shown(
        {
            "eta_long": parse_cell_state(killed),
            "next": parse_cell_state(f"start {now - 58} {BOOT} 10\n"),
        }
    )
    assert first.current is not None and later.current is not None  # a cell runs in both
    assert not first.retry_pickable and later.retry_pickable
    app = make_app(tmp_path, fleet=fleet_in(tmp_path))
    async with app.run_test(size=(110, 50)) as pilot:
        app.open_host(HOST, tab="queue")
        await wait_for(lambda: app.screen.query(QueueTab), pilot=pilot)
        screen = app.screen

        def footer() -> str:  # the footer's row as drawn (active_bindings is live)
            from rgt_tui.widgets.key_footer import KeyFooter

            return screen_text(app).splitlines()[screen.query_one(KeyFooter).region.y]

        screen.queue_viewed(HOST, first)
        await wait_for(lambda: " X " in footer(), pilot=pilot, show=footer)
        assert " R " not in footer(), footer()
        screen.queue_viewed(HOST, later)
        await wait_for(lambda: " R " in footer(), pilot=pilot, show=footer)
