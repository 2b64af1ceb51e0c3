"""`rgt-tui launch` runs preflight first: refused on a failed check (shown with its
detail and fix), accepted once each failed check is acknowledged with --ack; the real
console entry point over loopback boxes and over OpenSSH's sshd."""

from __future__ import annotations

import re
from pathlib import Path

from support.cli import arun
from support.queues import SCRIPT_RUN, wait_view
from support.waiting import wait_for

# On this GPU-less machine, cells run by bash (arch cannot be checked without torch).
FAILING = ("torch", "gpu", "driver", "arch")


def _without_preflight_ack(hosts_file: Path) -> None:
    """Drop the fleet file's preflight_ack lines: every failed check then refuses."""
    text = hosts_file.read_text()
    hosts_file.write_text(re.sub(r"(?m)^preflight_ack = .*\n", "", text))


def _check_refusal(out: str) -> None:
    """The refused plan lists the checks and says how to go ahead anyway."""
    assert "preflight on " in out
    assert re.search(r"(?m)^    tmux +ok +tmux ", out), out
    assert re.search(r"(?m)^    gpu +FAILED +no GPU: nvidia-smi is not on the box's PATH", out)
    assert re.search(r"(?m)^ +fix: pick a box with a GPU", out), out
    assert (
        "REFUSED: preflight checks torch, gpu, driver, arch failed — fix the box, or launch "
        "anyway with --ack torch --ack gpu --ack driver --ack arch"
    ) in out


async def test_launch_is_refused_on_a_failed_check_then_goes_ahead_with_ack(
    make_queue_fleet,
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    _without_preflight_ack(qf.loopback.hosts_file)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")

    refused = await arun("launch", "box1", "--hosts", hosts, "--yes")
    assert refused.returncode == 1, refused.stderr
    _check_refusal(refused.stdout)
    assert not (qf.qdir() / "runner.state").exists()

    typo = await arun("launch", "box1", "--hosts", hosts, "--yes", "--ack", "gpus")
    assert typo.returncode == 1
    assert "REFUSED: unknown preflight check 'gpus' to acknowledge — the checks are: " in (
        typo.stdout
    )

    acks = [arg for name in FAILING for arg in ("--ack", name)]
    launched = await arun("launch", "box1", "--hosts", hosts, "--yes", *acks)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert re.search(r"(?m)^    gpu +ACKNOWLEDGED +no GPU", launched.stdout), launched.stdout
    assert "REFUSED" not in launched.stdout
    # Its fix is done (acknowledged): not printed as still to do (hour s19a #14).
    gpu = launched.stdout.split("ACKNOWLEDGED", 1)[1].split("\n", 2)
    assert not gpu[1].strip().startswith("fix:"), launched.stdout
    assert "launched on box1: runner pid" in launched.stdout
    await wait_view(qf, lambda v: v.count("done") == 1, what="the acknowledged launch")


async def test_launch_over_sshd_is_refused_then_goes_ahead_with_ack(
    openssh_queue_server,
) -> None:  # type: ignore[no-untyped-def]
    server = openssh_queue_server
    queue = server.add_queue(SCRIPT_RUN)
    _without_preflight_ack(server.hosts_file)
    (server.workdir / "cells").mkdir()
    (server.workdir / "cells" / "one.sh").write_text("echo one\n")
    queue.write_text("cells/one.sh t 1\n")
    hosts = str(server.hosts_file)

    refused = await arun("launch", "real1", "--hosts", hosts, "--yes")
    assert refused.returncode == 1, refused.stderr
    _check_refusal(refused.stdout)

    acks = [arg for name in FAILING for arg in ("--ack", name)]
    launched = await arun("launch", "real1", "--hosts", hosts, "--yes", *acks)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert "launched on real1: runner pid" in launched.stdout
    state = server.workdir / ".rgt" / "queue" / "cells" / "one.state"
    await wait_for(lambda: state.exists() and "\nend " in state.read_text(), what="the cell to end")
