"""A named preemption is kept beside the journal so `queue show` and `diagnose` print its
line (issue 40), and forgotten once the box runs its queue again."""

from __future__ import annotations

from pathlib import Path

from support.samples import write_fleet

from rgt_tui.domain.preemption import LOST, Checkpoint, Preemption, preemption_line
from rgt_tui.services.runtime.preemption import PreemptionWatch, read_named


def test_named_then_read_then_forgotten(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path)
    host = fleet.hosts[0]
    ckpt = Checkpoint("checkpoint.pt", 1_700_000_000.0, 10, 40)
    watch = PreemptionWatch(fleet, memory_dir=tmp_path / "preempt", checkpoint=lambda h, c: ckpt)
    named = Preemption(host.name, LOST, 1_700_000_300.0, "boot/1", "eta_long")
    full = watch.with_checkpoint(host, named)
    kept = read_named(tmp_path / "preempt", host.name)
    assert kept == full and kept is not None
    assert preemption_line(kept).endswith("cell eta_long interrupted; last verified step 40, "
                                          "from " + preemption_line(full)[-5:])  # fmt: skip
    watch._save_named(host.name, None)
    assert read_named(tmp_path / "preempt", host.name) is None
