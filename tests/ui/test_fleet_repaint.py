"""The fleet screen's cheap paths draw what the full ones would.

A pane repaints only the rows a sample changed, and the header counts a host's sample by
difference; both must leave the screen exactly as a full repaint and a full count would.
"""

from __future__ import annotations

from pathlib import Path

from support.pilot import SNAPSHOT_SIZE, screen_text, snapshot_app
from support.samples import FROZEN, agent_sample, disk, gpu, make_update, three_updates
from support.waiting import wait_for
from textual.content import Content

from rgt_tui.messages import HostUpdated
from rgt_tui.services.telemetry import ConnectionState
from rgt_tui.widgets.fleet_header import FleetTally, host_counts
from rgt_tui.widgets.host_pane import same_line


def test_same_line_sees_a_change_of_style_alone() -> None:
    assert same_line(Content.styled("97%", "$success"), Content.styled("97%", "$success"))
    assert not same_line(Content.styled("97%", "$success"), Content.styled("97%", "$error"))
    assert not same_line(Content("97%"), Content("98%"))


def add(*counts: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sum(c[i] for c in counts) for i in range(4))


def test_tally_counts_by_difference() -> None:
    healthy, inodes, lost = three_updates()
    tally = FleetTally()
    for update in (healthy, inodes, lost):
        tally.count(update.host, update)
    assert tally.totals == add(host_counts(healthy), host_counts(inodes), host_counts(lost))
    tally.count(lost.host, healthy)  # the lost host answers again
    tally.count(inodes.host, None)  # its telemetry stopped: left out
    assert tally.totals == add(host_counts(healthy), host_counts(healthy))
    assert tally.meter("a", (3.6, FROZEN - 3600, None, ()))
    assert tally.meter("b", (3.6, FROZEN - 3600, FROZEN - 1800, ()))  # torn down half an hour ago
    assert not tally.meter("c", None)  # no price: nothing to change
    assert abs(tally.spent(FROZEN) - 5.4) < 1e-9
    # The screen sums the spend again only when a sample changed a meter (issue 44: a
    # sum over the fleet for every sample grew with the square of the fleet).
    assert not tally.meter("a", (3.6, FROZEN - 3600, None, ()))
    assert tally.meter("a", (3.6, FROZEN - 3600, FROZEN, ()))  # torn down now
    assert abs(tally.spent(FROZEN + 3600) - 5.4) < 1e-9
    # Stopped by watch's autostop for half an hour, then started again: billed nothing then.
    assert tally.meter("a", (3.6, FROZEN - 3600, FROZEN, ((FROZEN - 2700, FROZEN - 900),)))
    assert abs(tally.spent(FROZEN + 3600) - 3.6) < 1e-9


async def test_row_repaints_and_counts_match_a_full_redraw(tmp_path: Path) -> None:
    app = snapshot_app(tmp_path, "textual-dark")
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        for update in three_updates():
            app.post_message(HostUpdated(update))
        await wait_for(lambda: len(app.latest) == 3, pilot=pilot)
        await pilot.pause()
        # New figures on some rows of a100-train (GPU util and VRAM, a disk crossing into
        # the warning colour, cgroup memory), the same on the others.
        changed = agent_sample(
            "a100-train",
            seq=2,
            t=FROZEN + 1,
            gpus=[gpu(0, 41, 1305, 70.5, 66), gpu(1, 95, 1290, 60.2, 68)],
            disks=[disk("/", "/", 40, 12), disk("/workspace", "/workspace", 80, 20)],
        )
        app.post_message(HostUpdated(make_update("a100-train", changed)))
        back = make_update(
            "spot-4090", agent_sample("spot-4090"), ConnectionState("connected", FROZEN)
        )
        app.post_message(HostUpdated(back))
        # h100-eval without GPUs: the reason wraps over two rows, and a disk row under it
        # changes (twice: the first sample changes the pane's shape, the second a row).
        for seq, pct in ((2, 31), (3, 77)):
            no_gpu = agent_sample(
                "h100-eval",
                seq=seq,
                gpus=[],
                gpu_source="none",
                gpu_unavailable_reason="no NVIDIA driver tools (nvidia-smi not found)",
                disks=[disk("/", "/", pct, 9), disk("/workspace", "/workspace", 41, 96)],
            )
            app.post_message(HostUpdated(make_update("h100-eval", no_gpu)))
            await wait_for(lambda s=seq: app.latest["h100-eval"].snapshot.seq == s, pilot=pilot)
            await pilot.pause()
        await wait_for(lambda: app.latest["a100-train"].snapshot.seq == 2, pilot=pilot)
        await wait_for(
            lambda: app.latest["spot-4090"].connection.status == "connected", pilot=pilot
        )
        await pilot.pause()
        drawn, text = app.export_screenshot(), screen_text(app)
        assert " 41%" in text and " 77%" in text and "3 up" in text
        assert "│ not found)" in text  # the no-GPU reason, wrapped onto a second row

        header = screen_text(app).splitlines()[0]
        await pilot.pause(1.3)  # the screen's once-a-second tick counts every host afresh
        assert screen_text(app).splitlines()[0] == header
        for pane in app.fleet_screen.panes.values():
            pane.refresh()  # every row of every pane, drawn again from scratch
        await pilot.pause()
        assert screen_text(app) == text
        assert app.export_screenshot() == drawn
