"""Process alerts through the real path: the agent (``python3 -u -``, source on stdin) run by
the local transport, replayed recorded nvidia-smi output, and the monitor's rules.

The agent lists processes every 5th sample. Between listings the monitor keeps the last
list, so GEN7 (two processes on one GPU) and U11 (zombie VRAM) are on every sample while
their cause is there, and gone by the listing after it left. The stand-in nvidia-smi
answers by call count (support.gpu_sequence), so sample k is in the state the test names,
however fast or slow the machine runs.
"""

from __future__ import annotations

from pathlib import Path

from support import FIXTURES
from support.gpu_sequence import replay_script
from support.samples import write_fleet
from support.telemetry import Watch, alert_ids

from rgt_tui.services.telemetry import HostMonitor, HostUpdate
from rgt_tui.transport.local import LocalTransport

FLEET = """\
[[hosts]]
name = "gpubox"
ssh = "local"
"""


async def test_process_alerts_hold_between_listings_and_end_at_the_next_one(
    tmp_path: Path,
) -> None:
    # Samples 0-6 under load (the recorded three processes, listed at 0 and 5), 7-9 idle
    # (they left), 10-14 idle with their VRAM still held (listed at 10: no process), 15
    # on idle with the memory freed.
    states = ["load"] * 7 + ["idle"] * 3 + ["held"] * 5 + ["idle"]
    script = replay_script(tmp_path / "smi", states, lists=[True, True, False])
    host = write_fleet(tmp_path, FLEET).host("gpubox")
    tree = FIXTURES / "cgroup_v2_limited"
    monitor = HostMonitor(
        host,
        LocalTransport(host.name),
        interval=0.05,
        agent_args=[
            *("--nvidia-smi", str(script), "--smi-every", "1", "--proc-every", "5"),
            *("--sys-root", str(tree / "sys"), "--proc-root", str(tree / "proc")),
            *("--no-box-id", "--queue-dir", ""),
        ],
    )
    watch = Watch(monitor)
    try:
        await watch.until(lambda u: u.snapshot is not None and u.snapshot.seq >= 17, 60, "seq 17")
    finally:
        await watch.stop()
    by_seq: dict[int, HostUpdate] = {}
    for update in watch.updates:
        if update.snapshot is not None:
            by_seq.setdefault(update.snapshot.seq, update)
    assert sorted(by_seq)[:18] == list(range(18)), "the agent restarted or skipped a sample"

    def has(alert: str, seq: int) -> bool:
        return alert in alert_ids(by_seq[seq])

    # GEN7: on every sample from the first listing, through the listing at 5, until the
    # listing at 10 (they left at 7: shown at most one listing longer), then gone.
    assert [k for k in range(18) if has("gpu.shared", k)] == list(range(10))
    # U11: from the listing at 10 (no process, VRAM held, no work) to the memory freed at
    # 15, every sample; none before or after.
    assert [k for k in range(18) if has("gpu.zombie_vram", k)] == list(range(10, 15))
    # Between listings the list is the last one, with its age.
    snap = by_seq[8].snapshot
    assert snap is not None and snap.processes_listed is not None
    assert snap.processes_listed.seq == 5 and snap.t > snap.processes_listed.t
    assert [p.pid for p in snap.gpu_processes or ()] == [11327, 11328, 11345]
    listed = by_seq[10].snapshot
    assert listed is not None and listed.gpu_processes == ()
