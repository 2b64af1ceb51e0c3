"""Health rules: pure functions of snapshots, each with a stable id and its gotcha."""

from __future__ import annotations

from dataclasses import replace

from support import GIB

from rgt_tui.domain.health import HealthContext, HealthState, Thresholds, evaluate
from rgt_tui.domain.snapshot import (
    CgroupSample,
    DiskSample,
    GpuProcess,
    GpuSample,
    HostSnapshot,
    XidEvent,
)


def gpu(**kw) -> GpuSample:
    base = dict(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-1",
        util_pct=97.0,
        mem_util_pct=40.0,
        sm_clock_mhz=1980.0,
        sm_clock_max_mhz=1980.0,
        mem_used=60 * GIB,
        mem_total=80 * GIB,
        power_w=650.0,
        power_limit_w=700.0,
        temp_c=65.0,
        throttle_reasons=(),
        ecc_volatile=0,
    )
    base.update(kw)
    return GpuSample(**base)


def cgroup(**kw) -> CgroupSample:
    base = dict(
        version=2,
        memory_current=8 * GIB,
        memory_max=64 * GIB,
        memory_unlimited=False,
        oom_kill=0,
        cpu_quota_vcpus=8.0,
        cpu_unlimited=False,
    )
    base.update(kw)
    return CgroupSample(**base)


def snap(**kw) -> HostSnapshot:
    base = dict(
        host="a100",
        t=1_000_000.0,
        boot_id="boot-1",
        host_cpus=64,
        disks=(DiskSample("/data", "/data", 10 * GIB, 100 * GIB, 1_000, 1_000_000),),
        cgroup=cgroup(),
        gpu_source="nvml",
        gpus=(gpu(),),
        gpu_processes=(GpuProcess(0, 4242, "python", 60 * GIB, 12, 8),),
    )
    base.update(kw)
    return HostSnapshot(**base)


def ids(alerts) -> set[str]:
    return {a.id for a in alerts}


DAY = 86400.0


def run(*snaps: HostSnapshot, ctx: HealthContext | None = None):
    state = HealthState()
    for s in snaps:
        state = state.observe(s)
    return evaluate(snaps[-1], state, ctx or HealthContext())


def test_healthy_box_has_no_alerts():
    assert run(snap()) == ()


def test_inodes_alert_fires_while_bytes_are_low():
    disk = DiskSample("/data/x", "/data", 1 * GIB, 100 * GIB, 950_000, 1_000_000)
    alerts = run(snap(disks=(disk,)))
    assert ids(alerts) == {"disk.inodes"}
    (a,) = alerts
    assert a.gotcha == "U7" and a.severity == "critical" and a.subject == "/data"
    assert "95%" in a.message and "bytes are 1%" in a.message


def test_inode_threshold_is_configurable_and_zero_inode_fs_never_alerts():
    disk = DiskSample("/", "/", 1, 100, 85, 100)
    assert run(snap(disks=(disk,))) == ()
    state = HealthState().observe(snap(disks=(disk,)))
    assert ids(evaluate(snap(disks=(disk,)), state, HealthContext(Thresholds(inode_pct=80)))) == {
        "disk.inodes"
    }
    btrfs = DiskSample("/", "/", 1, 100, 0, 0)  # no inode limit reported
    assert run(snap(disks=(btrfs,))) == ()


def test_bytes_alert_once_per_mount_even_with_two_paths_on_it():
    full = (
        DiskSample("/data/a", "/data", 95 * GIB, 100 * GIB, 1, 1_000_000),
        DiskSample("/data/b", "/data", 95 * GIB, 100 * GIB, 1, 1_000_000),
    )
    alerts = run(snap(disks=full))
    assert [a.id for a in alerts] == ["disk.bytes"] and "5.0 GiB free" in alerts[0].message


def test_oom_kill_rise_is_critical_and_stays_until_reboot():
    before, after = snap(cgroup=cgroup(oom_kill=2)), snap(cgroup=cgroup(oom_kill=5))
    assert run(before) == ()
    alerts = run(before, after, snap(t=1_000_010.0, cgroup=cgroup(oom_kill=5)))
    (a,) = [a for a in alerts if a.id == "cgroup.oom_kill"]
    assert a.gotcha == "U9" and "2 → 5" in a.message and "3 processes" in a.message
    # A count since the baseline, said so: told again at each rise (h582 #5).
    assert "3 processes OOM-killed by the cgroup since rgt-tui first saw this boot" in a.message


def test_reboot_is_detected_by_boot_id_and_persists():
    alerts = run(snap(), snap(boot_id="boot-2"), snap(boot_id="boot-2", t=1_000_100.0))
    assert "host.rebooted" in ids(alerts)
    assert next(a for a in alerts if a.id == "host.rebooted").gotcha == "GEN6"
    # a reboot resets the cgroup counter: oom_kill 0 after reboot is not a "rise"
    state = HealthState()
    for s in (snap(cgroup=cgroup(oom_kill=4)), snap(boot_id="boot-2", cgroup=cgroup(oom_kill=0))):
        state = state.observe(s)
    assert "cgroup.oom_kill" not in ids(
        evaluate(snap(boot_id="boot-2", cgroup=cgroup(oom_kill=0)), state, HealthContext())
    )
    assert "host.rebooted" not in ids(
        evaluate(snap(boot_id="boot-2"), state.acknowledge_reboot(), HealthContext())
    )


def test_cgroup_memory_near_limit_but_unlimited_never():
    assert "cgroup.memory" in ids(run(snap(cgroup=cgroup(memory_current=60 * GIB))))
    unlimited = cgroup(memory_current=60 * GIB, memory_max=None, memory_unlimited=True)
    assert run(snap(cgroup=unlimited)) == ()


def test_sm_clock_low_at_high_util_is_u21_but_idle_low_clock_is_fine():
    alerts = run(snap(gpus=(gpu(sm_clock_mhz=600.0),)))
    assert [(a.id, a.gotcha) for a in alerts] == [("gpu.sm_clock_low", "U21")]
    assert (
        run(
            snap(
                gpus=(gpu(sm_clock_mhz=210.0, util_pct=0.0, mem_used=4 * 2**20),), gpu_processes=()
            )
        )
        == ()
    )


def test_throttle_by_temperature_or_reason():
    assert ids(run(snap(gpus=(gpu(temp_c=86.0),)))) == {"gpu.throttle"}
    reason = run(snap(gpus=(gpu(throttle_reasons=("hw_slowdown",)),)))
    assert ids(reason) == {"gpu.throttle"} and "hw_slowdown" in reason[0].message


def test_a_power_cap_counts_only_once_it_holds_the_clock_down():
    """A card at its power limit with the clock at 76 % of max (a real H200 under load,
    tests/fixtures/h200) is working as rated; at 40 % of max the cap is stealing."""
    rated = gpu(sm_clock_mhz=1500.0, power_w=692.0, throttle_reasons=("sw_power_cap",))
    assert ids(run(snap(gpus=(rated,)))) == set()
    starved = gpu(sm_clock_mhz=800.0, power_w=300.0, throttle_reasons=("sw_power_cap",))
    alerts = run(snap(gpus=(starved,)))
    assert ids(alerts) == {"gpu.throttle", "gpu.sm_clock_low"}
    assert "sw_power_cap" in next(a.message for a in alerts if a.id == "gpu.throttle")


def test_xid_79_persists_after_the_sample_that_carried_it():
    first = snap(
        xids=(XidEvent(79, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."),)
    )
    alerts = run(first, snap(t=1_000_005.0))
    (a,) = [a for a in alerts if a.id == "gpu.xid"]
    assert a.gotcha == "U22" and "Xid 79" in a.message
    assert "gpu.xid" not in ids(run(snap(xids=(XidEvent(13, "NVRM: Xid 13"),))))
    state = HealthState()
    for s in (first, first, snap()):
        state = state.observe(s)
    assert len(state.xids) == 1  # the same kernel line re-read after a reconnect counts once


def test_zombie_vram_only_when_idle_and_unlisted():
    zombie = snap(gpus=(gpu(util_pct=0.0, mem_used=20 * GIB),), gpu_processes=())
    assert ids(run(zombie)) == {"gpu.zombie_vram"}
    # container case: no process listed but the GPU is working → not a zombie
    assert run(snap(gpu_processes=())) == ()
    # processes not polled this sample → no verdict
    assert run(snap(gpus=(gpu(util_pct=0.0),), gpu_processes=None)) == ()


def test_two_processes_on_one_gpu_is_gen7():
    procs = (GpuProcess(0, 1, "python", GIB, 8, 8), GpuProcess(0, 2, "python", GIB, 8, 8))
    alerts = run(snap(gpu_processes=procs))
    assert [(a.id, a.gotcha) for a in alerts] == [("gpu.shared", "GEN7")]
    # No brackets of ours: a notification would show them escaped (a user's hour).
    assert alerts[0].message.endswith("processes: python (pid 1), python (pid 2)")


def test_threads_above_vcpu_quota_u40():
    unset = (GpuProcess(0, 7, "python", GIB, 70, None),)
    alerts = run(snap(gpu_processes=unset))
    assert [(a.id, a.gotcha) for a in alerts] == [("cpu.threads", "U40")]
    assert "64 threads on a 8-vCPU quota" in alerts[0].message
    assert run(snap(gpu_processes=(GpuProcess(0, 7, "python", GIB, 10, 8),))) == ()
    # an unlimited quota gives no basis for the rule
    assert (
        run(snap(cgroup=cgroup(cpu_quota_vcpus=None, cpu_unlimited=True), gpu_processes=unset))
        == ()
    )


def test_log_silent_while_artifacts_advance_u43():
    t = 1_000_000.0
    s = snap(log_mtime=t - 1200, artifact_mtime=t - 30, cell="sweep_lr3")
    (alert,) = run(s)
    assert (alert.id, alert.gotcha, alert.severity, alert.subject) == (
        "log.silent",
        "U43",
        "warning",
        "sweep_lr3",
    )
    assert (
        "log silent 20 min while cell sweep_lr3's outputs" in alert.message
        and "30 s ago" in alert.message
    )
    assert "do not kill it" in alert.message
    quiet_both = snap(log_mtime=t - 1200, artifact_mtime=t - 1200)
    assert run(quiet_both) == ()
    # Outputs moved after the log but stopped long ago: the run is not "alive" on this.
    stopped = snap(log_mtime=t - 3600, artifact_mtime=t - 1800)
    assert run(stopped) == ()
    # The log is silent, but not yet for the threshold.
    assert run(snap(log_mtime=t - 300, artifact_mtime=t - 5)) == ()
    # Threshold from config: half a minute (the demo's), outputs 30 s after the log.
    short = HealthContext(thresholds=Thresholds(log_silent_minutes=0.5))
    assert ids(run(snap(log_mtime=t - 40, artifact_mtime=t - 5), ctx=short)) == {"log.silent"}
    assert run(snap(log_mtime=t - 40, artifact_mtime=t - 20), ctx=short) == ()
    # A cell name is the box's text: control characters are shown escaped.
    (hostile,) = run(snap(log_mtime=t - 1200, artifact_mtime=t - 30, cell="x\x1b[2J"))
    assert "\x1b" not in hostile.message and "cell x\\x1b[2J's" in hostile.message
    # No log or no output folder known (no cell runs): no verdict.
    assert run(snap(log_mtime=None, artifact_mtime=t)) == ()
    # The box no longer answers: its last sample says nothing of "alive" now (s43).
    gone = HealthContext(connection="lost")
    assert "log.silent" not in ids(run(s, ctx=gone)), run(s, ctx=gone)


def test_connection_lost_says_run_may_be_alive():
    alerts = evaluate(None, HealthState(), HealthContext(connection="reconnecting"))
    assert [(a.id, a.gotcha) for a in alerts] == [("connection.lost", "GEN8")]
    assert "may still be alive" in alerts[0].message


def test_connection_lost_after_the_queue_finished_says_so():
    """Hours s22a #8, s24b #8: "the run may still be alive" over "queue 3/4 done ·
    finished": the last sample said no cell ran and the queue had finished."""
    lost = HealthContext(connection="reconnecting")
    finished = snap(cell=None, queue_done_at=1_000_000.0)
    (alert,) = [a for a in evaluate(finished, HealthState(), lost) if a.id == "connection.lost"]
    assert alert.message == "connection lost — its queue had finished at its last sample"
    running = snap(cell="lr02", queue_done_at=None)
    (alert,) = [a for a in evaluate(running, HealthState(), lost) if a.id == "connection.lost"]
    assert "may still be alive" in alert.message
    # A queue done, then launched again (no done record yet): a run may go on.
    (alert,) = [
        a for a in evaluate(snap(cell=None), HealthState(), lost) if a.id == "connection.lost"
    ]
    assert "may still be alive" in alert.message


def test_the_pane_says_a_finished_queue_not_a_live_run_when_the_box_drops():
    from rgt_tui.content.host_text import ALIVE_NOTE, FINISHED_NOTE, connection_lines
    from rgt_tui.services.telemetry import ConnectionState

    lost = ConnectionState("reconnecting", 1_000_000.0, attempt=2)

    def said(s: HostSnapshot) -> str:
        return "\n".join(c.plain for c in connection_lines(lost, s, 1_000_010.0))

    assert FINISHED_NOTE in said(snap(cell=None, queue_done_at=999_000.0))
    assert ALIVE_NOTE not in said(snap(cell=None, queue_done_at=999_000.0))
    assert ALIVE_NOTE in said(snap(cell="lr02"))


def test_back_after_a_gap_is_said_with_when_and_only_for_a_while():
    """Hour s24b #14: "back after a 8s gap" stood on the pane for the rest of the run."""
    from rgt_tui.content.host_text import GAP_SHOWN_S, connection_lines
    from rgt_tui.services.telemetry import ConnectionState

    back = ConnectionState("connected", 1_000_000.0, gap_s=8.0)

    def said(now: float) -> str:
        return "\n".join(c.plain for c in connection_lines(back, snap(), now))

    assert " · back " in said(1_000_060.0) and "after a 8s gap" in said(1_000_060.0)
    assert "gap" not in said(1_000_000.0 + GAP_SHOWN_S + 1)


def test_idle_gpu_while_billed_after_threshold():
    idle = [
        snap(t=1_000_000.0 + 60 * m, gpus=(gpu(util_pct=1.0),), gpu_processes=None)
        for m in range(0, 36, 4)
    ]
    billed = HealthContext(cost_per_hour=2.5)
    assert "cost.idle" not in ids(run(*idle[:3], ctx=billed))
    alerts = run(*idle, ctx=billed)
    said = next(a.message for a in alerts if a.id == "cost.idle")
    assert "$2.50/h: give it work, or pull, verify and stop it" in said, said
    # No rate set is not free (h513 #1); cost_per_hour = 0 is.
    unknown = next(a for a in run(*idle) if a.id == "cost.idle")
    assert "billed at a rate not set (set cost_per_hour" in unknown.message
    assert "cost.idle" not in ids(run(*idle, ctx=HealthContext(cost_per_hour=0.0)))
    busy_again = replace(idle[-1], t=idle[-1].t + 60, gpus=(gpu(util_pct=80.0),))
    assert "cost.idle" not in ids(run(*idle, busy_again, ctx=billed))


def test_a_jump_of_the_boxs_clock_is_not_idle_time():
    """h562 #4: a box whose clock was set 400 days on (NTP fixing a wrong RTC, a resume)
    was "GPUs idle 576002 min" within seconds. The time across a jump is not the box's
    idle time: the idle clock restarts there. A drop of 40 minutes keeps it (h564 #3)."""
    billed = HealthContext(cost_per_hour=2.0)
    start = 1_000_000.0
    before = [
        snap(t=start + 2 * n, gpus=(gpu(util_pct=1.0),), gpu_processes=None) for n in range(5)
    ]
    after = [replace(before[0], t=start + 400 * DAY + 2 * n) for n in range(5)]
    assert "cost.idle" not in ids(run(*before, *after, ctx=billed))
    back = [replace(before[0], t=start - DAY + 2 * n) for n in range(5)]  # and back again
    assert "cost.idle" not in ids(run(*before, *after, *back, ctx=billed))
    # Idle on, past the threshold on the new clock: told then, counted from the jump.
    later = [replace(before[0], t=after[-1].t + 60 * m) for m in range(0, 36, 4)]
    (idle,) = [a for a in run(*before, *after, *later, ctx=billed) if a.id == "cost.idle"]
    assert "idle 32 min" in idle.message, idle.message
    dropped = [replace(before[0], t=before[-1].t + 2400)]  # 40 minutes without a sample
    (idle,) = [a for a in run(*before, *dropped, ctx=billed) if a.id == "cost.idle"]
    assert "idle 40 min" in idle.message, idle.message


def test_idle_gpu_never_costs_while_a_queue_cell_runs():
    """Principle 1 counts paid minutes with nothing to show: a running cell (even a
    data-bound one at 0 % util, U38) is work. The idle clock restarts when it ends."""
    billed = HealthContext(cost_per_hour=2.5)
    start = 1_000_000.0
    running = [
        snap(t=start + 60 * m, gpus=(gpu(util_pct=0.0),), gpu_processes=None, cell="c1")
        for m in range(0, 120, 5)
    ]
    assert "cost.idle" not in ids(run(*running, ctx=billed))
    after = [replace(running[-1], t=running[-1].t + 60 * m, cell=None) for m in range(5, 60, 5)]
    state = HealthState()
    for s in (*running, *after[:5]):
        state = state.observe(s)
    # 25 min since the cell ended: not yet 30, although the GPU has been idle for 2 h.
    assert state.idle_since == after[0].t
    assert "cost.idle" not in ids(evaluate(after[4], state, billed))
    alerts = run(*running, *after, ctx=billed)
    (idle,) = [a for a in alerts if a.id == "cost.idle"]
    assert "idle 50 min" in idle.message and "no queue cell running" in idle.message


def test_alerts_sorted_most_severe_first():
    disk = DiskSample("/", "/", 1, 100, 99, 100)
    alerts = run(snap(disks=(disk,), gpus=(gpu(temp_c=90.0),)))
    assert [a.severity for a in alerts] == ["critical", "warning"]
