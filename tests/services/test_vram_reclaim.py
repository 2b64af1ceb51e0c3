"""Reclaiming zombie VRAM (U11, GEN7) on a loopback box: the recorded H100 replayed by a
stand-in nvidia-smi whose memory stays in use while a real process holds files named
like /dev/nvidia* open (support.vram_box), the real box-side script over SSH, and the
real health rule on the agent's samples."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support import FIXTURES
from support.samples import write_fleet
from support.telemetry import Watch, alert_ids
from support.vram_box import HeldDevices, vram_smi
from support.waiting import wait_for

from rgt_tui.services.box.vram import (
    HIDDEN,
    VramError,
    check_kill,
    kill_vram_holder,
    read_vram_evidence,
)
from rgt_tui.services.telemetry import HostMonitor
from rgt_tui.transport.local import LocalTransport


@pytest.fixture
def held(tmp_path: Path):
    holder = HeldDevices(tmp_path / "dev")
    yield holder
    holder.stop()


async def gpu_box(make_queue_fleet, tmp_path: Path, held: HeldDevices, *, listed: bool = False):
    qf = await make_queue_fleet(1)
    box = qf.loopback.box("box1")
    box.extra_path.append(vram_smi(tmp_path / "smi", held.pid, listed=listed).parent)
    box.extra_env["RGT_NVIDIA_DEV_PREFIX"] = held.prefix
    transport = qf.transport()
    await transport.connect()
    return qf, transport


async def test_the_list_shows_the_holder_and_why_nvidia_smi_names_no_one(
    make_queue_fleet, tmp_path, held
):
    qf, transport = await gpu_box(make_queue_fleet, tmp_path, held)
    try:
        evidence = await read_vram_evidence("box1", transport)
    finally:
        await transport.close()
    assert evidence.smi == "ok"
    # The recording's GPU, idle, with the load's memory still in use.
    assert [(g.index, g.used_mib, g.util_pct) for g in evidence.gpus] == [(0, 19818, 0.0)]
    (holder,) = evidence.holders
    assert holder.pid == held.pid and holder.visible and not holder.listed
    assert sorted(holder.devices) == sorted(f"{held.prefix}{d}" for d in ("0", "ctl", "-uvm"))
    assert "python" in holder.comm and holder.cell == ""
    assert evidence.hidden_reason == f"nvidia-smi lists no process while VRAM is in use: {HIDDEN}"
    assert holder.refusal("box1") is None


async def test_nvidia_smi_pids_of_another_namespace_are_named_and_never_killed(
    make_queue_fleet, tmp_path, held
):
    qf, transport = await gpu_box(make_queue_fleet, tmp_path, held, listed=True)
    try:
        evidence = await read_vram_evidence("box1", transport)
        recorded = [p for p in evidence.processes if p.listed]
        # The recording's host PIDs, with the VRAM nvidia-smi puts on each.
        assert [(p.pid, p.smi_mib, p.gpu_index) for p in recorded] == [
            (11327, 2566, 0), (11328, 1542, 0), (11345, 15690, 0),
        ]  # fmt: skip
        assert "not visible in this PID namespace" in (evidence.hidden_reason or "")
        with pytest.raises(VramError) as refused:
            await kill_vram_holder(evidence, transport, 11345)
        assert refused.value.code == "not-holder"
    finally:
        await transport.close()


async def test_a_typed_holder_pid_is_killed_and_the_list_after_has_it_gone(
    make_queue_fleet, tmp_path, held
):
    qf, transport = await gpu_box(make_queue_fleet, tmp_path, held)
    try:
        evidence = await read_vram_evidence("box1", transport)
        result = await kill_vram_holder(evidence, transport, held.pid, grace_s=5)
        assert result.signal == "TERM" and not result.dropped
        await wait_for(held.ended, 10, "the holder to exit")
        after = await read_vram_evidence("box1", transport)
    finally:
        await transport.close()
    assert after.find(held.pid) is None
    assert [g.used_mib for g in after.gpus] == [0]  # the stand-in driver freed it


async def test_a_pid_not_in_the_evidence_is_refused_and_nothing_is_sent(
    make_queue_fleet, tmp_path, held
):
    qf, transport = await gpu_box(make_queue_fleet, tmp_path, held)
    try:
        evidence = await read_vram_evidence("box1", transport)
        other = HeldDevices(tmp_path / "elsewhere")  # holds files, but not under the prefix
        try:
            with pytest.raises(VramError) as refused:
                await kill_vram_holder(evidence, transport, other.pid)
            assert refused.value.code == "not-in-evidence"
            assert str(held.pid) in refused.value.message  # names the holders it could kill
            assert not other.ended()
        finally:
            other.stop()
    finally:
        await transport.close()
    assert not held.ended()


# A space and a leading dot are names the queue file accepts (h583 #1): the list read
# "my" as the cell and "run 123" as its pid, and a dot file's glob missed ".hidden".
@pytest.mark.parametrize("cell", ["train-a", "my run", ".hidden"])
async def test_a_queue_cells_pid_is_refused_here_and_on_the_box(
    make_queue_fleet, tmp_path, held, cell
):
    qf, transport = await gpu_box(make_queue_fleet, tmp_path, held)
    box = qf.loopback.box("box1")
    try:
        before = await read_vram_evidence("box1", transport)
        # The runner's own start record for a cell whose command is the holder (run_one.sh
        # writes `start TS BOOT PID`), written after the list the user saw.
        cells = qf.qdir() / "cells"
        cells.mkdir(parents=True, exist_ok=True)
        boot = box.boot_id_file.read_text().strip()
        (cells / f"{cell}.state").write_text(f"start 1767268800 {boot} {held.pid}\n")
        # The list knew nothing of the cell: the box's own check right before the signal refuses.
        with pytest.raises(VramError) as on_box:
            await kill_vram_holder(before, transport, held.pid)
        assert on_box.value.code == "queue-cell" and f"cell {cell}" in on_box.value.message
        # A list taken now names the cell, and the kill is refused before reaching the box.
        after = await read_vram_evidence("box1", transport)
        assert after.find(held.pid).cell == cell
        with pytest.raises(VramError) as here:
            check_kill(after, held.pid)
        assert here.value.code == "queue-cell" and "queue kill box1" in here.value.message
    finally:
        await transport.close()
    assert not held.ended()


async def test_a_pid_that_let_go_of_the_device_since_the_list_is_not_killed(
    make_queue_fleet, tmp_path, held
):
    qf, transport = await gpu_box(make_queue_fleet, tmp_path, held)
    try:
        evidence = await read_vram_evidence("box1", transport)
        held.let_go()  # as a reused PID would: the number runs, but holds no device
        await wait_for(lambda: not held.holds(), 10, "the files to be closed")
        with pytest.raises(VramError) as refused:
            await kill_vram_holder(evidence, transport, held.pid)
        assert refused.value.code == "not-holder"
    finally:
        await transport.close()
    assert not held.ended()


async def test_a_pid_given_to_another_process_since_the_list_is_not_killed(
    make_queue_fleet, tmp_path, held
):
    """h551 #3: the kill checked only that the number held a device: a process started
    under the confirmed one's pid since the list was killed in its place. The list says
    when each process started; the box compares it right before the signal."""
    from dataclasses import replace

    qf, transport = await gpu_box(make_queue_fleet, tmp_path, held)
    try:
        evidence = await read_vram_evidence("box1", transport)
        listed = evidence.find(held.pid)
        stat = Path(f"/proc/{held.pid}/stat").read_text().rsplit(") ", 1)[1].split()  # noqa: ASYNC240
        assert listed is not None and listed.started == stat[19]  # field 22: its start
        # What a list of the earlier process under this number said (an earlier start).
        earlier = replace(listed, started=str(int(listed.started) - 1))
        other = replace(evidence, processes=(earlier,))
        with pytest.raises(VramError) as refused:
            await kill_vram_holder(other, transport, held.pid)
        assert refused.value.code == "reused", refused.value
        assert "another process now" in refused.value.message
        assert "nothing was killed" in refused.value.message
        assert not held.ended()
        result = await kill_vram_holder(evidence, transport, held.pid, grace_s=2)  # the one listed
        assert result.signal in ("TERM", "KILL"), result
    finally:
        await transport.close()
    await wait_for(held.ended, 20, "the listed holder to end")


async def test_a_process_a_finished_cell_left_holding_the_gpu_can_be_killed(
    make_queue_fleet, tmp_path
):
    """h551 #4: a cell's process left holding VRAM after its cell ended was still tagged
    with the cell (its RGT_CELL_NAME), so the kill refused it as "the running queue cell"
    and sent the user to `queue kill`, which has nothing to kill."""
    held = HeldDevices(tmp_path / "dev", env={"RGT_CELL_NAME": "c3"})
    try:
        qf, transport = await gpu_box(make_queue_fleet, tmp_path, held)
        cells = qf.qdir() / "cells"
        cells.mkdir(parents=True, exist_ok=True)
        boot = qf.loopback.box("box1").boot_id_file.read_text().strip()
        try:
            # c3 ran and ended; its leftover is not its pid, and carries its name.
            (cells / "c3.state").write_text(f"start 1767268800 {boot} 1\nend 1767268900 0\n")
            evidence = await read_vram_evidence("box1", transport)
            leftover = evidence.find(held.pid)
            # Named as c3's (the gate's note, autostop's "a cell's orphan"), not its run's.
            assert leftover is not None and leftover.cell == "c3" and not leftover.in_run
            result = await kill_vram_holder(evidence, transport, held.pid, grace_s=2)
            assert result.signal in ("TERM", "KILL"), result
            # c3 runs again (its start record names a live process started after the
            # leftover): the earlier run's leftover is still no cell's (review h554 #5),
            # and a process of this run is c3's.
            left = HeldDevices(tmp_path / "dev2", env={"RGT_CELL_NAME": "c3"})
            run = await asyncio.create_subprocess_exec("sleep", "300")
            qf.loopback.box("box1").extra_env["RGT_NVIDIA_DEV_PREFIX"] = left.prefix
            try:
                (cells / "c3.state").write_text(f"start 1767268900 {boot} {run.pid}\n")
                evidence = await read_vram_evidence("box1", transport)
                earlier = evidence.find(left.pid)
                assert earlier is not None and (earlier.cell, earlier.in_run) == ("c3", False)
                check_kill(evidence, left.pid)  # an earlier run's leftover: killable
                mine = HeldDevices(tmp_path / "dev2", env={"RGT_CELL_NAME": "c3"})
                try:
                    evidence = await read_vram_evidence("box1", transport)
                    now = evidence.find(mine.pid)
                    assert now is not None and (now.cell, now.in_run) == ("c3", True)
                    with pytest.raises(VramError) as refused:
                        check_kill(evidence, mine.pid)
                    assert refused.value.code == "queue-cell"
                finally:
                    mine.stop()
            finally:
                run.kill()
                await run.wait()
                left.stop()
        finally:
            await transport.close()
    finally:
        held.stop()
    assert held.ended()


FLEET = """\
[[hosts]]
name = "gpubox"
ssh = "local"
"""


async def test_the_zombie_alert_clears_once_the_holder_is_killed(make_queue_fleet, tmp_path, held):
    qf, transport = await gpu_box(make_queue_fleet, tmp_path, held)
    # The agent samples the same stand-in GPU, listing processes every sample.
    (tmp_path / "agent").mkdir()
    host = write_fleet(tmp_path / "agent", FLEET).host("gpubox")
    tree = FIXTURES / "cgroup_v2_limited"
    monitor = HostMonitor(
        host,
        LocalTransport(host.name),
        interval=0.05,
        agent_args=[
            *("--nvidia-smi", str(tmp_path / "smi" / "nvidia-smi")),
            *("--smi-every", "1", "--proc-every", "1"),
            *("--sys-root", str(tree / "sys"), "--proc-root", str(tree / "proc")),
            *("--no-box-id", "--queue-dir", ""),
        ],
    )
    watch = Watch(monitor)
    try:
        zombie = await watch.until(
            lambda u: "gpu.zombie_vram" in alert_ids(u), 60, "the zombie alert"
        )
        assert zombie.snapshot is not None and zombie.snapshot.gpus[0].util_pct == 0
        evidence = await read_vram_evidence("box1", transport)
        result = await kill_vram_holder(evidence, transport, held.pid, grace_s=5)
        assert result.signal in ("TERM", "KILL")
        killed_at = max(u.snapshot.seq for u in watch.updates if u.snapshot is not None)
        cleared = await watch.until(
            lambda u: (
                u.snapshot is not None
                and u.snapshot.seq > killed_at
                and "gpu.zombie_vram" not in alert_ids(u)
            ),
            60,
            "the alert to clear",
        )
        assert cleared.snapshot is not None and cleared.snapshot.gpus[0].mem_used == 0
    finally:
        await watch.stop()
        await transport.close()


def test_a_local_process_under_a_listed_pid_is_not_shown_as_the_gpus_holder() -> None:
    """s38 disk hour #3: nvidia-smi listed a host PID that, in the container, was a
    `sleep 600` of the user's; `vram` showed "11345 0 15G … sleep 600" as the holder. Its
    row says the number is another process here, and the kill refusal stands."""
    from rgt_tui.cli.vram import format_evidence
    from rgt_tui.content.vram_text import evidence_content
    from rgt_tui.services.box.vram import GpuMemory, VramEvidence, VramProcess

    sleeper = VramProcess(
        11345, True, (), 15690, 0, "S", "0", 4, "", "sleep", "sleep 600"
    )  # fmt: skip
    gpu = GpuMemory(0, "GPU-1", 15690, 0.0)
    evidence = VramEvidence("box1", "ok", gpus=(gpu,), processes=(sleeper,))
    assert evidence.command_of(sleeper) == "another process here (sleep 600), not the GPU's"
    row = format_evidence(evidence).splitlines()[-1]
    assert row.startswith("  11345") and row.endswith(
        "another process here (sleep 600), not the GPU's"
    )
    assert "another process here (sleep 600)" in evidence_content(evidence).plain
    assert sleeper.refusal("box1") is not None  # holds no device file: never killed


def test_a_listed_pid_with_no_whole_memory_figure_is_shown_not_a_crash() -> None:
    """h503 #1: a box's nvidia-smi naming a pid with `1e308` MiB (no whole number) left
    ``smi_mib`` None with a GPU index, and the GPUs tab's `x` crashed on formatting it."""
    from rgt_tui.content.vram_text import process_content
    from rgt_tui.services.box.vram import VramEvidence, VramProcess

    odd = VramProcess(pid=4242, visible=False, gpu_index=0)
    evidence = VramEvidence(host="box2", smi="ok", processes=(odd,))
    text = process_content(odd, evidence).plain
    assert "nvidia-smi ? MiB (not a whole number) on GPU0" in text, text
    whole = VramProcess(pid=4243, visible=False, gpu_index=1, smi_mib=2048)
    assert "nvidia-smi 2,048 MiB on GPU1" in process_content(whole, evidence).plain


def test_a_listed_pid_that_is_another_process_here_is_said_so_not_invisible() -> None:
    """h503 #9: pids 1 and 14899 were said "not visible in this PID namespace", then
    listed as visible ("another process here, not the GPU's")."""
    from rgt_tui.services.box.vram import VramEvidence, VramProcess

    gone = VramProcess(pid=148990, visible=False, gpu_index=0, smi_mib=10)
    other = VramProcess(pid=1, visible=True, gpu_index=0, smi_mib=20)
    evidence = VramEvidence(host="box2", smi="ok", processes=(gone, other))
    said = evidence.hidden_reason or ""
    assert said.startswith(
        "nvidia-smi lists pid 148990, not visible in this PID namespace; pid 1, another "
        "process here holding no /dev/nvidia* file: "
    ), said


def test_a_kill_on_a_box_with_no_gpu_names_the_host_once() -> None:
    """h612 #8: `vram box1 --kill 1234` said "box1: box1 has no NVIDIA GPU…"."""
    from rgt_tui.services.box.vram import VramError, VramEvidence

    with pytest.raises(VramError) as refused:
        check_kill(VramEvidence("box1", "missing"), 1234)
    said = str(refused.value)
    assert said.count("box1") == 1 and "no NVIDIA GPU" in said and "nothing to kill" in said
    assert refused.value.code == "no-gpu"
