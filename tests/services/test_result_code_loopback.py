"""U42 over a loopback box: a launch that knows its code leaves it in each cell's state;
the Queue tab and `queue show` name it per cell; a pull keeps it beside the results, and
the pull's summary and verify's report (CLI and Pulls tab) say which code made them."""

from __future__ import annotations

import dataclasses
import json

from support.pulls import fast
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.cli.pull import format_pull_result
from rgt_tui.cli.queue import format_view, view_to_json
from rgt_tui.content.pull_view import pull_result_lines, verify_lines
from rgt_tui.content.queue_text import queue_lines
from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.services.pull import pull_host
from rgt_tui.services.queue.launch import launch, plan_launch
from rgt_tui.services.result_code import code_path
from rgt_tui.services.verify.report import format_report, report_to_json
from rgt_tui.services.verify.run import verify_host

A = CodeIdentity("a1" * 32, "89abcdef0123456789abcdef0123456789abcdef", False)
B = CodeIdentity("b2" * 32, "0123456789abcdef0123456789abcdef01234567", True)
# SCRIPT_RUN passes {out} second: each cell leaves a JSON result there (verify loads it).
RESULT = 'mkdir -p "$2" && echo \'{"acc": 0.9}\' > "$2/metrics.json"'


async def _launch(qf, start: int, code: CodeIdentity) -> None:
    transport = qf.transport()
    try:
        # This test is about the code record, not the box's readiness: no preflight.
        plan = await plan_launch(qf.fleet, qf.host(), transport, start_index=start, preflight=False)
        assert plan.ok, plan.problems
        await launch(dataclasses.replace(plan, code_id=code.record()), transport)
    finally:
        await transport.close()


def _plain(lines) -> str:
    return "\n".join(line.plain for line in lines)


async def test_the_code_a_cell_ran_is_shown_with_its_queue_pull_and_verify(
    make_queue_fleet, tmp_path
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    first = qf.cell_script("first", RESULT)
    second = qf.cell_script("second", RESULT)
    qf.write_queue(f"{first} train 1\n{second} train 1\n")

    await _launch(qf, 0, A)
    await wait_view(qf, lambda v: v.state == FINISHED, what="the first launch to finish")
    await _launch(qf, 1, B)  # the second cell again, with other code: its last attempt's
    view = await wait_view(
        qf,
        lambda v: v.state == FINISHED and v.cells[1].attempts == 2,
        what="the relaunch of cell 1 to finish",
    )

    state = qf.state("second").splitlines()
    assert [line for line in state if line.startswith("code ")] == [
        f"code {A.record()}",
        f"code {B.record()}",
    ]
    assert state[1] == f"code {A.record()}"  # right after its start record
    assert [c.code for c in view.cells] == [A, B]
    shown = format_view(view)
    assert "code a1a1a1a1a1a1 · git 89abcde" in shown.splitlines()[1]
    assert "code b2b2b2b2b2b2 · git 0123456 (uncommitted changes)" in shown.splitlines()[2]
    tab = _plain(queue_lines(view))
    assert "code a1a1a1a1a1a1 · git 89abcde" in tab and "code b2b2b2b2b2b2" in tab
    assert view_to_json(view)["cells"][0]["code"] == {
        "tree": A.tree, "commit": A.commit, "dirty": False,
    }  # fmt: skip

    host, transport = qf.host(), qf.transport()
    results = tmp_path / "pulled"
    try:
        pulled = await pull_host(host, results, transport, options=fast())
        assert pulled.ok, pulled.failed
        report = await verify_host(host, results, transport=transport)
    finally:
        await transport.close()

    a_line = f"cell first: code {A.short()}"
    b_line = f"cell second: code {B.short()}"
    assert pulled.code is not None and [(c.name, c.code) for c in pulled.code.cells] == [
        ("first", A), ("second", B),
    ]  # fmt: skip
    summary = format_pull_result(pulled)
    assert f"  {a_line}" in summary.splitlines() and f"  {b_line}" in summary.splitlines()
    tab_pull = _plain(pull_result_lines(pulled))
    assert a_line in tab_pull and b_line in tab_pull
    assert json.loads(code_path(results / "box1").read_text())["cells"][1]["code"]["dirty"]

    assert report.ok, report.problems
    assert report.roster is not None and report.roster.present == ("first", "second")
    text = format_report(report)
    assert f"  {a_line}" in text.splitlines() and f"  {b_line}" in text.splitlines()
    assert a_line in _plain(verify_lines(report))
    assert report_to_json(report)["code"]["cells"][0]["code"]["tree"] == A.tree

    # Results pulled before rgt-tui kept the record: verify says the code is not known.
    code_path(results / "box1").unlink()
    offline = await verify_host(host, results, write_record=False)
    assert "no record of the code that made these results" in format_report(offline)
    assert report_to_json(offline)["code"] is None
