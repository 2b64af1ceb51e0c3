"""What `rgt-tui launch --ack CHECK` acknowledged goes with the launch: `queue retry` of
its failed cell goes ahead on it without asking again, says so, and `--no-launch-acks`
revokes it (refused until `--ack` again). The real entry point over a loopback box with
no GPU, so "gpu" fails for its own reason."""

from __future__ import annotations

from support.cli import arun
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import FAILED


def _failed(retries: int):  # type: ignore[no-untyped-def]
    def check(view) -> bool:  # type: ignore[no-untyped-def]
        cell = view.cells[0] if view.cells else None
        return (
            cell is not None
            and cell.status == FAILED
            and cell.retries == retries
            and not view.runner_alive
        )

    return check


async def test_retry_goes_ahead_on_what_the_launch_acknowledged_and_can_revoke_it(
    make_queue_fleet,
) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.set_preflight_ack(("torch", "driver", "arch"))  # gpu alone fails: no GPU here
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('one', 'echo one; exit 3')} t\n")

    launched = await arun("launch", "box1", "--hosts", hosts, "--yes", "--ack", "gpu")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    await wait_view(qf, _failed(0), what="the cell to fail")

    retried = await arun("queue", "retry", "box1", "one", "--hosts", hosts, "--yes")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "acknowledged at launch: gpu (no GPU: nvidia-smi is not on the box's PATH" in (
        retried.stdout
    )
    assert "REFUSED" not in retried.stdout
    # Only what carries information (issue 43.10e): no empty "preflight on box1:" header,
    # no "fix:" without its check; the acknowledged check is said once, above.
    assert "preflight on box1:" not in retried.stdout and "fix:" not in retried.stdout
    assert "launched runner pid" in retried.stdout
    await wait_view(qf, _failed(1), what="the retried cell to fail again")

    # Revoked: the retry's own launch must pass preflight or acknowledge again.
    revoked = await arun(
        "queue", "retry", "box1", "one", "--hosts", hosts, "--yes", "--no-launch-acks"
    )
    assert revoked.returncode == 1, revoked.stdout + revoked.stderr
    lines = revoked.stdout.splitlines()
    at = lines.index("    preflight on box1:")
    assert lines[at + 1].split()[:2] == ["gpu", "FAILED"], revoked.stdout
    assert lines[at + 2].strip().startswith("fix: pick a box with a GPU"), revoked.stdout
    assert "launch anyway" not in revoked.stdout  # the retry's own refusal says how
    assert "revoked for this retry (--no-launch-acks)" in revoked.stdout
    assert "REFUSED: preflight failed — fix the box, or retry anyway with --ack gpu" in (
        revoked.stdout
    )
    again = await arun(
        "queue", "retry", "box1", "one", "--hosts", hosts, "--yes", "--no-launch-acks",
        "--ack", "gpu",
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    await wait_view(qf, _failed(2), what="the acknowledged retry to run")
