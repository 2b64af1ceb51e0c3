"""Process alerts hold steady between the agent's process listings.

The agent lists GPU processes every ``proc_every`` samples; ``carry_processes`` gives the
samples between the last list, so zombie VRAM (U11), a shared GPU (GEN7) and thread pools
above the quota (U40) neither flicker nor outlive a process by more than one listing.
Samples are built from recorded nvidia-smi output (support.gpu_sequence).
"""

from __future__ import annotations

from support.gpu_sequence import agent_line

from rgt_tui.domain.health import HealthContext, HealthState, evaluate
from rgt_tui.domain.snapshot import HostSnapshot, carry_processes, snapshot_from_agent

EVERY = 5
PROCESS_ALERTS = ("gpu.shared", "cpu.threads", "gpu.zombie_vram")


def run(lines: list[dict]) -> list[set[str]]:
    """The process alerts of each sample, as the monitor derives them (carry, then rules)."""
    state, last = HealthState(), None
    out = []
    for line in lines:
        snap = carry_processes(last, snapshot_from_agent("box", line))
        state = state.observe(snap)
        out.append({a.id for a in evaluate(snap, state, HealthContext()) if a.id in PROCESS_ALERTS})
        last = snap
    return out


def sequence(states: list[str], listed: dict[int, bool], every: int = EVERY) -> list[dict]:
    """Agent lines, sample k in GPU state ``states[k]``; processes listed where due."""
    return [
        agent_line(k, state, listed.get(k) if k % every == 0 else None, every=every)
        for k, state in enumerate(states)
    ]


def test_processes_that_come_and_go_keep_their_alerts_steady_until_the_next_listing() -> None:
    states = ["load"] * 7 + ["idle"] * 3 + ["held"] * 5 + ["idle"] + ["held"] * 4 + ["load"]
    # The recorded three processes are listed at 0 and 5; they left at sample 7.
    listed = {0: True, 5: True, 10: False, 15: False, 20: True}
    alerts = run(sequence(states, listed))
    # Three processes on GPU 0 (GEN7), each with a 64-thread pool on a 2-vCPU quota (U40):
    # on every sample, not one in five; still shown until the listing at 10 (they left
    # at 7, within one listing), gone from it.
    for k in range(10):
        assert alerts[k] == {"gpu.shared", "cpu.threads"}, k
    # VRAM held with no process and no work: zombie (U11) on every sample from the
    # listing at 10 that found no process; gone at 15, where the memory was freed.
    for k in range(10, 15):
        assert alerts[k] == {"gpu.zombie_vram"}, k
    assert alerts[15] == set()
    # VRAM taken after the listing at 15 (a process loading its model, util still 0) is
    # no zombie: that listing saw none of it in use. The next listing names the process.
    for k in range(16, 20):
        assert alerts[k] == set(), k
    assert alerts[20] == {"gpu.shared", "cpu.threads"}


def test_carried_list_says_when_it_was_taken() -> None:
    lines = sequence(["load"] * 7, {0: True, 5: True})
    snaps: list[HostSnapshot] = []
    last = None
    for line in lines:
        last = carry_processes(last, snapshot_from_agent("box", line))
        snaps.append(last)
    assert [s.processes_listed.seq for s in snaps if s.processes_listed] == [0, 0, 0, 0, 0, 5, 5]
    assert snaps[3].processes_listed is not None
    assert snaps[3].t - snaps[3].processes_listed.t == 6.0  # three samples of 2 s
    assert snaps[3].gpu_processes == snaps[0].gpu_processes
    assert [p.pid for p in snaps[3].gpu_processes or ()] == [11327, 11328, 11345]


def test_a_failed_listing_or_a_restarted_agent_leaves_the_list_unknown_not_stale() -> None:
    # The listing due at 5 failed (null, with the agent's error): from 5 on nothing is
    # carried, so nothing older than one listing is shown.
    lines = sequence(["load"] * 8, {0: True})
    lines[5]["errors"] = ["nvidia-smi processes: timed out"]
    alerts = run(lines)
    assert all(a == {"gpu.shared", "cpu.threads"} for a in alerts[:5])
    assert all(a == set() for a in alerts[5:])
    # An agent that restarted numbers its samples afresh: an earlier run's list is not its.
    first = carry_processes(None, snapshot_from_agent("box", agent_line(10, "load", True, every=5)))
    again = snapshot_from_agent("box", agent_line(1, "load", None, every=5))
    assert carry_processes(first, again).gpu_processes is None
    # An agent that does not say its cadence: nothing is carried.
    quiet = agent_line(11, "load", None, every=5)
    del quiet["proc_every"]
    assert carry_processes(first, snapshot_from_agent("box", quiet)).gpu_processes is None


def test_listing_sample_records_its_time_and_each_gpus_vram() -> None:
    s = snapshot_from_agent("box", agent_line(5, "held", False, every=EVERY))
    assert s.gpu_processes == () and s.process_every == EVERY
    assert s.processes_listed is not None
    assert (s.processes_listed.t, s.processes_listed.seq) == (s.t, 5)
    assert s.processes_listed.vram_of(0) == 19818 * 2**20 and s.processes_listed.vram_of(1) is None
    between = snapshot_from_agent("box", agent_line(6, "held", None, every=EVERY))
    assert between.processes_listed is None and between.gpu_processes is None
    bad = snapshot_from_agent("box", {**agent_line(6, "held", None, every=EVERY), "proc_every": 0})
    assert bad.process_every is None
