"""U42 on a Slurm host, on the real one-node test cluster: each submitted attempt — the
launch, a retry, an append — records the code tree the workdir held when it was
submitted, not the first launch's (ux-c #5)."""

from __future__ import annotations

import re
from pathlib import Path

from support.cli import arun
from support.code_trees import add_code, git, git_tree, write
from support.queues import SCRIPT_RUN, QueueFleet
from support.slurm import SlurmCluster
from support.waiting import wait_for

from rgt_tui.services.code_sync import fleet_files, sync_code
from rgt_tui.services.queue.backends import backend_for


def attempts(qf: QueueFleet, name: str) -> list[list[str]]:
    """Each attempt of cell ``name``: its records from one ``start`` to the next."""
    out: list[list[str]] = []
    for line in qf.state(name).splitlines():
        if line.startswith("start "):
            out.append([])
        if out:
            out[-1].append(line)
    return out


def code_of(attempt: list[str]) -> str:
    return next((ln[len("code ") :] for ln in attempt if ln.startswith("code ")), "")


def ended(attempt: list[str]) -> bool:
    return any(ln.startswith("end ") for ln in attempt)


async def test_a_retried_and_an_appended_cell_record_the_tree_synced_since_the_launch(
    slurm_cluster: SlurmCluster, slurm_queue_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M")
    code = tmp_path / "code"
    git_tree(code)
    # The queue's cells are written into the workdir by the test, not synced: not code.
    add_code(qf.loopback.hosts_file, code, ("cells/",))
    qf._fleet = None
    flaky = qf.cell_script(
        "flaky", 'mkdir -p "$2"; [ -e "$HOME/cells/fixed" ] && exit 0; echo "not yet"; exit 4'
    )
    qf.write_queue(f"{flaky} t 1\n")
    host, transport = qf.host(), qf.transport()
    try:
        first = await sync_code(host, transport, withhold=fleet_files(qf.fleet))
        plan = await backend_for(host).plan_launch(qf.fleet, transport)
        assert plan.ok, plan.problems
        assert plan.code_id == first.identity.record()
        await backend_for(host).launch(plan, transport)
        await wait_for(lambda: any(map(ended, attempts(qf, "flaky"))), 60, "the first run")

        # The code changes here and is synced; then a retry and an append.
        write(code, "src/train.py", "print('fixed')\n")
        git(code, "commit", "-q", "-am", "fix")
        second = await sync_code(host, transport, withhold=fleet_files(qf.fleet))
        assert second.identity.tree != first.identity.tree
        (qf.root() / "cells" / "fixed").touch()  # not code: cells/ is excluded
        hosts = str(qf.loopback.hosts_file)  # the retry as a person types it
        retried = await arun("queue", "retry", "box1", "flaky", "--hosts", hosts, "--yes")
        assert retried.returncode == 0, retried.stdout + retried.stderr
        assert re.search(r"submitted as Slurm array job \d+: it runs them when", retried.stdout)
        assert "slurm.jobs" not in retried.stdout  # no file names of ours as jargon
        qf.append_queue(f"{qf.cell_script('later', 'echo later')} t 1\n")
        added = await backend_for(host).append_cells(qf.fleet, transport)
        assert [c.name for c in added.added] == ["later"], added
    finally:
        await transport.close()

    def both_ended() -> bool:
        runs = attempts(qf, "flaky")
        return len(runs) == 2 and ended(runs[1]) and any(map(ended, attempts(qf, "later")))

    await wait_for(both_ended, 60, "the retry and the appended cell to end")
    launched, retried = attempts(qf, "flaky")
    assert code_of(launched) == first.identity.record()
    assert code_of(retried) == second.identity.record()
    assert code_of(attempts(qf, "later")[0]) == second.identity.record()


async def test_an_append_is_refused_for_an_unsynced_config_or_an_unreadable_credential(
    slurm_cluster: SlurmCluster, slurm_queue_fleet, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Hour s18b #3: an append on a Slurm host submitted cells with none of the launch's
    checks: two configs not synced yet each spent an allocation to meet
    FileNotFoundError, and a cell ran without its unset credential."""
    import pytest

    from rgt_tui.services.box_ctl import QueueError

    qf = await slurm_queue_fleet(1, run=SCRIPT_RUN, mem="100M")
    code = tmp_path / "code"
    git_tree(code)
    add_code(qf.loopback.hosts_file, code, ("cells/",))
    qf._fleet = None
    qf.write_queue(f"{qf.cell_script('first', 'echo first')} t 1\n")
    host, transport = qf.host(), qf.transport()
    try:
        await sync_code(host, transport, withhold=fleet_files(qf.fleet))
        plan = await backend_for(host).plan_launch(qf.fleet, transport)
        assert plan.ok, plan.problems
        await backend_for(host).launch(plan, transport)

        write(code, "configs/new.sh", "echo new\n")  # in the tree here, not on the box
        git(code, "add", "configs/new.sh")
        git(code, "commit", "-q", "-m", "new config")
        qf.append_queue("configs/new.sh t 1\n")
        with pytest.raises(QueueError) as refused:
            await backend_for(host).append_cells(qf.fleet, transport)
        assert refused.value.code == "stale-config", refused.value.message
        assert "configs/new.sh (cell new) not on box1" in refused.value.message
        assert "rgt-tui sync box1 first, then append" in refused.value.message

        await sync_code(host, transport, withhold=fleet_files(qf.fleet))
        monkeypatch.delenv("RGT_TEST_UNSET_TOKEN", raising=False)
        hosts = qf.loopback.hosts_file
        hosts.write_text(
            hosts.read_text() + '\n[hosts.credentials]\nTOK = { env = "RGT_TEST_UNSET_TOKEN" }\n'
        )
        qf._fleet = None
        host = qf.host()
        with pytest.raises(QueueError) as unreadable:
            await backend_for(host).append_cells(qf.fleet, transport)
        assert "RGT_TEST_UNSET_TOKEN" in unreadable.value.message, unreadable.value.message

        monkeypatch.setenv("RGT_TEST_UNSET_TOKEN", "t0ken")
        added = await backend_for(host).append_cells(qf.fleet, transport)
        assert [c.name for c in added.added] == ["new"], added
    finally:
        await transport.close()
