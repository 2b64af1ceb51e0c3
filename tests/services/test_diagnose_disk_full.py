"""A cell that filled its disk: ``diagnose`` said "exited 1 by itself — fix the cause",
while the disk under its {out} was full and the error (torch's "unexpected pos") never said
so (s36 acts hour #3, U6). A real loopback box whose durable dir is a real 1 MiB tmpfs."""

from __future__ import annotations

from support.cli import arun
from support.machine import tmpfs
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.out_disk import OutDisk, disk_full_words, parse_out_disk
from rgt_tui.domain.queue_state import FINISHED

TORCH_SAVE = (
    'mkdir -p "$2"; head -c 3000000 /dev/zero > "$2/ck.pt" 2>/dev/null || '
    '{ echo "RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 6144 '
    'vs 6038"; exit 1; }'
)


async def test_diagnose_names_the_full_disk_a_save_failed_on(make_queue_fleet) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('saves', TORCH_SAVE)} t\n")
    with tmpfs(qf.root() / "results", "1m") as disk:
        # Preflight's disk check refuses 1 MiB for a checkpoint: acknowledged, as a user
        # who knows the run writes little would.
        launched = await arun("launch", "box1", "--hosts", hosts, "--yes", "--ack", "disk")
        assert launched.returncode == 0, launched.stdout + launched.stderr
        await wait_view(qf, lambda v: v.state == FINISHED, what="the cell to fail")
        said = await arun("diagnose", "box1", "--hosts", hosts)
    out = " ".join(said.stdout.split())
    assert "by itself" not in out, out
    assert f"cell 0 (saves) exited 1: the disk under its outputs is full: {disk} is 100% used" in (
        out
    ), out
    assert "torch: 'unexpected pos'" in out, out
    assert f"free space on {disk}" in out and "rgt-tui disk box1" in out, out
    assert said.returncode == 1, said.stdout + said.stderr  # a fault ended it, as CUDA OOM


def test_the_disk_is_named_by_the_log_or_by_its_df_and_a_roomy_disk_is_not_blamed() -> None:
    roomy = parse_out_disk("2000000000 30000000 /workspace")  # 2 TB, 1.5 % free: 30 GB
    assert roomy == OutDisk(2000000000, 30000000, "/workspace") and not roomy.full
    assert disk_full_words(roomy, "") is None
    said = disk_full_words(roomy, "OSError: [Errno 28] No space left on device")
    assert said == (
        "its log says the disk was full (OSError: [Errno 28] No space left on device); "
        "/workspace is 99% used (29G free of 1.9T) now"
    ), said
    assert parse_out_disk("x 1 /") is None and parse_out_disk("10 1") is None
    # The box's text: a mount with an escape is made printable.
    assert "\x1b" not in parse_out_disk("100 0 /mnt/\x1b[2Jx").mount  # type: ignore[union-attr]
