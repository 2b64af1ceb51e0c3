"""Issue 39: box text is made printable where it is parsed, at every entry point.

Each parser of box output is fed the same hostile text (OSC 52, CSI 2J, an OSC 8 link, a
bell, a lone ESC, C1 controls in UTF-8, a Unicode line separator) and must return
printable text, while a value that is also an identity (a disk path sent back for a
delete, a plain mount, a cell name) keeps it.
"""

from __future__ import annotations

import json
from pathlib import Path

from rgt_tui.domain.slurm_jobs import parse_jobs_file
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.services.disk.audit import parse_audit
from rgt_tui.services.queue.box import parse_probe
from rgt_tui.services.result_code import code_path, load_result_code

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
LINK = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
C1 = "\u009b2J\u009d52;c;x\u009c"
HOSTILE = f"{OSC52}{CLEAR}{LINK}bell\x07lone\x1b {C1}\u2028"
# A file name cannot hold "/": the same escapes, no link.
HOSTILE_NAME = f"{OSC52}{CLEAR}bell\x07lone\x1b {C1}"
CONTROLS = {*map(chr, [*range(0x00, 0x20), *range(0x7F, 0xA0)]), "\u2028", "\u2029"}


def _clean(value: object) -> None:
    """No control character anywhere in ``value`` (strings inside containers too)."""
    text = json.dumps(value, default=lambda o: o.__dict__, ensure_ascii=False)
    # json.dumps escapes C0 itself: look at the strings it was given instead.
    found = [c for c in _strings(value) for c in c if c in CONTROLS]
    assert not found, (found[:5], text[:300])


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [s for v in value for s in _strings(v)]
    if hasattr(value, "__dataclass_fields__"):
        return [s for name in value.__dataclass_fields__ for s in _strings(getattr(value, name))]
    return []


def test_the_agents_strings_are_printable_and_a_plain_mount_is_unchanged() -> None:
    snap = snapshot_from_agent(
        "box1",
        {
            "v": 1,
            "t": 1.0,
            "hostname": f"host{HOSTILE}",
            "boot_id": f"b{HOSTILE}",
            "gpu_source": "nvidia-smi",
            "gpu_unavailable_reason": f"why{HOSTILE}",
            "disks": [
                {
                    "path": f"/data/{HOSTILE}",
                    "mount": f"/m{HOSTILE}",
                    "bytes_used": 1,
                    "bytes_total": 2,
                    "inodes_used": 1,
                    "inodes_total": 2,
                },
                {
                    "path": "/workspace",
                    "mount": "/workspace",
                    "bytes_used": 1,
                    "bytes_total": 2,
                    "inodes_used": 1,
                    "inodes_total": 2,
                },
            ],  # fmt: skip
            "gpus": [
                {
                    "index": 0,
                    "name": f"H100{HOSTILE}",
                    "uuid": f"GPU-{HOSTILE}",
                    "throttle_reasons": [f"hw{HOSTILE}"],
                }
            ],  # fmt: skip
            "gpu_processes": [{"gpu_index": 0, "pid": 7, "name": f"python{HOSTILE}"}],
            "xids": [{"xid": 79, "text": f"fell off the bus{HOSTILE}"}],
            "cell": f"cell{HOSTILE}",
            "errors": [f"nvml{HOSTILE}", 5],
        },
    )
    _clean(snap)
    assert snap.hostname is not None and snap.hostname.startswith("host\\x1b]52;c;")
    assert snap.gpus[0].name.startswith("H100\\x1b]52") and "click" in snap.gpus[0].name
    assert [d.mount for d in snap.disks][1] == "/workspace"  # identity on a plain path
    assert any(p.startswith("agent: nvml\\x1b") for p in snap.problems)


def test_the_queue_probes_shown_lines_are_printable_and_a_pid_still_matches() -> None:
    facts = parse_probe(
        "home\t/home/u\nboot\tb1\n"
        f"why\tfailed\tTraceback {HOSTILE}\n"
        f"dmesg\tok{HOSTILE}\n"
        f"dmesg_line\tOut of memory: Killed process 4242 (py{HOSTILE})\n"
        f"tmux\t/usr/bin/tmux{HOSTILE}\nsetsid\t/bin/setsid{HOSTILE}\n"
    )
    _clean([facts.why, facts.dmesg, facts.dmesg_lines, facts.tmux, facts.setsid])
    assert facts.why["failed"].startswith("Traceback \\x1b]52;c;")
    assert "process 4242 " in facts.dmesg_lines[0]  # diagnose matches the pid in it
    assert facts.home == "/home/u"


def test_the_disk_audits_shown_names_are_printable_and_its_paths_stay_as_sent() -> None:
    folder = f"/data/{HOSTILE_NAME}"
    hub = "/home/u/.cache/huggingface/hub"
    records = [
        f"home\t/home/{HOSTILE_NAME}",
        "boxid\tbox-1",
        "root\t0\tmount\t/data",
        f"du\t0\tB\t100\t1\t2\t{folder}",
        f"cut\t0\tB\tdu stopped{HOSTILE}",
        f"root\t1\thf\t{hub}",
        f"hf\t1\t100\t5\t1\t3\t{hub}/models--org--{HOSTILE_NAME}",
        "root\t2\tcell\t/data/runs/c1",
        f"ckpt\t2\t10\t5\t1\t4\t/data/runs/c1/{HOSTILE_NAME}_1.pt",
    ]
    asked = [("mount", "/data"), ("hf", "~/.cache/huggingface/hub"), ("cell", "/data/runs/c1")]
    # A newer one of its family (names that differ in their numbers) supersedes it.
    newest = {f"/data/runs/c1/{HOSTILE_NAME}_2.pt": 20.0}
    audit = parse_audit("box1", "\0".join(records), asked, ("c1",), (newest, None, None))
    assert audit.mounts[0].folders[0].path == folder  # sent back for the delete, as is
    model, ckpt = audit.hf_models[0], audit.checkpoints[0]
    _clean([audit.home, audit.mounts[0].notes, model.label, ckpt.label])
    assert model.label.startswith("org/\\x1b]52;c;") and model.path.endswith(HOSTILE_NAME)
    assert ckpt.label.startswith("c1/\\x1b]52;c;") and audit.find(ckpt.label) == ckpt


def test_a_slurm_submissions_kind_is_printable() -> None:
    (sub,) = parse_jobs_file("123 0 3 1700000000 \x1b]52;c;x\x07\n")
    _clean(sub)
    assert parse_jobs_file("123 0 3 1700000000 retry\n")[0].kind == "retry"


def test_a_kept_code_record_read_back_is_printable(tmp_path: Path) -> None:
    path = code_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "read_at": 1.0,
                "problem": f"box said {HOSTILE}",
                "cells": [{"name": f"c{HOSTILE}", "status": f"done{HOSTILE}", "code": None}],
            }
        )
    )
    record = load_result_code(tmp_path)
    assert record is not None
    _clean(record)
    assert record.cells[0].name.startswith("c\\x1b]52;c;")


# Digits the box may send that are no plain count: a superscript (int() raises), Arabic-
# Indic digits (int() reads them; no box's df prints them), and a run past Python's
# 4300-digit conversion limit (int() raises). str.isdigit() takes all three.
NOT_COUNTS = ("²", "٣٤", "1" * 4301)


def test_a_box_s_unicode_or_endless_digits_are_no_count_and_raise_nothing() -> None:
    """A review (s38 #3): df, stat or ps answering '²' made `diagnose`, `launch` and
    `queue show` end in a traceback, and the Queue tab froze (its poll failed unsaid).
    Every parser checks with is_digits, which int() always reads."""
    from rgt_tui.domain.out_disk import parse_out_disk
    from rgt_tui.domain.text import is_digits

    assert is_digits("0") and is_digits("12345678901234567890")
    assert not is_digits("") and not is_digits("123456789012345678901")
    for bad in NOT_COUNTS:
        assert bad.isdigit() and not is_digits(bad)
        assert parse_out_disk(f"{bad} 0 /mnt") is None
        assert parse_out_disk(f"100 {bad} /mnt") is None
        facts = parse_probe(f"logt\tcell\t{bad}\noom_now\t{bad}\n")
        assert facts.log_mtimes == {} and facts.oom_now is None
    assert parse_out_disk("100 5 /mnt") is not None
    from rgt_tui.domain.preflight_arch import parse_arch

    assert parse_arch("sm_" + "9" * 5000) is None and parse_arch("sm_²") is None
    assert parse_arch("sm_90a") == ("sm", (9, 0), True)
    assert parse_probe("logt\tcell\t17\n").log_mtimes == {"cell": 17}
