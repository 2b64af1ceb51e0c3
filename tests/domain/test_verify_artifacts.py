"""The pure parts of verification: artifact kinds, safetensors headers, roster folders."""

from __future__ import annotations

import json
import struct

import pytest

from rgt_tui.domain.artifacts import HEAD_BYTES, check_safetensors_header, is_leftover, kind_of
from rgt_tui.domain.manifest import Manifest, ManifestEntry, PullRoot
from rgt_tui.domain.roster import output_prefixes, reconcile
from rgt_tui.worker.verify_worker import torch_is_safe


def header(tensors: dict, pad: int = 0) -> tuple[bytes, int]:
    text = json.dumps(tensors).encode() + b" " * pad
    data_len = max(
        (t["data_offsets"][1] for t in tensors.values() if "data_offsets" in t), default=0
    )
    return struct.pack("<Q", len(text)) + text, 8 + len(text) + data_len


def tensor(dtype: str, shape: list, begin: int, end: int) -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def test_sound_safetensors_headers_pass():
    head, size = header(
        {"a": tensor("F32", [2, 3], 0, 24), "b": tensor("BF16", [4], 24, 32)}, pad=3
    )
    assert check_safetensors_header(head, size) is None
    head, size = header({"__metadata__": {"k": "v"}, "s": tensor("I64", [], 0, 8)})
    assert check_safetensors_header(head, size) is None
    head, size = header({"f4": tensor("F4", [3], 0, 2)})  # 3 × 4 bits round up to 2 bytes
    assert check_safetensors_header(head, size) is None


def test_broken_safetensors_headers_say_why():
    cases = {
        "does not fit": (struct.pack("<Q", 10_000) + b"{}", 20),
        "not JSON": (struct.pack("<Q", 4) + b"{{{{", 12),
        "too short": (b"\x01", 1),
    }
    for why, (head, size) in cases.items():
        status, reason = check_safetensors_header(head, size)
        assert status == "corrupt" and why in reason
    head, size = header({"a": tensor("F32", [4], 0, 12)})  # 4 × F32 is 16 bytes
    assert "needs 16" in check_safetensors_header(head, size)[1]
    head, size = header({"a": tensor("F32", [1], 0, 4), "b": tensor("F32", [1], 8, 12)})
    assert "gap" in check_safetensors_header(head, size)[1]
    head, size = header({"a": tensor("F32", [2], 0, 8), "b": tensor("F32", [1], 4, 8)})
    assert "overlaps" in check_safetensors_header(head, size)[1]
    head, size = header({"a": tensor("F32", [2], 0, 8)})
    assert (
        "truncated" in check_safetensors_header(head, size - 1)[1]
        or "outside" in check_safetensors_header(head, size - 1)[1]
    )
    assert "truncated" in check_safetensors_header(head, size + 4)[1]  # extra bytes at the end
    head, size = header({"a": tensor("F99", [1], 0, 1)})
    assert check_safetensors_header(head, size) == (
        "not-verified",
        "tensor 'a' has unknown dtype 'F99'",
    )


def test_kinds_and_leftovers():
    assert kind_of("a/b.PT") == "torch" and kind_of("x.ckpt") == "torch"
    assert kind_of("w.bin", b"PK\x03\x04") == "torch"
    assert kind_of("data.bin", b"\x00\x01") == "other"
    assert kind_of("m.safetensors") == "safetensors" and kind_of("l.ndjson") == "jsonl"
    assert (
        is_leftover("ckpt/latest.pth.tmp") and is_leftover("x.part") and not is_leftover("tmp/x.pt")
    )


def _manifest(paths: list[str], given: str = "~/results") -> Manifest:
    roots = (PullRoot(0, given, "/root/results", ""),)
    return Manifest("h", roots, tuple(ManifestEntry(0, p, 1, 1.0, "s") for p in paths))


def test_roster_finds_output_folders_under_durable_dir():
    m = _manifest(["a/best.pt", "b/log.txt", "deep/c/x.pt"])
    assert output_prefixes(m, "~/results", "a") == ("a",)
    assert output_prefixes(m, "/root/results/", "a") == ("a",)  # resolved form matches too
    assert output_prefixes(m, "/elsewhere", "a") == ()
    r = reconcile(
        ["a", "b", "c", "a"],
        m,
        "~/results",
        {"a/best.pt": "verified", "b/log.txt": "hash-only", "deep/c/x.pt": "verified"},
    )
    assert r.expected == ("a", "b", "c") and r.present == ("a",)
    assert [n for n, _ in r.missing] == ["b", "c"]  # c is not at results/c
    # durable_dir outside every pull root: with a run that writes where its own flags
    # say (no {out}), any folder named after the cell counts.
    loose = reconcile(["c"], m, "/elsewhere", {"deep/c/x.pt": "verified"})
    assert loose.complete
    # A run writing into {out} left its results on the box, under no pull folder: an
    # eval file in a folder of the cell's name is not them (h511 #1).
    left = reconcile(["c"], m, "/elsewhere", {"deep/c/x.pt": "verified"}, writes_out=True)
    assert not left.complete and left.missing[0][0] == "c"
    assert "its output folder /elsewhere/c is under no pull folder" in left.missing[0][1]
    assert 'add "/elsewhere" to the host\'s pull' in left.missing[0][1]


def test_durable_dir_spelled_with_a_tilde_is_placed_as_the_roots_resolved_it():
    """Review h514 #5: `durable_dir = "~/results"` beside a pull root written with ~ is
    placed as that root's ~ resolved. One no root written with ~ resolves cannot be placed:
    missing, with the fix, never found by a folder's name (review h516 #1: an eval folder
    stood for the checkpoints again)."""
    statuses = {"a/best.pt": "verified"}
    spelled = Manifest(
        "h", (PullRoot(0, "/root/results", "/root/results", ""),),
        (ManifestEntry(0, "a/best.pt", 1, 1.0, "s"),),
    )  # fmt: skip
    unplaced = reconcile(["a"], spelled, "~/results", statuses, writes_out=True)
    assert (
        not unplaced.complete and 'add "~/results" to the host\'s pull' in (unplaced.missing[0][1])
    )
    by_tilde = Manifest(
        "h", (PullRoot(0, "~/results", "/root/results", ""),),
        (ManifestEntry(0, "a/best.pt", 1, 1.0, "s"),),
    )  # fmt: skip
    assert reconcile(["a"], by_tilde, "/root/results", statuses, writes_out=True).complete
    eval_only = Manifest(
        "h", (PullRoot(0, "~/eval", "/root/eval", ""),),
        (ManifestEntry(0, "a/best.pt", 1, 1.0, "s"),),
    )  # fmt: skip
    left = reconcile(["a"], eval_only, "~/results", statuses, writes_out=True)
    assert not left.complete and "under no pull folder" in left.missing[0][1]
    both = Manifest(
        "h", (PullRoot(0, "~/runs", "/root/runs", ""),),
        (ManifestEntry(0, "a/best.pt", 1, 1.0, "s"),),
    )  # fmt: skip
    assert output_prefixes(both, "/root/runs", "a") == ("a",)
    assert output_prefixes(both, "~/runs", "a") == ("a",)


def test_a_run_template_names_out_or_not():
    from rgt_tui.domain.queue_file import writes_out

    assert writes_out("python train.py --out {out}")
    assert not writes_out("python train.py --out ~/eval/{name}")
    assert not writes_out("echo {{out}}")  # a literal, not the placeholder
    assert not writes_out(None) and not writes_out("echo {")


def test_a_safetensors_header_nested_too_deep_is_named_not_raised():
    deep = "[" * 100_000 + "]" * 100_000
    text = ('{"a": ' + deep + "}").encode()
    status, reason = check_safetensors_header(struct.pack("<Q", len(text)) + text, 8 + len(text))
    assert status == "not-verified" and "unverifiable" in reason and "nested deeper" in reason


def test_only_torch_with_the_weights_only_fix_may_load():
    safe = ["2.6.0", "2.6.0+cu124", "2.6.1", "2.13.0+cpu", "2.10.1.post2", "2.8.0a0", "3.0.0"]
    unsafe = [
        "2.5.1",
        "2.5.1+cu121",
        "1.13.1",
        "2.6.0a0+ecf3bae40a.nv25.01",  # built from main before 2.6.0 shipped the fix
        "2.6.0rc9",
        "2.7.0.dev20250110",
        "unknown",
        "",
    ]
    assert [v for v in safe if not torch_is_safe(v)] == []
    assert [v for v in unsafe if torch_is_safe(v)] == []


@pytest.mark.parametrize("protocol", [2, 4])
def test_a_bin_is_torch_by_its_legacy_magic_and_raw_data_starting_0x80_is_not(protocol):
    """h563 #2: 1 raw data file in 256 starts with 0x80 (nanoGPT's uint16 train.bin, a
    token of 640 starts 80 02): a first byte alone called it a corrupt checkpoint."""
    import io
    import os

    import torch

    saved = io.BytesIO()
    torch.save(
        {"w": torch.zeros(2)}, saved, _use_new_zipfile_serialization=False,
        pickle_protocol=protocol,
    )  # fmt: skip
    head = saved.getvalue()[:HEAD_BYTES]
    assert kind_of("pytorch_model.bin", head) == "torch"
    assert kind_of("pytorch_model.bin", head[:40]) == "torch"  # cut short: still torch
    for start in (b"\x80\x7e", b"\x80\x02\x00", b"\x80\x04\x00"):
        assert kind_of("data/train.bin", start + os.urandom(HEAD_BYTES)) == "other"
    # Any other pickle is read as a loader would (one that would run code: unsafe, unrun).
    import pickle

    for protocol in (2, 4, 5):
        assert kind_of("evil.bin", pickle.dumps({"a": [1]}, protocol=protocol)) == "torch"
