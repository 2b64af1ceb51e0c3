"""Verify over a loopback box: a damaged checkpoint is corrupt, not unsafe (UX trial H10).

torch's safe loader refuses a pickle with a zeroed byte in the same words it refuses one
that names code ("Unsupported operand 0"); only the second needs arbitrary code to load.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import torch
from support.pulls import box_results, fast, host_of

from rgt_tui.services.pull import pull_host
from rgt_tui.services.verify.run import verify_host
from rgt_tui.transport import transport_for


class Payload:
    """Unpickling this would run a command (it must never be unpickled)."""

    def __reduce__(self):
        return (os.system, ("true",))


async def _pull_and_verify(fleet, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The box's files pulled into ``tmp_path`` and verified there, the box re-scanned."""
    host = host_of(fleet)
    transport = transport_for(host)
    try:
        pulled = await pull_host(host, tmp_path, transport, options=fast())
        assert not pulled.failed, pulled.failed
        return await verify_host(host, tmp_path, transport=transport)
    finally:
        await transport.close()


def zeroed(data: bytes, start: int, end: int) -> bytes:
    """``data`` with bytes ``start`` to ``end`` set to zero, as a bad disk or copy leaves it."""
    return data[:start] + bytes(end - start) + data[end:]


async def test_a_checkpoint_with_zeroed_bytes_is_corrupt_not_unsafe(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet) / "solo1"
    res.mkdir(parents=True)
    # A small step checkpoint as a training loop keeps it; its pickle comes first.
    torch.save({"step": 22, "w": torch.zeros(100), "opt": {"lr": 0.1}}, res / "step-21.pt")
    whole = (res / "step-21.pt").read_bytes()
    (res / "step-22.pt").write_bytes(zeroed(whole, 64, 200))
    torch.save({"w": torch.ones(3)}, res / "old.pt", _use_new_zipfile_serialization=False)
    (res / "old-22.pt").write_bytes(zeroed((res / "old.pt").read_bytes(), 60, 80))
    torch.save({"w": torch.zeros(2), "hook": Payload()}, res / "evil.pt")
    (res / "evil.ckpt").write_bytes(pickle.dumps({"hook": Payload()}, protocol=2))

    report = await _pull_and_verify(fleet, tmp_path)

    checks = {c.path: c for c in report.checks}
    assert checks["solo1/step-21.pt"].status == "verified"
    for name in ("solo1/step-22.pt", "solo1/old-22.pt"):
        check = checks[name]
        assert check.status == "corrupt", check
        assert check.detail.startswith("truncated or damaged on the box"), check.detail
        assert "arbitrary code" not in check.detail and "Unsupported operand 0" in check.detail
    assert "checksum does not match" in checks["solo1/step-22.pt"].detail
    assert "not a well-formed pickle" in checks["solo1/old-22.pt"].detail
    for name in ("solo1/evil.pt", "solo1/evil.ckpt"):  # a real global outside the allow-list
        check = checks[name]
        assert check.status == "unsafe", check
        assert "needs arbitrary code to load" in check.detail and "system" in check.detail
    assert not report.ok


async def test_a_checkpoint_named_as_no_torch_file_is_loaded_all_the_same(
    make_loopback_fleet, tmp_path
):
    """h511 #5: torch files named `model_best.pth.tar` (the PyTorch ImageNet example's
    name) or `ckpt_step_25` were checked by hash alone, so the first 20 KB of one passed.
    A file that starts as torch.save writes it is loaded whatever its name; a zip or a
    pickle that is not torch's is not."""
    import zipfile

    fleet = await make_loopback_fleet(1)
    res = box_results(fleet) / "cell"
    res.mkdir(parents=True)
    torch.save({"w": torch.zeros(20_000)}, res / "whole.pth.tar")
    torch.save({"w": torch.ones(3)}, res / "legacy_step_3", _use_new_zipfile_serialization=False)
    whole = (res / "whole.pth.tar").read_bytes()
    (res / "model_best.pth.tar").write_bytes(whole[: len(whole) // 2])
    (res / "ckpt_step_25").write_bytes(whole[: len(whole) // 2])
    with zipfile.ZipFile(res / "arrays.npz", "w") as z:  # a zip, not torch's
        z.writestr("a.npy", b"\x93NUMPY")
    (res / "plain.pkl").write_bytes(pickle.dumps({"a": 1}, protocol=2))

    report = await _pull_and_verify(fleet, tmp_path)
    checks = {c.path.split("/")[-1]: c for c in report.checks}
    assert checks["whole.pth.tar"].status == "verified", checks["whole.pth.tar"]
    assert checks["legacy_step_3"].status == "verified", checks["legacy_step_3"]
    # Its bytes were not checked, and it says so (h515 #4), in words that agree.
    assert "the old format holds no CRC-32s" in checks["legacy_step_3"].detail
    assert "1 tensor, 3 values" in checks["legacy_step_3"].detail
    for name in ("model_best.pth.tar", "ckpt_step_25"):
        assert checks[name].kind == "torch" and checks[name].status == "corrupt", checks[name]
    for name in ("arrays.npz", "plain.pkl"):
        assert checks[name].kind == "other" and checks[name].status == "hash-only", checks[name]


async def test_a_checkpoint_changed_inside_a_tensor_is_corrupt(make_loopback_fleet, tmp_path):
    """h511 #6: 64 bytes changed inside a tensor's record loaded, since a mapped load
    reads no tensor bytes. Each record is now read against the CRC-32 torch wrote."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet) / "cell"
    res.mkdir(parents=True)
    torch.save({"w": torch.full((20_000,), 7.0)}, res / "good.pt")
    data = bytearray((res / "good.pt").read_bytes())
    at = data.find(b"\x00\x00\xe0\x40" * 64)  # 7.0 as float32, little-endian
    assert at > 0
    data[at + 100 : at + 164] = bytes(b ^ 0x5A for b in data[at + 100 : at + 164])
    (res / "flipped.pt").write_bytes(bytes(data))

    report = await _pull_and_verify(fleet, tmp_path)
    checks = {c.path.split("/")[-1]: c for c in report.checks}
    assert checks["good.pt"].status == "verified", checks["good.pt"]
    assert "every record's CRC-32 checked" in checks["good.pt"].detail
    flipped = checks["flipped.pt"]
    assert flipped.status == "corrupt", flipped
    assert "does not match the CRC-32 torch wrote for it" in flipped.detail, flipped.detail


async def test_a_checkpoint_saved_without_crcs_is_loaded_not_called_corrupt(
    make_loopback_fleet, tmp_path
):
    """Review h514 #3: torch.serialization.set_crc32_options(False) (large saves run
    faster) writes every record's CRC-32 as 0; the CRC check called such a file corrupt."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet) / "cell"
    res.mkdir(parents=True)
    torch.serialization.set_crc32_options(False)
    try:
        torch.save({"w": torch.full((2_000,), 3.0)}, res / "fast.pt")
    finally:
        torch.serialization.set_crc32_options(True)
    report = await _pull_and_verify(fleet, tmp_path)
    (check,) = [c for c in report.checks if c.path.endswith("fast.pt")]
    assert check.status == "verified", check
    assert "saved without CRC-32s, so its records' bytes were not checked" in check.detail
