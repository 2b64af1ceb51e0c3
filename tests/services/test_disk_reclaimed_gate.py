"""A verified cell's folder reclaimed on the box keeps counting from its copy here, and
that copy keeps the gate shut (hour s19a #1), over a real loopback box and journal:

- after ``disk --delete`` of a pulled and verified cell's folder, the next pull and
  verify count the cell from the local copy (not "missing", not "launch it again"), and
  the gate's local line re-hashes those files with the manifest's;
- deleting that local copy then keeps verify and the gate locked, naming the file as
  the only copy, until the user accepts the cell as missing by name.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.gate_box import Setup

from rgt_tui.domain.gate_fixes import fix
from rgt_tui.services.disk.audit import audit_disk
from rgt_tui.services.disk.reclaim import delete_planned, plan_delete
from rgt_tui.services.pull import pull_host
from rgt_tui.services.teardown import acknowledge
from rgt_tui.services.verify.report import format_report
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import open_transport


def _line(report, key: str):  # type: ignore[no-untyped-def]
    return next(c for c in report.conditions if c.key == key)


async def test_a_reclaimed_verified_cell_counts_from_here_and_guards_the_gate(
    make_loopback_fleet, tmp_path: Path
) -> None:
    setup = Setup(await make_loopback_fleet(1), tmp_path)
    await setup.pull_and_verify()
    assert (await setup.check()).ready_but_confirmation
    cell = setup.box.root / "results" / "cellA"
    results = setup.fleet.results_dir
    async with open_transport(setup.host) as t:
        audit = await audit_disk(setup.host, t, results, cells=("cellA", "cellB"))
        plan = await plan_delete(setup.host, t, results, audit, str(cell))
        await delete_planned(t, plan)
        assert not cell.exists()
        assert (await pull_host(setup.host, results, t)).ok
        report = await verify_host(setup.host, results, transport=t)
    # Before: "missing cell cellA: no output directory … in the pulled copy".
    assert report.ok, report.problems
    assert report.roster is not None and "cellA" in report.roster.present
    assert "reclaimed: 1 file deleted on the box after they verified" in format_report(report)
    gate = await setup.check()
    assert gate.ready_but_confirmation, gate.conditions
    local = _line(gate, "local")
    assert "3/3 files re-hashed" in local.evidence
    assert "1 of them deleted on the box by a reclaim" in local.evidence

    # Its copy here is the only one: gone, verify and the gate both say so.
    mine = results / "box1" / "cellA" / "metrics.json"
    mine.rename(tmp_path / "elsewhere.json")
    async with open_transport(setup.host) as t:
        report = await verify_host(setup.host, results, transport=t)
    assert not report.ok
    # The cell is missing (what its acknowledgement settles), not "present" beside a
    # line of its own (hour s20c #9).
    assert report.roster is not None and "cellA" not in report.roster.present
    (why,) = [w for name, w in report.roster.missing if name == "cellA"]
    assert why.startswith("its only copy of cellA/metrics.json: missing here — deleted on the box")
    gate = await setup.check()
    assert not gate.ready_but_confirmation
    assert "MISSING cellA/metrics.json" in _line(gate, "local").evidence
    # Its fix is not "pull": a pull cannot bring back what the box no longer has.
    said = fix(_line(gate, "local"), "box1", tui=False)
    assert said.startswith("put back the files named") and "--ack-missing CELL" in said

    # Accepting the cell as missing, by name, is the typed word that its loss is accepted.
    cells = ("cellA", "cellB")
    await asyncio.to_thread(
        acknowledge, setup.journal, "box1", missing=["cellA"], cells=cells, box=gate.box
    )
    gate = await setup.check()
    assert gate.ready_but_confirmation, [c for c in gate.conditions if not c.ok]
    assert "2/2 files re-hashed" in _line(gate, "local").evidence


async def test_a_file_written_after_the_check_survives_the_delete(
    make_loopback_fleet, tmp_path: Path
) -> None:
    """The box removes only the files it was told were checked (hour s20a #1): one
    written into the folder after the check, or one changed since, stays, and is named."""
    setup = Setup(await make_loopback_fleet(1), tmp_path)
    cell = setup.box.root / "results" / "cellA"
    (cell / "sub").mkdir()
    (cell / "sub" / "eval.json").write_text('{"f1": 0.5}')
    await setup.pull_and_verify()
    results = setup.fleet.results_dir
    async with open_transport(setup.host) as t:
        audit = await audit_disk(setup.host, t, results, cells=("cellA", "cellB"))
        plan = await plan_delete(setup.host, t, results, audit, str(cell))
        # After the check, before the delete: a late result, and a checked file rewritten.
        (cell / "sub" / "late.json").write_text('{"epoch": 7}')
        (cell / "metrics.json").write_text('{"cell": "cellA", "acc": 0.95, "more": 1}')
        said = await delete_planned(t, plan)
    assert "KEPT 2 files written there since the check" in said, said
    assert "not pulled yet: pull and verify again" in said
    assert (cell / "sub" / "late.json").read_text() == '{"epoch": 7}'
    assert "0.95" in (cell / "metrics.json").read_text()
    assert not (cell / "sub" / "eval.json").exists()  # checked, unchanged: reclaimed
    assert not list(cell.parent.glob(".rgt-deleting*"))  # put back where it was


async def test_every_cell_reclaimed_leaves_a_gate_that_can_still_open(
    make_loopback_fleet, tmp_path: Path
) -> None:
    """All of a box's verified results reclaimed: the next manifest lists no file, and
    pull, verify and the gate called it an empty result set for good (hour s20c #1). The
    pull folder itself is not offered: gone, every later pull refused "no such folder"."""
    from rgt_tui.services.disk.audit import DiskError

    setup = Setup(await make_loopback_fleet(1), tmp_path)
    await setup.pull_and_verify()
    results = setup.fleet.results_dir
    root = setup.box.root / "results"
    async with open_transport(setup.host) as t:
        audit = await audit_disk(setup.host, t, results, cells=("cellA", "cellB"))
        try:
            await plan_delete(setup.host, t, results, audit, str(root))
            raise AssertionError("the pull folder itself was offered")
        except DiskError as refused:
            assert "is a pull folder itself" in str(refused)
        for cell in ("cellA", "cellB"):
            await delete_planned(
                t, await plan_delete(setup.host, t, results, audit, str(root / cell))
            )
        (root / "notes.txt").unlink()  # the last file, removed by hand on the box
        pulled = await pull_host(setup.host, results, t)
        assert pulled.ok and pulled.reclaimed == 2, pulled.shortfalls
        report = await verify_host(setup.host, results, transport=t)
    assert report.ok, report.problems
    gate = await setup.check()
    assert gate.ready_but_confirmation, [c for c in gate.conditions if not c.ok]
    assert "(and 2 reclaimed on the box, their only copy here)" in _line(gate, "manifest").evidence


async def test_a_leftover_reclaimed_with_its_folder_is_no_only_copy_to_keep(
    make_loopback_fleet, tmp_path: Path
) -> None:
    """s38 disk hour #2: a crash's *.tmp went with its cell's folder; the reclaim recorded
    it as a result, so after verify's own advice ("no result — delete it here") the next
    verify named it the only copy, to put back or accept its cell as missing."""
    from rgt_tui.services.reclaimed import load_reclaimed

    setup = Setup(await make_loopback_fleet(1), tmp_path)
    cell = setup.box.root / "results" / "cellA"
    (cell / "ckpt_epoch8.pt.tmp").write_bytes(b"half a checkpoint")
    report = await setup.pull_and_verify(expect_ok=False)  # the leftover is flagged
    results = setup.fleet.results_dir
    async with open_transport(setup.host) as t:
        audit = await audit_disk(setup.host, t, results, cells=("cellA", "cellB"))
        plan = await plan_delete(setup.host, t, results, audit, str(cell))
        await delete_planned(t, plan)
        assert (await pull_host(setup.host, results, t)).ok
    assert not cell.exists()  # the leftover went with its folder
    assert {f.local for f in load_reclaimed(results / "box1", plan.box_id)} == {
        "cellA/metrics.json"
    }
    (results / "box1" / "cellA" / "ckpt_epoch8.pt.tmp").unlink()  # as verify asked
    async with open_transport(setup.host) as t:
        report = await verify_host(setup.host, results, transport=t)
    assert report.ok, report.problems
    assert "only copy" not in format_report(report)
