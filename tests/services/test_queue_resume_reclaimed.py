"""A failed cell's folder reclaimed on the box (s38 disk hour #1): its checkpoint was
pulled and verified, `disk --delete` freed the box of it (the copy here is then the only
one), and `queue move` refused — "box1 holds no file under …: the run wrote none" — and
asked for --from-scratch. The move resumes from the reclaimed copy here, re-hashed, as
from any verified one. Loopback boxes, the real runner, the real reclaim."""

from __future__ import annotations

from support.queues import SCRIPT_RUN, wait_view
from support.unfinished import CHECKPOINT, launch_queue, pull_and_verify

from rgt_tui.domain.queue_state import FAILED
from rgt_tui.services.disk.audit import audit_disk
from rgt_tui.services.disk.reclaim import delete_planned, plan_delete
from rgt_tui.services.queue.resume import plan_resume_move, resume_lines


async def test_a_reclaimed_failed_cell_moves_with_its_checkpoint_from_here(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    body = f"{CHECKPOINT} && exit 3"
    broken = qf.cell_script("broken", body)
    qf.cell_script("broken", body, name="box2")
    qf.write_queue(f"{broken} t\n")
    qf.write_queue("", "box2")
    await launch_queue(qf)
    await wait_view(qf, lambda v: v.cells[0].status == FAILED, what="broken to fail")
    await pull_and_verify(qf)
    out = qf.root() / "results" / "broken"
    results = qf.fleet.results_dir
    transport = qf.transport()
    try:
        audit = await audit_disk(qf.host(), transport, results, cells=("broken",))
        await delete_planned(
            transport, await plan_delete(qf.host(), transport, results, audit, str(out))
        )
    finally:
        await transport.close()
    assert not out.exists()
    await pull_and_verify(qf)  # the pull after a delete, as the delete asks

    t1, t2 = qf.transport(), qf.transport("box2")
    try:
        plan = await plan_resume_move(qf.fleet, qf.host(), "broken", "box2", t1, t2)
    finally:
        await t1.close()
        await t2.close()
    words = "\n".join(resume_lines(plan))
    assert plan.ok, words
    assert plan.checkpoint is not None and plan.checkpoint.rel == "ckpt_epoch3.safetensors"
    assert "the run wrote none" not in words and "--from-scratch" not in words
    assert "ckpt_epoch3.safetensors" in {f.rel for f in plan.files}

    # The copy here changed since: never pushed, and the move says why.
    (results / "box1" / "broken" / "ckpt_epoch3.safetensors").write_bytes(b"rot")
    t1, t2 = qf.transport(), qf.transport("box2")
    try:
        rotten = await plan_resume_move(qf.fleet, qf.host(), "broken", "box2", t1, t2)
    finally:
        await t1.close()
        await t2.close()
    assert rotten.checkpoint is None and not rotten.ok
    said = "\n".join(resume_lines(rotten))
    assert "the copy here changed since it was verified" in said, said
