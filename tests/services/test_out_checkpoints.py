"""What a retry would set aside: the checkpoints in cell folders, from the disk audit's
``cell`` records (``services.disk.out_checkpoints``), over a loopback box."""

from __future__ import annotations

import os

from support.pulls import host_of

from rgt_tui.services.disk.out_checkpoints import checkpoints_in, parse_checkpoints
from rgt_tui.transport import transport_for


def test_records_give_each_folders_checkpoints_newest_first_never_a_tmp() -> None:
    text = "\0".join(
        [
            "home\t/h", "root\t0\tcell\t/real/a", "missing\t1\tcell",
            "ckpt\t0\t10.0\t5\t1\t2\t/real/a/step-1.pt",
            "ckpt\t0\t30.0\t5\t1\t2\t/real/a/sub/step-2.pt",
            "ckpt\t0\t40.0\t5\t1\t2\t/real/a/step-3.pt.tmp",  # torch.save's leftover
            "ckpt\t0\tgarbled",
            "ckpt\t0\t50.0\t5\t1\t2\t/elsewhere/x.pt",  # not under its folder
        ]
    )  # fmt: skip
    assert parse_checkpoints(text, ["/w/a", "/w/b"]) == {"/w/a": ("sub/step-2.pt", "step-1.pt")}


async def test_a_folder_with_a_checkpoint_is_found_one_without_or_absent_is_not(
    make_loopback_fleet,
) -> None:  # type: ignore[no-untyped-def]
    fleet = await make_loopback_fleet(1)
    host = host_of(fleet)
    root = fleet.box("box1").root
    saved, empty = root / "results" / "saved", root / "results" / "empty"
    saved.mkdir(parents=True)
    empty.mkdir()
    (saved / "old.pt").write_bytes(b"1")
    (saved / "checkpoint.pt").write_bytes(b"2")
    os.utime(saved / "old.pt", (1, 1))
    (saved / "metrics.json").write_text("{}")
    (empty / "log.txt").write_text("x")
    transport = transport_for(host)
    try:
        folders = [str(saved), str(empty), str(root / "results" / "never")]
        found = await checkpoints_in(host.name, transport, folders)
    finally:
        await transport.close()
    assert found == {str(saved): ("checkpoint.pt", "old.pt")}
