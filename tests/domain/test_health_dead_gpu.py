"""The dead-GPU alert where the kernel log cannot be read (U22 in containers), from recorded
nvidia-smi output (tests/fixtures/gpu, SOURCES.txt) run through the agent's own parsers,
the snapshot reader and the health rules over a sequence of samples."""

from __future__ import annotations

from typing import Any

from support.gpu_sequence import GPU_FIXTURES, gpu_rows

from rgt_tui.agent.probe import gpu_smi
from rgt_tui.domain.health import HealthContext, HealthState, evaluate
from rgt_tui.domain.snapshot import snapshot_from_agent

ECC = gpu_smi.SMI_GPU_FIELDS.index("ecc.errors.uncorrected.volatile.total")
T0 = 1_767_268_800.0


def _edit(rows: str, index: int, value: str) -> str:
    """The recorded agent-order rows with one cell replaced (the edit a test names)."""
    out = []
    for row in rows.strip().splitlines():
        cells = row.split(", ")
        cells[index] = value
        out.append(", ".join(cells))
    return "\n".join(out) + "\n"


def _two_gpus() -> str:
    """The recorded H100 row as GPU 0, and the same row as GPU 1 with its own uuid: the
    capture is single-GPU (SOURCES.txt), so the second card is the one edited row."""
    row = gpu_rows("load").strip()
    second = _edit(_edit(row, 0, "1"), 2, "GPU-11111111-1111-1111-1111-111111111111")
    return row + "\n" + second


def sample(seq: int, stdout: str, *, stderr: str = "", boot: str = "boot-1") -> dict[str, Any]:
    """One agent sample of a container (no /dev/kmsg) whose nvidia-smi printed ``stdout``."""
    gpus = gpu_smi.parse_smi_gpus(stdout)
    return {
        "v": 1,
        "t": T0 + 60.0 * seq,
        "seq": seq,
        "boot_id": boot,
        "gpu_source": "nvidia-smi" if gpus else "none",
        "gpu_unavailable_reason": None if gpus else gpu_smi.first_line(stderr, stdout),
        "gpus": gpus,
        "kmsg_readable": False,
        "gpu_lost": gpu_smi.lost_gpu_lines(stdout, stderr),
        "xids": [],
        "errors": [],
    }


def run(samples: list[dict[str, Any]]):
    """Every sample through the snapshot reader and HealthState; the last alerts."""
    state = HealthState()
    snap = None
    for data in samples:
        snap = snapshot_from_agent("box", data)
        state = state.observe(snap)
    return evaluate(snap, state, HealthContext())


def dead(alerts):
    return [a for a in alerts if a.id == "gpu.xid"]


def test_recorded_gpu_is_lost_text_raises_the_dead_gpu_alert_without_kmsg():
    lost = (GPU_FIXTURES / "smi_gpu_lost.txt").read_text()
    (alert,) = dead(run([sample(0, gpu_rows("load")), sample(1, lost)]))
    assert alert.severity == "critical" and alert.gotcha == "U22"
    assert "GPU 0000:02:00.0: GPU is lost" in alert.message
    assert "kernel log is not readable" in alert.message and "re-rent the box" in alert.message


def test_recorded_device_handle_unknown_error_raises_it_and_it_stays():
    lost = (GPU_FIXTURES / "smi_handle_unknown_error.txt").read_text()
    samples = [sample(0, gpu_rows("load")), sample(1, "", stderr=lost)]
    # The next listing looks healthy again: a lost card is not trusted until a reboot.
    samples.append(sample(2, gpu_rows("load")))
    (alert,) = dead(run(samples))
    assert "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error" in (
        alert.message
    )
    # A new boot starts over.
    assert dead(run([*samples, sample(3, gpu_rows("load"), boot="boot-2")])) == []


def test_err_fields_in_the_recorded_table_mean_lost_but_a_transient_power_err_does_not():
    table = (GPU_FIXTURES / "smi_err_table.txt").read_text()
    (line,) = gpu_smi.lost_gpu_lines(table)
    assert line.startswith("|ERR!   68C")
    assert dead(run([sample(0, gpu_rows("load")), sample(1, gpu_rows("load") + table)]))
    power = (GPU_FIXTURES / "smi_err_power_transient.txt").read_text()
    assert gpu_smi.lost_gpu_lines(power) == []


def test_volatile_ecc_rising_within_a_boot_raises_it():
    before, after = _edit(gpu_rows("load"), ECC, "0"), _edit(gpu_rows("load"), ECC, "2")
    (alert,) = dead(run([sample(0, before), sample(1, before), sample(2, after)]))
    assert "GPU 0: uncorrected ECC errors 0 → 2 this boot" in alert.message
    # A count that was already there when monitoring began, and never moves: no alert.
    assert dead(run([sample(0, after), sample(1, after)])) == []
    # A reboot resets volatile counters: 2 then (new boot) 0 then 0 is not a rise.
    assert (
        dead(run([sample(0, after), sample(1, before, boot="b2"), sample(2, before, boot="b2")]))
        == []
    )


def test_a_gpu_gone_from_the_listing_raises_it():
    two, one = _two_gpus(), gpu_rows("load")
    (alert,) = dead(run([sample(0, two), sample(1, one)]))
    assert "1 of 2 GPUs gone from the listing this boot" in alert.message
    # "No devices were found" after GPUs were listed this boot: every card is gone.
    gone = sample(2, "No devices were found\n")
    gone["gpu_unavailable_reason"] = gpu_smi.NO_DEVICE
    (alert,) = dead(run([sample(0, two), gone]))
    assert "2 of 2 GPUs gone" in alert.message
    # A box that always listed one GPU: nothing vanished.
    assert dead(run([sample(0, one), sample(1, one)])) == []


def test_healthy_recorded_rows_raise_nothing():
    assert dead(run([sample(n, gpu_rows(s)) for n, s in enumerate(["load", "idle", "load"])])) == []


def test_a_gpu_gone_stays_told_across_a_long_drop_and_a_jump_of_the_clock():
    """Review h564 #1: restarting the clocks at a long gap also dropped this evidence, and
    a card off the bus went unreported after a network drop. Only the idle and starving
    clocks restart at a jump of the box's clock; what this boot saw stays."""
    one = gpu_rows("load")
    seen = [sample(0, _two_gpus()), sample(1, one)]
    assert dead(run([*seen, sample(40, one)]))  # 39 minutes without a sample
    jumped = sample(2, one)
    jumped["t"] += 400 * 86400.0  # the box's clock set 400 days on
    assert dead(run([*seen, jumped]))
