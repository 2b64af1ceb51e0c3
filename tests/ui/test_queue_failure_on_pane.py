"""A cell that cannot start says why on its pane: the failed cell's last printed line
sits under the queue line and wraps (the summary line is cut to the pane's width)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pilot import make_app, screen_text, wait_for
from support.samples import healthy_update

from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_state,
    parse_cells_tsv,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import derive_view
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.queue_keys import QueueViewed

pytestmark = pytest.mark.usefixtures("utc")
BOOT = "11111111-aaaa-bbbb-cccc-000000000001"
REASON = "ModuleNotFoundError: No module named 'torch'"


async def test_the_pane_shows_why_a_cell_failed(tmp_path: Path) -> None:
    names = ["a100-train_lr3e-4", "a100-train_wide"]
    deployed = parse_cells_tsv("".join(cells_tsv_line(i, n, "x") for i, n in enumerate(names)))
    launches = parse_runner_state(f"launch 1000 {BOOT} tmux 0 /s.sh 42\ndone 1002 0 2\n")
    attempts = {
        n: parse_cell_state(f"start {1000 + i} {BOOT} 9\nend {1001 + i} 1\n")
        for i, n in enumerate(names)
    }
    view = derive_view(
        "a100-train", deployed, launches, attempts, boot_id=BOOT, now=1100,
        runner_alive=False, reasons=dict.fromkeys(names, REASON),
    )  # fmt: skip
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 40)) as pilot:
        app.post_message(HostUpdated(healthy_update()))
        await wait_for(lambda: "a100-train" in app.latest, pilot=pilot)
        app.post_message(QueueViewed("a100-train", view))
        await wait_for(lambda: "2 failed" in screen_text(app), pilot=pilot)
        text = screen_text(app)
    assert "queue 0/2 done · 2 failed" in text
    # The reason is whole, over as many rows as it takes at this width.
    flat = " ".join(" ".join(row.strip(" │┃║").split()) for row in text.splitlines())
    assert f"✖ a100-train_wide: {REASON}" in flat, text
