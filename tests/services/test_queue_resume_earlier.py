"""A resume move from a damaged checkpoint's earlier copy (hour s21a #2): the newest
`checkpoint.pt` was cut short on the box, verify loaded the copy a pull set aside in
`.rgt/replaced/`, and the move pushes that copy under the checkpoint's own name instead
of offering only "from scratch". Real loopback boxes, real torch files, the real loader."""

from __future__ import annotations

import hashlib
import json
import os

import torch
from support.queues import GATE, SCRIPT_RUN, wait_view
from support.resume_cell import plan_move, pull_verify

from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.queue.resume import plan_resume_move, resume_lines, resume_move
from rgt_tui.services.queue.verified_checkpoint import newest_verified
from rgt_tui.services.records import load_verification


async def _ck_running(make_queue_fleet):
    """Two boxes; cell ck runs on box1, held at its gate, and box2 has its script: the
    fleet and ck's {out} on box1, made."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('ck', GATE, name='box1')} t 1\n", "box1")
    qf.write_queue("", "box2")
    (qf.root("box2") / "cells").mkdir(parents=True, exist_ok=True)
    (qf.root("box2") / "cells" / "ck.sh").write_text(GATE + "\n")
    t1 = qf.transport("box1")
    await launch(await plan_launch(qf.fleet, qf.host("box1"), t1), t1)
    await t1.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="ck to run")
    out = qf.root("box1") / "results" / "ck"
    out.mkdir(parents=True, exist_ok=True)
    return qf, out


def _save(out, step: int) -> bytes:
    """What the run writes each step: the checkpoint and a sidecar naming its SHA-256."""
    torch.save({"step": step, "w": torch.full((64, 64), float(step))}, out / "checkpoint.pt")
    data = (out / "checkpoint.pt").read_bytes()
    side = {"step": step, "sha256": hashlib.sha256(data).hexdigest()}
    (out / "checkpoint.json").write_text(json.dumps(side))
    return data


async def test_a_cut_short_checkpoint_resumes_from_its_verified_earlier_copy(make_queue_fleet):
    qf, out = await _ck_running(make_queue_fleet)
    good = _save(out, 3)
    await pull_verify(qf, "box1")

    _save(out, 5)
    os.truncate(out / "checkpoint.pt", len(good) // 2)  # the disk filled mid-save
    side = json.loads((out / "checkpoint.json").read_text())
    data = (out / "checkpoint.pt").read_bytes()
    side["sha256"] = hashlib.sha256(data).hexdigest()  # the run hashed what it wrote
    (out / "checkpoint.json").write_text(json.dumps(side))
    report = await pull_verify(qf, "box1")
    (check,) = [c for c in report.checks if c.path == "ck/checkpoint.pt"]
    assert check.status == "corrupt" and check.earlier is not None
    assert check.earlier[0].startswith(".rgt/replaced/ck/checkpoint.pt.")
    record = load_verification(qf.fleet.results_dir / "box1")
    (kept,) = [c["earlier"] for c in record["checks"] if "earlier" in c]
    assert kept["sha256"] == hashlib.sha256(good).hexdigest()
    # The pane's "verified here" sees it too (no "a move starts it from scratch").
    assert newest_verified(qf.fleet, qf.host("box1"), "ck") is not None
    # A preemption's words name the earlier copy, not one name both resumed from and
    # left out (h502 #7).
    from rgt_tui.domain.preemption import LOST, Preemption, preemption_line
    from rgt_tui.services.runtime.preemption import cell_checkpoints

    ckpt, _ = cell_checkpoints(qf.fleet, qf.host("box1"), "ck")
    assert (
        ckpt is not None
        and ckpt.earlier
        and ckpt.named() == ("the earlier verified copy of checkpoint.pt")
    ), ckpt
    line = preemption_line(Preemption("box1", LOST, 0.0, "s", "ck", checkpoint=ckpt))
    assert "; newer checkpoint.pt (verify found it corrupt) left out (a resume starts from " in (
        line
    ), line

    await qf.loopback.box("box1").stop()  # preempted
    t1, t2 = qf.transport("box1"), qf.transport("box2")
    try:
        planned = await plan_resume_move(qf.fleet, qf.host("box1"), "ck", "box2", t1, t2)
        assert planned.ok, planned.problems
        assert planned.checkpoint is not None and planned.checkpoint.rel == "checkpoint.pt"
        assert planned.checkpoint.local == kept["path"]
        # The sidecar names the damaged newer file: beside the earlier copy it would lie.
        assert [f.rel for f in planned.files] == ["checkpoint.pt"]
        words = "\n".join(resume_lines(planned))
        assert f"checkpoint: your earlier copy of checkpoint.pt, step unknown ({kept['path']}" in (
            words
        ), words
        assert "not pushed: checkpoint.json — written for the newer checkpoint.pt" in words
        assert "not pushed: checkpoint.pt — verify found it corrupt" in words
        await resume_move(planned, qf.fleet, qf.host("box1"), t1, t2)
    finally:
        await t1.close()
        await t2.close()
    pushed = qf.root("box2") / "results" / "ck" / "checkpoint.pt"
    assert pushed.read_bytes() == good  # the step-3 save, whole
    assert torch.load(pushed, weights_only=True)["step"] == 3
    assert not (qf.root("box2") / "results" / "ck" / "checkpoint.json").exists()
    # Nothing of its run on box2 pulled yet: the pane's "verified here" is the copy the
    # move pushed, box1's (s44 note: it read "none verified here").
    here = newest_verified(qf.fleet, qf.host("box2"), "ck")
    assert here is not None and here.from_host == "box1" and here.path == "checkpoint.pt"
    (qf.root("box2") / "go").touch()


def _save_step(out, step: int) -> None:
    """A run that keeps every step: step-N.pt and its sidecar step-N.json."""
    torch.save({"step": step, "w": torch.full((8, 8), float(step))}, out / f"step-{step}.pt")
    data = (out / f"step-{step}.pt").read_bytes()
    side = {"step": step, "sha256": hashlib.sha256(data).hexdigest()}
    (out / f"step-{step}.json").write_text(json.dumps(side))


async def test_the_sidecar_of_a_checkpoint_left_out_is_left_out_too(make_queue_fleet):
    """h523 #2: step-2.pt was cut short, so the move resumes from step-1.pt; its sidecar
    step-2.json was pushed all the same, and a run that resumes from its newest sidecar
    would look for a step-2.pt the target never got."""
    qf, out = await _ck_running(make_queue_fleet)
    _save_step(out, 1)
    _save_step(out, 2)
    os.truncate(out / "step-2.pt", (out / "step-2.pt").stat().st_size // 2)  # the disk filled
    await pull_verify(qf, "box1")
    await qf.loopback.box("box1").stop()  # preempted
    planned = await plan_move(qf)
    assert planned.ok, planned.problems
    assert planned.checkpoint is not None and planned.checkpoint.rel == "step-1.pt"
    assert sorted(f.rel for f in planned.files) == ["step-1.json", "step-1.pt"]
    words = "\n".join(resume_lines(planned))
    assert "not pushed: step-2.json — the sidecar of step-2.pt, which is not pushed" in words


async def test_a_step_folder_with_a_damaged_checkpoint_is_left_out_whole(make_queue_fleet):
    """Review h524 #6: a Hugging Face Trainer keeps checkpoint-N/ folders (weights,
    optimizer, trainer_state). Its newest weights cut short, the move pushed that
    folder's good optimizer and state without them, and resumed from a folder the run
    cannot load. A step folder holding a checkpoint not pushed now goes whole or not at
    all: the move resumes from checkpoint-1/."""
    qf, out = await _ck_running(make_queue_fleet)
    for step in (1, 2):
        folder = out / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        torch.save({"w": torch.full((8, 8), float(step))}, folder / "pytorch_model.bin")
        torch.save({"lr": 0.1 * step}, folder / "optimizer.pt")
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    weights = out / "checkpoint-2" / "pytorch_model.bin"
    os.truncate(weights, weights.stat().st_size // 2)  # the save was cut short
    await pull_verify(qf, "box1")
    await qf.loopback.box("box1").stop()  # preempted
    planned = await plan_move(qf)
    assert planned.ok, planned.problems
    assert planned.checkpoint is not None, "\n".join(resume_lines(planned))
    assert planned.checkpoint.rel.startswith("checkpoint-1/"), "\n".join(resume_lines(planned))
    assert {f.rel.split("/")[0] for f in planned.files} == {"checkpoint-1"}
    words = "\n".join(resume_lines(planned))
    assert (
        "not pushed: checkpoint-2/optimizer.pt — in checkpoint-2/, whose pytorch_model.bin is "
        "not pushed: a checkpoint folder goes whole or not at all"
    ) in words, words
