"""A launch runs preflight first and refuses on a failed check until that check is
acknowledged by name (``acks``, the host's ``preflight_ack``), over real loopback boxes
running the real box script: this machine has no GPU, so "gpu" fails for its reason."""

from __future__ import annotations

import pytest
from support.code_trees import add_code, git_tree
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.config import PREFLIGHT_CHECKS
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.launch import launch, plan_launch

# On a loopback box whose cells run bash, not torch (arch cannot be checked without it).
FAILING = ("torch", "gpu", "driver", "arch")


async def test_a_failed_check_refuses_the_launch_until_it_is_acknowledged_by_name(
    make_queue_fleet,
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.set_preflight_ack(())
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    transport = qf.transport()
    try:
        await transport.connect()
        plan = await plan_launch(qf.fleet, qf.host(), transport)
        assert not plan.ok and plan.preflight is not None
        assert plan.unacknowledged == FAILING
        gpu = next(p for p in plan.problems if p.startswith("preflight check 'gpu'"))
        assert "failed: no GPU: nvidia-smi is not on the box's PATH — " in gpu
        assert gpu.endswith(
            "; to launch anyway, acknowledge it: --ack gpu (or press its button in the plan)"
        )
        assert plan.queue_append == "" and plan.cells_append == ""  # nothing to send

        # Two of four acknowledged: still refused, for the other two alone.
        plan = await plan_launch(qf.fleet, qf.host(), transport, acks=["gpu", "driver"])
        assert plan.unacknowledged == ("torch", "arch") and not plan.ok
        assert [p.split("'")[1] for p in plan.problems] == ["torch", "arch"]
        assert plan.acks == ("gpu", "driver")
        assert any(
            "preflight check 'gpu' failed (acknowledged for this launch): no GPU" in w
            for w in plan.warnings
        ), plan.warnings

        plan = await plan_launch(qf.fleet, qf.host(), transport, acks=FAILING)
        assert plan.ok, plan.problems
        await launch(plan, transport)
    finally:
        await transport.close()
    view = await wait_view(qf, lambda v: v.state == FINISHED, what="the acknowledged launch")
    assert view.count("done") == 1


async def test_the_hosts_preflight_ack_acknowledges_every_launch_and_says_so(
    make_queue_fleet,
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)  # the queue fleets acknowledge FAILING
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    transport = qf.transport()
    try:
        await transport.connect()
        plan = await plan_launch(qf.fleet, qf.host(), transport)
    finally:
        await transport.close()
    assert plan.ok, plan.problems
    assert set(plan.host_acks) == set(FAILING) and plan.acks == ()
    assert plan.preflight is not None and [c.name for c in plan.preflight.failed] == list(FAILING)
    assert any(
        "preflight check 'torch' failed (acknowledged by the host's preflight_ack)" in w
        for w in plan.warnings
    ), plan.warnings


async def test_an_unknown_check_name_is_refused_naming_the_known_ones(make_queue_fleet) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    transport = qf.transport()
    try:
        await transport.connect()
        plan = await plan_launch(qf.fleet, qf.host(), transport, acks=["gpu", "gpus"])
    finally:
        await transport.close()
    assert not plan.ok
    (problem,) = plan.problems
    assert problem == (
        "unknown preflight check 'gpus' to acknowledge — the checks are: "
        + ", ".join(PREFLIGHT_CHECKS)
    )


async def test_the_plan_records_the_code_preflight_found_on_the_box(
    make_queue_fleet, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """U42: a host with a code tree, synced: the plan carries the box's code identity,
    which each cell's state then records; changed on the box, "code" refuses."""
    from rgt_tui.services.code_sync import sync_code

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    head = git_tree(tmp_path / "code")
    # The queue's cells are written into the workdir by the test, not synced: not code.
    add_code(qf.loopback.hosts_file, tmp_path / "code", ("cells/",))
    fleet = load_fleet(qf.loopback.hosts_file)
    host = fleet.host("box1")
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    transport = qf.transport()
    try:
        await transport.connect()
        synced = await sync_code(host, transport)
        plan = await plan_launch(fleet, host, transport)
        assert plan.ok, plan.problems
        assert plan.preflight is not None and plan.preflight.code == synced.identity
        assert plan.code_id == synced.identity.record() and f"commit={head}" in plan.code_id

        (qf.root() / "src" / "train.py").write_text("print('changed on the box')\n")
        plan = await plan_launch(fleet, host, transport)
        assert plan.unacknowledged == ("code",)
        (problem,) = plan.problems
        assert problem.startswith("preflight check 'code' failed: ") and "src/train.py" in problem
        # Its fix once: the problem's words end with it already (a user's hour read
        # "— rgt-tui sync box1 — rgt-tui sync box1").
        # (twice in its own words: the fix of the changed file, and what that sync
        # overwrites; the check's fix was appended a third time at the end)
        assert problem.count("rgt-tui sync box1") == 2, problem
    finally:
        await transport.close()


async def test_a_sync_between_the_plan_and_its_start_refuses_the_launch(
    make_queue_fleet, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """h603 #1: a sync that landed while the plan waited at its question: the cells ran the
    new code and recorded the code the plan had seen. The box refuses the start under its
    lock, and nothing runs; planned again, the launch records the code now there."""
    from rgt_tui.services.box_ctl import QueueError
    from rgt_tui.services.code_sync import sync_code

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    git_tree(tmp_path / "code")
    add_code(qf.loopback.hosts_file, tmp_path / "code", ("cells/",))
    fleet = load_fleet(qf.loopback.hosts_file)
    host = fleet.host("box1")
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    transport = qf.transport()
    try:
        await transport.connect()
        await sync_code(host, transport)
        plan = await plan_launch(fleet, host, transport)
        assert plan.ok and plan.code_stamp not in ("", "none"), plan.code_stamp
        (tmp_path / "code" / "src" / "train.py").write_text("print('changed while asked')\n")
        synced = await sync_code(host, transport)  # in another shell, meanwhile
        with pytest.raises(QueueError) as refused:
            await launch(plan, transport)
        assert refused.value.code == "code-changed"
        assert "was synced since the plan checked it" in refused.value.message
        assert "plan the launch again" in refused.value.message
        plan = await plan_launch(fleet, host, transport, acks=("code",))
        assert plan.ok and plan.code_id.startswith(f"tree={synced.identity.tree}"), plan.code_id
        await launch(plan, transport)
        await wait_view(qf, lambda v: v.state == FINISHED)
        # A --fresh plan refused so moves nothing first: it archived the queue, then
        # refused (review h605 #1).
        fresh = await plan_launch(fleet, host, transport, acks=("code",), fresh=True)
        assert fresh.ok, fresh.problems
        (tmp_path / "code" / "src" / "train.py").write_text("print('and again')\n")
        await sync_code(host, transport)
        with pytest.raises(QueueError) as refused:
            await launch(fresh, transport)
        assert refused.value.code == "code-changed"
        assert not list(qf.qdir().parent.glob("queue.archived.*"))
        assert (qf.qdir() / "runner.state").exists()  # the finished queue, where it was
    finally:
        await transport.close()


async def test_an_acknowledged_code_check_still_refuses_a_config_the_box_lacks(
    make_queue_fleet, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """A new user's hour (s39 #4): "code" acknowledged (the fix of uncommitted changes
    says so) also let a launch go with a cell whose config the box did not have: it would
    fail at once, paid time spent. The box is asked for the configs; a missing one
    refuses, acknowledged or not, with the sync that fixes it."""
    from support.code_trees import git, write

    from rgt_tui.services.code_sync import sync_code

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    code = tmp_path / "code"
    git_tree(code)
    add_code(qf.loopback.hosts_file, code, ("cells/",))
    fleet = load_fleet(qf.loopback.hosts_file)
    host = fleet.host("box1")
    transport = qf.transport()
    try:
        await transport.connect()
        await sync_code(host, transport)
        write(code, "src/new.sh", "echo new\n")  # committed here, never synced
        git(code, "add", "-A")
        git(code, "commit", "-q", "-m", "new cell")
        qf.write_queue("run.sh t\nsrc/new.sh t\n")
        plan = await plan_launch(fleet, host, transport, acks=("code",))
        assert "code" not in plan.unacknowledged
        assert not plan.ok
        (problem,) = [p for p in plan.problems if "src/new.sh" in p]
        assert problem.startswith(f"src/new.sh is not on box1 (its workdir {host.workdir}): "), (
            problem
        )
        assert "cell new would fail at once" in problem
        assert "the code check is acknowledged, but no cell runs" in problem
        assert "rgt-tui sync box1" in problem
        assert not any("run.sh is not on" in p for p in plan.problems)  # the box has it
        # Not acknowledged: the code check's own refusal stands beside it, and the
        # config's says nothing of an acknowledgement (a user's second hour, s41).
        plan = await plan_launch(fleet, host, transport)
        assert plan.unacknowledged == ("code",)
        (problem,) = [p for p in plan.problems if "src/new.sh is not on" in p]
        assert "is acknowledged" not in problem and "— no cell runs without its config" in problem
        await sync_code(host, transport)  # the fix said: synced, the launch goes
        plan = await plan_launch(fleet, host, transport)
        assert plan.ok, plan.problems
    finally:
        await transport.close()


async def test_a_config_look_that_fails_on_the_box_is_said_not_passed(
    make_queue_fleet, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """The box's look for the configs exited non-zero (here its bash cannot fork for that
    one command) and listed nothing: that read as "every config is there" (s44 note), and
    a launch with a config the box lacked went on unwarned. It is said as a look that
    failed, as when the box cannot be asked."""
    import shutil

    from support.code_trees import git, write

    from rgt_tui.services.code_sync import sync_code

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    code = tmp_path / "code"
    git_tree(code)
    add_code(qf.loopback.hosts_file, code, ("cells/",))
    fleet = load_fleet(qf.loopback.hosts_file)
    host = fleet.host("box1")
    transport = qf.transport()
    shim = tmp_path / "bin" / "bash"
    shim.parent.mkdir()
    shim.write_text(
        "#!/bin/sh\n"
        '[ "$3" = configs ] && { echo "bash: fork: Cannot allocate memory" >&2; exit 1; }\n'
        f'exec {shutil.which("bash")} "$@"\n'
    )
    shim.chmod(0o755)
    try:
        await transport.connect()
        await sync_code(host, transport)
        write(code, "src/new.sh", "echo new\n")  # committed here, never synced
        git(code, "add", "-A")
        git(code, "commit", "-q", "-m", "new cell")
        qf.write_queue("run.sh t\nsrc/new.sh t\n")
        qf.loopback.box("box1").extra_path.append(shim.parent)
        plan = await plan_launch(fleet, host, transport, acks=("code",))
        assert not any("src/new.sh is not on" in p for p in plan.problems), plan.problems
        (warning,) = [w for w in plan.warnings if "configs" in w]
        assert warning.startswith("could not ask box1 for the cells' configs (the look "), warning
        assert "exited with 1: bash: fork: Cannot allocate memory" in warning
        assert warning.endswith("rgt-tui sync box1")
    finally:
        await transport.close()
