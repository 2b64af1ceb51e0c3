"""The retry's words for a checkpoint the last verify here did not pass (hour s23b #6): the
dialog and `queue retry` said "To resume from it instead: relaunch from this cell" for
a file that does not load. They now name the verify's verdict and the newest checkpoint
of the cell that did pass, and a resume says it would load the broken file. Real
loopback box, real torch files, the real loader."""

from __future__ import annotations

import dataclasses
import os

import torch
from support.queues import SCRIPT_RUN, wait_view
from support.resume_cell import pull_verify

from rgt_tui.domain.queue_state import FAILED
from rgt_tui.services.disk.out_checkpoints import checkpoint_notes, with_checkpoints
from rgt_tui.services.queue.control import plan_retry
from rgt_tui.services.queue.launch import launch, plan_launch


async def test_a_checkpoint_that_failed_verify_is_named_so_with_the_verified_one(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    # The run wrote two checkpoints and then died; the newer one was cut short.
    out = qf.root() / "results" / "ck"
    out.mkdir(parents=True)
    torch.save({"step": 1, "w": torch.ones(32, 32)}, out / "ck_1.pt")
    torch.save({"step": 2, "w": torch.ones(32, 32)}, out / "ck_2.pt")
    os.truncate(out / "ck_2.pt", (out / "ck_2.pt").stat().st_size // 2)
    os.utime(out / "ck_1.pt", (1_700_000_000, 1_700_000_000))
    os.utime(out / "ck_2.pt", (1_700_000_100, 1_700_000_100))
    qf.write_queue(f"{qf.cell_script('ck', 'exit 3')} t 1\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await wait_view(qf, lambda v: v.cells[0].status == FAILED, what="ck to fail")
    report = await pull_verify(qf, "box1")
    assert {c.path: c.status for c in report.checks if c.path.startswith("ck/")} == {
        "ck/ck_1.pt": "verified",
        "ck/ck_2.pt": "corrupt",
    }

    try:
        plan = await plan_retry(qf.fleet, qf.host(), transport, ["ck"])
        plan = await with_checkpoints(plan, qf.fleet, qf.host(), transport)
    finally:
        await transport.close()
    assert plan.checkpoints == (("ck", "ck_2.pt"),)
    assert plan.failed_verify == (("ck", "corrupt", "ck_1.pt"),)
    ((name, warning, advice),) = checkpoint_notes(plan, lambda cell: f"resume {cell}")
    assert name == "ck"
    assert warning.endswith(
        "(ck_2.pt) that failed the last verify here (corrupt): a retry sets it aside and does "
        "not resume from it; a resume would load it."
    ), warning
    assert advice is not None and "resume ck" not in advice  # no resume from a broken file
    assert "The newest checkpoint of it that verified here is ck_1.pt" in advice
    # Asked for a resume anyway (--resume): it says the resume would load that file.
    resume = dataclasses.replace(plan, resume=True)
    ((_, warning, advice),) = checkpoint_notes(resume, lambda cell: f"resume {cell}")
    assert warning.endswith("failed the last verify here (corrupt): the resume would load it.")
    assert advice is not None and "a move to another box resumes from that" in advice


async def test_a_checkpoint_never_verified_keeps_the_resume_advice(make_queue_fleet):
    """No pull or verify yet: nothing is known against it, the words stay as they were."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    out = qf.root() / "results" / "ck"
    out.mkdir(parents=True)
    torch.save({"step": 1}, out / "ck_1.pt")
    qf.write_queue(f"{qf.cell_script('ck', 'exit 3')} t 1\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await wait_view(qf, lambda v: v.cells[0].status == FAILED, what="ck to fail")
    try:
        plan = await plan_retry(qf.fleet, qf.host(), transport, ["ck"])
        plan = await with_checkpoints(plan, qf.fleet, qf.host(), transport)
    finally:
        await transport.close()
    assert plan.checkpoints == (("ck", "ck_1.pt"),) and plan.failed_verify == ()
    ((_, warning, advice),) = checkpoint_notes(plan, lambda cell: f"resume {cell}")
    assert "failed the last verify" not in warning
    assert advice == (
        "To resume from it instead: resume ck — its {out} is kept as it is, and no done "
        "cell runs again."
    ), advice
    resume = dataclasses.replace(plan, resume=True)
    assert checkpoint_notes(resume, lambda cell: f"resume {cell}") == [
        (
            "ck",
            "It resumes from ck_1.pt, the newest checkpoint in its {out}, if its run loads "
            "its latest one.",
            None,
        )
    ]


async def test_the_earlier_copy_of_a_damaged_checkpoint_is_named_as_such(make_queue_fleet):
    """Hour s24c #6: "the newest checkpoint of it that verified here is checkpoint.pt" —
    the damaged file's own name — when the verified one was its earlier copy, set aside
    here by a pull."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    out = qf.root() / "results" / "ck"
    out.mkdir(parents=True)
    torch.save({"step": 1, "w": torch.ones(32, 32)}, out / "checkpoint.pt")
    qf.write_queue(f"{qf.cell_script('ck', 'exit 3')} t 1\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await wait_view(qf, lambda v: v.cells[0].status == FAILED, what="ck to fail")
    first = await pull_verify(qf, "box1")  # the failed cell is the roster's: not ok
    assert [c.status for c in first.checks if c.path == "ck/checkpoint.pt"] == ["verified"]
    torch.save({"step": 2, "w": torch.ones(32, 32)}, out / "checkpoint.pt")
    os.truncate(out / "checkpoint.pt", (out / "checkpoint.pt").stat().st_size // 2)
    report = await pull_verify(qf, "box1")
    (check,) = [c for c in report.checks if c.path == "ck/checkpoint.pt"]
    assert check.status == "corrupt" and check.earlier is not None

    transport = qf.transport()
    try:
        plan = await plan_retry(qf.fleet, qf.host(), transport, ["ck"])
        plan = await with_checkpoints(plan, qf.fleet, qf.host(), transport)
    finally:
        await transport.close()
    assert plan.failed_verify == (("ck", "corrupt", "checkpoint.pt"),)
    ((_, _, advice),) = checkpoint_notes(plan, lambda cell: f"resume {cell}")
    assert advice is not None and advice.startswith(
        "Your earlier copy of checkpoint.pt, set aside here by a pull, loads"
    ), advice


async def test_a_relaunch_from_a_cell_whose_checkpoint_failed_verify_says_so(make_queue_fleet):
    """Hour s24c #1: `launch --start 0` (and L) offered to resume the cell from its
    checkpoint, which verify had found corrupt; the cell failed at its first load."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    out = qf.root() / "results" / "ck"
    out.mkdir(parents=True)
    torch.save({"step": 2, "w": torch.ones(32, 32)}, out / "ck.pt")
    os.truncate(out / "ck.pt", (out / "ck.pt").stat().st_size // 2)
    qf.write_queue(f"{qf.cell_script('ck', 'exit 3')} t 1\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
    await wait_view(qf, lambda v: v.cells[0].status == FAILED, what="ck to fail")
    await pull_verify(qf, "box1")
    try:
        plan = await plan_launch(qf.fleet, qf.host(), transport, start_index=0, preflight=False)
        fresh = await plan_launch(
            qf.fleet, qf.host(), transport, start_index=0, preflight=False, fresh=True
        )
    finally:
        await transport.close()
    (warned,) = [w for w in plan.warnings if "failed the last verify" in w]
    assert warned.startswith(
        "cell 0 (ck) resumes from its newest checkpoint, ck.pt, which failed the last verify "
        "here (corrupt)"
    ), warned
    assert "rgt-tui queue retry box1 ck" in warned
    assert not [w for w in fresh.warnings if "failed the last verify" in w]
    # A fresh queue moves records and logs aside, not the outputs: said (h501 #9).
    (again,) = [w for w in fresh.warnings if "ran on box1 before" in w]
    assert again.startswith(
        f"ck ran on box1 before: this launch runs it again in the same output folder "
        f"({qf.host().durable_dir}/ck), where the earlier files stay and may be overwritten"
    ), again
    assert not [w for w in plan.warnings if "ran on box1 before" in w]


async def test_the_resume_advice_while_the_queue_runs_runs_nothing_again(make_queue_fleet):
    """Hour s25b #3: "Cancel, then relaunch from this cell (start index 0), once the running
    queue has ended" — by then the cells after it have run, and that relaunch runs them
    all again. A resume (s43) runs the cell alone, before the queue's next cell: the
    advice names it, with no wait and nothing run again."""
    from support.queues import GATE

    from rgt_tui.domain.queue_state import RUNNING

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    out = qf.root() / "results" / "broke"
    out.mkdir(parents=True)
    torch.save({"step": 1}, out / "checkpoint.pt")
    broke, hold = qf.cell_script("broke", "exit 3"), qf.cell_script("hold", GATE)
    qf.write_queue(f"{broke} t 1\n{hold} t 1\n{qf.cell_script('after', 'echo a')} t 1\n")
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
        await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="hold to run")
        plan = await plan_retry(qf.fleet, qf.host(), transport, ["broke"])
        plan = await with_checkpoints(plan, qf.fleet, qf.host(), transport)
    finally:
        (qf.root() / "go").touch()
        await transport.close()
    assert plan.running and plan.checkpoints == (("broke", "checkpoint.pt"),)
    ((_, _, advice),) = checkpoint_notes(plan, lambda cell: f"resume {cell}")
    assert advice == (
        "To resume from it instead: resume broke — its {out} is kept as it is, and no done "
        "cell runs again."
    ), advice


async def test_a_group_with_no_checkpoint_on_rank_0s_box_is_not_said_to_have_none(
    make_queue_fleet,
):
    """A group's checkpoints are looked for on rank 0's box alone, while the worker a
    script saves from may run on any box of it: "no checkpoint in its {out} on the box
    now: the resume runs it from the start" was said of a cell whose checkpoint sat on
    rank 1's box (h531 #6). A box of its own still gets the look's word."""
    from rgt_tui.domain.config import GroupConfig

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('nock', 'exit 3')} t 1\n")
    transport = qf.transport()
    try:
        await launch(await plan_launch(qf.fleet, qf.host(), transport), transport)
        await wait_view(qf, lambda v: v.cells[0].status == FAILED, what="nock to fail")
        plan = await plan_retry(qf.fleet, qf.host(), transport, ["nock"], resume=True)
        alone = await with_checkpoints(plan, qf.fleet, qf.host(), transport)
        group = dataclasses.replace(
            qf.host(), group=GroupConfig(("box1", "box2"), (qf.host(), qf.host()))
        )
        grouped = await with_checkpoints(plan, qf.fleet, group, transport)
    finally:
        await transport.close()
    assert alone.checkpoints == () and alone.checkpoints_looked
    assert grouped.checkpoints == () and not grouped.checkpoints_looked
