"""U32 over a loopback box: where the host's default epochs would override an ``epochs``
that the cell's own config declares (read on the box), the launch plan warns and names
both values and the file; a line that gives its epochs, a bracketed flag, or a config
that agrees says nothing; an unreadable config is a note, never a hang or a crash."""

from __future__ import annotations

import os

from rgt_tui.cli.launch import format_plan
from rgt_tui.services.queue.epochs import MAX_BYTES
from rgt_tui.services.queue.launch import plan_launch

BARE = "python train.py --config {cfg} --epochs {epochs} --out {out}"
OPTIONAL = "python train.py --config {cfg} [--epochs {epochs}] --out {out}"


async def _plan(qf, **kw):
    transport = qf.transport()
    try:
        # About the epochs check alone, not the box's readiness: no preflight.
        return await plan_launch(qf.fleet, qf.host(), transport, preflight=False, **kw)
    finally:
        await transport.close()


def _write(qf, rel: str, text: str) -> None:
    path = qf.root() / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _epochs_warnings(plan) -> list[str]:
    return [w for w in plan.warnings if "epochs" in w]


async def test_a_default_overriding_a_configs_epochs_is_named_with_both_values(make_queue_fleet):
    qf = await make_queue_fleet(1, run=BARE)
    default = qf.host().epochs
    assert default != 50
    _write(qf, "configs/det_a.yaml", "model: det\ntrain:\n  lr: 0.1\n  epochs: 50  # long\n")
    _write(qf, "configs/given.yaml", "epochs: 50\n")
    _write(qf, "configs/agrees.toml", f"[train]\nepochs = {default}\n")
    _write(qf, "configs/plain.yaml", "lr: 0.1\nmax_steps: 5\n")
    (qf.root() / "abs").mkdir()
    _write(qf, "abs/cls_b.json", '{\n  "model": "cls",\n  "epochs": 30\n}\n')
    absolute = qf.root() / "abs" / "cls_b.json"
    qf.write_queue(
        "configs/det_a.yaml det\n"
        "configs/given.yaml det 50\n"  # the line gives its epochs: nothing overrides
        "configs/agrees.toml det\n"  # the default equals what the config says
        "configs/plain.yaml det\n"  # no epochs declared
        "configs/missing.yaml det\n"  # not on the box: not this check's business
        f"{absolute} cls\n"
    )

    plan = await _plan(qf)

    assert plan.ok, plan.problems
    assert _epochs_warnings(plan) == [
        f"cell 0 det_a: the host's default epochs {default} (--epochs {default}) overrides "
        "epochs: 50 in configs/det_a.yaml (line 4) — give the line its epochs "
        "(configs/det_a.yaml det 50), or make the flag optional in the run template: "
        "[--epochs {epochs}]",
        f"cell 5 cls_b: the host's default epochs {default} (--epochs {default}) overrides "
        f"epochs: 30 in {absolute} (line 3) — give the line its epochs ({absolute} cls 30), "
        "or make the flag optional in the run template: [--epochs {epochs}]",
    ]
    assert "overrides epochs: 50 in configs/det_a.yaml" in format_plan(plan)

    # From a later start index only the cells that will run are read.
    later = await _plan(qf, start_index=1)
    assert [w.split(":")[0] for w in _epochs_warnings(later)] == ["cell 5 cls_b"]


async def test_a_bracketed_flag_passes_no_default_so_nothing_is_overridden(make_queue_fleet):
    qf = await make_queue_fleet(1, run=OPTIONAL)
    _write(qf, "configs/det_a.yaml", "epochs: 50\n")
    qf.write_queue("configs/det_a.yaml det\n")
    plan = await _plan(qf)
    assert plan.ok, plan.problems
    assert _epochs_warnings(plan) == []
    assert plan.cells[0].epochs_note == "epochs: none passed (the config decides)"


async def test_unreadable_configs_are_noted_and_a_bound_is_kept(make_queue_fleet):
    qf = await make_queue_fleet(1, run=BARE)
    default = qf.host().epochs
    configs = qf.root() / "configs"
    configs.mkdir()
    os.mkfifo(configs / "fifo.yaml")  # reading it would block forever
    (configs / "dir.yaml").mkdir()
    # An epochs line past the bytes read is not seen: the read is bounded.
    _write(qf, "configs/huge.yaml", "# pad\n" * (MAX_BYTES // 6 + 10) + "epochs: 70\n")
    _write(qf, "configs/hostile.yaml", "\x1b[2J" * 5000 + "\nepochs:\t9999999999999\n")
    qf.write_queue(
        "configs/fifo.yaml det\nconfigs/dir.yaml det\nconfigs/huge.yaml det\n"
        "configs/hostile.yaml det\n"
    )

    plan = await _plan(qf)

    assert plan.ok, plan.problems
    assert _epochs_warnings(plan) == [
        "cell 0 fifo: configs/fifo.yaml is not a regular file on box1, so its epochs could "
        "not be checked",
        "cell 1 dir: configs/dir.yaml is not a regular file on box1, so its epochs could "
        "not be checked",
    ]
    assert all(str(default) not in w for w in _epochs_warnings(plan))
