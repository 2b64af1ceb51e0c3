"""What the product makes of a real NVIDIA H200's output (tests/fixtures/h200, recorded
by scripts/gpu_record/ on a lent H200; SOURCES.txt there says which command made each
file). No GPU exists where these tests run, so this is the one place the product's
parsers, health rules and preflight checks meet a real card of today's driver (580)."""

from __future__ import annotations

import json

import pytest
from support import FIXTURES

from rgt_tui.agent.probe.gpu_smi import (
    SMI_GPU_FIELDS,
    parse_smi_apps,
    parse_smi_gpus,
)
from rgt_tui.domain.config import Readiness
from rgt_tui.domain.cuda_versions import driver_cuda
from rgt_tui.domain.gpu_faults import cuda_oom
from rgt_tui.domain.health import HealthContext, HealthState, evaluate
from rgt_tui.domain.preflight import parse_box_facts
from rgt_tui.domain.preflight_arch import check_arch
from rgt_tui.domain.preflight_checks import CheckContext, check_driver, check_torch
from rgt_tui.domain.preflight_net import parse_fabric
from rgt_tui.domain.preflight_smoke import check_smoke, parse_smoke
from rgt_tui.domain.run_interpreter import run_interpreter
from rgt_tui.domain.snapshot import decode_agent_line, snapshot_from_agent
from rgt_tui.profiles import profile
from rgt_tui.services.box.vram import VramError, check_kill, parse_evidence

H200 = FIXTURES / "h200"
GPU_FIXTURES = FIXTURES / "gpu"
UUID = "GPU-f4012706-6618-88fb-08bf-798b516c3d10"
MIB = 2**20


def text(name: str) -> str:
    return (H200 / name).read_text()


def samples(name: str) -> list[dict]:
    rows = [decode_agent_line(line) for line in text(name).splitlines()]
    assert rows and all(rows), f"{name}: a line the client cannot decode"
    return rows  # type: ignore[return-value]


def test_the_smi_parser_reads_a_loaded_h200_in_the_agents_own_field_order():
    problems: list[str] = []
    (gpu,) = parse_smi_gpus(text("load_query_gpu.csv"), problems)
    assert problems == []
    assert (gpu["name"], gpu["uuid"], gpu["util_pct"]) == ("NVIDIA H200", UUID, 96.0)
    assert (gpu["mem_used"], gpu["mem_total"]) == (41843 * MIB, 143771 * MIB)
    assert (gpu["sm_clock_mhz"], gpu["sm_clock_max_mhz"]) == (1500.0, 1980.0)
    assert (gpu["power_w"], gpu["power_limit_w"]) == (691.59, 700.0)
    assert gpu["throttle_reasons"] == ["sw_power_cap"]  # 0x4 at the power limit
    # The header run names the agent's columns in its order ("clocks.sm" is printed as
    # its full name), so the rows above are in the order the parser reads.
    header = text("idle_query_gpu_header.csv").splitlines()[0].split(", ")
    named = [h.split(" [")[0].replace("clocks.current.sm", "clocks.sm") for h in header]
    assert named == list(SMI_GPU_FIELDS)
    (idle,) = parse_smi_gpus(text("idle_query_gpu.csv"), problems)
    assert idle["throttle_reasons"] == [] and idle["mem_used"] == 0  # 0x1: idle, no fault
    (app,) = parse_smi_apps(text("load_query_compute_apps.csv"), {UUID: 0}, problems)
    assert (app["pid"], app["name"], app["used_mem"]) == (572, "python3", 41834 * MIB)
    assert parse_smi_apps(text("idle_query_compute_apps.csv"), {UUID: 0}, problems) == []


def test_the_agents_words_on_the_real_driver_are_what_it_keys_on():
    # The agent's retry with the old field name keys on this sentence (driver 580 too),
    # and that old name still answers there.
    assert "is not a valid field to query" in text("smi_bad_field.txt")
    assert text("smi_old_reasons_field.txt").strip() == "0, 0x0000000000000001"


@pytest.mark.parametrize("source", ["nvml", "smi"])
def test_the_agents_real_samples_read_cleanly_and_agree_across_sources(source):
    for state in ("idle", "load"):
        for data in samples(f"agent_{source}_{state}.jsonl"):
            assert data["errors"] == []
            assert data["gpu_source"] == ("nvml" if source == "nvml" else "nvidia-smi")
            snap = snapshot_from_agent("h200", data)
            (gpu,) = snap.gpus
            assert (gpu.name, gpu.uuid, gpu.mem_total) == ("NVIDIA H200", UUID, 143771 * MIB)
            assert snap.overflows == ()
    load = snapshot_from_agent("h200", samples(f"agent_{source}_load.jsonl")[-1])
    assert load.gpus[0].util_pct >= 95 and load.gpus[0].throttle_reasons == ("sw_power_cap",)
    (proc,) = load.gpu_processes
    assert (proc.pid, proc.gpu_index, proc.used_mem) == (572, 0, 41834 * MIB)
    assert proc.threads == 18  # read from /proc: the agent ran in the load's namespace


@pytest.mark.parametrize("name", ["agent_nvml_load", "agent_smi_load"])
def test_a_busy_h200_at_its_power_limit_raises_no_gpu_alert(name):
    """A healthy card under full load: 96-99 % util, ~692 of 700 W, sw_power_cap, the SM
    clock at ~76 % of max. Before, every such sample raised gpu.throttle (U23)."""
    state = HealthState()
    alerts: tuple = ()
    for data in samples(f"{name}.jsonl"):
        snap = snapshot_from_agent("h200", data)
        state = state.observe(snap)
        alerts = evaluate(snap, state, HealthContext())
    assert [a.id for a in alerts if a.id.startswith("gpu.")] == []


def test_an_idle_h200_raises_no_alert_though_nvml_counts_reserved_memory():
    """NVML's "used" on the idle card is 615 MiB with no process (the driver's own
    reservation; nvidia-smi says 0 MiB): below the zombie threshold, no alert."""
    state = HealthState()
    for data in samples("agent_nvml_idle.jsonl"):
        snap = snapshot_from_agent("h200", data)
        state = state.observe(snap)
        assert evaluate(snap, state, HealthContext()) == ()
    listed = snapshot_from_agent("h200", samples("agent_nvml_idle.jsonl")[0])
    assert listed.gpus[0].mem_used == 644939776 and listed.gpu_processes == ()


def test_the_vram_evidence_of_a_real_holder_allows_its_kill_and_an_idle_card_has_none():
    evidence = parse_evidence("h200", text("vram_list_load.txt"))
    (holder,) = evidence.processes
    assert (holder.pid, holder.visible, holder.smi_mib, holder.gpu_index) == (572, True, 41834, 0)
    assert "/dev/nvidia0" in holder.devices and holder.comm == "python3"
    assert "\n" not in holder.cmdline  # the multi-line python -c is one printable line
    assert check_kill(evidence, 572) is holder
    idle = parse_evidence("h200", text("vram_list_idle.txt"))
    assert idle.processes == () and idle.gpus[0].used_mib == 0
    with pytest.raises(VramError):
        check_kill(idle, 572)


def test_the_smoke_of_a_step_that_fits_passes_with_its_real_peak():
    check = check_smoke(parse_smoke(text("smoke_fits.txt")), "`train`", "h200")
    assert check.ok and "exited 0 after 10s" in check.detail
    assert "peak VRAM 3.0G of the GPUs' 140G" in check.detail


def test_the_smoke_of_a_first_forward_pass_that_cannot_fit_says_what_torch_counted():
    check = check_smoke(parse_smoke(text("smoke_oom.txt")), "`train`", "h200")
    assert not check.ok and "tried to allocate 64.00 GiB of a 139.80 GiB card" in check.detail
    # The 1 s samples saw no VRAM (it allocated and failed within a second); torch's own
    # figure stands instead of "no VRAM used by it".
    assert "it held 80.51 GiB of VRAM when it ran out" in check.detail
    assert "no VRAM used by it" not in check.detail
    # 1.75 MiB reserved but unallocated against a 64 GiB request: not fragmentation.
    assert "make the batch smaller" in check.fix and "will not help" in check.fix
    assert "expandable_segments:True (less" not in check.fix


def test_the_oom_advice_follows_torchs_own_figures():
    direct = [ln for ln in text("cuda_oom_direct.txt").splitlines() if "CUDA out of memory" in ln]
    h200 = cuda_oom(direct[0])
    assert h200 is not None and (h200.in_use, h200.spare) == ("80.51 GiB", "1.75 MiB")
    assert "fragmentation is not the cause" in h200.advice()
    # A 22 MiB request with 194.87 MiB reserved but unallocated: fragmentation can be it.
    small = cuda_oom((GPU_FIXTURES / "cuda_oom_traceback.txt").read_text().splitlines()[-1])
    assert small is not None and "expandable_segments:True" in small.advice()
    # 55.57 GiB asked of a 12 GiB card: nothing but a smaller batch makes it fit.
    older = cuda_oom((GPU_FIXTURES / "cuda_oom_torch_old.txt").read_text().splitlines()[-1])
    assert older is not None and "larger than the whole 12.00 GiB card" in older.advice()


def _facts():
    lines = [f"py\t{ln}" for ln in text("preflight_check.txt").splitlines()]
    lines += ["smi\t/usr/local/nvidia/bin/nvidia-smi"]
    lines += [f"ver\t{ln}" for ln in text("smi_version.txt").splitlines() if ln.strip()]
    return parse_box_facts("\n".join(lines + ["end\t1"]))


def test_preflight_passes_torch_arch_and_driver_on_the_real_box():
    facts = _facts()
    ctx = CheckContext(
        "h200", profile("generic-ssh"), Readiness(), run_interpreter(None), "~", "~/r"
    )
    assert driver_cuda(facts)[0] == (13, 0)
    for check in (check_torch(facts, ctx), check_arch(facts, ctx), check_driver(facts, ctx)):
        assert check.ok, check
    assert "sm_90" in check_arch(facts, ctx).detail
    recorded = json.loads(text("torch_arch.json"))
    assert recorded["capability"] == [9, 0] and "sm_90" in recorded["arch_list"]


def test_a_single_h200_has_no_fabric_to_wait_for():
    (gpu,) = parse_fabric(text("smi_q.txt"))
    assert (gpu.gpu, gpu.state, gpu.status) == ("00000000:00:06.0", "N/A", "N/A")
