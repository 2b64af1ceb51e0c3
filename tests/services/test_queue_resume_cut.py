"""A resume move whose push is cut off (h573 #1): the target stops answering while the
verified checkpoint goes to it. Its staging folder could not be removed over the dropped
connection; a pull of the target then brought its part files home, verify failed on
them and the teardown gate stayed locked with a fix that did not help. The failure now
says where the partial copy stays, pulls skip it as rgt-tui's own, and a move there a
day on removes it (not sooner: another move may be staging there now). Loopback boxes, the real runner, real files."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from support.machine import kill_processes_under
from support.pulls import fast
from support.queues import SCRIPT_RUN
from support.resume_cell import plan_move, pull_verify, run_until_held

from rgt_tui.services.pull import pull_host
from rgt_tui.services.queue.move import MoveError
from rgt_tui.services.queue.resume import resume_move


async def test_a_push_cut_off_leaves_nothing_that_a_pull_brings_home_or_a_move_keeps(
    make_queue_fleet,
):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    await run_until_held(qf)
    await pull_verify(qf, "box1")
    await qf.loopback.box("box1").stop()  # preempted: gone, its processes too
    kill_processes_under(qf.root("box1"))
    planned = await plan_move(qf)
    assert planned.ok, planned.problems
    durable = qf.root("box2") / "results"
    stopping: list[asyncio.Task[None]] = []

    def cut(n: int) -> None:  # the first bytes are on box2: it stops answering now
        if not stopping:
            stopping.append(asyncio.get_running_loop().create_task(qf.loopback.box("box2").stop()))

    t1, t2 = qf.transport("box1"), qf.transport("box2")
    try:
        with pytest.raises(MoveError) as failed:
            await resume_move(planned, qf.fleet, qf.host("box1"), t1, t2, on_bytes=cut)
    finally:
        await t1.close()
        await t2.close()
    await stopping[0]
    said = str(failed.value)
    (left,) = durable.glob(".rgt-resume.*")  # the scenario: a partial copy stays there
    assert "nothing was moved" in said, said
    assert f"its partial copy may stay in box2:{durable}/{left.name}" in said, said
    assert "a move there a day on removes it" in said

    await qf.loopback.box("box2").start()
    transport = qf.transport("box2")
    try:
        pulled = await pull_host(qf.host("box2"), qf.fleet.results_dir, transport, options=fast())
    finally:
        await transport.close()
    here = qf.fleet.results_dir / "box2"
    assert not [p for p in here.rglob("*") if ".rgt-resume." in str(p)]
    (skipped,) = pulled.manifest.refused  # said as left on the box on purpose, not a fault
    assert skipped.reason == "skipped by rule: rgt-tui's own state (.rgt-resume.*)"

    # A day on, the leftover goes with the next move's stage; another move's staging in
    # progress (a second spot box's, onto the same spare: review h574 #3) stays.
    day_ago = time.time() - 25 * 3600
    os.utime(left, (day_ago, day_ago))
    other = durable / ".rgt-resume.0123456789ab"
    other.mkdir()
    again = await plan_move(qf)
    assert again.ok, again.problems
    t1, t2 = qf.transport("box1"), qf.transport("box2")
    try:
        await resume_move(again, qf.fleet, qf.host("box1"), t1, t2)
    finally:
        await t1.close()
        await t2.close()
    assert list(durable.glob(".rgt-resume.*")) == [other]  # the day-old one went
    assert (durable / "ck" / "checkpoint.bin").is_file()
