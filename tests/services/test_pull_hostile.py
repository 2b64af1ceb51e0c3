"""A hostile box: its own ``tar`` and ``python3`` (first on its PATH) answer the pull with
crafted bytes. Each lie is refused by name, loses nothing, and nothing is ever written
outside ``<results_dir>/<host>/``."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from support.pulls import box_results, fast, host_of, pull, random_file, sha

from rgt_tui.services.pull import NotEnoughSpace, PullError


@pytest.fixture
async def hostile(make_loopback_fleet, tmp_path):  # type: ignore[no-untyped-def]
    """(fleet, answer): ``answer(program, data)`` makes the box's ``program`` read its
    stdin and print ``data``, whatever it is asked."""
    fleet = await make_loopback_fleet(1)
    bin_dir = tmp_path / "hostile-bin"
    bin_dir.mkdir()
    fleet.box("box1").extra_path.append(bin_dir)

    def answer(program: str, data: bytes) -> None:
        (bin_dir / f"{program}.out").write_bytes(data)
        script = bin_dir / program
        script.write_text(f"#!/bin/sh\ncat > /dev/null\nexec cat '{bin_dir}/{program}.out'\n")
        script.chmod(0o755)

    return fleet, answer


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return out.getvalue()


def _member(name: str, data: bytes, **kw: object) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in kw.items():
        setattr(info, key, value)
    return info, data


def _local_tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if ".rgt" not in p.parts}


def _small_files(res: Path) -> dict[str, str]:
    out = {}
    for name in ("a.json", "b.json", "c.json"):
        (res / name).write_text(json.dumps({"name": name}))
        out[name] = sha(res / name)
    return out


async def test_a_tar_member_longer_than_promised_is_never_kept_and_comes_by_sftp(hostile, tmp_path):
    """A member at another size than the manifest's (a file that changed since it was
    listed, or a lie): no byte of it is kept; it goes the SFTP way, which reads the
    listed size and checks its hash, as for a large file."""
    fleet, answer = hostile
    res = box_results(fleet)
    digests = _small_files(res)
    answer("tar", _tar(_member("./a.json", b"x" * 5000)))  # the manifest says ~17 bytes
    result = await pull(host_of(fleet), tmp_path, options=fast())
    dest = tmp_path / "box1"
    assert result.ok and not result.failed
    assert b"x" * 100 not in (dest / "a.json").read_bytes()  # the tar bytes: never kept
    assert not list((dest / ".rgt" / "parts").rglob("a.json*"))
    assert {n: sha(dest / n) for n in digests} == digests  # every file the SFTP way, checked


async def test_a_tar_member_of_the_right_size_and_other_bytes_comes_again_said(hostile, tmp_path):
    """A member at the listed size whose bytes do not hash as listed is pulled again by
    SFTP, checked; the summary says it came again and counts its bytes (review h526 #5)."""
    fleet, answer = hostile
    res = box_results(fleet)
    digests = _small_files(res)
    size = (res / "a.json").stat().st_size
    answer("tar", _tar(_member("./a.json", b"y" * size)))
    result = await pull(host_of(fleet), tmp_path, options=fast())
    dest = tmp_path / "box1"
    assert result.ok and {n: sha(dest / n) for n in digests} == digests
    assert result.again == (("a.json", size, "hash mismatch in the small files' stream"),)
    assert result.moved == result.to_move + size


async def test_a_live_log_that_grew_since_the_listing_comes_as_listed_not_failed(hostile, tmp_path):
    """The queue's log, still written while the pull runs (ux-a #16): the tar stream
    brings it longer than listed; it is no failure, it comes as it was when listed (its
    first bytes hash the same), and the next pull brings the rest."""
    from rgt_tui.cli.pull import format_pull_result

    fleet, answer = hostile
    _small_files(box_results(fleet))
    log = fleet.box("box1").root / ".rgt" / "queue" / "queue.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    listed = b"QUEUE START\ncell 0 start\n" * 100
    log.write_bytes(listed)
    answer("tar", _tar(_member("./queue.log", listed + b"cell 0 end\n")))  # grew since
    result = await pull(host_of(fleet), tmp_path, options=fast())
    logs = result.box_logs
    assert logs is not None and logs.failed == () and logs.listed == 1, logs
    assert (logs.folder / "queue.log").read_bytes() == listed  # as listed
    text = format_pull_result(result)
    assert "FAILED" not in text and "box logs: 1 files (1 new or grown)" in text, text


@pytest.mark.parametrize(
    "member",
    [
        _member("./../../escaped.json", b"{}"),
        _member("/tmp/escaped.json", b"{}"),
        _member("./unasked.json", b"{}"),
    ],
    ids=["dotdot", "absolute", "unasked"],
)
async def test_a_tar_member_not_asked_for_stops_the_stream_and_lands_nowhere(
    hostile, tmp_path, member
):
    fleet, answer = hostile
    digests = _small_files(box_results(fleet))
    answer("tar", _tar(member, _member("./a.json", b"never read")))
    result = await pull(host_of(fleet), tmp_path / "out", options=fast())
    dest = tmp_path / "out" / "box1"
    assert result.ok  # what tar did not bring honestly came by SFTP
    assert {n: sha(dest / n) for n in digests} == digests
    assert _local_tree(tmp_path / "out") == {"box1", *(f"box1/{n}" for n in digests)}
    assert not os.path.exists("/tmp/escaped.json")  # noqa: S108, ASYNC240 - where the box aimed


async def test_a_tar_link_or_folder_in_place_of_a_file_is_refused_by_name(hostile, tmp_path):
    fleet, answer = hostile
    _small_files(box_results(fleet))
    link = _member("./a.json", b"", type=tarfile.SYMTYPE, linkname="/etc/passwd")
    answer("tar", _tar(link))
    result = await pull(host_of(fleet), tmp_path, options=fast())
    (failed,) = result.failed
    assert failed[0] == "a.json" and "not a regular file" in failed[1]
    assert not (tmp_path / "box1" / "a.json").exists()
    assert not (tmp_path / "box1" / "a.json").is_symlink()


async def test_a_huge_long_name_header_is_refused_before_it_is_read(hostile, tmp_path):
    fleet, answer = hostile
    digests = _small_files(box_results(fleet))
    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = tarfile.GNUTYPE_LONGNAME, 1 << 30
    answer("tar", header.tobuf(tarfile.GNU_FORMAT) + b"A" * 4096)
    result = await pull(host_of(fleet), tmp_path, options=fast())
    assert result.ok and {n: sha(tmp_path / "box1" / n) for n in digests} == digests


def _scan(res: Path, *entries: dict) -> bytes:
    """The scan's output for ``res`` with ``entries`` as its files, as the box whose id
    it holds would print it (a pull refuses a copy of another box: test_pull_other_box)."""
    kept = res.parent / ".rgt" / "box-id"
    box_id = kept.read_text().strip() if kept.exists() else "a" * 32
    lines = [
        {"type": "start", "v": 1, "taken_at": 1.0, "box_id": box_id, "box_id_error": None},
        {"type": "root", "index": 0, "given": str(res), "path": str(res), "error": None},
        *({"type": "file", "root": 0, "mtime": 1.0, **e} for e in entries),
        {"type": "done", "taken_at": 1.0, "finished_at": 2.0},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


async def test_a_lying_scan_gets_each_bad_entry_refused_by_name(hostile, tmp_path):
    fleet, answer = hostile
    res = box_results(fleet)
    good = random_file(res / "good.bin", 3000)
    (tmp_path / "victim").mkdir()
    bad = [
        {"path": "../../victim/x", "size": 3, "sha256": good},
        {"path": "/etc/passwd", "size": 3, "sha256": good},
        {"path": ".RGT/pulled.json", "size": 3, "sha256": good},
        {"path": "evil\x1b[2J.txt", "size": 3, "sha256": good},
        {"path": "negative.bin", "size": -5, "sha256": good},
        {"path": "absurd.bin", "size": 1 << 60, "sha256": good},
    ]
    answer("python3", _scan(res, {"path": "good.bin", "size": 3000, "sha256": good}, *bad))
    result = await pull(host_of(fleet), tmp_path / "out", options=fast())
    refused = {r.path for r in result.manifest.refused}
    shown = {e["path"].replace("\x1b", "\\x1b") for e in bad}  # escaped for the terminal
    assert shown <= refused
    assert [p.path for p in result.pulled] == ["good.bin"]
    assert _local_tree(tmp_path / "out") == {"box1", "box1/good.bin"}
    assert list((tmp_path / "victim").iterdir()) == []


async def test_a_scan_line_over_the_cap_fails_the_pull_with_the_reason(hostile, tmp_path):
    fleet, answer = hostile
    res = box_results(fleet)
    answer("python3", _scan(res, {"path": "x" * 100_000, "size": 1, "sha256": "0" * 64}))
    with pytest.raises(PullError, match="KiB"):
        await pull(host_of(fleet), tmp_path / "out", options=fast())
    assert _local_tree(tmp_path / "out") <= {"box1"}


async def test_a_file_bigger_than_its_manifest_entry_is_read_only_up_to_the_promise(
    hostile, tmp_path
):
    """The box says 1000 bytes; SFTP never asks for more, so the rest never arrives."""
    fleet, answer = hostile
    res = box_results(fleet)
    random_file(res / "big.bin", 2 << 20)
    head = (res / "big.bin").read_bytes()[:1000]
    import hashlib

    answer(
        "python3",
        _scan(res, {"path": "big.bin", "size": 1000, "sha256": hashlib.sha256(head).hexdigest()}),
    )
    result, sent = await pull(host_of(fleet), tmp_path, options=fast(small_file=0), counted=True)
    assert result.ok and (tmp_path / "box1" / "big.bin").read_bytes() == head
    assert sent == 1000


async def test_permissions_never_widen(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    modes = {"secret.key": 0o600, "run.sh": 0o755, "setuid.bin": 0o4755, "shared.txt": 0o666}
    for name, mode in modes.items():
        random_file(res / name, 100)
        os.chmod(res / name, mode)
    big = res / "big-secret.pt"
    random_file(big, 2 << 20)
    os.chmod(big, 0o600)
    result = await pull(host_of(fleet), tmp_path, options=fast())
    assert result.ok
    local = {
        p.name: p.stat().st_mode & 0o7777 for p in (tmp_path / "box1").iterdir() if p.is_file()
    }
    assert local == {
        "secret.key": 0o600,
        "run.sh": 0o755,
        "setuid.bin": 0o755,
        "shared.txt": 0o644,
        "big-secret.pt": 0o600,
    }


async def test_a_host_whose_pull_would_default_to_the_home_is_refused(
    make_loopback_fleet, tmp_path
):
    import dataclasses

    from rgt_tui.services.fleet.file import load_fleet

    fleet = await make_loopback_fleet(1)
    (fleet.box("box1").root / ".ssh").mkdir(exist_ok=True)
    text = fleet.hosts_file.read_text()
    home = tmp_path / "home.toml"
    # The same box, with no pull and no durable_dir: pulls would default to its workdir.
    lines = [ln for ln in text.splitlines() if not ln.startswith(("durable_dir", "pull"))]
    home.write_text("\n".join(lines).replace("workdir = ", 'workdir = "~"\n# was ') + "\n")
    host = load_fleet(home).host("box1")
    assert host.pull_refused
    with pytest.raises(PullError, match=r'pull = \["~/runs"\]'):
        await pull(dataclasses.replace(host), tmp_path / "out", options=fast())
    assert not (tmp_path / "out").exists()


async def test_a_box_without_tar_still_gets_every_small_file(hostile, tmp_path):
    """No GNU tar there (its ``tar`` exits 127 at once): every small file comes by SFTP,
    checked as ever."""
    fleet, answer = hostile
    res = box_results(fleet)
    digests = {f"cells/c{i}/m.json": "" for i in range(40)}
    for name in digests:
        (res / name).parent.mkdir(parents=True, exist_ok=True)
        (res / name).write_text(json.dumps({"name": name}))
        digests[name] = sha(res / name)
    answer("tar", b"")
    (Path(tmp_path) / "hostile-bin" / "tar").write_text("#!/bin/sh\nexit 127\n")
    result = await pull(host_of(fleet), tmp_path / "out", options=fast())
    assert result.ok and len(result.pulled) == 40
    assert {n: sha(tmp_path / "out" / "box1" / n) for n in digests} == digests


async def test_a_name_too_long_for_this_disk_is_refused_by_name_and_the_rest_lands(
    hostile, tmp_path
):
    fleet, answer = hostile
    res = box_results(fleet)
    good = random_file(res / "good.bin", 3000)
    long_name = "n" * 300  # over the 255 bytes a local file name may have
    entries = [
        {"path": "good.bin", "size": 3000, "sha256": good},
        {"path": long_name, "size": 3000, "sha256": good},
        {"path": f"deep/{long_name}/x.bin", "size": 3000, "sha256": good},
    ]
    answer("python3", _scan(res, *entries))
    result = await pull(host_of(fleet), tmp_path / "out", options=fast())
    assert not result.conflicts and not result.failed and not result.ok
    refused = {r.path: r.reason for r in result.manifest.refused}
    assert set(refused) == {long_name, f"deep/{long_name}/x.bin"}
    assert all(r.startswith("name too long for this machine") for r in refused.values())
    assert [p.path for p in result.pulled] == ["good.bin"]
    (line, other) = result.shortfalls  # named, with the fix
    assert "rename it on the box to a shorter name" in line + other
    # Nothing of it was written, nor its folders.
    assert _local_tree(tmp_path / "out") == {"box1", "box1/good.bin"}


async def test_a_tar_member_sent_twice_is_pulled_once_and_never_failed(hostile, tmp_path):
    fleet, answer = hostile
    res = box_results(fleet)
    (res / "a.json").write_text('{"a": 1}')
    data = (res / "a.json").read_bytes()
    answer("tar", _tar(_member("./a.json", data), _member("./a.json", data)))
    result = await pull(host_of(fleet), tmp_path, options=fast())
    assert result.ok and [p.path for p in result.pulled] == ["a.json"] and not result.failed


async def test_a_file_that_appears_locally_during_the_pull_is_left_alone(
    make_loopback_fleet, tmp_path
):
    """Nothing was there when the pull was planned; the user writes a file there while it
    runs: the box's copy does not replace it, and the conflict is named."""
    fleet = await make_loopback_fleet(1)
    random_file(box_results(fleet) / "notes.bin", 3 << 20)
    mine = tmp_path / "box1" / "notes.bin"

    def user_writes(p) -> None:  # noqa: ANN001
        if any(f.path == "notes.bin" for f in p.active) and not mine.exists():
            mine.write_text("the user's own notes")

    result = await pull(
        host_of(fleet), tmp_path, options=fast(progress_interval_s=0), on_progress=user_writes
    )
    (conflict,) = result.conflicts
    assert conflict[0] == "notes.bin" and "appeared" in conflict[1]
    assert mine.read_text() == "the user's own notes" and not result.pulled


async def test_roots_whose_labels_would_meet_land_in_folders_of_their_own(
    make_loopback_fleet, tmp_path
):
    """runs, runs and runs-2: the second runs would be runs-2 too; each root keeps its own
    folder and both files arrive whole."""
    fleet = await make_loopback_fleet(1)
    base = fleet.box("box1").root
    (base / "a" / "runs").mkdir(parents=True)
    b = random_file(base / "b" / "runs" / "m.pt", 2000)
    c = random_file(base / "c" / "runs-2" / "m.pt", 2000)
    roots = (str(base / "a" / "runs"), str(base / "b" / "runs"), str(base / "c" / "runs-2"))
    result = await pull(host_of(fleet, pull=roots), tmp_path, options=fast())
    assert result.ok and len({p.path for p in result.pulled}) == 2
    assert {sha(tmp_path / "box1" / p.path) for p in result.pulled} == {b, c}


async def test_an_old_part_where_a_folder_now_goes_is_named_not_a_crash(
    make_loopback_fleet, tmp_path
):
    """An interrupted pull left the part of ``x`` (``.rgt/parts/x.part``); the box now has
    a folder ``x.part/``, whose file's part would go below it: a named conflict, and the
    pull goes on."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    random_file(res / "x.part" / "y", 100)
    good = random_file(res / "good.bin", 100)
    parts = tmp_path / "box1" / ".rgt" / "parts"
    parts.mkdir(parents=True)
    (parts / "x.part").write_bytes(b"an interrupted pull's part of the old x")
    result = await pull(host_of(fleet), tmp_path, options=fast())
    assert [p.path for p in result.pulled] == ["good.bin"] and sha(
        tmp_path / "box1" / "good.bin"
    ) == good
    ((path, why),) = result.conflicts
    assert path == "x.part/y" and "folder must go" in why


@pytest.mark.parametrize("listed", [2**49, 4096])
async def test_a_true_hash_at_a_lying_size_is_never_already_here(hostile, tmp_path, listed):
    """h616 #1: the box lists ``x2/m.json`` with its real SHA-256 and a size it does not
    have: the pull said "already here" (512T/512T), and verify then blamed the good copy
    here ("local size 8 differs from the box's …"). A skip needs the size too; pulled,
    the box's listing is what is named, and the copy here stays as it was."""
    fleet, answer = hostile
    res = box_results(fleet)
    (res / "x2").mkdir()
    (res / "x2" / "m.json").write_bytes(b'{"a": 1}')  # 8 bytes
    assert (await pull(host_of(fleet), tmp_path, options=fast())).ok
    here = tmp_path / "box1" / "x2" / "m.json"
    answer("python3", _scan(res, {"path": "x2/m.json", "size": listed, "sha256": sha(here)}))
    if listed == 2**49:  # no disk holds it: refused on what the box listed, by name
        with pytest.raises(NotEnoughSpace) as caught:
            await pull(host_of(fleet), tmp_path, options=fast())
        assert "x2/m.json alone is 512T" in caught.value.message, caught.value.message
    else:  # read up to what the box has: it ends short of its listing, said so
        result = await pull(host_of(fleet), tmp_path, options=fast())
        assert not result.skipped and not result.pulled
        (failed,) = result.failed
        assert failed[0] == "x2/m.json" and "ends at 8 of the manifest's 4096 bytes" in failed[1]
    assert here.read_bytes() == b'{"a": 1}'
