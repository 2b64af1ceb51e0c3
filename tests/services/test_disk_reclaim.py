"""The disk audit and its deletes over a loopback box whose data disk is a real tmpfs.

The box's watched mount, pull root and (through a link from ``~/.cache/huggingface``, as
U7 describes) Hugging Face cache all live on a tmpfs; results are pulled and verified
with the real pull and verify services, checkpoints loaded by the venv's CPU torch.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
import torch
from support.disk_box import BIG_OUTSIDE, BLOB, SMALL_FILES, build_box
from support.disk_box import tmpfs as tmpfs  # noqa: F401  (the fixture)
from support.pulls import fast, host_of

from rgt_tui.services.disk.audit import DiskError, audit_disk
from rgt_tui.services.disk.reclaim import delete_planned, plan_delete
from rgt_tui.services.pull import pull_host
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import transport_for


async def test_audit_refuses_unverified_then_deletes_a_superseded_checkpoint(
    make_loopback_fleet, tmp_path, tmpfs
):
    fleet = await make_loopback_fleet(1)
    paths = build_box(fleet.box("box1").root, tmpfs)
    results = str(tmpfs / "results")
    host = host_of(fleet, mounts=(str(tmpfs),), pull=(results,), durable_dir=results)
    local = tmp_path / "local"
    transport = transport_for(host)
    try:
        audit = await audit_disk(host, transport, local, cells=("cellA",))
        folders = {f.path: f for m in audit.mounts for f in m.folders}
        # Bytes and inodes of the largest folders: the inode hog is small but many.
        assert folders[str(paths["hog"])].inodes >= SMALL_FILES
        assert folders[str(paths["hog"])].bytes < folders[str(tmpfs / "scratch")].bytes
        assert folders[str(tmpfs)].inodes >= SMALL_FILES + 10
        # The HF cache by model, found through the home's link, the blob counted once and
        # the link out of the model never followed.
        (model,) = audit.hf_models
        assert (model.label, model.path) == ("org/a", str(paths["model"]))
        assert BLOB <= model.bytes < BLOB + 64_000
        assert audit.checkpoints == () and "nothing pulled yet" in audit.notes[0]

        # Nothing pulled: the cell's folder cannot go, and the refusal names the files.
        with pytest.raises(DiskError) as refused:
            await plan_delete(host, transport, local, audit, str(paths["cell"]))
        lost = "\n".join(refused.value.lost)
        for name in ("epoch1.pt", "epoch2.pt", "metrics.json"):
            assert f"not pulled: {paths['cell'] / name}" in lost

        pulled = await pull_host(host, local, transport, options=fast())
        assert pulled.ok, pulled.failed
        with pytest.raises(DiskError) as refused:  # pulled, not yet verified
            await plan_delete(host, transport, local, audit, str(paths["cell"]))
        assert f"pulled but not verified: {paths['cell'] / 'epoch1.pt'}" in refused.value.lost

        report = await verify_host(host, local, transport=transport, roster=["cellA"])
        assert report.ok, report.problems
        (paths["cell"] / "late.json").write_text("{}")  # written after the pull
        audit = await audit_disk(host, transport, local, cells=("cellA",))
        (stale,) = audit.checkpoints
        assert stale.path == str(paths["cell"] / "epoch1.pt")
        assert stale.superseded_by == str(paths["cell"] / "epoch2.pt")
        assert stale.label == "cellA/epoch1.pt"
        with pytest.raises(DiskError) as refused:
            await plan_delete(host, transport, local, audit, str(paths["cell"]))
        assert refused.value.lost == (f"not pulled: {paths['cell'] / 'late.json'}",)

        plan = await plan_delete(host, transport, local, audit, "cellA/epoch1.pt")
        # One file and the checkpoint that supersedes it, not "2 files under it" (s19a #11).
        assert plan.why.startswith(f"it and {paths['cell'] / 'epoch2.pt'}, which supersedes it,")
        assert "pull and verify again before teardown" in plan.why
        await delete_planned(transport, plan)
        assert not (paths["cell"] / "epoch1.pt").exists()
        assert (paths["cell"] / "epoch2.pt").exists() and (paths["cell"] / "late.json").exists()

        # The newer checkpoint changed on the box: superseded ones are no longer deletable.
        audit = await audit_disk(host, transport, local, cells=("cellA",))
        torch.save({"w": torch.zeros(2)}, paths["cell"] / "epoch0.pt")
        os.utime(paths["cell"] / "epoch0.pt", (1_600_000_000, 1_600_000_000))
        torch.save({"w": torch.zeros(3)}, paths["cell"] / "epoch2.pt")
        os.utime(paths["cell"] / "epoch2.pt", (1_700_000_500, 1_700_000_500))
        audit = await audit_disk(host, transport, local, cells=("cellA",))
        (stale,) = audit.checkpoints
        # epoch0.pt was never pulled: listed but not offered (U6), its delete refused.
        assert stale.held and "not pulled and verified yet" in stale.held
        with pytest.raises(
            DiskError, match="is not offered: its own copy is not pulled and verified yet"
        ):
            await plan_delete(host, transport, local, audit, stale.path)
    finally:
        await transport.close()


async def test_hf_model_delete_removes_links_never_their_targets(
    make_loopback_fleet, tmp_path, tmpfs
):
    fleet = await make_loopback_fleet(1)
    home = fleet.box("box1").root
    paths = build_box(home, tmpfs)
    results = str(tmpfs / "results")
    host = host_of(fleet, mounts=(str(tmpfs),), pull=(results,), durable_dir=results)
    transport = transport_for(host)
    try:
        audit = await audit_disk(host, transport, tmp_path / "local", cells=())
        # Only what the audit listed, and nothing outside a pull root but HF models.
        for other in (str(paths["hog"]), str(paths["big"]), "/etc"):
            with pytest.raises(DiskError, match="outside the pull folders|not in the disk audit"):
                await plan_delete(host, transport, tmp_path / "local", audit, other)
        with pytest.raises(DiskError, match="holds the pull folder"):
            await plan_delete(host, transport, tmp_path / "local", audit, str(tmpfs))
        plan = await plan_delete(host, transport, tmp_path / "local", audit, "org/a")
        await delete_planned(transport, plan)
        assert not paths["model"].exists()
        assert paths["big"].stat().st_size == BIG_OUTSIDE  # the link's target is untouched
        assert (home / ".cache" / "huggingface").is_symlink()
    finally:
        await transport.close()


async def test_a_path_changed_since_the_audit_is_not_deleted(make_loopback_fleet, tmp_path, tmpfs):
    fleet = await make_loopback_fleet(1)
    paths = build_box(fleet.box("box1").root, tmpfs)
    results = str(tmpfs / "results")
    host = host_of(fleet, mounts=(str(tmpfs),), pull=(results,), durable_dir=results)
    transport = transport_for(host)
    try:
        audit = await audit_disk(host, transport, tmp_path / "local", cells=())
        plan = await plan_delete(host, transport, tmp_path / "local", audit, "org/a")
        # Another folder under the same name: a new inode.
        shutil.rmtree(paths["model"])
        paths["model"].mkdir()
        (paths["model"] / "keep.txt").write_text("new")
        with pytest.raises(DiskError, match="another file than the audit saw"):
            await delete_planned(transport, plan)
        assert (paths["model"] / "keep.txt").read_text() == "new"
        # A link in its place, pointing at a folder full of data: refused, target intact.
        shutil.rmtree(paths["model"])
        paths["model"].symlink_to(paths["hog"])
        with pytest.raises(DiskError, match="is a link now"):
            await delete_planned(transport, plan)
        assert len(list(paths["hog"].iterdir())) == SMALL_FILES
    finally:
        await transport.close()


async def test_cli_audits_refuses_and_deletes_only_with_the_path_repeated(
    make_loopback_fleet, tmpfs
):
    from support.cli import arun

    fleet = await make_loopback_fleet(1)
    paths = build_box(fleet.box("box1").root, tmpfs)
    results = tmpfs / "results"
    text = fleet.hosts_file.read_text()
    box_root = str(fleet.box("box1").root)
    text = text.replace(f'mounts = ["{box_root}"]', f'mounts = ["{tmpfs}"]\npull = ["{results}"]')
    text = text.replace(f'durable_dir = "{box_root}/results"', f'durable_dir = "{results}"')
    fleet.hosts_file.write_text(text)
    hosts = ("--hosts", fleet.hosts_file)

    audit = await arun("disk", "box1", "--json", *hosts)
    assert audit.returncode == 0, audit.stderr
    data = json.loads(audit.stdout)
    assert [m["short"] for m in data["hf_models"]] == ["org/a"]
    assert any(f["path"] == str(paths["hog"]) for f in data["mounts"][0]["folders"])

    no_terminal = await arun("disk", "box1", "--delete", "org/a", *hosts)
    assert no_terminal.returncode == 2 and "--confirm" in no_terminal.stderr
    short = await arun("disk", "box1", "--delete", "org/a", "--confirm", "org/a", *hosts)
    assert short.returncode == 1 and "nothing deleted" in short.stderr
    assert paths["model"].exists()

    cell = str(paths["cell"])
    refused = await arun("disk", "box1", "--delete", cell, "--confirm", cell, *hosts)
    assert refused.returncode == 1
    assert f"would lose: not pulled: {cell}/epoch1.pt" in refused.stderr
    assert (paths["cell"] / "epoch1.pt").exists()

    model = str(paths["model"])
    done = await arun("disk", "box1", "--delete", "org/a", "--confirm", model, *hosts)
    assert done.returncode == 0, done.stderr
    assert f"deleted {model}" in done.stdout and not paths["model"].exists()


async def test_a_newer_file_of_another_name_supersedes_no_checkpoint(
    make_loopback_fleet, tmp_path, tmpfs
):
    """A 1 KB args.pt saved after the weights "superseded" the cell's only checkpoint,
    offering its resume point for a delete (hour s20c #2): only a newer one of the same
    family (names that differ in their numbers) supersedes one."""
    fleet = await make_loopback_fleet(1)
    paths = build_box(fleet.box("box1").root, tmpfs)
    args = paths["cell"] / "args.pt"
    torch.save({"lr": torch.tensor(0.1)}, args)
    os.utime(args, (1_700_001_000, 1_700_001_000))  # the newest file of the cell
    results = str(tmpfs / "results")
    host = host_of(fleet, mounts=(str(tmpfs),), pull=(results,), durable_dir=results)
    local = tmp_path / "local"
    transport = transport_for(host)
    try:
        assert (await pull_host(host, local, transport, options=fast())).ok
        report = await verify_host(host, local, transport=transport, roster=["cellA"])
        assert report.ok, report.problems
        audit = await audit_disk(host, transport, local, cells=("cellA",))
    finally:
        await transport.close()
    assert [(c.label, c.superseded_by) for c in audit.checkpoints] == [
        ("cellA/epoch1.pt", str(paths["cell"] / "epoch2.pt"))
    ]


@pytest.mark.parametrize("how", ["open", "mmap"])
async def test_a_model_a_process_holds_is_not_deleted(make_loopback_fleet, tmp_path, tmpfs, how):
    """s38 disk hour #4: a Hugging Face model was deleted while a process had its weights
    open (safetensors are mmapped, the fd then closed); its next read would fail. The box
    refuses, naming the process, and deletes once it is gone."""
    import asyncio
    import sys

    from support.waiting import wait_for

    fleet = await make_loopback_fleet(1)
    paths = build_box(fleet.box("box1").root, tmpfs)
    results = str(tmpfs / "results")
    host = host_of(fleet, mounts=(str(tmpfs),), pull=(results,), durable_dir=results)
    ready = tmp_path / "holding"
    hold = {
        "open": "f = open(sys.argv[1], 'rb')",
        "mmap": "import mmap; f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, "
        "access=mmap.ACCESS_READ); f.close()",
    }[how]
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", f"import sys, time\n{hold}\nopen(sys.argv[2], 'w').close()\n"
        "time.sleep(120)", str(paths["blob"]), str(ready),
    )  # fmt: skip
    transport = transport_for(host)
    try:
        await wait_for(ready.exists, 30, "the process to hold the model")
        audit = await audit_disk(host, transport, tmp_path / "local", cells=())
        plan = await plan_delete(host, transport, tmp_path / "local", audit, "org/a")
        with pytest.raises(DiskError) as refused:
            await delete_planned(transport, plan)
        said = str(refused.value)
        assert f"process {holder.pid} (python" in said and "open" in said, said
        assert "stop that process first" in said and "nothing deleted" in said
        assert paths["model"].exists() and paths["blob"].exists()
        holder.kill()
        await holder.wait()
        audit = await audit_disk(host, transport, tmp_path / "local", cells=())
        plan = await plan_delete(host, transport, tmp_path / "local", audit, "org/a")
        await delete_planned(transport, plan)
        assert not paths["model"].exists()
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()
        await transport.close()


async def test_a_file_that_failed_verify_is_refused_with_words_that_do_not_send_to_a_pull(
    make_loopback_fleet, tmp_path, tmpfs
):
    """h612 #7: a delete refused for a checkpoint verify had found corrupt said "run pull
    and verify first", which can never settle it: the same bytes fail again."""
    fleet = await make_loopback_fleet(1)
    paths = build_box(fleet.box("box1").root, tmpfs)
    bad = paths["cell"] / "epoch2.pt"
    bad.write_bytes(bad.read_bytes()[:300])  # corrupt on the box before any pull
    results = str(tmpfs / "results")
    host = host_of(fleet, mounts=(str(tmpfs),), pull=(results,), durable_dir=results)
    local = tmp_path / "local"
    transport = transport_for(host)
    try:
        assert (await pull_host(host, local, transport, options=fast())).ok
        report = await verify_host(host, local, transport=transport, roster=["cellA"])
        assert not report.ok
        audit = await audit_disk(host, transport, local, cells=("cellA",))
        with pytest.raises(DiskError) as refused:
            await plan_delete(host, transport, local, audit, str(paths["cell"]))
        (line,) = [x for x in refused.value.lost if "epoch2.pt" in x]
        assert line.startswith("failed verify (") and "changes nothing" in line, line
        assert not any("epoch1.pt" in x for x in refused.value.lost), refused.value.lost
    finally:
        await transport.close()
