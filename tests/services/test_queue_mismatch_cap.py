"""A refusal for cells on the box that no longer match the queue file names the first
three and counts the rest: a 200-cell queue listed all of them, two lines each, in a
toast (a user's hour met 33 lines for 3 cells)."""

from __future__ import annotations

from rgt_tui.domain.queue_records import DeployedCell
from rgt_tui.services.queue.cells import RenderedQueue


def test_a_mismatch_names_three_cells_and_counts_the_rest() -> None:
    rendered = RenderedQueue("", (), ())  # the template changed: nothing renders the same
    deployed = tuple(DeployedCell(i, f"c{i}", f"python run.py {i}") for i in range(200))
    problem = rendered.mismatch_problem("box1", deployed)
    assert problem is not None
    lines = problem.splitlines()
    assert lines[1] == "  cell 0 on the box: c0: python run.py 0", lines
    assert lines[-1] == "  … and 197 more cells differ" and len(lines) == 8, lines
    few = rendered.mismatch_problem("box1", deployed[:3])
    assert few is not None and "more cells differ" not in few and len(few.splitlines()) == 7


def test_a_changed_durable_dir_is_named_not_the_run_template() -> None:
    """s38 spot hour #3: durable_dir changed after preflight's disk fix, and the refusal
    said to put the run template back, a setting never touched. When every differing cell
    differs only in its output folder, the refusal names durable_dir and the old one."""
    from rgt_tui.domain.queue_file import QueueCell
    from rgt_tui.domain.queue_records import cells_tsv_line

    def command(durable: str, name: str) -> str:
        return f"bash cells/{name}.sh {name} {durable}/{name} t 1"

    names = ("a", "b")
    cells = tuple(
        QueueCell("q.txt", i + 1, n, f"cells/{n}.sh", "t", 1, True) for i, n in enumerate(names)
    )
    now = tuple(cells_tsv_line(i, n, command("/big/runs", n)) for i, n in enumerate(names))
    rendered = RenderedQueue("", cells, now)
    sent = tuple(DeployedCell(i, n, command("/root/runs", n)) for i, n in enumerate(names))
    problem = rendered.mismatch_problem("box3", sent)
    assert problem is not None
    assert problem.startswith(
        "durable_dir changed since these cells were sent: their output folder was under "
        "/root/runs on the box and is now under /big/runs, so the same index would run "
        "another command: set durable_dir back to /root/runs for this queue, or start over: "
        "rgt-tui launch box3 --fresh, or Start over in the Launch dialog (L)"
    ), problem
    assert "run template" not in problem
    # Another change besides (the template's words): the template is named, as before.
    other = (DeployedCell(0, "a", "python other.py"), sent[1])
    said = rendered.mismatch_problem("box3", other)
    assert said is not None and said.startswith("cells already on the box no longer match")
