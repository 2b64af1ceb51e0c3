"""Young/Daly from a recorded sequence of checkpoint writes, and the checkpoint rules a
resume move picks its checkpoint and step by."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from rgt_tui.domain.checkpoints import (
    CellFile,
    is_checkpoint,
    newest_checkpoint,
    sidecar_step,
    step_in_name,
)
from rgt_tui.domain.young_daly import CheckpointWrite, cadence, cadence_line, young_daly_s
from rgt_tui.profiles import load_profiles
from rgt_tui.services.fleet.file import load_fleet

HOUR = 3600.0


def test_the_runbooks_worked_number():
    assert round(young_daly_s(3 * HOUR, 30)) == 805  # reference/spot-resilience.md §2


def test_a_recorded_sequence_of_writes_gives_the_line_and_the_alert():
    # A run that writes a 30 s checkpoint every 41 minutes on a box preempted every 3 h.
    writes = [CheckpointWrite(at=1000 + i * 41 * 60, write_s=30.0, size=4 << 30) for i in range(5)]
    seen = cadence(list(reversed(writes)), 3 * HOUR)  # any order
    assert seen.interval_s == 41 * 60 and seen.write_s == 30.0
    assert seen.too_slow  # 41 min > 2 · 13 min
    line = cadence_line(seen)
    assert line.startswith(
        "checkpoints every 41 min; for this box W ≈ 13 min (write 30 s, MTBF 3 h)"
    )
    assert "over 2·W" in line
    # Every 10 min is within 2·W: no alert; a pull every 5 min is shorter than that.
    quick = cadence([dataclasses.replace(w, at=w.at / 4.1) for w in writes], 3 * HOUR)
    assert not quick.too_slow
    assert "pull_every 5 min is shorter than the checkpoint interval" in cadence_line(quick, 300)
    # A pull every hour is longer than W: a preemption loses unpulled checkpoints.
    assert "pull_every 1 h is longer than W" in cadence_line(quick, HOUR)
    # No write timed yet: W is not guessed.
    untimed = cadence([CheckpointWrite(at=0.0), CheckpointWrite(at=600.0)], 3 * HOUR)
    assert untimed.w_s is None and not untimed.too_slow
    assert "W unknown until a write is timed" in cadence_line(untimed)


def test_profiles_and_a_host_say_the_mtbf(tmp_path):
    profiles = load_profiles()
    assert profiles["vastai"].preempt_mtbf_hours == 3
    assert profiles["runpod"].preempt_mtbf_hours == 6
    assert profiles["generic-ssh"].preempt_mtbf_hours is None
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "a"\nssh = "u@h"\nprofile = "vastai"\npreempt_mtbf_hours = 1.5\n'
    )
    assert load_fleet(hosts).host("a").preempt_mtbf_hours == 1.5


def test_which_file_is_a_checkpoint_and_its_step():
    assert is_checkpoint("model.safetensors") and is_checkpoint("ckpt/step-1200.pt")
    assert is_checkpoint("checkpoint.bin") and is_checkpoint("last.ckpt")
    assert not is_checkpoint("checkpoint.json") and not is_checkpoint("latest.pt.tmp")
    assert not is_checkpoint("metrics.json") and not is_checkpoint("train.log")
    assert step_in_name("global_step1200.pt") == 1200 and step_in_name("epoch3.ckpt") == 3
    assert step_in_name("checkpoint-500/model.safetensors") is None  # the file's own name
    assert step_in_name("latest.pt") is None
    sha = hashlib.sha256(b"x").hexdigest()
    assert sidecar_step(json.dumps({"step": 7, "sha256": sha}), sha) == 7
    assert sidecar_step(json.dumps({"step": 7, "sha256": "0" * 64}), sha) is None  # another write
    assert sidecar_step("{", sha) is None
    files = [
        CellFile("c/a.pt", "a.pt", 10, 100.0, sha),
        CellFile("c/b.pt", "b.pt", 10, 200.0, sha, why="the copy here changed"),
        CellFile("c/m.json", "m.json", 10, 300.0, sha),
    ]
    assert newest_checkpoint(files).rel == "a.pt"  # the damaged newer one is never chosen


def test_a_step_folder_goes_whole_and_a_run_folder_is_not_one() -> None:
    """Review h526 #3: `run-ckpt1/` read as a step folder, so one checkpoint cut short
    there left out every good one beside it and the move started from scratch. Only a
    folder whose whole name is a step word and number is one checkpoint, and only a
    file right in it decides."""
    from rgt_tui.domain.checkpoints import CellFile, step_folders_left_out

    def cell(rel: str, why: str = "") -> CellFile:
        return CellFile(rel, rel, 1, 1.0, "0" * 64, why)

    hf = step_folders_left_out(
        [cell("checkpoint-2/model.bin", "corrupt"), cell("checkpoint-2/optimizer.pt"),
         cell("checkpoint-1/model.bin"), cell("checkpoint-1/optimizer.pt")]
    )  # fmt: skip
    assert [f.good for f in hf] == [False, False, True, True]
    run = [cell("run-ckpt1/step-10.pt"), cell("run-ckpt1/step-20.pt", "corrupt")]
    assert step_folders_left_out(run) == run
    deep = [cell("checkpoint-2/model.bin"), cell("checkpoint-2/runs/events.out", "changed")]
    assert step_folders_left_out(deep) == deep


def test_checkpoints_written_in_one_second_order_by_their_step_not_their_name_as_text():
    """h541 #2: three checkpoints with one mtime (copied, touched together): the plan
    named step-9.pt, since "step-9.pt" > "step-15.pt" as text; the run resumed from 15."""
    from rgt_tui.domain.checkpoints import newer_left_out
    from rgt_tui.domain.gate_events import FileFacts
    from rgt_tui.domain.unfinished import newest_checkpoint as newest_loaded

    sha = "0" * 64
    files = [CellFile(f"c/step-{n}.pt", f"step-{n}.pt", 10, 500.0, sha) for n in (9, 12, 15)]
    assert newest_checkpoint(files).rel == "step-15.pt"
    hf = [
        CellFile(
            f"c/checkpoint-{n}/model.safetensors", f"checkpoint-{n}/model.safetensors", 10, 5.0, sha
        )
        for n in (900, 1000)
    ]
    assert newest_checkpoint(hf).rel == "checkpoint-1000/model.safetensors"  # the folder's step
    # Only a step folder counts: a cell's folder named like a step does not make its
    # final.pt "step 50", which put the gate and the move at odds (review h544 #5).
    sweep = [CellFile(f"runs/sweep_ep50/{n}", n, 10, 7.0, sha) for n in ("final.pt", "step-9.pt")]
    assert newest_checkpoint(sweep).rel == "step-9.pt"
    by_local = {f.local: FileFacts(10, 7.0, sha) for f in sweep}
    found = newest_loaded(
        "sweep_ep50", ["runs/sweep_ep50"], by_local, set(by_local), set(by_local), set()
    )
    assert found == ("runs/sweep_ep50/step-9.pt", 7.0)
    damaged = dataclasses.replace(files[2], why="verify found it corrupt")
    assert [f.rel for f in newer_left_out([*files[:2], damaged], files[1])] == ["step-15.pt"]
    facts = {f.local: FileFacts(10, 500.0, sha) for f in files}
    done = set(facts)
    found = newest_loaded("c", ["c"], facts, done, done, set())
    assert found == ("c/step-15.pt", 500.0)
