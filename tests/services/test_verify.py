"""Verify over loopback boxes: real pulls of real checkpoints, each problem named.

One service, one file: every case starts from the same real pull of real checkpoints.

Over 450 lines: one subject (verify over real loopback pulls), its tests sharing the
fixtures above; split by a second subject when one comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import pickle
import re
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from unittest import mock

import pytest
import torch
from support.pulls import box_results, fast, host_of

from rgt_tui.services.pull import pull_host
from rgt_tui.services.records import (
    load_manifest,
    load_verification,
    save_manifest,
    verification_path,
)
from rgt_tui.services.verify import run as verify
from rgt_tui.services.verify.loader import LoaderLimits, VerifyLoader
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import transport_for


@pytest.fixture(scope="session")
def python_without_torch(tmp_path_factory) -> str:
    """A fresh venv's interpreter: the standard library only, no torch, no rgt_tui."""
    venv = tmp_path_factory.mktemp("venv") / "notorch"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    probe = subprocess.run([python, "-c", "import torch"], capture_output=True)
    assert probe.returncode != 0, "the venv's base interpreter has torch; these tests need none"
    return python


@pytest.fixture
def one_file_at_a_time(monkeypatch):
    """Files checked in name order, so those after a failing one show the run went on."""
    monkeypatch.setattr(verify, "VERIFY_CONCURRENCY", 1)


class Payload:
    """Unpickling this would run a shell command (it must never be unpickled)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def safetensors_bytes(tensors: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


async def pull_and_verify(
    fleet, tmp_path, *, offline=False, python=None, limits=None, **host_changes
):
    host = host_of(fleet, **host_changes)
    transport = transport_for(host)
    try:
        pulled = await pull_host(host, tmp_path, transport, options=fast())
        # An empty result set, or a file refused on the box, is a pull that is not ok
        # (not complete); verify says so too. Nothing that was listed failed to come.
        assert not pulled.failed and not pulled.conflicts, pulled.failed
        report = await verify_host(
            host,
            tmp_path,
            transport=None if offline else transport,
            python=python,
            limits=limits,
        )
    finally:
        await transport.close()
    return report


def write_good_cells(res: Path) -> None:
    (res / "baseline").mkdir(parents=True)
    torch.save({"model": {"w": torch.randn(8, 4)}, "epoch": 3}, res / "baseline" / "best.pt")
    torch.save(
        {"w": torch.ones(3)}, res / "baseline" / "old.pth", _use_new_zipfile_serialization=False
    )
    (res / "no_aug").mkdir()
    (res / "no_aug" / "model.safetensors").write_bytes(
        safetensors_bytes({"a": ("F32", [2, 2], b"\0" * 16), "b": ("BF16", [3], b"\1" * 6)})
    )
    (res / "no_aug" / "metrics.jsonl").write_text('{"step": 1}\n\n{"step": 2}\n')
    (res / "summary.json").write_text('{"acc": 0.91}')
    (res / "curves.csv").write_text("step,loss\n1,0.5\n")
    # Not a torch file: checked by hash only. A fixed first byte: random bytes start like
    # a pickle (0x80) or a zip one run in a few hundred, and then rightly count as torch.
    (res / "raw.bin").write_bytes(b"RAW" + os.urandom(4997))


async def test_good_results_verify_and_the_record_says_so(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    write_good_cells(box_results(fleet))
    queue = tmp_path / "queue.txt"
    queue.write_text("# sweep\nconfigs/baseline.yaml train 3\nconfigs/no_aug.yaml train\n")

    report = await pull_and_verify(fleet, tmp_path, queue=queue)

    statuses = {c.path: c.status for c in report.checks}
    assert statuses == {
        "baseline/best.pt": "verified", "baseline/old.pth": "verified",
        "no_aug/model.safetensors": "verified", "no_aug/metrics.jsonl": "verified",
        "summary.json": "verified", "curves.csv": "hash-only", "raw.bin": "hash-only",
    }  # fmt: skip
    assert report.ok, report.problems
    assert report.remote_checked and report.roster is not None
    assert report.roster.present == ("baseline", "no_aug") and report.roster.complete
    record = json.loads(verification_path(tmp_path / "box1").read_text())
    assert load_verification(tmp_path / "box1") == record
    assert record["ok"] is True and record["counts"] == {"verified": 5, "hash-only": 2}
    # Which torch loaded the checkpoints, and under which interpreter, is on record.
    assert report.loader is not None and report.loader.torch == torch.__version__
    assert report.loader.python == sys.executable and report.loader.starts == 1
    assert record["loader"]["torch"] == torch.__version__
    assert record["loader"]["python"] == sys.executable
    assert record["manifest"]["digest"] == report.manifest.digest
    assert not list((tmp_path / "box1" / ".rgt").glob("*.tmp"))  # written via tmp → rename


async def test_a_part_of_a_file_gone_from_the_box_goes_with_the_next_pull(
    make_loopback_fleet, tmp_path
):
    """h591 #2: a pull cut short left the part of a checkpoint the box deleted since (a
    run's rotation); every verify flagged it "left by an interrupted pull — re-run the
    pull", and no pull ever removed it: the gate stayed locked for good."""
    fleet = await make_loopback_fleet(1)
    write_good_cells(box_results(fleet))
    parts = tmp_path / "box1" / ".rgt" / "parts" / "baseline"
    parts.mkdir(parents=True)
    (parts / "step_100.pt.part").write_bytes(b"x" * 4096)  # its file rotated away since
    report = await pull_and_verify(fleet, tmp_path)
    assert report.ok, report.problems
    assert not (parts / "step_100.pt.part").exists()


async def test_each_bad_file_is_flagged_by_name(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    torch.save({"w": torch.randn(64, 64)}, res / "whole.pt")
    data = (res / "whole.pt").read_bytes()
    (res / "truncated.pt").write_bytes(data[: len(data) // 2])
    (res / "empty.ckpt").write_bytes(b"")
    (res / "latest.pth.tmp").write_bytes(b"half a save")
    (res / "broken.json").write_text('{"acc": 0.9')
    (res / "log.jsonl").write_text('{"ok": 1}\nnot json\n')
    bad_offsets = safetensors_bytes({"a": ("F32", [4], b"\0" * 16)})[:-4]  # cut short
    (res / "cut.safetensors").write_bytes(bad_offsets)
    os.symlink(tmp_path, res / "outside")  # leaves the pull root: refused, not followed

    report = await pull_and_verify(fleet, tmp_path)
    assert not report.ok
    statuses = {c.path: (c.status, c.detail) for c in report.checks}
    assert statuses["whole.pt"][0] == "verified"
    assert statuses["truncated.pt"][0] == "corrupt"
    assert statuses["empty.ckpt"][0] == "corrupt"
    assert statuses["broken.json"][0] == "corrupt" and "invalid JSON" in statuses["broken.json"][1]
    assert statuses["log.jsonl"][0] == "corrupt" and "line 2" in statuses["log.jsonl"][1]
    assert statuses["cut.safetensors"][0] == "corrupt"
    flags = {(f.kind, f.path) for f in report.flags}
    assert ("empty", "empty.ckpt") in flags and ("leftover", "latest.pth.tmp") in flags
    assert any(kind == "refused" and path.endswith("/outside") for kind, path in flags)
    text = "\n".join(report.problems)
    for name in (
        "truncated.pt",
        "empty.ckpt",
        "latest.pth.tmp",
        "broken.json",
        "log.jsonl",
        "cut.safetensors",
    ):
        assert name in text

    # A local copy damaged after the pull no longer matches the manifest's hash.
    (tmp_path / "box1" / "whole.pt").write_bytes(data[:-1] + b"X")
    again = await verify_host(host_of(fleet), tmp_path)
    (whole,) = [c for c in again.checks if c.path == "whole.pt"]
    assert whole.status == "corrupt" and "SHA-256 differs" in whole.detail
    # Its fix is what works: the pull never writes over it ("pull it again" looped
    # against the pull's CONFLICT: hour s19a #5).
    assert "this copy is not the box's" in whole.detail
    assert "and a pull never writes over it" in whole.detail
    assert f"mv {tmp_path / 'box1' / 'whole.pt'} {tmp_path / 'box1' / 'whole.pt'}.mine" in (
        whole.detail
    )
    assert "pull it again" not in whole.detail

    # A folder or a link where a file lands: the pull's CONFLICT, said alike, never
    # "run rgt-tui pull", which cannot settle it (hour s34 CLI #7).
    (tmp_path / "box1" / "whole.pt").unlink()
    (tmp_path / "box1" / "whole.pt").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "box1" / "broken.json.tmp")
    (tmp_path / "box1" / "broken.json").unlink()
    os.rename(tmp_path / "box1" / "broken.json.tmp", tmp_path / "box1" / "broken.json")
    third = {c.path: c for c in (await verify_host(host_of(fleet), tmp_path)).checks}
    for name, what in (("whole.pt", "a folder"), ("broken.json", "a link")):
        assert third[name].status == "missing", third[name]
        assert third[name].detail.startswith(f"{what} is in the way here, and a pull never "), (
            third[name].detail
        )
        assert "run `rgt-tui pull`" not in third[name].detail


async def test_checkpoint_that_would_run_code_is_unsafe_and_never_runs(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    marker = tmp_path / "MARKER"
    torch.save({"w": torch.zeros(2), "hook": Payload(marker)}, res / "evil.pt")
    # A plain pickle (no zip container): what old torch.save and pickle.dump write.
    (res / "evil_legacy.ckpt").write_bytes(pickle.dumps({"state": Payload(marker)}, protocol=2))
    (res / "evil.bin").write_bytes((res / "evil_legacy.ckpt").read_bytes())

    report = await pull_and_verify(fleet, tmp_path)

    statuses = {c.path: c for c in report.checks}
    for name in ("evil.pt", "evil_legacy.ckpt", "evil.bin"):
        assert statuses[name].status == "unsafe", statuses[name]
        assert "not executed" in statuses[name].detail and "system" in statuses[name].detail
    assert not report.ok and not marker.exists()


async def test_remote_change_after_the_manifest_is_detected(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "metrics.json").write_text('{"acc": 0.5}')
    torch.save({"w": torch.ones(2)}, res / "best.pt")
    host = host_of(fleet)
    transport = transport_for(host)
    try:
        assert (await pull_host(host, tmp_path, transport, options=fast())).ok
        (res / "metrics.json").write_text('{"acc": 0.7}')  # the run wrote again
        (res / "late.pt").write_bytes(b"new")
        report = await verify_host(host, tmp_path, transport=transport)
    finally:
        await transport.close()
    flags = {f.kind: f.path for f in report.flags}
    assert flags["remote-changed"].endswith("results/metrics.json")
    assert flags["remote-added"].endswith("results/late.pt")
    assert not report.ok and any("metrics.json: remote-changed" in p for p in report.problems)
    # Each with its next step (h591 #5: "changed on the box since the manifest", no fix).
    why = {f.kind: f.detail for f in report.flags}
    assert "pull again for the box's version" in why["remote-changed"]
    assert "set aside in .rgt/replaced/" in why["remote-changed"]
    assert why["remote-added"].endswith("pull again, then verify")
    offline = await verify_host(host, tmp_path)  # no transport: local checks only
    assert offline.ok and not offline.remote_checked


async def test_verify_python_without_torch_never_calls_a_checkpoint_verified(
    make_loopback_fleet, tmp_path, python_without_torch
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    torch.save({"w": torch.ones(2)}, res / "best.pt")
    (res / "metrics.json").write_text('{"acc": 0.5}')
    report = await pull_and_verify(fleet, tmp_path, offline=True, python=python_without_torch)
    checks = {c.path: c for c in report.checks}
    best = checks["best.pt"]
    assert best.status == "not-verified" and f"no torch in {python_without_torch}" in best.detail
    assert "verify_python" in best.detail and "torch>=2.6" in best.detail  # the fix
    assert checks["metrics.json"].status == "verified"  # JSON needs no torch
    assert not report.ok and any("best.pt" in p for p in report.problems)
    assert report.loader is not None and report.loader.python == python_without_torch
    assert report.loader.torch is None and "no torch" in report.loader.torch_problem


async def test_torch_older_than_2_6_is_refused_and_never_loads(
    make_loopback_fleet, tmp_path, python_without_torch, monkeypatch
):
    fleet = await make_loopback_fleet(1)
    torch.save({"w": torch.ones(2)}, box_results(fleet) / "best.pt")
    marker = tmp_path / "MARKER"
    fake = tmp_path / "old_torch" / "torch"
    fake.mkdir(parents=True)
    # A torch 2.5.1 whose load would leave a mark: loading with it must never happen.
    (fake / "__init__.py").write_text(
        f'__version__ = "2.5.1"\ndef load(*a, **k):\n    open({str(marker)!r}, "w").close()\n'
    )
    monkeypatch.setenv("PYTHONPATH", str(fake.parent))
    report = await pull_and_verify(fleet, tmp_path, offline=True, python=python_without_torch)
    (check,) = report.checks
    assert check.status == "not-verified" and "2.5.1 is older than 2.6" in check.detail
    assert "CVE-2025-32434" in check.detail and "verify_python" in check.detail
    assert report.loader.torch == "2.5.1" and not marker.exists()


async def test_a_checkpoint_over_the_memory_limit_fails_that_file_only(
    make_loopback_fleet, tmp_path, one_file_at_a_time
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    # 32 MiB of tensor in the old format, which is read into memory, not mapped.
    torch.save({"w": torch.zeros(8 << 20)}, res / "huge.pt", _use_new_zipfile_serialization=False)
    torch.save({"w": torch.ones(4)}, res / "small.pt")
    (res / "metrics.json").write_text('{"acc": 0.5}')
    limits = LoaderLimits(memory_bytes=16 << 20)
    report = await pull_and_verify(fleet, tmp_path, offline=True, limits=limits)
    checks = {c.path: c for c in report.checks}
    huge = checks["huge.pt"]
    assert huge.status == "not-verified" and "killed: over the memory limit" in huge.detail
    assert checks["small.pt"].status == "verified" and checks["metrics.json"].status == "verified"
    assert report.loader.starts == 2  # a fresh loader after the one that hit the limit
    assert report.problems == (f"huge.pt: not-verified — {huge.detail}",)


async def test_a_load_past_its_time_limit_fails_that_file_only(
    make_loopback_fleet, tmp_path, one_file_at_a_time
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    # A legal checkpoint that takes torch's pure-Python weights_only unpickler seconds.
    torch.save([1] * 3_000_000, res / "slow.pt")
    torch.save({"w": torch.ones(4)}, res / "small.pt")
    (res / "metrics.jsonl").write_text('{"step": 1}\n')
    limits = LoaderLimits(timeout_s=0.4)
    report = await pull_and_verify(fleet, tmp_path, offline=True, limits=limits)
    checks = {c.path: c for c in report.checks}
    assert checks["slow.pt"].status == "not-verified"
    assert "timed out after 0.4 s" in checks["slow.pt"].detail
    assert checks["small.pt"].status == "verified" and checks["metrics.jsonl"].status == "verified"
    assert report.loader.starts == 2 and not report.ok


async def test_deeply_nested_json_is_named_unverifiable_and_verify_goes_on(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    deep = "[" * 100_000 + "]" * 100_000
    (res / "deep.json").write_text(deep)
    (res / "deep.jsonl").write_text('{"step": 1}\n' + deep + "\n")
    header = json.dumps({"a": "PLACEHOLDER"}).replace('"PLACEHOLDER"', deep).encode()
    (res / "deep.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    (res / "fine.json").write_text('{"acc": 0.5}')
    torch.save({"w": torch.ones(4)}, res / "best.pt")
    report = await pull_and_verify(fleet, tmp_path, offline=True)
    checks = {c.path: c for c in report.checks}
    for name in ("deep.json", "deep.jsonl", "deep.safetensors"):
        assert checks[name].status == "not-verified", checks[name]
        assert "unverifiable" in checks[name].detail and "nested deeper" in checks[name].detail
        assert any(p.startswith(f"{name}: ") for p in report.problems)
    assert "line 2" in checks["deep.jsonl"].detail
    assert checks["fine.json"].status == "verified" and checks["best.pt"].status == "verified"


async def test_an_entry_the_manifest_did_not_hash_is_never_verified(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "summary.json").write_text('{"acc": 0.91}')
    (res / "notes.txt").write_text("fine")
    assert (await pull_and_verify(fleet, tmp_path, offline=True)).ok
    folder = tmp_path / "box1"
    manifest = load_manifest(folder)
    entries = tuple(
        dataclasses.replace(e, sha256=None) if e.path.endswith("summary.json") else e
        for e in manifest.entries
    )
    save_manifest(folder, dataclasses.replace(manifest, entries=entries))
    report = await verify_host(host_of(fleet), tmp_path)
    checks = {c.path: c for c in report.checks}
    assert checks["summary.json"].status == "not-verified"
    assert "no SHA-256" in checks["summary.json"].detail
    assert checks["notes.txt"].status == "hash-only"
    assert not report.ok and report.problems[0].startswith("summary.json: not-verified")
    record = load_verification(folder)
    (entry,) = [c for c in record["checks"] if c["path"] == "summary.json"]
    assert entry["ok"] is False and record["ok"] is False


async def test_an_earlier_pulls_copy_is_said_as_such_not_changed_here(
    make_loopback_fleet, tmp_path
):
    """The box rewrote a file after a pull brought it, and the last pull could not bring
    the new one (rewritten while it came): the newest manifest lists the box's new file,
    and the copy here is the earlier pull's, which the next pull replaces. Verify told
    the user it was "not the box's (changed here …)" and to move it away (h533 #2)."""
    fleet = await make_loopback_fleet(1)
    (box_results(fleet) / "summary.json").write_text('{"acc": 0.91}')
    assert (await pull_and_verify(fleet, tmp_path, offline=True)).ok
    folder = tmp_path / "box1"
    manifest = load_manifest(folder)
    newer = tuple(
        dataclasses.replace(e, sha256="ab" * 32, size=e.size + 5)
        if e.path.endswith("summary.json")
        else e
        for e in manifest.entries
    )
    save_manifest(folder, dataclasses.replace(manifest, entries=newer))
    (check,) = (await verify_host(host_of(fleet), tmp_path)).checks
    assert check.status == "corrupt", check
    assert "this copy is an earlier pull's, and the box's file changed since" in check.detail
    assert "pull again (once the run stops rewriting it, if it still runs)" in check.detail
    assert "mv " not in check.detail and "not the box's" not in check.detail
    # Changed here since (the record no longer vouches for it): move it away, as before.
    (folder / "summary.json").write_text('{"acc": 0.99}')
    (check,) = (await verify_host(host_of(fleet), tmp_path)).checks
    assert "this copy is not the box's" in check.detail and "mv " in check.detail
    # Gone here: the command names the host, as pasted (h535 #4: "`rgt-tui pull` for …"
    # was refused as "name one HOST").
    (folder / "summary.json").unlink()
    (check,) = (await verify_host(host_of(fleet), tmp_path)).checks
    assert check.status == "missing" and "run `rgt-tui pull box1` (it brings " in check.detail


async def test_an_empty_marker_file_is_no_problem(make_loopback_fleet, tmp_path):
    """Hour s25a #4: a zero-byte `_SUCCESS` was "empty — zero-byte file", a problem no
    acknowledgement covers, so the gate stayed locked until it was deleted on the box.
    A marker's emptiness is its content; an empty file named like a result still is one."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "metrics.json").write_text('{"acc": 0.9}')
    for marker in ("_SUCCESS", ".gitkeep", "train.done"):
        (res / marker).write_bytes(b"")
    report = await pull_and_verify(fleet, tmp_path)
    assert report.ok, report.problems
    assert not [f for f in report.flags if f.kind == "empty"]
    (res / "eval.csv").write_bytes(b"")  # a save that wrote nothing
    (res / "latest").write_bytes(b"")  # DeepSpeed's pointer: no suffix, still a save
    report = await pull_and_verify(fleet, tmp_path)
    empty = sorted(f.path for f in report.flags if f.kind == "empty")
    assert not report.ok and empty == ["eval.csv", "latest"], empty
    assert any("eval.csv" in p and "save it again on the box" in p for p in report.problems)


async def test_empty_result_set_is_refused_as_success(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    report = await pull_and_verify(fleet, tmp_path)
    assert not report.ok and report.checks == ()
    assert "nothing to verify" in report.problems[0] and "never a success" in report.problems[0]
    nothing = await verify_host(host_of(fleet), tmp_path / "elsewhere")
    assert not nothing.ok and "run `rgt-tui pull box1`" in nothing.problems[0]


async def test_cells_without_results_are_listed_by_name(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "seed1").mkdir()
    torch.save({"w": torch.ones(1)}, res / "seed1" / "best.pt")
    (res / "seed2").mkdir()
    (res / "seed2" / "train.log").write_text("saved checkpoint!\n")  # a claim, not an artifact
    report = await pull_and_verify(
        fleet, tmp_path, offline=True, queue=_queue(tmp_path, ["seed1", "seed2", "seed3"])
    )
    assert report.roster is not None and report.roster.present == ("seed1",)
    missing = dict(report.roster.missing)
    assert set(missing) == {"seed2", "seed3"}
    assert "no output directory" in missing["seed3"] and "none loaded" in missing["seed2"]
    assert not report.ok and any("cell seed3 missing" in p for p in report.problems)
    # Each missing cell is listed once: under the roster, not again among the problems.
    from rgt_tui.content.pull_view import verify_lines
    from rgt_tui.services.verify.report import format_report

    cli = format_report(report)
    tui = "\n".join(line.plain for line in verify_lines(report))
    # The files' count says it is one, not the verdict (hour s24a #13).
    assert any(ln.startswith(f"{report.host}: files: ") for ln in cli.splitlines()), cli
    for text in (cli, tui):
        lines = text.splitlines()
        assert sum("seed3" in ln for ln in lines) == 1, text
        assert sum("seed2" in ln and "missing" in ln for ln in lines) == 1, text
        # Its problems are the roster's lines above: said, not an empty verdict (the
        # Pulls tab's "NOT VERIFIED: 2 problems" had nothing under it: a user's hour).
        assert lines[-1].endswith("problems (the roster's cells above)"), text


async def test_cli_verify_json_and_exit_codes(
    make_loopback_fleet, tmp_path, capsys, python_without_torch
):
    from rgt_tui.cli import main

    fleet = await make_loopback_fleet(1)
    torch.save({"w": torch.ones(1)}, box_results(fleet) / "best.pt")
    hosts = tmp_path / "hosts.toml"
    text = fleet.hosts_file.read_text()  # noqa: ASYNC240
    hosts.write_text(f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n\n{text}')  # noqa: ASYNC240
    assert await asyncio.to_thread(main, ["pull", "box1", "--hosts", str(hosts)]) == 0
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["verify", "box1", "--hosts", str(hosts), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["ok"] and record["checks"][0]["status"] == "verified"
    assert record["loader"]["torch"] == torch.__version__
    assert await asyncio.to_thread(main, ["verify", "box1", "--hosts", str(hosts)]) == 0
    out = capsys.readouterr().out
    assert f"loaded with: torch {torch.__version__} — {sys.executable} (Python " in out
    # [fleet] verify_python names the interpreter; one without torch loads no checkpoint.
    other = tmp_path / "other.toml"
    other.write_text(  # noqa: ASYNC240
        f'[fleet]\nresults_dir = "{tmp_path / "res"}"\nverify_python = "{python_without_torch}"'
        f"\n\n{text}"
    )
    assert await asyncio.to_thread(main, ["verify", "box1", "--hosts", str(other)]) == 1
    out = capsys.readouterr().out
    assert f"no torch in {python_without_torch}" in out and "verify_python" in out
    assert "NOT VERIFIED" in out
    parts = tmp_path / "res" / "box1" / ".rgt" / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    (parts / "half.pt.part").write_bytes(b"x")  # an interrupted pull's part
    assert await asyncio.to_thread(main, ["verify", "box1", "--hosts", str(hosts)]) == 1
    out = capsys.readouterr().out
    assert ".rgt/parts/half.pt.part" in out and "NOT VERIFIED" in out
    (parts / "half.pt.part").unlink()
    (tmp_path / "res" / "box1" / "stray.part").write_bytes(b"x")  # an older version's part
    assert await asyncio.to_thread(main, ["verify", "box1", "--hosts", str(hosts)]) == 1
    out = capsys.readouterr().out
    assert "stray.part" in out and "NOT VERIFIED" in out


def _queue(tmp_path: Path, names: list[str]) -> Path:
    path = tmp_path / "queue.txt"
    path.write_text("".join(f"configs/{n}.yaml train\n" for n in names))
    return path


def test_a_small_file_claiming_gigabytes_is_stopped_by_the_default_limit(tmp_path):
    hostile, small = tmp_path / "hostile.pt", tmp_path / "small.pt"
    # An old-format checkpoint of 370 bytes whose pickle claims an 8 GiB storage: torch
    # allocates what the file says before reading it.
    with mock.patch.object(torch.UntypedStorage, "nbytes", lambda self: 8 << 30):
        torch.save({"w": torch.ones(4)}, hostile, _use_new_zipfile_serialization=False)
    torch.save({"w": torch.ones(2)}, small)
    with VerifyLoader() as loader:  # default limits: 1 GiB plus twice the file's size
        status, detail = loader.check("torch", hostile, hostile.stat().st_size)
        # Damaged, not "raise the limit": no 370-byte checkpoint needs a gigabyte (random
        # bytes named .pt read so, now and then: a CI run).
        assert status == "corrupt" and "no checkpoint that size needs" in detail, detail
        assert re.search(r"asked for more than 1\.0G while loading a 3\d\dB file", detail), detail
        assert loader.check("torch", small, small.stat().st_size)[0] == "verified"
        assert loader.info.starts == 2


def test_a_loader_killed_mid_load_fails_that_file_and_the_next_gets_a_fresh_one(tmp_path):
    slow, small = tmp_path / "slow.pt", tmp_path / "small.pt"
    torch.save([1] * 3_000_000, slow)  # seconds of pure-Python unpickling
    torch.save({"w": torch.ones(2)}, small)

    def in_background(loader: VerifyLoader) -> tuple[threading.Thread, dict]:
        answer: dict = {}
        thread = threading.Thread(
            target=lambda: answer.update(r=loader.check("torch", slow, slow.stat().st_size))
        )
        thread.start()
        time.sleep(0.3)  # the worker is busy with slow.pt now
        return thread, answer

    with VerifyLoader() as loader:
        assert loader.check("torch", small, small.stat().st_size)[0] == "verified"
        first = loader.pid
        thread, answer = in_background(loader)
        os.kill(first, signal.SIGKILL)  # as the kernel's out-of-memory killer would
        thread.join(30)
        status, detail = answer["r"]
        assert status == "not-verified" and "killed (SIGKILL; out of memory?)" in detail
        assert loader.check("torch", small, small.stat().st_size)[0] == "verified"
        assert loader.pid != first and loader.info.starts == 2

        # Stopping verify (the TUI quitting) stops a load in flight at once: in well under
        # the time the whole load takes, timed here (a busy machine slows both alike).
        started = time.monotonic()
        loader.check("torch", slow, slow.stat().st_size)
        whole_load = time.monotonic() - started
        thread, answer = in_background(loader)
        started = time.monotonic()
        loader.close()
        thread.join(30)
        stopped_in = time.monotonic() - started
        assert stopped_in < whole_load / 2, (stopped_in, whole_load)
        assert answer["r"] == ("not-verified", "not verified: verify was stopped")


@pytest.fixture(autouse=True)
def _no_stray_markers(tmp_path):
    yield
    assert not (tmp_path / "MARKER").exists()


async def test_the_report_says_the_box_was_not_rescanned_only_when_that_is_news(
    make_loopback_fleet, tmp_path
):
    from rgt_tui.content.pull_view import verify_lines
    from rgt_tui.services.verify.report import format_report

    def tui(report) -> str:
        return "\n".join(line.plain for line in verify_lines(report))

    fleet = await make_loopback_fleet(1)
    (box_results(fleet) / "metrics.json").write_text('{"acc": 0.5}')
    host = host_of(fleet)
    nothing = await verify_host(host, tmp_path / "empty", transport=transport_for(host))
    # Nothing pulled: no manifest was looked at, so neither a roster nor a re-scan to speak of.
    for text in (format_report(nothing), tui(nothing)):
        assert "no manifest" in text and "roster" not in text and "re-scanned" not in text
    transport = transport_for(host)
    try:
        assert (await pull_host(host, tmp_path, transport, options=fast())).ok
        await fleet.box("box1").stop()  # the box goes away before the re-scan
        unreachable = await verify_host(host, tmp_path, transport=transport)
    finally:
        await transport.close()
    # A re-scan that could not reach the box says why, once, and not that it was offline.
    assert [f.kind for f in unreachable.flags] == ["not-rechecked"]
    for text in (format_report(unreachable), tui(unreachable)):
        assert "could not re-scan the box" in text and "re-scanned for changes" not in text
    offline = await verify_host(host, tmp_path)  # asked for no re-scan (--offline)
    assert offline.ok and "no queue file" in format_report(offline)
    assert "not re-scanned for changes since the manifest (offline)" in format_report(offline)
    assert "not re-scanned for changes" in tui(offline)


async def test_secrets_skipped_by_rule_are_shown_and_never_a_problem(make_loopback_fleet, tmp_path):
    """``pull = ["~"]`` chosen on purpose: .ssh is skipped by rule, never read or pulled,
    listed as skipped — and the rest verifies, so the gate is not locked by the rule."""
    fleet = await make_loopback_fleet(1)
    home = fleet.box("box1").root
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    write_good_cells(box_results(fleet))
    report = await pull_and_verify(fleet, tmp_path, pull=(str(home),))
    skipped = [f for f in report.flags if f.kind == "skipped"]
    assert skipped and all("skipped by rule: " in f.detail for f in skipped)  # .rgt too
    assert any(f.path.endswith("/.ssh") and "secret (.ssh)" in f.detail for f in skipped)
    assert not any(".ssh" in p for p in report.problems), report.problems
    assert not list((tmp_path / "box1").rglob("id_ed25519"))


async def test_a_secret_written_after_the_pull_is_skipped_by_the_rescan_not_a_problem(
    make_loopback_fleet, tmp_path
):
    """A .netrc the box gained after the pull: the re-scan skips it by the secret rule, and
    verify shows it skipped, as the teardown gate's re-scan takes it (no change, no lock)."""
    fleet = await make_loopback_fleet(1)
    home = fleet.box("box1").root
    write_good_cells(box_results(fleet))
    host = host_of(fleet, pull=(str(home),))
    transport = transport_for(host)
    try:
        pulled = await pull_host(host, tmp_path, transport, options=fast())
        assert pulled.ok, pulled.failed
        (home / ".netrc").write_text("machine x login u password p\n")
        report = await verify_host(host, tmp_path, transport=transport)
    finally:
        await transport.close()
    [netrc] = [f for f in report.flags if ".netrc" in f.path]
    assert netrc.kind == "skipped" and "skipped by rule: secret" in netrc.detail
    assert not any(".netrc" in p for p in report.problems), report.problems


async def test_the_box_own_rgt_records_are_skipped_in_any_root_that_holds_them(
    make_loopback_fleet, tmp_path
):
    """The box's own ``~/.rgt`` (its queue, logs, scripts, box id) under a pull root that
    is the home or above it (as ``pull = ["/home"]`` is): skipped by rule, never walked or
    pulled as results, never a problem, so verify (and the gate) can pass. Its logs still
    come, into .rgt/box-logs."""
    fleet = await make_loopback_fleet(1)
    home = fleet.box("box1").root
    cells = home / ".rgt" / "queue" / "cells"
    cells.mkdir(parents=True)
    (cells.parent / "queue.log").write_text("QUEUE START\n")
    (cells / "a.state").write_text("start 1\n")
    (cells.parent / "queue.lock").write_text("")
    write_good_cells(box_results(fleet))
    for i, root in enumerate((home, home.parent)):
        dest = tmp_path / f"pull{i}"
        report = await pull_and_verify(fleet, dest, pull=(str(root),))
        [own] = [f for f in report.flags if f.path.endswith("/.rgt")]
        assert own.kind == "skipped" and "rgt-tui's records on this box" in own.detail
        assert not any(".rgt" in p for p in report.problems), report.problems
        assert [f.kind for f in report.flags if ".rgt" in f.path] == ["skipped"]
        pulled = [p for p in (dest / "box1").rglob("*") if p.is_file()]
        assert not [p for p in pulled if "a.state" in p.name and "box-logs" not in p.parts]
        assert [p for p in pulled if p.name == "queue.log" and "box-logs" in p.parts]
        assert [p for p in pulled if p.name == "best.pt"]


async def test_a_problem_of_no_file_is_listed_in_the_text_not_only_in_json(
    make_loopback_fleet, tmp_path
):
    """hour s17b #8: 'NOT VERIFIED: 2 problems; the first: <a file>', and the second (the
    record could not be saved, a full disk) was only in --json. Every problem that no
    file line shows is listed."""
    from rgt_tui.services.verify.report import format_report

    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "broken.json").write_text('{"acc": 0.9')
    await pull_and_verify(fleet, tmp_path)
    record = verification_path(tmp_path / "box1")
    record.unlink()
    record.mkdir()  # the record cannot be replaced: an OSError as a full disk gives one
    again = await verify_host(host_of(fleet), tmp_path)
    text = format_report(again)
    assert "  corrupt       broken.json" in text, text
    (line,) = [x for x in text.splitlines() if x.startswith("  problem: ")]
    assert line.startswith(f"  problem: could not write the verification record {record}"), text
    # With its fix, as a pull's unwritable folder has (s36 faults #5).
    assert line.endswith("this login can write), then verify again"), line
    assert "NOT VERIFIED: 2 problems; the first: broken.json" in text, text


async def test_a_verification_record_a_full_disk_refuses_says_to_free_space(
    make_loopback_fleet, tmp_path
):
    """Hour s45b #3: on a full disk verify said "make … writable", the fix of a folder
    this login cannot write; a pull on the same disk says to free space."""
    from support.machine import tmpfs

    from rgt_tui.services.verify.report import format_report

    fleet = await make_loopback_fleet(1)
    (box_results(fleet) / "metrics.json").write_text('{"acc": 0.9}')
    with tmpfs(tmp_path / "small", size="1m") as small:
        await pull_and_verify(fleet, small)
        record = verification_path(small / "box1")
        record.unlink()
        with contextlib.suppress(OSError):  # the disk fills: ENOSPC stops it short
            (small / "filler").write_bytes(b"\0" * 2 * 1024 * 1024)
        again = await verify_host(host_of(fleet), small)
    (line,) = [x for x in format_report(again).splitlines() if x.startswith("  problem: ")]
    assert "No space left on device" in line, line
    assert line.endswith("— free space on that disk, then verify again"), line


async def test_a_leftover_says_what_it_is_and_what_to_do(make_loopback_fleet, tmp_path):
    """hour s17a #7: a box leftover an earlier pull brought, whose folder a retry then
    renamed on the box, read "an older rgt-tui's part?", and the box's own leftover line
    named no fix."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "cellA").mkdir()
    (res / "cellA" / "latest.pt.tmp").write_bytes(b"half a save")
    await pull_and_verify(fleet, tmp_path)
    earlier = tmp_path / "box1" / "alpha" / "checkpoint.pt.tmp"  # an earlier pull's copy
    earlier.parent.mkdir()
    earlier.write_bytes(b"half")
    again = await verify_host(host_of(fleet), tmp_path)
    flags = {f.path: (f.kind, f.detail) for f in again.flags}
    kind, detail = flags["cellA/latest.pt.tmp"]
    assert kind == "leftover" and "delete it on the box and here, then pull" in detail, detail
    kind, detail = flags["alpha/checkpoint.pt.tmp"]
    assert kind == "unfinished" and "the last pull did not bring" in detail, detail
    assert "older rgt-tui" not in detail and "delete it here" in detail
