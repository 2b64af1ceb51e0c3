"""A real disk that does not tell names apart by case: exFAT (as a USB drive or an SD
card is formatted), made in a file and mounted through a loop device with FUSE's
exfat-fuse (Debian's exfat-fuse and exfatprogs, installed by
scripts/install_system_deps.sh). It stands in for macOS's default APFS and Windows' NTFS,
which fold case the same way. Needs root (a loop device and a mount), as the test Slurm
cluster does."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def case_folding_disk(where: Path, size_mib: int = 32) -> Iterator[Path]:
    """A mounted exFAT disk's root, in ``where``; unmounted and freed on exit."""
    image, mount = where / "exfat.img", where / "exfat"
    mount.mkdir()
    with image.open("wb") as f:
        f.truncate(size_mib << 20)
    subprocess.run(["mkfs.exfat", str(image)], check=True, capture_output=True)
    loop = subprocess.run(
        ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        subprocess.run(["mount.exfat-fuse", loop, str(mount)], check=True, capture_output=True)
        try:
            yield mount
        finally:
            subprocess.run(["umount", str(mount)], check=True, capture_output=True)
    finally:
        subprocess.run(["losetup", "--detach", loop], check=True, capture_output=True)
