"""U32 over a loopback box: the launch plan says, per cell, which epochs it passes and
where they came from, and a line without epochs gets no blanket ``--epochs``."""

from __future__ import annotations

from support.queues import wait_view

from rgt_tui.cli.launch import format_plan
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.services.queue.launch import launch, plan_launch

# The cell script writes the arguments it got, one a line, into its {out} folder.
ARGS = 'out="$1"; shift; mkdir -p "$out"; printf "%s\\n" "$@" > "$out/args"'


async def test_optional_epochs_are_passed_only_by_lines_that_give_them(make_queue_fleet):
    qf = await make_queue_fleet(1, run="bash {cfg} {out} {task} [--epochs {epochs}]")
    given = qf.cell_script("given", ARGS)
    left_out = qf.cell_script("left_out", ARGS)
    qf.write_queue(f"{given} train 5\n{left_out} train\n")
    host, transport = qf.host(), qf.transport()

    plan = await plan_launch(qf.fleet, host, transport)
    assert plan.ok, plan.problems
    assert [c.epochs_note for c in plan.cells] == [
        "epochs 5 (the line)",
        "epochs: none passed (the config decides)",
    ]
    text = format_plan(plan)
    assert "given" in text and text.count("epochs 5 (the line)") == 1
    assert "epochs: none passed (the config decides)" in text
    assert "--epochs" not in plan.cells[1].command

    await launch(plan, transport)
    await transport.close()
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    results = qf.root() / "results"
    assert (results / "given" / "args").read_text() == "train\n--epochs\n5\n"
    assert (results / "left_out" / "args").read_text() == "train\n"


async def test_a_bare_epochs_placeholder_says_the_hosts_default_fills_it(make_queue_fleet):
    qf = await make_queue_fleet(1, run="bash {cfg} {out} {task} --epochs {epochs}")
    given = qf.cell_script("given", ARGS)
    left_out = qf.cell_script("left_out", ARGS)
    qf.write_queue(f"{given} train 5\n{left_out} train\n")
    transport = qf.transport()
    plan = await plan_launch(qf.fleet, qf.host(), transport)
    await transport.close()
    assert plan.ok, plan.problems
    default = qf.host().epochs
    assert [c.epochs_note for c in plan.cells] == [
        "epochs 5 (the line)",
        f"epochs {default} (the host's default: the line gives none)",
    ]
    assert plan.cells[1].command.endswith(f"--epochs {default}")
    assert f"epochs {default} (the host's default: the line gives none)" in format_plan(plan)
