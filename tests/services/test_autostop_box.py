"""The opt-in autostop over a real loopback box with a real queue, pull, verify, journal
and a real stop command (a script that records each run): it runs exactly once, only
when the queue is done, every result is pulled and verified at that moment (box re-scan
and local re-hash, as the teardown gate does), and the GPUs idled long enough; never on
a profile without a reversible stop, with a destroy-looking command, during a teardown,
or twice across restarts. The clock is the test's; the box, its files and the command
are real.

Over 450 lines on purpose: one real box and queue fixture serves every case of the
autostop's rule; split, each file would build it again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from pathlib import Path

from support.pulls import fast
from support.queues import GATE, SCRIPT_RUN, QueueFleet, wait_view
from support.samples import agent_sample, gpu
from support.waiting import wait_for

from rgt_tui.domain.config import HostConfig, HostWatch
from rgt_tui.domain.queue_state import FINISHED, RUNNING, QueueView
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.domain.teardown_gate import ConfirmationTyped
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.pull import pull_host
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.view import read_queue_view
from rgt_tui.services.runtime.locks import HostLocks
from rgt_tui.services.teardown import check_gate, confirm_and_tear_down, observe_now
from rgt_tui.services.verify.run import verify_host
from rgt_tui.services.watch.drivers.autostop import AUTOSTOP, AutoStop
from rgt_tui.services.watch.drivers.periodic_pull import BUSY_RETRY_S, PERIODIC, PullScheduler
from rgt_tui.services.watch.events import HostState, WatchEvent

RESULT = 'mkdir -p "$2" && echo \'{"acc": 0.9}\' > "$2/metrics.json"'
STEP_MIN = 4  # minutes between samples: under the idle clock's 5-minute gap


class Clock:
    """The test's clock: starts now, moves only when told."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t

    def advance(self, minutes: float) -> None:
        self.t += minutes * 60


class Box:
    """One loopback box whose queue ran (or runs), a stop script, the journal, a clock."""

    def __init__(
        self, qf: QueueFleet, tmp: Path, *, fails: bool = False, waits: bool = False
    ) -> None:
        self.qf = qf
        self.clock = Clock()
        self.journal = Journal(tmp / "journal")
        self.locks = HostLocks()  # the runtime's one, in watch and in the TUI
        self.ran = tmp / "stop-ran"  # one line per run of the stop command
        # waits: the command says it started, then holds until the test touches stop-go.
        self.started, self.go = tmp / "stop-started", tmp / "stop-go"
        hold = f"touch {self.started}; while [ ! -e {self.go} ]; do sleep 0.05; done\n"
        script = tmp / "provider-stop.sh"
        said = 'echo "no such instance: $1"; exit 3' if fails else 'echo "instance $1 stopping"'
        script.write_text(f'{hold if waits else ""}echo "stopped $1" >> {self.ran}\n{said}\n')
        self.fleet = load_fleet(qf.loopback.hosts_file)
        base = self.fleet.host("box1")
        self.host = dataclasses.replace(
            base,
            profile="vastai",
            teardown="vastai destroy instance 1234567",
            watch=HostWatch(stop=f"sh {script} 1234567", autostop_minutes=30),
        )
        self.fleet = dataclasses.replace(self.fleet, hosts=(self.host,))
        self.connections = FleetConnections(self.fleet.hosts)
        self.events: list[WatchEvent] = []

    def runs(self) -> int:
        return len(self.ran.read_text().splitlines()) if self.ran.exists() else 0

    def autostop(self, fleet_mistake=lambda: "") -> AutoStop:  # type: ignore[no-untyped-def]
        """A fresh AutoStop on the same journal: what a restart of watch makes."""
        return AutoStop(
            self.fleet,
            self.connections,
            emit=self.events.append,
            locks=self.locks,
            clock=self.clock,
            journal=self.journal,
            fleet_mistake=fleet_mistake,
        )

    async def view(self) -> QueueView:
        return await read_queue_view(self.host, self.connections.transport("box1"))

    async def state(self, util: float = 0.0) -> HostState:
        """A sample of the box now: its real queue view, its GPU at ``util`` %."""
        now = self.clock()
        sample = agent_sample("box1", t=now, gpus=[gpu(0, util, 210, 1, 40)])
        return HostState(
            snapshot_from_agent("box1", sample),
            (),
            "connected",
            None,
            await self.view(),
            1.5,
            3.0,
            now,
        )

    async def sample(
        self, auto: AutoStop, minutes: float, *, host: HostConfig | None = None
    ) -> None:
        """Samples every STEP_MIN minutes for ``minutes``, the GPU idle."""
        for _ in range(int(minutes // STEP_MIN)):
            self.clock.advance(STEP_MIN)
            await auto.on_host(host or self.host, await self.state())

    async def pull_and_verify(self) -> None:
        t = self.connections.transport("box1")
        pulled = await pull_host(self.host, self.fleet.results_dir, t, options=fast())
        assert pulled.ok, pulled.failed
        report = await verify_host(self.host, self.fleet.results_dir, transport=t)
        assert report.ok, report.problems

    def local_metrics(self, cell: str = "first") -> Path:
        return next((self.fleet.results_dir / "box1").rglob(f"{cell}/metrics.json"))


async def _box(
    make_queue_fleet, tmp_path: Path, *, gated: bool = False, fails: bool = False, waits=False
) -> Box:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    first = qf.cell_script("first", RESULT)
    second = qf.cell_script("second", RESULT + ("; " + GATE if gated else ""))
    qf.write_queue(f"{first} train 1\n{second} train 1\n")
    transport = qf.transport()
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport, preflight=False)
        assert plan.ok, plan.problems
        await launch(plan, transport)
    finally:
        await transport.close()
    if gated:
        await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="cell second to run")
    else:
        await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    return Box(qf, tmp_path, fails=fails, waits=waits)


async def test_the_stop_runs_once_when_every_condition_holds_across_restarts(
    make_queue_fleet, tmp_path
):
    box = await _box(make_queue_fleet, tmp_path)
    await box.pull_and_verify()
    first = box.autostop()
    await first.on_host(box.host, await box.state())  # the idle clock starts
    await box.sample(first, 20)
    assert box.runs() == 0 and box.events == []  # 20 of 30 minutes: nothing, no event
    assert "GPUs idle 20m" in first.reasons["box1"], first.reasons

    # watch restarts: the idle clock is kept beside the journal and goes on, so the
    # stop runs 30 minutes after the GPUs went idle, 12 minutes into the new process.
    second = box.autostop()
    # Its first look has no sample yet (and a reconnect has none either): that says
    # nothing of the GPUs and leaves the clock (hour s23a #2: it restarted it at 0s).
    unsampled = dataclasses.replace(await box.state(), snapshot=None)
    await second.on_host(box.host, unsampled)
    assert "its first sample has not come yet" in second.reasons["box1"], second.reasons
    await second.on_host(box.host, dataclasses.replace(unsampled, connection="reconnecting"))
    await box.sample(second, 3 * STEP_MIN)
    assert box.runs() == 1, second.reasons
    assert box.ran.read_text() == "stopped 1234567\n"
    [event] = box.events
    view = await box.view()
    assert view.launch is not None
    assert (event.kind, event.host, event.key) == (
        "stopped",
        "box1",
        f"stopped:box1:{view.launch.ts}",
    )
    assert event.severity == "info" and "stopped" in event.title
    body = event.body
    assert "exit 0" in body and "2 done, 0 failed of 2" in body
    assert "pulled: 2/2 hash-verified" in body and "every SHA-256 matches" in body
    assert "GPUs under 5 % for 32m" in body and "autostop_minutes = 30" in body
    # What still bills after a vast.ai stop, from its profile.
    assert "a stopped instance's disk (even at negative balance)" in body
    assert "bandwidth, in every state" in body
    assert "1234567" not in body  # the command's arguments are not repeated in a message

    # More samples, and another restart: never a second run for this queue. The stop
    # here stops nothing (the loopback box goes on answering): past the providers'
    # settle time that is told, critical, once per stop (hour s18a #1: a stale instance
    # id, "stopped" said, and the box billed on unnoticed).
    await box.sample(second, STEP_MIN)  # within STOP_SETTLE_S: still going down
    assert len(box.events) == 1
    await box.sample(second, 40)
    assert box.runs() == 1 and [e.kind for e in box.events] == ["stopped", "still_answers"]
    told = box.events[1]
    assert told.severity == "critical" and "STILL ANSWERS" in told.title, told
    assert "exited 0" in told.body and "instance id" in told.body and "1234567" not in told.body
    await box.sample(box.autostop(), 40)  # a restart: the same key, which the sent log holds
    assert box.runs() == 1
    assert {e.key for e in box.events[1:]} == {told.key}
    await box.connections.close_all()


async def test_idle_counts_from_the_queues_end_whatever_an_earlier_watch_kept(
    make_queue_fleet, tmp_path
):
    """A restarted watch's idle clock, kept from before, covered a queue that ran while
    no watch looked: the box was stopped 34 s after its last cell, the notice saying
    "GPUs under 5 % for 16m38s" (h535 #3). Idle counts from the queue's end at most."""
    from rgt_tui.domain.autostop import IdleClock

    box = await _box(make_queue_fleet, tmp_path)
    await box.pull_and_verify()
    auto = box.autostop()
    # What a watch that ended before this queue ran left: idle for 40 minutes then.
    auto._save_idle("box1", IdleClock(box.clock() - 40 * 60, box.clock() - 60))
    await auto.on_host(box.host, await box.state())
    assert box.runs() == 0, auto.reasons
    assert "GPUs idle" in auto.reasons["box1"] and "of 30 min" in auto.reasons["box1"]
    await box.sample(auto, 28)
    assert box.runs() == 0, auto.reasons
    await box.sample(auto, STEP_MIN)
    assert box.runs() == 1, auto.reasons
    await box.connections.close_all()


async def test_no_stop_while_the_fleet_file_is_not_applied(make_queue_fleet, tmp_path):
    """h491 #1's stop: a `stop` edited to a new instance id beside a typo would run the
    last good file's command, maybe stopping another box of the user's now at work."""
    box = await _box(make_queue_fleet, tmp_path)
    await box.pull_and_verify()
    mistake = ["hosts.toml:9: cost_per_hr: unknown key"]
    auto = box.autostop(fleet_mistake=lambda: mistake[0])
    await auto.on_host(box.host, await box.state())
    await box.sample(auto, 40)
    assert box.runs() == 0
    assert auto.reasons["box1"] == (
        "the stop runs the fleet file's command, and the file has a mistake (hosts.toml:9: "
        "cost_per_hr: unknown key): the command in force is the last good file's — it waits "
        "until the file is applied"
    )
    # Told once, not on the console alone, which nobody reads under systemd (h532 #2).
    (told,) = box.events
    assert told.kind == "autostop_waits" and told.severity == "warning", told
    assert told.title == "box1: autostop waits — the fleet file is not applied"
    assert "cost_per_hr" in told.body and "goes on billing" in told.body
    mistake[0] = ""  # fixed and applied: watch reloads the file
    auto.reload(box.fleet)
    await box.sample(auto, STEP_MIN)
    assert box.runs() == 1
    assert [e.kind for e in box.events] == ["autostop_waits", "stopped"]
    await box.connections.close_all()


async def _held_box(make_queue_fleet, tmp_path: Path, held) -> Box:  # type: ignore[no-untyped-def]
    """A finished, pulled and verified box whose GPU (a recorded H100's nvidia-smi) ``held``
    holds: a real process with device-named files open (support.vram_box)."""
    from support.vram_box import vram_smi

    box = await _box(make_queue_fleet, tmp_path)
    served = box.qf.loopback.box("box1")
    served.extra_path.append(vram_smi(tmp_path / "smi", held.pid).parent)
    served.extra_env["RGT_NVIDIA_DEV_PREFIX"] = held.prefix
    await box.pull_and_verify()
    return box


async def test_no_stop_while_a_process_outside_the_queue_holds_the_gpus(make_queue_fleet, tmp_path):
    """A user's evaluation run, started by hand, idled the GPUs while it loaded: autostop
    stopped the box under it (h532 #1). The gate's note is a wait here, told once; the
    stop runs once the process let go."""
    from support.vram_box import HeldDevices

    held = HeldDevices(tmp_path / "dev")
    try:
        box = await _held_box(make_queue_fleet, tmp_path, held)
        auto = box.autostop()
        await auto.on_host(box.host, await box.state())
        await box.sample(auto, 40)
        assert box.runs() == 0
        (told,) = box.events
        assert told.kind == "autostop_waits" and told.severity == "warning", told
        assert told.title == "box1: autostop waits — a process outside the queue holds the GPUs"
        assert f"a process here uses the GPUs: pid {held.pid} " in told.body, told.body
        assert "autostop does not stop a box while it runs" in auto.reasons["box1"]
        held.let_go()
        await wait_for(lambda: not held.holds(), 10, "the holder to let go")
        await box.sample(auto, 8)  # past the gate's recheck (5 min)
        assert box.runs() == 1
        assert [e.kind for e in box.events] == ["autostop_waits", "stopped"]
    finally:
        held.stop()
    await box.connections.close_all()


async def test_a_cells_leftover_on_the_gpus_holds_no_stop(make_queue_fleet, tmp_path, monkeypatch):
    """A crashed cell's orphan worker holding GPU memory is no run of the user's: the
    stop is what ends it. Waiting for it kept a box billing all night (review h534 #5);
    only a holder no cell left behind makes autostop wait."""
    from support.vram_box import HeldDevices

    monkeypatch.setenv("RGT_CELL_NAME", "first")  # what run_one.sh exports to a cell
    held = HeldDevices(tmp_path / "dev")
    monkeypatch.delenv("RGT_CELL_NAME")
    try:
        box = await _held_box(make_queue_fleet, tmp_path, held)
        report = await check_gate(
            box.fleet, box.host, box.connections.transport("box1"), box.journal
        )
        assert any("left behind by cell first" in p for p in report.problems), report.problems
        assert report.hand_run == ""
        auto = box.autostop()
        await auto.on_host(box.host, await box.state())
        await box.sample(auto, 36)
        assert box.runs() == 1, auto.reasons
        assert [e.kind for e in box.events][:1] == ["stopped"], box.events  # no wait told
    finally:
        held.stop()
    await box.connections.close_all()


async def test_a_stopped_box_started_again_is_not_told_as_a_stop_that_stopped_nothing(
    make_queue_fleet, tmp_path
):
    """Hour s23a #4: the box went down after the stop and the user started it again the
    next morning; "STILL ANSWERS … may still be billing" (critical) came for it."""
    box = await _box(make_queue_fleet, tmp_path)
    await box.pull_and_verify()
    auto = box.autostop()
    await auto.on_host(box.host, await box.state())
    await box.sample(auto, 32)
    assert box.runs() == 1 and [e.kind for e in box.events] == ["stopped"]
    down = dataclasses.replace(await box.state(), snapshot=None, connection="lost")
    for _ in range(3):  # down for minutes: it stopped
        box.clock.advance(STEP_MIN)
        await auto.on_host(box.host, dataclasses.replace(down, now=box.clock()))
    await box.sample(auto, 40)  # started again, answering
    assert [e.kind for e in box.events] == ["stopped"], box.events
    # And after a restart of watch: that it went down is kept (h532 #3: the restarted
    # watch told "STILL ANSWERS … may still be billing" of the box started again).
    await box.sample(box.autostop(), 40)
    assert [e.kind for e in box.events] == ["stopped"], box.events
    await box.connections.close_all()


async def test_no_stop_while_a_cell_runs_nor_with_results_unpulled_or_changed(
    make_queue_fleet, tmp_path
):
    box = await _box(make_queue_fleet, tmp_path, gated=True, fails=True)
    auto = box.autostop()
    await auto.on_host(box.host, await box.state())
    await box.sample(auto, 40)  # idle GPUs (a data-bound phase, say) while cell second runs
    assert box.runs() == 0 and "the queue is running" in auto.reasons["box1"], auto.reasons

    (box.qf.root() / "go").touch()
    await wait_view(box.qf, lambda v: v.state == FINISHED, what="the queue to finish")
    await box.sample(auto, STEP_MIN)  # finished, idle long enough, nothing pulled
    assert box.runs() == 0 and "pulled" in auto.reasons["box1"], auto.reasons
    # With the first locked line's fix and when it is looked at again (hour s20b #8).
    assert "— fix: run `rgt-tui pull box1`" in auto.reasons["box1"], auto.reasons
    assert re.search(
        r"; checked again at \d\d:\d\d, or once a pull or verify of it ends, a cell is accepted, "
        r"or its queue "
        r"file changes \(a move\)$",
        auto.reasons["box1"],
    ), auto.reasons

    await box.pull_and_verify()
    # A file the run wrote after the pull: the gate's re-scan of the box catches it. That
    # re-scan comes at the next sample, within the 5 minutes a refusal waits: the pull
    # and verify changed what the gate reads (s36 watch #8: it waited them out).
    late = box.qf.root() / "results" / "second" / "late.json"
    late.write_text('{"late": true}\n')
    await box.sample(auto, STEP_MIN)
    assert box.runs() == 0 and "late.json" in auto.reasons["box1"], auto.reasons

    await box.pull_and_verify()
    # The local copy changed in place after the pull: the re-hash catches it.
    local = box.local_metrics()
    good = local.read_bytes()
    local.write_bytes(good.replace(b"0.9", b"0.1"))
    await box.sample(auto, 2 * STEP_MIN)
    assert box.runs() == 0 and "CHANGED" in auto.reasons["box1"], auto.reasons

    local.write_bytes(good)  # the copy is the pulled one again: every condition holds
    await box.sample(auto, 2 * STEP_MIN)
    assert box.runs() == 1 and [e.kind for e in box.events] == ["stopped"]
    # This provider's stop failed: said loudly, once, and never run again by itself.
    [event] = box.events
    assert event.severity == "critical" and "FAILED" in event.title
    assert "exited 3: no such instance: 1234567" in event.body
    assert "stop the box by hand" in event.body
    await box.sample(auto, 40)
    assert box.runs() == 1 and len(box.events) == 1
    # Its waiting line is not "already stopped once", which read as stopped while the box
    # billed in full (an overnight hour, s39 watch #3), nor after a restart of watch.
    for watcher in (auto, box.autostop()):
        await watcher.on_host(box.host, await box.state())
        said = watcher.reasons["box1"]
        assert "FAILED (exit 3): the box still bills in full" in said, said
        assert "already stopped" not in said
    assert box.runs() == 1
    await box.connections.close_all()


async def test_a_refusal_is_looked_at_again_once_the_queue_file_changes(make_queue_fleet, tmp_path):
    """s43 spot hour #5: a cell moved off the host (its queue file rewritten) is what the
    refusal waited for, and the stop waited 5 more minutes all the same."""
    box = await _box(make_queue_fleet, tmp_path)
    await box.pull_and_verify()
    kept = box.qf.queue_file("box1").read_text()
    box.qf.write_queue(kept + f"{box.qf.cell_script('third', RESULT)} train 1\n")  # not run
    auto = box.autostop()
    await auto.on_host(box.host, await box.state())
    await box.sample(auto, 32)
    assert box.runs() == 0 and "third" in auto.reasons["box1"], auto.reasons
    assert "or its queue file changes (a move)" in auto.reasons["box1"]
    box.qf.write_queue(kept)  # its line taken out (a move of a line not sent does that)
    await box.sample(auto, STEP_MIN)  # within the 5 minutes a refusal waits
    assert box.runs() == 1, auto.reasons
    await box.connections.close_all()


async def test_a_refusal_is_looked_at_again_once_a_cell_is_acknowledged(make_queue_fleet, tmp_path):
    """h472 #10: the refusal says to run `teardown --ack-unfinished`; done, the stop
    still waited for the 5-minute re-check (a pull or verify was looked at at once)."""
    from rgt_tui.services.teardown import check_gate
    from rgt_tui.services.teardown.acknowledge import acknowledge

    box, t = await _failed_cell_pulled(make_queue_fleet, tmp_path)
    auto = box.autostop()
    await auto.on_host(box.host, await box.state())
    await box.sample(auto, 32)
    assert box.runs() == 0 and "broken" in auto.reasons["box1"], auto.reasons
    seen = await observe_now(box.host, t, box.journal, clock=box.clock)
    await check_gate(box.fleet, box.host, t, box.journal, clock=box.clock)
    acknowledge(
        box.journal, "box1", unfinished=("broken",), cells=("first", "broken"), box=seen,
        now=box.clock(),
    )  # fmt: skip
    await box.sample(auto, STEP_MIN)  # within the 5 minutes a refusal waits
    assert box.runs() == 1, auto.reasons
    await box.connections.close_all()


async def test_a_confirmation_that_no_longer_holds_holds_no_stop(make_queue_fleet, tmp_path):
    """s44 spot hour #4: a typed confirmation (no teardown command: the user destroys the
    box by hand) held the autostop for good, though a cell appended since voided it."""
    box = await _box(make_queue_fleet, tmp_path)
    box.host = dataclasses.replace(box.host, teardown=None)
    box.fleet = dataclasses.replace(box.fleet, hosts=(box.host,))
    await box.pull_and_verify()
    t = box.connections.transport("box1")
    assert (await check_gate(box.fleet, box.host, t, box.journal)).ready_but_confirmation
    outcome = await confirm_and_tear_down(box.fleet, box.host, box.journal, "box1", t)
    assert outcome.report.unlocked and not outcome.ran
    auto = box.autostop()
    await auto.on_host(box.host, await box.state())
    await box.sample(auto, 32)
    assert "teardown: a typed confirmation opened the teardown gate" in auto.reasons["box1"]
    kept = box.qf.queue_file("box1").read_text()
    box.qf.write_queue(kept + f"{box.qf.cell_script('third', RESULT)} train 1\n")
    await box.sample(auto, 2 * STEP_MIN)
    said = auto.reasons["box1"]
    assert "teardown:" not in said and "third" in said, said  # the gate's own reason now
    await box.connections.close_all()


async def test_refused_without_a_reversible_stop_with_a_destroy_verb_or_during_teardown(
    make_queue_fleet, tmp_path
):
    box = await _box(make_queue_fleet, tmp_path)
    await box.pull_and_verify()
    auto = box.autostop()
    watch = box.host.watch
    refused = {
        "lambda": dataclasses.replace(box.host, profile="lambda"),
        "generic": dataclasses.replace(box.host, profile="generic-ssh"),
        "destroy": dataclasses.replace(
            box.host, watch=dataclasses.replace(watch, stop=f"{watch.stop} --delete")
        ),
        "teardown": dataclasses.replace(
            box.host, watch=dataclasses.replace(watch, stop=box.host.teardown)
        ),
    }
    said = {}
    for why, host in refused.items():
        await box.sample(auto, 40, host=host)
        assert box.runs() == 0, why
        said[why] = _said(auto, host)
    assert "profile lambda (Lambda Cloud) has no reversible stop" in said["lambda"]
    assert "terminate (there is no stop)" in said["lambda"]
    assert "profile generic-ssh" in said["generic"] and "vastai" in said["generic"]
    assert "stop contains 'delete'" in said["destroy"]
    assert "stop is the host's teardown command" in said["teardown"]

    # The host as configured: the GPUs idle 24 minutes, not yet.
    await box.sample(auto, 7 * STEP_MIN)
    assert box.runs() == 0 and "GPUs idle 24m" in auto.reasons["box1"], auto.reasons
    # A teardown confirmation typed now: the teardown may be running; stay away, even
    # once the GPUs have idled long enough.
    # (As the teardown does, the box answering is identified first: the typed name is
    # this box's.)
    await observe_now(box.host, box.connections.transport("box1"), box.journal, clock=box.clock)
    box.journal.record("box1", box.clock(), ConfirmationTyped("box1", "attempt-x"))
    await box.sample(auto, 2 * STEP_MIN)
    assert box.runs() == 0 and "teardown" in auto.reasons["box1"], auto.reasons
    assert box.events == []
    # Past a teardown's time, that confirmation opened nothing (no re-scan was taken
    # for it): every condition holds, and the stop runs — once.
    await box.sample(auto, STEP_MIN)
    assert box.runs() == 1 and len(box.events) == 1, auto.reasons
    await box.connections.close_all()


def _said(auto: AutoStop, host: HostConfig) -> str:
    """What autostop says about ``host`` as configured: the same text at start
    (``refusals``, for a fleet holding it) and on every sample (``reasons``)."""
    assert (
        auto.reasons["box1"]
        == AutoStop(
            dataclasses.replace(auto.fleet, hosts=(host,)),
            auto.connections,
            emit=lambda e: None,
            locks=HostLocks(),
            journal=auto.journal,
        ).refusals["box1"]
    )
    return auto.reasons["box1"]


async def test_a_pull_and_the_stop_of_one_host_never_run_together(make_queue_fleet, tmp_path):
    """One HostLocks (the runtime's, handed to the pulls, the TUI's jobs and the
    autostop): while a pull holds the host the stop waits, saying why, and runs on a
    sample after the pull let go; while the stop's check and command hold the host, a
    periodic pull of it is refused, naming the autostop."""
    box = await _box(make_queue_fleet, tmp_path, waits=True)
    await box.pull_and_verify()
    auto = box.autostop()
    await auto.on_host(box.host, await box.state())  # the idle clock starts
    await box.sample(auto, 7 * STEP_MIN)  # 28 of 30 minutes

    assert box.locks.claim("box1", PERIODIC) is None  # a periodic pull starts now
    await box.sample(auto, 2 * STEP_MIN)  # every other condition holds
    assert box.runs() == 0 and not box.started.exists(), auto.reasons
    assert auto.reasons["box1"] == "the periodic pull of box1 is running: not now"
    box.locks.release("box1", PERIODIC)

    box.clock.advance(STEP_MIN)
    stopping = asyncio.ensure_future(auto.on_host(box.host, await box.state()))
    try:
        await wait_for(box.started.exists, 120, "the stop command to start")
        assert box.locks.holder("box1") == AUTOSTOP
        pulls = PullScheduler(
            box.fleet,
            box.connections,
            emit=box.events.append,
            locks=box.locks,
            journal=lambda: box.journal,
            options=fast(),
        )
        assert await pulls.pull_once(box.host) == BUSY_RETRY_S
        assert pulls.last["box1"] == "not pulled: the autostop of box1 is running"
        # A sample while the stop runs: it runs, not "already stopped once" (s36 #4).
        await auto.on_host(box.host, await box.state())
        assert "runs now (since " in auto.reasons["box1"], auto.reasons
    finally:
        box.go.touch()
        await stopping
    assert box.runs() == 1 and [e.kind for e in box.events] == ["stopped"]
    assert box.locks.holder("box1") is None  # let go once the stop ran
    await box.connections.close_all()


async def test_a_stop_whose_watch_ended_mid_command_is_told_once(make_queue_fleet, tmp_path):
    """Hour s23a #1: watch died while its stop command ran; the claim kept the queue
    from a second stop, its outcome was never recorded, and nothing said so: the box
    could bill on unseen. The next watch tells it, critical, once."""
    box = await _box(make_queue_fleet, tmp_path, waits=True)
    await box.pull_and_verify()
    auto = box.autostop()
    await auto.on_host(box.host, await box.state())
    await box.sample(auto, 7 * STEP_MIN)
    box.clock.advance(STEP_MIN)
    stopping = asyncio.ensure_future(auto.on_host(box.host, await box.state()))
    await wait_for(box.started.exists, 120, "the stop command to start")
    # What a watch ending now leaves behind, for the words it ends with (h532 #4: a
    # SIGTERM mid-stop ended it without one).
    (left,) = auto.stops_running()
    assert left.startswith("box1's stop command (started ") and "is still running" in left
    assert "its outcome is not recorded — check box1 at the provider's console" in left
    stopping.cancel()  # watch ends while its stop runs
    await asyncio.gather(stopping, return_exceptions=True)
    assert [e.kind for e in box.events] == [] and auto.stops_running() == []

    again = box.autostop()  # the next watch, at once: the command's time has not passed
    await again.on_host(box.host, await box.state())
    assert box.events == []  # another watch may be running it now
    # Not "already stopped once", which read like success (hour s23c #4).
    assert "has no outcome yet (another watch may be running it)" in again.reasons["box1"]
    box.clock.advance(auto.timeout_s / 60 + 10)  # minutes: long past the command's time
    await again.on_host(box.host, await box.state())
    await again.on_host(box.host, await box.state())
    [told] = box.events
    assert told.kind == "stop_unknown" and told.severity == "critical"
    # The box answers every sample: known not stopped, not "not known" (h602 #9).
    assert "has no recorded outcome, and the box still answers — it is billing" in told.title
    assert "so it did not stop" in told.body and "provider's console" in told.body
    assert box.runs() == 0  # never run a second time
    assert "has no recorded outcome (its watch ended mid-command)" in again.reasons["box1"]
    box.go.touch()  # a stop command still held there ends
    await box.connections.close_all()


async def test_a_second_watch_follows_the_stop_the_first_runs(make_queue_fleet, tmp_path):
    """Two watches on one fleet (the docs allow it): the one that lost the claim said
    "already stopped once" while the other's command ran, and nothing once that watch
    died mid-command (h535 #2). It now says the stop has no outcome yet, and tells
    stop_unknown once the command's time has passed."""
    box = await _box(make_queue_fleet, tmp_path, waits=True)
    await box.pull_and_verify()
    first, second = box.autostop(), box.autostop()
    first.locks = HostLocks()  # another process: its own locks
    for step in range(8):  # both watch the same samples
        box.clock.advance(STEP_MIN if step else 0)
        for auto in (first, second):
            await auto.on_host(box.host, await box.state())
    box.clock.advance(STEP_MIN)
    stopping = asyncio.ensure_future(second.on_host(box.host, await box.state()))
    await wait_for(box.started.exists, 120, "the stop command to start")
    await first.on_host(box.host, await box.state())  # the other watch looks meanwhile
    said = first.reasons["box1"]
    assert "has no outcome yet (another watch may be running it)" in said, said
    stopping.cancel()  # the watch running it dies mid-command
    await asyncio.gather(stopping, return_exceptions=True)
    box.clock.advance(first.timeout_s / 60 + 10)
    await first.on_host(box.host, await box.state())
    [told] = box.events
    assert told.kind == "stop_unknown" and told.severity == "critical", told
    assert box.runs() == 0  # never run a second time
    box.go.touch()
    await box.connections.close_all()


async def test_watch_once_waits_for_the_stop_it_starts(make_queue_fleet, tmp_path):
    """Hour s23c #1: under `watch --once` (cron) the gate check and the stop ran in a
    background task that the pass cancelled as it closed: no box was ever stopped."""
    from support.replay import ReplayMonitor
    from support.samples import make_update

    from rgt_tui.services.journal import journal_for
    from rgt_tui.services.watch.watcher import Watcher

    box = await _box(make_queue_fleet, tmp_path)
    await box.pull_and_verify()
    earlier = AutoStop(
        box.fleet, box.connections, emit=box.events.append, locks=box.locks,
        clock=box.clock, journal=journal_for(box.fleet),
    )  # fmt: skip
    await earlier.on_host(box.host, await box.state())  # the earlier passes' idle clock
    await box.sample(earlier, 28)
    assert box.runs() == 0
    box.clock.advance(STEP_MIN)
    idle = agent_sample("box1", t=box.clock(), gpus=[gpu(0, 0.0, 210, 1, 40)])
    monitor = ReplayMonitor(box.host, box.clock, updates=[make_update("box1", idle)])
    watcher = Watcher(box.fleet, clock=box.clock, monitors={"box1": monitor})
    told = await watcher.once(timeout=60)
    assert box.runs() == 1, watcher.autostop.reasons if watcher.autostop else None
    assert "stopped" in [e.kind for e in told]
    await box.connections.close_all()


async def test_the_stop_message_names_a_cell_accepted_unfinished(make_queue_fleet, tmp_path):
    """Hour s23a #11: the stopped notification listed "1 failed" and not that the failed
    cell was accepted at the gate, the reason the stop was allowed at all."""
    from rgt_tui.services.teardown import check_gate
    from rgt_tui.services.teardown.acknowledge import acknowledge

    box, t = await _failed_cell_pulled(make_queue_fleet, tmp_path)
    seen = await observe_now(box.host, t, box.journal, clock=box.clock)
    await check_gate(box.fleet, box.host, t, box.journal, clock=box.clock)  # reads the queue
    acknowledge(
        box.journal, "box1", unfinished=("broken",), cells=("first", "broken"), box=seen,
        now=box.clock(),
    )  # fmt: skip
    auto = box.autostop()
    await auto.on_host(box.host, await box.state())
    await box.sample(auto, 32)
    assert box.runs() == 1, auto.reasons
    (stopped,) = box.events
    assert "accepted unfinished at the gate: broken failed" in stopped.body, stopped.body
    await box.connections.close_all()


async def _failed_cell_pulled(make_queue_fleet, tmp_path):  # type: ignore[no-untyped-def]
    """box1's queue of cells first (done) and broken (exit 3), ended, pulled and
    verified: (the Box, its shared transport). The gate waits for broken to be accepted."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    first, broken = qf.cell_script("first", RESULT), qf.cell_script("broken", "exit 3")
    qf.write_queue(f"{first} train 1\n{broken} train 1\n")
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
    finally:
        await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    box = Box(qf, tmp_path)
    t = box.connections.transport("box1")
    await pull_host(box.host, box.fleet.results_dir, t, options=fast())
    await verify_host(box.host, box.fleet.results_dir, transport=t)
    return box, t
