"""A resume move to a group (one torchrun job over several boxes): every rank runs the
cell from its own ``{out}`` on its own box, so every rank's ``{out}`` is checked, and a
checkpoint, which a move pushes to one box, is not pushed to a group (h617 #1: a file in
rank 1's ``{out}`` passed unrefused, and a resume pushed only to rank 0's box). Loopback
boxes; ``pair`` is box1 (rank 0) and box2 (rank 1)."""

from __future__ import annotations

from support.machine import kill_processes_under
from support.queues import SCRIPT_RUN
from support.resume_cell import give_cell, pull_verify, run_until_held

from rgt_tui.services.queue.resume import plan_resume_move, resume_lines

GROUP = """
[[groups]]
name = "pair"
hosts = [{hosts}]
queue = "{queue}"
run = "bash {{cfg}} {{node_rank}} {{out}}"
workdir = "~"
durable_dir = "~/results"
"""


def add_group(qf, hosts: tuple[str, str]) -> None:
    qf.write_queue("", "pair")
    names = ", ".join(f'"{h}"' for h in hosts)
    path = qf.loopback.hosts_file
    path.write_text(path.read_text() + GROUP.format(hosts=names, queue=qf.queue_file("pair")))
    qf._fleet = None  # the fleet file changed: load it again


async def plan(qf, source: str, cell: str, **kw):
    ts, td = qf.transport(source), qf.transport("pair")
    try:
        return await plan_resume_move(qf.fleet, qf.host(source), cell, "pair", ts, td, **kw)
    finally:
        await ts.close()
        await td.close()


async def test_a_move_from_scratch_to_a_group_checks_every_ranks_out(make_queue_fleet):
    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    for box in ("box1", "box2", "box3"):
        line = qf.cell_script("eta", "true", name=box)
    qf.write_queue(f"{line} t 1\n", "box3")
    add_group(qf, ("box1", "box2"))
    # box3, where eta ran, is gone (preempted): the cell moves as one that ran.
    await qf.loopback.box("box3").stop()
    kill_processes_under(qf.root("box3"))
    stale = qf.root("box2") / "results" / "eta"
    stale.mkdir(parents=True)
    (stale / "ckpt.pt").write_bytes(b"rank 1's own, from another run")

    refused = await plan(qf, "box3", "eta", from_scratch=True)
    assert not refused.ok
    assert refused.problems == (
        f"{stale} on rank 1 (box2) of pair holds files already (1+): a run there would "
        "mix them with the moved ones — move them aside first",
    ), refused.problems
    assert f"REFUSED: {refused.problems[0]}" in resume_lines(refused)

    # The same on rank 0 names rank 0; with rank 1's folder empty, only rank 0's.
    (stale / "ckpt.pt").unlink()
    first = qf.root("box1") / "results" / "eta"
    first.mkdir(parents=True)
    (first / "ckpt.pt").write_bytes(b"rank 0's own")
    refused = await plan(qf, "box3", "eta", from_scratch=True)
    assert [p for p in refused.problems if "holds files already" in p] == [
        f"{first} on rank 0 (box1) of pair holds files already (1+): a run there would "
        "mix them with the moved ones — move them aside first"
    ], refused.problems
    (first / "ckpt.pt").unlink()

    # Each rank runs it from its own workdir: a config missing on rank 1's box refuses it.
    (qf.root("box2") / line).unlink()
    refused = await plan(qf, "box3", "eta", from_scratch=True)
    assert refused.problems == (
        f"rank 1 (box2): {line} is not on box2 ({qf.root('box2') / line}): eta would fail at "
        "its start there — put it in pair's workdir (~), then plan the move again",
    ), refused.problems
    # A rank whose box does not answer refuses the move, named.
    await qf.loopback.box("box2").stop()
    refused = await plan(qf, "box3", "eta", from_scratch=True)
    assert [p for p in refused.problems if p.startswith("rank 1 (box2): box2 does not answer")], (
        refused.problems
    )


async def test_a_resume_to_a_group_is_refused_with_the_way_on(make_queue_fleet):
    qf = await make_queue_fleet(3, run=SCRIPT_RUN)
    await run_until_held(qf)
    give_cell(qf, "box3")
    await pull_verify(qf, "box1")
    await qf.loopback.box("box1").stop()
    kill_processes_under(qf.root("box1"))
    add_group(qf, ("box2", "box3"))

    refused = await plan(qf, "box1", "ck")
    assert not refused.ok and refused.checkpoint is not None
    assert refused.problems == (
        "pair is a group: each of its ranks (box2, box3) runs ck from its own {out} on its "
        "own box, and a resume move pushes the checkpoint to one box — a rank without it "
        "would start over beside ranks that resume. Move ck to one box to resume it there "
        "(rgt-tui queue move ck --to HOST), or move it with --from-scratch to run it again "
        "from the start",
    ), refused.problems
    assert all(not line.startswith("push: ") for line in resume_lines(refused))
    # From scratch it moves: every rank's {out} is empty.
    scratch = await plan(qf, "box1", "ck", from_scratch=True)
    assert scratch.ok, scratch.problems
