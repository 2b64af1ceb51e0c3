"""h602 #1: the idle clock lived in the monitor's HealthState alone, so every `watch`
restart started it again, and `watch --once` from cron (a fresh process each run) never
told cost.idle for a box idle and billed for hours. It is kept in the watch memory (the
journal's JSON, written at most every IDLE_SEEN_EVERY_S while idle) and seeded back; a gap
no sample saw (over IDLE_GAP_S) starts it again, since the box may have worked then."""

from __future__ import annotations

import json
from dataclasses import replace

from rgt_tui.domain.health import IDLE_GAP_S, HealthContext, HealthState, evaluate
from rgt_tui.domain.snapshot import GpuSample, HostSnapshot
from rgt_tui.services.watch.tracker import (
    IDLE_SEEN_EVERY_S,
    HostMemory,
    memory_from_json,
    memory_to_json,
    note_health,
    seed_health,
)

BILLED = HealthContext(cost_per_hour=2.5)
START = 1_000_000.0
IDLE_GPU = GpuSample(
    index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-1", util_pct=0.0, mem_util_pct=0.0,
    sm_clock_mhz=345.0, sm_clock_max_mhz=1980.0, mem_used=0, mem_total=80 << 30,
    power_w=70.0, power_limit_w=700.0, temp_c=30.0, throttle_reasons=(), ecc_volatile=0,
)  # fmt: skip


def idle_at(t: float) -> HostSnapshot:
    return HostSnapshot("box1", t=t, boot_id="boot-1", gpus=(IDLE_GPU,))


def one_process(memory: HostMemory, *times: float) -> tuple[HostMemory, HealthState]:
    """A watch process's run: seeded from ``memory`` (through its file's JSON), a sample
    at each time, the memory noted after each, as the store does."""
    memory = memory_from_json("box1", json.loads(json.dumps(memory_to_json("box1", memory))))
    health = seed_health(memory)
    for t in times:
        health = health.observe(idle_at(t))
        memory = note_health(memory, health)
    return memory, health


def idle_alert(health: HealthState, t: float) -> str:
    said = [a.message for a in evaluate(idle_at(t), health, BILLED) if a.id == "cost.idle"]
    return said[0] if said else ""


def test_watch_once_from_cron_counts_idle_across_its_runs() -> None:
    memory = HostMemory()
    for minute in range(0, 45, 5):  # cron: one `watch --once` every 5 minutes
        memory, health = one_process(memory, START + 60 * minute)
    assert memory.idle_since == START
    assert "idle 40 min" in idle_alert(health, START + 40 * 60), idle_alert(health, START + 2400)


def test_the_memory_is_written_at_most_every_few_minutes_while_idle() -> None:
    writes = 0
    memory = HostMemory()
    health = seed_health(memory)
    for n in range(600):  # 10 minutes at 1 Hz: the store saves only a changed memory
        health = health.observe(idle_at(START + n))
        noted = note_health(memory, health)
        writes += noted != memory
        memory = noted
    assert writes == 1 + int(599 // IDLE_SEEN_EVERY_S)  # its start, then each move on


def test_a_gap_no_sample_saw_starts_the_clock_again() -> None:
    memory, _ = one_process(HostMemory(), START, START + 600)
    later = START + 600 + IDLE_GAP_S + 60  # watch stopped over an hour: it may have worked
    memory, health = one_process(memory, later)
    assert memory.idle_since == later and not idle_alert(health, later)
    busy = replace(idle_at(later + 5), gpus=(replace(IDLE_GPU, util_pct=90.0),))
    assert note_health(memory, health.observe(busy)).idle_since is None
