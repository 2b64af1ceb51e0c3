"""A local folder that refuses one pulled file (another disk mounted inside the results
folder, an immutable folder) refuses that file by name, with its own fix, and the rest
of the pull goes on (h543 #2: the whole pull stopped, half its files never pulled). Real
tmpfs mounts and chattr (CI runs as root)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from support.machine import tmpfs
from support.pulls import box_results, fast, host_of, pull, random_file, sha


@contextlib.contextmanager
def immutable(folder: Path) -> Iterator[None]:
    """``folder`` made immutable (chattr +i: even root cannot add to it), then undone."""
    folder.mkdir()
    subprocess.run(["chattr", "+i", str(folder)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


async def test_a_folder_that_refuses_its_files_stops_those_files_only(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    wanted = {
        "a.txt": random_file(res / "a.txt", 3000),
        "z/big.bin": random_file(res / "z" / "big.bin", 3 << 20),  # the SFTP way
    }
    # Small files (one stream of many) and a large one (SFTP), in each refusing folder.
    for folder in ("mounted", "locked"):
        random_file(res / folder / "small.txt", 2000)
        random_file(res / folder / "large.bin", 3 << 20)
    dest = tmp_path / "box1"
    # The whole results folder one tmpfs (chattr works there whatever /tmp is), with a
    # second disk mounted inside it.
    with tmpfs(dest, "64m"), tmpfs(dest / "mounted"), immutable(dest / "locked"):
        result = await pull(host_of(fleet), tmp_path, options=fast())
        refused = dict(result.conflicts)
        assert sorted(refused) == [
            "locked/large.bin",
            "locked/small.txt",
            "mounted/large.bin",
            "mounted/small.txt",
        ], result.conflicts
        assert "another file system than the pull's .rgt/parts" in refused["mounted/small.txt"]
        assert "mount that disk elsewhere" in refused["mounted/large.bin"]
        assert "refuses the file (Operation not permitted)" in refused["locked/small.txt"]
        assert "chattr -i" in refused["locked/large.bin"]
        # Named once: the CONFLICT line puts the path before it (h545 #7: twice).
        assert not any(why.startswith(rel) for rel, why in refused.items()), refused
        assert not result.ok and not result.failed
        for rel, digest in wanted.items():  # the rest of the pull went on
            assert sha(dest / rel) == digest, rel
