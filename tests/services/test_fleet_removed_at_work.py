"""A host removed from the fleet file while it is still at work is said loudly (hour s22a
#2: its pane and its $/h left the header with one quiet "removed gpu-b" notice, while its
cell ran and its box billed on, unwatched). Real loopback boxes, the real runner and the
runtime's own queue poll; the words for a host torn down, or never torn down, pure."""

from __future__ import annotations

from support.queues import GATE, SCRIPT_RUN, wait_view
from support.waiting import wait_for

from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.runtime.fleet_file import left_words, renamed_words
from rgt_tui.services.runtime.runtime import FleetRuntime


async def gate_running(qf) -> FleetRuntime:  # type: ignore[no-untyped-def]
    """box1's gate cell launched and running, a runtime started whose queue poll has read
    it running (the caller closes the runtime and opens the gate)."""
    qf.write_queue(f"{qf.cell_script('gate', GATE)} t 1\n", "box1")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="the gate cell to run")
    runtime = FleetRuntime(qf.fleet, FleetConnections(qf.fleet.hosts), queue_poll_s=0.2)
    runtime.start()
    await wait_for(
        lambda: (v := runtime.queues.views.get("box1")) is not None and v.current,
        60,
        "the runtime's poll to read box1's running cell",
    )
    return runtime


async def test_removing_a_host_whose_cell_runs_warns(make_queue_fleet) -> None:
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    qf.write_queue("", "box2")
    runtime = await gate_running(qf)
    try:
        hosts = qf.loopback.hosts_file
        blocks = hosts.read_text().split("[[hosts]]")
        hosts.write_text("[[hosts]]".join(b for b in blocks if 'name = "box1"' not in b))
        changes = runtime.adopt(load_fleet(hosts))
        assert changes.removed == ("box1",)
        assert changes.left == (
            (
                "box1",
                "box1 was removed from the fleet file while its cell gate runs there: "
                "nothing watches or pulls it now, and if its box still runs it still bills — "
                "put its [[hosts]] block back to watch it (then pull, and tear it down "
                "through its gate)",
            ),
        )
    finally:
        (qf.root("box1") / "go").touch()
        await runtime.close()


async def test_renaming_a_host_whose_cell_runs_warns_to_rename_it_back(make_queue_fleet) -> None:
    """s37 fleet hour #1: box1 renamed gpu-a while its cell ran: no warning (the new entry
    shares its account), and then S on gpu-a sent the user to "that entry", box1, which
    no longer existed."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    runtime = await gate_running(qf)
    try:
        hosts = qf.loopback.hosts_file
        # The box's own record of who launched the queue, read with the view (h602 #3).
        assert runtime.queues.views["box1"].owner == "rgt-box1"
        hosts.write_text(hosts.read_text().replace('name = "box1"', 'name = "gpu-a"'))
        changes = runtime.adopt(load_fleet(hosts))
        assert (changes.removed, [h.name for h in changes.added]) == (("box1",), ["gpu-a"])
        ((name, words),) = changes.left
        assert name == "box1" and words.startswith(
            "box1 was renamed gpu-a while its cell gate runs: the queue runs under box1's name "
            "(tmux session rgt-box1), so gpu-a cannot stop, kill or retry it — rename it back"
        ), words
    finally:
        (qf.root("box1") / "go").touch()
        await runtime.close()


def test_a_rename_back_to_the_launching_name_is_no_warning_and_a_third_is_named() -> None:
    """h602 #3: box4 launched, renamed box4x, then back to box4: told "the queue runs under
    box4x's name (tmux session rgt-box4x) … rename it back to box4x" while the box's owner
    record said rgt-box4, the name it had just been given back."""
    assert renamed_words("box4x", "box4", "b4a", owner="rgt-box4") is None
    first = renamed_words("box4", "box4x", "b4a", owner="rgt-box4")
    assert first is not None and "(tmux session rgt-box4)" in first and "back to box4 " in first
    third = renamed_words("box4x", "box4y", "b4a", owner="rgt-box4")
    assert third is not None and "launched by another entry name (tmux session rgt-box4)" in third
    unknown = renamed_words("box4", "box4x", "b4a")  # no record read: the old name's
    assert unknown is not None and "(tmux session rgt-box4)" in unknown


def test_a_host_torn_down_and_idle_goes_quietly() -> None:
    assert left_words("gpu-a", None, torn_down=True) is None
    never = left_words("gpu-a", None, torn_down=False)
    assert never is not None and "while its box is not recorded as torn down" in never
    running = left_words("gpu-a", "b2_long", torn_down=True)
    assert running is not None and "while its cell b2_long runs there" in running


def test_a_group_removed_is_told_only_while_its_job_runs() -> None:
    """s37 fleet hour #8: an idle group's removal said "its box … still bills — put its
    [[hosts]] block back"; a group has no box of its own (its members are hosts)."""
    assert left_words("pair", None, torn_down=False, group=True) is None
    running = left_words("pair", "ddp", torn_down=False, group=True)
    assert running is not None and "[[groups]] block back" in running, running
    assert "the group pair was removed" in running and "bills" not in running


async def test_watch_sends_the_removal_to_the_notify_targets(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Hour s23a #8: watch said it on its console only; an unattended user hears it
    through the notify targets."""
    import asyncio

    from support.replay import ReplayMonitor
    from support.samples import Clock

    from rgt_tui.services.watch.sinks import Sink
    from rgt_tui.services.watch.watcher import Watcher

    block = '[[hosts]]\nname = "{n}"\nssh = "root@10.0.0.{i}:22"\nprofile = "vastai"\n'
    path = tmp_path / "hosts.toml"
    path.write_text(block.format(n="box1", i=1) + block.format(n="box2", i=2))
    fleet = load_fleet(path)
    events: list = []

    class Recorder(Sink):
        def on_event(self, event) -> None:  # type: ignore[no-untyped-def]
            events.append(event)

    clock = Clock()
    monitors = {h.name: ReplayMonitor(h, clock) for h in fleet.hosts}
    watcher = Watcher(
        fleet, sinks=[Recorder()], clock=clock, monitors=monitors, fleet_file_every_s=0.05,
        report=lambda line: None,
    )  # fmt: skip
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(monitors["box2"].started.wait(), 30)
        path.write_text(block.format(n="box1", i=1))
        await wait_for(lambda: any(e.kind == "removed" for e in events), 30, "the removal told")
        (told,) = [e for e in events if e.kind == "removed"]
        assert told.host == "box2" and told.severity == "warning"
        assert "box2 was removed from the fleet file while its box is not recorded" in told.body
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_removing_a_second_entry_of_one_account_warns_of_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Hour s23c #6: the teardown gate's fix for two entries of one box is to remove one;
    doing so warned that the box was left unwatched and might bill, while the other entry
    still watched it."""
    block = '[[hosts]]\nname = "{n}"\nssh = "root@10.0.0.1:22"\nprofile = "vastai"\n'
    path = tmp_path / "hosts.toml"
    path.write_text(block.format(n="box1") + block.format(n="box1b"))
    fleet = load_fleet(path)
    runtime = FleetRuntime(fleet, FleetConnections(fleet.hosts))
    path.write_text(block.format(n="box1"))
    changes = runtime.adopt(load_fleet(path))
    assert changes.removed == ("box1b",) and changes.left == ()
    await runtime.close()
