"""A cell preempted twice (s38 spot hour #1): box1's run is pulled and verified, box1 is
preempted, and the cell resumes on box2 from that verified step. box2 is preempted too
before anything of its run is pulled. The move on to box3 offered only a start from
scratch, though the checkpoint box2 had resumed from lay verified here, in box1's copy.
It now resumes from it, says where it comes from, and box3's run loads that step.
Loopback boxes, the real runner, real files."""

from __future__ import annotations

import json

from support.machine import kill_processes_under
from support.queues import SCRIPT_RUN, wait_view
from support.resume_cell import cell_log, give_cell, loaded_steps, pull_verify, run_until_held
from support.waiting import wait_for

from rgt_tui.domain.preemption import LOST, Preemption, preemption_line
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.services.queue.resume import plan_resume_move, resume_lines, resume_move
from rgt_tui.services.runtime.preemption import cell_checkpoints


async def preempt(qf, name: str) -> None:
    await qf.loopback.box(name).stop()
    kill_processes_under(qf.root(name))


async def plan_and_move(qf, source: str, dest: str, *, apply: bool = True):  # type: ignore[no-untyped-def]
    t1, t2 = qf.transport(source), qf.transport(dest)
    try:
        plan = await plan_resume_move(qf.fleet, qf.host(source), "ck", dest, t1, t2)
        if apply:
            assert plan.ok, plan.problems
            await resume_move(plan, qf.fleet, qf.host(source), t1, t2)
        return plan
    finally:
        await t1.close()
        await t2.close()


async def test_a_cell_preempted_again_resumes_from_the_checkpoint_it_resumed_from(
    make_queue_fleet,
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    await run_until_held(qf)
    give_cell(qf, "box3")
    qf.write_queue("", "box3")
    await pull_verify(qf, "box1")
    step = json.loads((qf.fleet.results_dir / "box1" / "ck" / "checkpoint.json").read_text())[
        "step"
    ]
    await preempt(qf, "box1")
    (qf.root("box2") / "hold").touch()  # box2's run loads the step, then holds
    await plan_and_move(qf, "box1", "box2")
    await wait_for((qf.root("box2") / "held").exists, 60, "ck to run on box2")
    assert loaded_steps(cell_log(qf, "box2")) == [step]
    await preempt(qf, "box2")  # nothing of box2's run was pulled

    again = await plan_and_move(qf, "box2", "box3", apply=False)
    words = "\n".join(resume_lines(again))
    assert again.ok, words
    assert again.checkpoint is not None and again.files_from == "box1", words
    assert again.step == step
    assert sorted(f.rel for f in again.files) == ["checkpoint.bin", "checkpoint.json"]
    assert "pulled and verified here (from box1, where it ran before)" in words, words
    assert (
        "nothing of ck's run on box2 is pulled and verified here: it resumes from the "
        "checkpoint its move to box2 started from, pulled and verified from box1"
    ) in words
    # The preemption notice says the same, not "a move starts it from scratch".
    found, _ = cell_checkpoints(qf.fleet, qf.host("box2"), "ck")
    assert found is not None and found.from_host == "box1"
    line = preemption_line(Preemption("box2", LOST, 0.0, None, "ck", checkpoint=found, step=step))
    assert f"last verified step {step}" in line and "its run on box1" in line, line

    await plan_and_move(qf, "box2", "box3")
    await wait_view(qf, lambda v: v.state == FINISHED, name="box3", what="box3's run")
    assert loaded_steps(cell_log(qf, "box3")) == [step]
    assert "done at step 6" in cell_log(qf, "box3")


async def test_a_cell_moved_from_scratch_is_not_resumed_from_the_checkpoint_declined(
    make_queue_fleet,
) -> None:  # type: ignore[no-untyped-def]
    """The review of s38: the walk back followed any '#moved-to' line, so a cell the user
    moved from scratch on purpose, preempted again, resumed from the checkpoint declined.
    Only a resume move that pushed one leaves a base (its record beside the results)."""
    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    await run_until_held(qf)
    give_cell(qf, "box3")
    qf.write_queue("", "box3")
    await pull_verify(qf, "box1")
    await preempt(qf, "box1")
    (qf.root("box2") / "hold").touch()
    t1, t2 = qf.transport("box1"), qf.transport("box2")
    try:
        scratch = await plan_resume_move(
            qf.fleet, qf.host("box1"), "ck", "box2", t1, t2, from_scratch=True
        )
        assert scratch.ok, scratch.problems
        await resume_move(scratch, qf.fleet, qf.host("box1"), t1, t2)
    finally:
        await t1.close()
        await t2.close()
    await wait_for((qf.root("box2") / "held").exists, 60, "ck to run on box2")
    assert loaded_steps(cell_log(qf, "box2")) == []  # a fresh start, as asked
    await preempt(qf, "box2")
    again = await plan_and_move(qf, "box2", "box3", apply=False)
    assert not again.ok and again.checkpoint is None and again.files_from == ""
    assert "--from-scratch" in "\n".join(resume_lines(again))


async def test_a_damaged_copy_of_the_later_run_resumes_from_the_verified_base_it_started_from(
    make_queue_fleet,
) -> None:  # type: ignore[no-untyped-def]
    """h614 #5: box2's run was pulled and verified, then its copy here damaged; the move
    on refused with only --from-scratch, throwing away the verified step box2 had resumed
    from (box1's), which the preemption notice itself named. It resumes from that base,
    saying why, as the notice does; a copy one verify away still asks for the verify."""
    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    await run_until_held(qf)
    give_cell(qf, "box3")
    qf.write_queue("", "box3")
    await pull_verify(qf, "box1")
    step = json.loads((qf.fleet.results_dir / "box1" / "ck" / "checkpoint.json").read_text())[
        "step"
    ]
    await preempt(qf, "box1")
    (qf.root("box2") / "hold").touch()
    await plan_and_move(qf, "box1", "box2")
    await wait_for((qf.root("box2") / "held").exists, 60, "ck to run on box2")
    await pull_verify(qf, "box2")
    copy = qf.fleet.results_dir / "box2" / "ck" / "checkpoint.bin"
    data = bytearray(copy.read_bytes())
    data[:4] = b"XXXX"
    copy.write_bytes(bytes(data))  # damaged here after its verify
    await preempt(qf, "box2")

    found, _ = cell_checkpoints(qf.fleet, qf.host("box2"), "ck")
    assert found is not None and found.from_host == "box1"  # what the notice names
    again = await plan_and_move(qf, "box2", "box3", apply=False)
    words = "\n".join(resume_lines(again))
    assert again.ok, words
    assert again.files_from == "box1" and again.step == step, words
    assert "ck's checkpoints of its run on box2 are damaged here (checkpoint.bin:" in words, words
    assert "it resumes from the checkpoint its move to box2 started from" in words, words
