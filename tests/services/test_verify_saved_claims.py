"""A cell whose log's last "saved …" names a file the box never held is missing, not
present on its older checkpoints (hour s23b #1: verify passed it, the gate opened and
the box was torn down). Real loopback box, real torch files, the box's own logs pulled."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import torch
from support.pulls import box_results, fast, host_of

from rgt_tui.domain.saved_claims import last_claim
from rgt_tui.services.pull import pull_host
from rgt_tui.services.verify.report import format_report
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import transport_for


def _cell(res: Path, name: str, saved: list[str], kept: list[str]) -> str:
    """Cell ``name`` whose log says it saved each of ``saved`` (in order), of which only
    ``kept`` are on the box; its log's text."""
    (res / name).mkdir(parents=True)
    for file in kept:
        path = res / name / file
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"w": torch.ones(2)}, path)
    lines = [
        f"epoch {i} loss 0.{i}\nsaved checkpoint to {res / name / f}\n" for i, f in enumerate(saved)
    ]
    return "".join(lines) + "done\n"


async def test_the_last_saved_claim_must_be_on_the_box(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    logs = fleet.box("box1").root / ".rgt" / "queue" / "cells"
    logs.mkdir(parents=True)
    cells = {
        # Said it saved epoch 2, wrote nothing: epochs 0 and 1 load, and passed.
        "liar": _cell(res, "liar", ["ck0.pt", "ck1.pt", "ck2.pt"], ["ck0.pt", "ck1.pt"]),
        "honest": _cell(res, "honest", ["best.pt"], ["best.pt"]),
        # Keeps the newest only: the older ones it said it saved are gone, as they should.
        "rotated": _cell(res, "rotated", ["e0.pt", "e1.pt", "e2.pt"], ["e2.pt"]),
        # A folder (save_pretrained) is claimed; its files are there.
        "folder": _cell(res, "folder", ["hf"], ["hf/model.pt"]),
    }
    # Missing already (its only file, an empty metrics.json, loads as nothing), and its
    # log claims a save the box never held: both said (s38 disk hour #5 saw the first only).
    (res / "broke").mkdir(parents=True)
    (res / "broke" / "metrics.json").write_bytes(b"")
    cells["broke"] = f"epoch 2\nsaved checkpoint to {res / 'broke' / 'ckpt_epoch2.pt'}\n"
    # Its last checkpoint save failed, and a metrics file was written after it: the last
    # claim alone (the metrics) passed it (h511 #4).
    cells["metrics_after"] = _cell(res, "metrics_after", ["ck0.pt", "ck1.pt"], ["ck0.pt"])
    (res / "metrics_after" / "metrics.json").write_text('{"acc": 0.9}')
    cells["metrics_after"] += f"wrote {res / 'metrics_after' / 'metrics.json'}\n"
    for name, text in cells.items():
        (logs / f"{name}.log").write_text(text)
    queue = tmp_path / "queue.txt"
    queue.write_text("".join(f"configs/{n}.yaml train\n" for n in cells))
    host = host_of(fleet, queue=queue)
    transport = transport_for(host)
    try:
        pulled = await pull_host(host, tmp_path, transport, options=fast())
        assert not pulled.failed, pulled.failed
        report = await verify_host(host, tmp_path, transport=None)
    finally:
        await transport.close()
    assert report.roster is not None
    assert report.roster.present == ("honest", "rotated", "folder")
    missing = dict(report.roster.missing)
    assert set(missing) == {"liar", "broke", "metrics_after"}
    assert f"says it saved {res}/metrics_after/ck1.pt, and the box held" in missing["metrics_after"]
    assert (
        "; also, line 2 of its log (.rgt/box-logs/cells/broke.log) says it saved "
        in (missing["broke"])
    ), missing["broke"]
    assert missing["liar"].startswith(
        f"line 6 of its log (.rgt/box-logs/cells/liar.log) says it saved {res}/liar/ck2.pt, "
        "and the box held no such file"
    ), missing
    # Offline, only the listing speaks: a save after it would look the same (s49 note).
    assert (
        "and the box held no such file when the pull listed it: the save failed"
        in (missing["liar"])
    )
    assert "or came after the listing — pull again to see which" in missing["liar"]
    assert "retry the cell or accept it as missing" in missing["liar"]
    assert not report.ok and "liar" in format_report(report)


async def test_a_saved_path_with_a_space_is_read_whole(make_loopback_fleet, tmp_path):
    """A cell named "your run" (its config "configs/your run.json") logged "saved
    checkpoint to /…/your run/ck.pt"; the claim was read up to the space, "/…/your", a
    file the box never held: a failed save said of a cell whose results were all there,
    locking the gate and autostop, and "retry the cell" would pay to redo them (h535 #1).
    One whose file is not there is still a failed save."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    logs = fleet.box("box1").root / ".rgt" / "queue" / "cells"
    logs.mkdir(parents=True)
    cells = {
        "your run": _cell(res, "your run", ["ck.pt"], ["ck.pt"]),
        "my liar": _cell(res, "my liar", ["ck0.pt", "ck1.pt"], ["ck0.pt"]),
    }
    for name, text in cells.items():
        (logs / f"{name}.log").write_text(text)
    queue = tmp_path / "queue.txt"
    queue.write_text("".join(f'"configs/{n}.yaml" train\n' for n in cells))
    host = host_of(fleet, queue=queue)
    transport = transport_for(host)
    try:
        pulled = await pull_host(host, tmp_path, transport, options=fast())
        assert not pulled.failed, pulled.failed
        report = await verify_host(host, tmp_path, transport=None)
    finally:
        await transport.close()
    assert report.roster is not None
    assert report.roster.present == ("your run",), report.roster
    (why,) = [w for n, w in report.roster.missing if n == "my liar"]
    assert f"says it saved {res}/my liar/ck1.pt, and the box held no such file" in why, why


async def test_a_run_whose_saves_all_lie_outside_the_pull_is_missing(make_loopback_fleet, tmp_path):
    """h522 #1: a run template without {out} saved into the workdir; the pull brought
    an earlier run's files of the same cell names, the roster matched them by name and
    the gate opened over them. With no {out} in the template, a log whose saves all lie
    outside every pull folder, a checkpoint under the workdir among them, now makes its
    cell missing. One save outside beside one inside (a cache, a tokenizer) changes
    nothing, nor does a save outside the workdir (/tmp, a cache), nor any of it with
    {out} in the template (review h524 #1, #2: a linked pull root read as outside)."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    logs = fleet.box("box1").root / ".rgt" / "queue" / "cells"
    logs.mkdir(parents=True)
    workdir = fleet.box("box1").root / "code" / "outputs"
    for name in ("stale", "mixed"):
        (res / name).mkdir(parents=True)
        torch.save({"w": torch.ones(2)}, res / name / "best.pt")  # an earlier run's
    (workdir / "stale").mkdir(parents=True)
    torch.save({"w": torch.ones(2)}, workdir / "stale" / "ckpt_001.pt")
    (logs / "stale.log").write_text(f"epoch 1\nsaved {workdir / 'stale' / 'ckpt_001.pt'}\n")
    (logs / "mixed.log").write_text(
        f"saved tokenizer to {fleet.box('box1').root / '.cache' / 'tok.json'}\n"
        f"saved checkpoint to {res / 'mixed' / 'best.pt'}\n"
    )
    (res / "scratch").mkdir(parents=True)
    torch.save({"w": torch.ones(2)}, res / "scratch" / "best.pt")
    (logs / "scratch.log").write_text(f"saved checkpoint to {tmp_path / 'scratch' / 'x.pt'}\n")
    queue = tmp_path / "queue.txt"
    queue.write_text("".join(f"configs/{n}.yaml train\n" for n in ("stale", "mixed", "scratch")))
    run = "python3 train.py --config {cfg}"  # no {out}
    host = host_of(fleet, queue=queue, run=run, workdir=str(workdir.parent))
    transport = transport_for(host)
    try:
        pulled = await pull_host(host, tmp_path, transport, options=fast())
        assert not pulled.failed, pulled.failed
        report = await verify_host(host, tmp_path, transport=None)
        with_out = dataclasses.replace(host, run=run + " --out {out}")
        placed = await verify_host(with_out, tmp_path, transport=None)
    finally:
        await transport.close()
    assert report.roster is not None and report.roster.present == ("mixed", "scratch")
    assert placed.roster is not None and placed.roster.present == ("stale", "mixed", "scratch")
    why = dict(report.roster.missing)["stale"]
    assert why.startswith(
        f"line 2 of its log (.rgt/box-logs/cells/stale.log) says it saved "
        f"{workdir}/stale/ckpt_001.pt, which is under no pull folder ("
    ), why
    assert "this run's results were not pulled — add that folder to the host's pull" in why


def test_the_last_claim_of_a_log_and_where_it_lands() -> None:
    text = (
        "saved /runs/a/ck1.pt\n"
        "copied /tmp/x.pt to /runs/a/final.pt.\n"  # the last path on the line, no dot
        "epoch 3: val 0.91 (see /runs/a/plot.png)\n"  # not a claim
        "Saving is disabled\n"  # a claim word without a path
    )
    claim = last_claim(text)
    assert claim is not None and (claim.line, claim.path) == (2, "/runs/a/final.pt")
    assert last_claim("epoch 1\nloss 0.3\n") is None


def test_the_last_claim_of_each_kind_of_file() -> None:
    from rgt_tui.domain.saved_claims import last_claims

    text = (
        "saved /r/c/e0.pt\nsaved /r/c/e1.pt\n"  # rotated: e1 is the one that must be there
        "Model weights saved in /r/c/hf/\n"
        "wrote /r/c/metrics.json\nsaved /r/c/e2.PT\n"
    )
    assert [(c.line, c.path) for c in last_claims(text)] == [
        (5, "/r/c/e2.PT"), (4, "/r/c/metrics.json"), (3, "/r/c/hf"),
    ]  # fmt: skip


def test_the_claimed_path_is_the_one_the_word_names() -> None:
    """Hour s23c #2, #3: the last path on the line was taken — the old checkpoint a
    keep-newest run removed ("saved A; removed old B"), or "/2" of "epoch 2/2", or a
    URL's tail, which left a false claim unchecked."""
    cases = {
        "saved /r/c/ckpt_2.json; removed old /r/c/ckpt_1.json": "/r/c/ckpt_2.json",
        "saved /r/c/ckpt_final.pt (epoch 2/2)": "/r/c/ckpt_final.pt",
        "saved /r/c/best.pt [12.3 it/s]": "/r/c/best.pt",
        "saved /r/c/x.pt, synced to https://wandb.ai/me/run/abc": "/r/c/x.pt",
        "Model weights saved in /r/c/hf/": "/r/c/hf",
        "wrote checkpoint into /r/c/step_9.pt.": "/r/c/step_9.pt",
    }
    for line, path in cases.items():
        claim = last_claim(line + "\n")
        assert claim is not None and claim.path == path, (line, claim)
    # A path with a space is read over it where the words go on as a path, and shown
    # so when they name a kind of file (h535 #1); the first reading is still asked of.
    spaced = last_claim("saved /r/my run/ck1.pt (epoch 3)\n")
    assert spaced is not None and spaced.path == "/r/my run/ck1.pt"
    assert spaced.candidates() == ["/r/my", "/r/my run/ck1.pt"]
    folder = last_claim("saved /r/c/hf to model.pt\n")
    assert folder is not None and folder.candidates()[0] == "/r/c/hf"
    for line in ("epoch 2/2 saved", "saved to ./rel/ckpt.pt", "saved 12.3 it/s"):
        assert last_claim(line) is None, line


async def test_a_save_after_the_listing_is_a_pull_away_and_a_failed_one_never_passes(
    make_loopback_fleet, tmp_path
):
    """h491 #4: a periodic pull while a cell ran said "the save failed — retry the cell"
    of a cell that saved (and ended with exit 0) between the pull's listing and its fetch
    of the logs. A file the re-scan finds on the box now is a pull away. A cell that ran
    at the pull and whose claimed file the box does not hold stays missing (review h492
    #1: skipped, a save that never happened passed)."""
    import time

    from rgt_tui.services.result_code import CellCode, ResultCode, save_result_code

    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    logs = fleet.box("box1").root / ".rgt" / "queue" / "cells"
    logs.mkdir(parents=True)
    (logs / "late.log").write_text(_cell(res, "late", ["ck0.pt", "ck1.pt"], ["ck0.pt"]))
    (logs / "ran.log").write_text(_cell(res, "ran", ["a.pt", "b.pt"], ["a.pt"]))
    queue = tmp_path / "queue.txt"
    queue.write_text("configs/late.yaml train\nconfigs/ran.yaml train\n")
    host = host_of(fleet, queue=queue)
    transport = transport_for(host)
    try:
        pulled = await pull_host(host, tmp_path, transport, options=fast())
        assert not pulled.failed, pulled.failed
        # ran was running when the pull read the box's queue (its record, as a pull keeps it).
        cells = (CellCode("late", "done", None), CellCode("ran", "running", None))
        save_result_code(tmp_path / "box1", ResultCode(time.time(), cells))
        torch.save({"w": torch.ones(2)}, res / "late" / "ck1.pt")  # saved after the listing
        report = await verify_host(host, tmp_path, transport=transport)
    finally:
        await transport.close()
    assert report.roster is not None and report.roster.present == ()
    missing = dict(report.roster.missing)
    assert missing["late"] == (
        f"line 4 of its log (.rgt/box-logs/cells/late.log) says it saved {res}/late/ck1.pt, "
        "which the box holds now but did not when the pull listed it — pull again"
    ), missing
    # b.pt is not on the box, re-scanned: a failed save, whatever ran at the pull.
    assert "and the box held no such file: the save failed" in missing["ran"], missing

    # Offline, by the pull's record: running then, so missing by its state.
    offline = await verify_host(host, tmp_path, transport=None)
    assert offline.roster is not None and "ran" not in offline.roster.present
    assert dict(offline.roster.missing)["ran"] == "running: counted once it is done"


async def test_a_log_over_the_pulls_cap_is_checked_by_its_end(make_loopback_fleet, tmp_path):
    """h511 #3: a cell log grown past the cap of logs a pull brings stays on the box, and
    verify checked the claim of the copy an earlier pull had left (its older, true
    "saved"), so a last save that never happened passed. The log's end is now read at
    each pull and checked instead. The log here is sparse: 256 MiB of nothing, on disk
    a few blocks."""
    from rgt_tui.services.pull.box_logs import MAX_BYTES

    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    logs = fleet.box("box1").root / ".rgt" / "queue" / "cells"
    logs.mkdir(parents=True)
    log = logs / "big.log"
    log.write_text(_cell(res, "big", ["ck0.pt"], ["ck0.pt"]))
    queue = tmp_path / "queue.txt"
    queue.write_text("configs/big.yaml train\n")
    host = host_of(fleet, queue=queue)
    transport = transport_for(host)
    try:
        first = await pull_host(host, tmp_path, transport, options=fast())
        assert not first.failed, first.failed
        ok = await verify_host(host, tmp_path, transport=None)
        assert ok.roster is not None and ok.roster.present == ("big",)
        # Grown past the cap (sparse), its last line a save that failed.
        os.truncate(log, MAX_BYTES + (1 << 20))
        with log.open("a") as f:
            f.write(f"\nsaved checkpoint to {res / 'big' / 'ckpt_final.pt'}\n")
        again = await pull_host(host, tmp_path, transport, options=fast())
        assert not again.failed, again.failed
        assert again.box_logs is not None and "cells/big.log" in again.box_logs.note
        report = await verify_host(host, tmp_path, transport=None)
        # An unchanged log's end is not read again at the next pull (review h514 #9).
        tail = tmp_path / "box1" / ".rgt" / "box-logs" / "cells" / "big.log.tail"
        written = tail.stat().st_ino  # a tail read again lands by rename: a new inode
        await pull_host(host, tmp_path, transport, options=fast())
        assert tail.stat().st_ino == written and tail.stat().st_size == 512 << 10
        # Its end not read at a pull (the pull writes why): no older copy stands for it,
        # the cell is missing (review h516 #7).
        tail.with_name("big.log.unread").write_text("permission denied on box1")
        unread = await verify_host(host, tmp_path, transport=None)
    finally:
        await transport.close()
    assert report.roster is not None and report.roster.present == ()
    assert unread.roster is not None and "big" not in unread.roster.present
    assert (
        "could not be read at the last pull (permission denied on box1)"
        in (dict(unread.roster.missing)["big"])
    )
    why = dict(report.roster.missing)["big"]
    assert why.startswith(
        f"the end of its log (.rgt/box-logs/cells/big.log.tail) says it saved "
        f"{res}/big/ckpt_final.pt, and the box held no such file"
    ), why


def test_a_workdir_as_the_fleet_file_writes_it_holds_a_claim() -> None:
    """The home is not known where claims are read: ``~/proj`` matches by what follows
    it; the home or the root as a workdir never holds every path."""
    from rgt_tui.services.verify.claims import under_workdir

    assert under_workdir("/root/proj/outputs/a/ck.pt", "~/proj")
    assert under_workdir("/home/u/proj/outputs/a/ck.pt", "$HOME/proj/")
    assert under_workdir("/gpfs/home/u/proj/a/ck.pt", "~/proj", ("/gpfs/home/u",))
    # A folder of that name elsewhere is not the home's (review h526 #2).
    assert not under_workdir("/mnt/shared/proj/ckpt/last.pt", "~/proj")
    assert not under_workdir("/home/proj/x.pt", "~/proj")
    assert under_workdir("/workspace/code/out/ck.pt", "/workspace/code")
    assert not under_workdir("/workspace/code2/out/ck.pt", "/workspace/code")
    assert not under_workdir("/root/.cache/ck.pt", "~")
    assert not under_workdir("/tmp/ck.pt", "/")
    assert not under_workdir("/tmp/ck.pt", None)
