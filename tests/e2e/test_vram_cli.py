"""`rgt-tui vram HOST [--kill PID]` as a person and a script run it, on a loopback box
whose recorded H100 keeps its memory in use while a real process holds files named like
/dev/nvidia* open (support.vram_box)."""

from __future__ import annotations

import json

import pytest
from support.cli import Terminal, arun
from support.vram_box import HeldDevices, vram_smi
from support.waiting import wait_for


@pytest.fixture
def held(tmp_path):
    holder = HeldDevices(tmp_path / "dev")
    yield holder
    holder.stop()


async def gpu_fleet(make_queue_fleet, tmp_path, held):
    qf = await make_queue_fleet(1)
    box = qf.loopback.box("box1")
    box.extra_path.append(vram_smi(tmp_path / "smi", held.pid).parent)
    box.extra_env["RGT_NVIDIA_DEV_PREFIX"] = held.prefix
    return str(qf.loopback.hosts_file)


async def test_vram_lists_the_holder_and_refuses_what_it_may_not_kill(
    make_queue_fleet, tmp_path, held
):
    hosts = await gpu_fleet(make_queue_fleet, tmp_path, held)
    listed = await arun("vram", "box1", "--hosts", hosts)
    assert listed.returncode == 0, listed.stderr
    assert "box1: GPU0 19,818 MiB in use, util 0%" in listed.stdout
    assert "the container's PID namespace hides them" in listed.stdout
    assert f"  {held.pid} " in listed.stdout and "nvidia0 nvidiactl" in listed.stdout

    as_json = json.loads((await arun("vram", "box1", "--hosts", hosts, "--json")).stdout)
    (proc,) = as_json["processes"]
    assert proc["pid"] == held.pid and proc["killable"] is True

    # No terminal and no --yes: nothing is killed.
    asked = await arun("vram", "box1", "--hosts", hosts, "--kill", str(held.pid))
    assert asked.returncode == 2 and "pass --yes" in asked.stderr
    # A PID that is not in the list: refused, whatever --yes says.
    other = await arun("vram", "box1", "--hosts", hosts, "--kill", "1", "--yes")
    assert other.returncode == 1 and "not in the VRAM evidence" in other.stderr
    assert not held.ended()


async def test_vram_kill_asks_for_the_pid_typed_then_looks_again(make_queue_fleet, tmp_path, held):
    hosts = await gpu_fleet(make_queue_fleet, tmp_path, held)
    wrong = Terminal("vram", "box1", "--hosts", hosts, "--kill", str(held.pid))
    await wrong.expect("Type the pid to confirm: ")
    wrong.type("y")  # a yes is not the pid
    code, out, _ = await wrong.finish()
    assert code == 1 and "not killed" in out and not held.ended()

    asked = Terminal("vram", "box1", "--hosts", hosts, "--kill", str(held.pid))
    await asked.expect("Type the pid to confirm: ")
    asked.type(str(held.pid))
    code, out, err = await asked.finish()
    assert code == 0, out + err
    assert f"pid {held.pid} ended after SIGTERM" in out
    await wait_for(held.ended, 10, "the holder to exit")


async def test_the_teardown_check_names_a_process_on_the_gpus_when_no_cell_runs(
    make_queue_fleet, tmp_path, held
):
    """h511 #7: a run started by hand (not a queue cell) writing into the results read
    "the queue is idle" and "ready" between its saves. The check names the processes
    that hold the GPUs while no cell runs: a note, not a lock (a holder that cannot be
    stopped must never keep a billing box from its teardown)."""
    hosts = await gpu_fleet(make_queue_fleet, tmp_path, held)
    check = await arun("teardown", "box1", "--check", "--hosts", hosts)
    said = " ".join(check.stdout.split())
    assert f"no queue cell runs, yet a process here uses the GPUs: pid {held.pid} " in said, (
        check.stdout
    )
    assert "a run started by hand?" in said and "`rgt-tui vram box1`" in said
    held.let_go()  # it holds no device now
    await wait_for(lambda: not held.holds(), 10, "the holder to let go")
    again = await arun("teardown", "box1", "--check", "--hosts", hosts)
    assert "use the GPUs" not in again.stdout and "uses the GPUs" not in again.stdout
