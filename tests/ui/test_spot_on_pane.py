"""The open TUI acts on spot boxes (issue 40): a named preemption reaches the host's pane
and the notices list (key n); a running cell's pane shows what a preemption would cost
now — its newest checkpoint's age on the box and of the newest one verified here."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pilot import make_app, screen_text, wait_for
from support.samples import FROZEN, agent_sample, make_update

from rgt_tui.controllers.notices import notices_of
from rgt_tui.domain.preemption import LOST, Checkpoint, Preemption
from rgt_tui.messages import HostUpdated
from rgt_tui.services.runtime.events import HostPreempted

pytestmark = pytest.mark.usefixtures("utc")
HOST = "a100-train"


def flat(app) -> str:
    return " ".join(" ".join(row.strip(" │┃║").split()) for row in screen_text(app).splitlines())


async def test_a_running_cell_shows_its_checkpoint_ages(tmp_path: Path) -> None:
    writes = [[FROZEN - 180 - 600 * i, 30.0, 1 << 20] for i in (2, 1, 0)]
    ckpt = {"name": "checkpoint.pt", "mtime": FROZEN - 180, "size": 1 << 20, "writes": writes}
    app = make_app(tmp_path)
    async with app.run_test(size=(100, 50)) as pilot:
        sample = agent_sample(HOST, cell="eta_long", ckpt=ckpt)
        app.post_message(HostUpdated(make_update(HOST, sample)))
        await wait_for(lambda: "ckpt 3m ago on box" in flat(app), pilot=pilot)
        assert "ckpt 3m ago on box · none verified here" in flat(app)
        # The controller's look at the records hands the fleet views the verified one.
        app.fleet_screen.checkpoint_verified(
            HOST, "eta_long", Checkpoint("checkpoint.pt", FROZEN - 41 * 60, 1 << 20)
        )
        await wait_for(lambda: "41m ago verified here" in flat(app), pilot=pilot)
        assert "ckpt 3m ago on box · 41m ago verified here" in flat(app)


async def test_a_named_preemption_reaches_the_pane_and_the_notices(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(100, 50)) as pilot:
        app.post_message(HostUpdated(make_update(HOST, agent_sample(HOST))))
        await wait_for(lambda: HOST in app.latest, pilot=pilot)
        named = Preemption(
            HOST, LOST, FROZEN - 600, "boot/1", "eta_long",
            Checkpoint("checkpoint.pt", FROZEN - 900, 10), 40,
        )  # fmt: skip
        app._route(HostPreempted(app.fleet.host(HOST), named))
        line = "cell eta_long interrupted; last verified step 40, from 11:45"
        await wait_for(lambda: line in flat(app), pilot=pilot)
        await wait_for(lambda: len(notices_of(app)) > 0, pilot=pilot)
        notice = notices_of(app).items()[0]
        assert notice.host == HOST and "preempted at ~11:50" in notice.text


async def test_the_box_checkpoint_is_never_older_than_the_copy_verified_here(
    tmp_path: Path,
) -> None:
    """The agent finds a checkpoint of a new name only at its next walk of the folder; a
    pull in between verified a newer one here, taken from this very box: the box's age is
    that one's, not the older one the agent last found (ux-g #8)."""
    ckpt = {"name": "ckpt_0003.safetensors", "mtime": FROZEN - 44, "size": 1 << 20}
    app = make_app(tmp_path)
    async with app.run_test(size=(100, 50)) as pilot:
        sample = agent_sample(HOST, cell="eta_long", ckpt=ckpt)
        app.post_message(HostUpdated(make_update(HOST, sample)))
        await wait_for(lambda: "ckpt 44s ago on box" in flat(app), pilot=pilot)
        app.fleet_screen.checkpoint_verified(
            HOST, "eta_long", Checkpoint("ckpt_0005.safetensors", FROZEN - 12, 1 << 20)
        )
        await wait_for(lambda: "12s ago verified here" in flat(app), pilot=pilot)
        assert "ckpt 12s ago on box · 12s ago verified here" in flat(app)
