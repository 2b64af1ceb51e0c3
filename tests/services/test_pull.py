"""Pulls over loopback SSH boxes: layout, resume after a dropped box, hash checks, conflicts.

Over 450 lines on purpose: the cases share the loopback box fixtures and helpers of one
pull; split, each file would set them up again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import sys
from pathlib import Path

import pytest
from support import MIB
from support.pulls import box_results, fast, host_of, pull, random_file, sha
from support.waiting import wait_for

from rgt_tui.domain.errors import TransportError
from rgt_tui.services.pull import PulledRecord, PullError, pull_host
from rgt_tui.services.pull.copy import FLUSH_BYTES, SEGMENT, SEGMENTS_OUT
from rgt_tui.services.records import manifest_path, pulled_path
from rgt_tui.transport import transport_for


async def test_pull_mirrors_the_tree_then_a_rerun_skips_everything(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    big = random_file(res / "run 1" / "ünï cödé" / "best model.pt", 3 * MIB + 17)
    for i in range(40):
        (res / "evals" / f"sample {i}.json").parent.mkdir(parents=True, exist_ok=True)
        (res / "evals" / f"sample {i}.json").write_text(json.dumps({"i": i}))
    (res / "empty.log").write_bytes(b"")
    os.symlink("run 1/ünï cödé/best model.pt", res / "latest.pt")
    os.symlink("/etc", res / "escape")
    host = host_of(fleet)
    local = tmp_path / "local"
    events = []

    result = await pull(host, local, options=fast(), on_progress=events.append)

    dest = local / "box1"
    # The link out of the root is refused by name: the one thing not pulled, so the pull
    # is not complete (verify flags it too), and it says how to settle it.
    assert not result.ok and result.dest == dest
    [short] = result.shortfalls
    assert short.startswith(f"{res}/escape: refused (symlink leaves the pull root")
    assert "remove the link on the box" in short
    assert len(result.pulled) == 42 and not result.failed
    assert sha(dest / "run 1" / "ünï cödé" / "best model.pt") == big
    assert json.loads((dest / "evals" / "sample 7.json").read_text()) == {"i": 7}
    assert (dest / "empty.log").read_bytes() == b""
    assert os.readlink(dest / "latest.pt") == "run 1/ünï cödé/best model.pt"
    assert [(r.path, "leaves the pull root" in r.reason) for r in result.manifest.refused] == [
        ("escape", True)
    ]
    assert not (dest / "escape").exists()
    assert not list(dest.rglob("*.part"))
    record = json.loads(manifest_path(dest).read_text())
    assert record["taken_at"] > 0 and len(record["entries"]) == 42
    # Every listed byte came; the refused link ends the pull as not complete (nothing
    # failed, so it does not say failed: ux-i 7).
    assert events[-1].phase == "incomplete" and events[-1].bytes_done == events[-1].bytes_total
    assert any(e.phase == "manifest" for e in events)

    again, sent = await pull(host, local, options=fast(), counted=True)
    assert not again.failed and again.pulled == () and len(again.skipped) == 42
    assert sent == 0 and again.bytes_received == 0


async def _cut_mid_file(host, box, tmp_path) -> PullError:
    """A pull into ``tmp_path`` whose box stops once 6 MiB of a file came: the pull's
    error, once the box has stopped (its part is kept)."""
    stopping: list[asyncio.Task] = []

    def stop_mid_file(p):
        if not stopping and any(f.done >= 6 * MIB for f in p.active):
            stopping.append(asyncio.ensure_future(box.stop()))

    with pytest.raises(PullError, match="lost the connection") as caught:
        await pull(
            host, tmp_path, options=fast(max_attempts=2, progress_interval_s=0),
            on_progress=stop_mid_file,
        )  # fmt: skip
    await asyncio.gather(*stopping)
    return caught.value


async def test_box_stopped_mid_file_then_rerun_resumes_from_the_part(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    size = 40 * MIB
    digest = random_file(box_results(fleet) / "ckpt" / "last.pt", size)
    host, box = host_of(fleet), fleet.box("box1")
    caught = await _cut_mid_file(host, box, tmp_path)
    dest = tmp_path / "box1"
    part = dest / ".rgt" / "parts" / "ckpt" / "last.pt.part"
    kept = part.stat().st_size
    assert 6 * MIB <= kept < size
    assert not (dest / "ckpt" / "last.pt").exists()
    assert caught.result is not None and caught.result.pulled == ()
    assert "ckpt/last.pt" not in json.loads(pulled_path(dest).read_text())["files"]

    await box.start()
    events = []
    result, sent = await pull(
        host,
        tmp_path,
        options=fast(progress_interval_s=0),
        counted=True,
        on_progress=events.append,
    )
    assert result.ok
    (done,) = result.pulled
    assert done.resumed_from == kept and done.received == size - kept
    # The kept part is shown while it is hashed, before its first byte comes: a resumed
    # pull of large checkpoints read "0/1 files" with nothing in flight meanwhile.
    first = next(e.active[0] for e in events if e.active)
    assert (first.path, first.state, first.done) == ("ckpt/last.pt", "checking", kept)
    assert "kept from the last pull" in first.note
    assert sent == size - kept < size  # nothing was sent again from zero
    assert sha(dest / "ckpt" / "last.pt") == digest and not part.exists()


async def test_box_back_during_retries_resumes_in_the_same_run(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    digest = random_file(box_results(fleet) / "w.pt", 24 * MIB)
    box = fleet.box("box1")
    events, tasks = [], []

    async def bounce():
        await box.stop()
        await asyncio.sleep(0.3)
        await box.start()

    def on_progress(p):
        events.append(p)
        if not tasks and any(f.done >= 4 * MIB for f in p.active):
            tasks.append(asyncio.ensure_future(bounce()))

    result, sent = await pull(
        host_of(fleet),
        tmp_path,
        options=fast(max_attempts=20, progress_interval_s=0, lanes_per_file=1),
        on_progress=on_progress,
        counted=True,
    )
    await asyncio.gather(*tasks)
    assert result.ok and sha(tmp_path / "box1" / "w.pt") == digest
    assert result.pulled[0].resumed_from >= 4 * MIB
    assert any(f.state == "retrying" for e in events for f in e.active)
    # Back: the lines that follow no longer say "…; retrying" while bytes flow (h543 #6).
    last_retry = max(i for i, e in enumerate(events) if e.message.endswith("retrying"))
    # (What it said before: "" or "listed 1 file on the box", as the drop found it.)
    back = [e for e in events[last_retry + 1 :] if e.phase == "pulling"]
    assert back and not [e.message for e in back if "retrying" in e.message], back
    # Re-sent bytes are at most what was out when the box went away: the reader's
    # segments (copy.SEGMENTS_OUT of copy.SEGMENT: one at the write position, the next
    # arriving ahead of it, unwritten) and one batch handed to the writer (FLUSH_BYTES).
    # The bound once named only one segment's reads in flight: a loaded machine's
    # suite (s39) re-sent 10 MiB, the second segment's bytes among them.
    window = SEGMENTS_OUT * SEGMENT + FLUSH_BYTES
    assert sent - 24 * MIB <= window


async def test_file_changed_on_the_box_after_the_manifest_fails_by_name(
    make_loopback_fleet, tmp_path
):
    """A file that changes after the box hashed it is pulled again from zero once, then
    failed by name; nothing unchecked is installed or recorded. (A file with nothing of it
    here starts copying from the walk's listing, before its hash exists: here a first
    pull brings an older version, so the new one waits for its hash to be planned as a
    replacement, and its copy starts after the manifest is whole.)"""
    fleet = await make_loopback_fleet(1)
    target = box_results(fleet) / "model.pt"
    random_file(target, 2 * MIB)
    random_file(box_results(fleet) / "other.pt", 2 * MIB)
    first = await pull(host_of(fleet), tmp_path, options=fast())
    assert first.ok
    before = sha(tmp_path / "box1" / "model.pt")
    random_file(target, 2 * MIB)  # a new version on the box: planned as a replacement

    changed = []

    def change_after_manifest(p):
        # When its pull starts (before its first read), long after its manifest line. A
        # flag, not a look at the content: random bytes start with "Z" one time in 256.
        if any(f.path == "model.pt" for f in p.active) and not changed:
            changed.append(True)
            target.write_bytes(b"Z" * (2 * MIB))  # same size, new content

    result = await pull(
        host_of(fleet),
        tmp_path,
        options=fast(progress_interval_s=0),
        on_progress=change_after_manifest,
    )
    assert not result.ok
    (failed,) = result.failed
    assert failed[0] == "model.pt" and "still differs" in failed[1] and "from zero" in failed[1]
    assert sha(tmp_path / "box1" / "model.pt") == before  # the older copy, untouched
    assert result.pulled == () and result.skipped == ("other.pt",)
    record = json.loads(pulled_path(tmp_path / "box1").read_text())["files"]
    assert record["model.pt"]["sha256"] == before


async def test_several_roots_land_in_labelled_folders(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    root = fleet.box("box1").root
    (root / "logs").mkdir()
    (root / "logs" / "train.log").write_text("epoch 1\n")
    random_file(box_results(fleet) / "a.pt", MIB + 1)
    host = host_of(fleet, pull=(str(root / "results"), "logs"))  # relative: the box's HOME
    result = await pull(host, tmp_path, options=fast())
    assert result.ok
    assert (tmp_path / "box1" / "results" / "a.pt").stat().st_size == MIB + 1
    assert (tmp_path / "box1" / "logs" / "train.log").read_text() == "epoch 1\n"


async def test_a_root_added_to_the_pull_list_says_where_its_files_went(
    make_loopback_fleet, tmp_path
):
    """Hour s34 CLI #5: adding a second pull root moved every result into a folder of its
    root's name and pulled it all again, with no word; the old copies stayed unnamed."""
    fleet = await make_loopback_fleet(1)
    root = fleet.box("box1").root
    (root / "logs").mkdir()
    (root / "logs" / "train.log").write_text("epoch 1\n")
    (box_results(fleet) / "m.json").write_text("{}")
    first = await pull(host_of(fleet), tmp_path, options=fast())
    assert first.ok and first.moved_roots == () and (tmp_path / "box1" / "m.json").exists()

    host = host_of(fleet, pull=(str(root / "results"), "logs"))
    second = await pull(host, tmp_path, options=fast())
    assert second.ok and (tmp_path / "box1" / "results" / "m.json").exists()
    (notice,) = [text for label, text in second.notices if label == "MOVED"]
    assert notice.startswith(f"{root / 'results'}: its files now land in results/ (was the "), (
        notice
    )
    assert "the earlier copies stay in the host's folder" in notice

    third = await pull(host, tmp_path, options=fast())
    assert third.ok and not [n for n in third.notices if n[0] == "MOVED"]


async def test_local_files_are_never_overwritten_silently(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "mine.json").write_text('{"box": 1}')
    (res / "theirs.json").write_text('{"v": 1}')
    dest = tmp_path / "box1"
    dest.mkdir()
    (dest / "mine.json").write_text('{"my local edit": true}')  # not written by rgt-tui

    first = await pull(host_of(fleet), tmp_path, options=fast())
    assert [c[0] for c in first.conflicts] == ["mine.json"] and not first.ok
    assert "did not write it" in first.conflicts[0][1]
    assert (dest / "mine.json").read_text() == '{"my local edit": true}'

    (res / "theirs.json").write_text('{"v": 2}')  # the box's file changed since our pull
    second = await pull(host_of(fleet), tmp_path, options=fast())
    assert (dest / "theirs.json").read_text() == '{"v": 2}'
    kept = list((dest / ".rgt" / "replaced").glob("theirs.json.*"))
    assert [p.read_text() for p in kept] == ['{"v": 1}']  # set aside, not deleted
    assert [f.path for f in second.pulled] == ["theirs.json"]


async def test_a_users_link_is_never_replaced_but_one_the_last_pull_made_is(
    make_loopback_fleet, tmp_path
):
    """Hour s34 CLI #4: a link the user made where a pulled file lands became a regular
    file, no copy kept, no word. A link is replaced only when the last pull made it (the
    box's own link, now a file there); the user's, to a file or for a box link, is a
    conflict named, and the link and its target stay as they were."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "ckpt.pt").write_text("box")
    (res / "best.pt").write_text("best")
    os.symlink("best.pt", res / "latest.pt")  # the box's own link
    (res / "sub").mkdir()
    os.symlink("../best.pt", res / "sub" / "mine.pt")
    dest = tmp_path / "box1"
    dest.mkdir()
    elsewhere = tmp_path / "elsewhere.pt"
    elsewhere.write_text("kept elsewhere")
    os.symlink(elsewhere, dest / "ckpt.pt")  # the user's, where a file lands
    (dest / "sub").mkdir()
    os.symlink(elsewhere, dest / "sub" / "mine.pt")  # the user's, where a box link lands
    (res / "big").mkdir()
    (res / "big" / "a.pt").write_text("a")
    other_disk = tmp_path / "other-disk"
    other_disk.mkdir()
    os.symlink(other_disk, dest / "big")  # the user's, where a folder goes

    first = await pull(host_of(fleet), tmp_path, options=fast())
    conflicts = dict(first.conflicts)
    assert not first.ok, first.conflicts
    assert set(conflicts) == {"ckpt.pt", "sub/mine.pt", "big/a.pt"}, first.conflicts
    assert "big is a link rgt-tui did not make, where a folder must go" in conflicts["big/a.pt"]
    assert os.readlink(dest / "big") == str(other_disk) and not list(other_disk.iterdir())
    assert "a link is in the way and rgt-tui did not make it" in conflicts["ckpt.pt"]
    assert "a link rgt-tui did not make" in conflicts["sub/mine.pt"]
    assert os.readlink(dest / "ckpt.pt") == str(elsewhere)
    assert os.readlink(dest / "sub" / "mine.pt") == str(elsewhere)
    assert elsewhere.read_text() == "kept elsewhere"
    assert os.readlink(dest / "latest.pt") == "best.pt"  # the box's link, made

    # The box's link becomes a file: the link the last pull made is replaced by it.
    (res / "latest.pt").unlink()
    (res / "latest.pt").write_text("now a file")
    second = await pull(host_of(fleet), tmp_path, options=fast())
    assert (dest / "latest.pt").read_text() == "now a file"
    assert not (dest / "latest.pt").is_symlink()
    assert "latest.pt" not in dict(second.conflicts)

    # A folder the box has since made a link (h613 #4): the conflict says what stands
    # here and the way on; the folder's copy here stays whole.
    (res / "runs").mkdir()
    (res / "runs" / "r.pt").write_text("run")
    await pull(host_of(fleet), tmp_path, options=fast())
    (res / "runs").rename(res / "runs.old")
    os.symlink("runs.old", res / "runs")
    third = await pull(host_of(fleet), tmp_path, options=fast())
    said = dict(third.conflicts)["runs"]
    assert "a folder here is in the way of the box's symlink (to runs.old)" in said, said
    assert "move it away here (nothing of it is deleted), then pull again" in said, said
    assert (dest / "runs" / "r.pt").read_text() == "run"


async def test_cli_pull_prints_lines_and_a_summary(make_loopback_fleet, tmp_path, capsys):
    from rgt_tui.cli import main

    fleet = await make_loopback_fleet(1)
    random_file(box_results(fleet) / "w.pt", 1234)
    hosts = Path(fleet.hosts_file)
    text = f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n\n' + fleet.hosts_file.read_text()  # noqa: ASYNC240
    hosts.write_text(text)  # noqa: ASYNC240
    # The command runs its own event loop, as the console script does.
    code = await asyncio.to_thread(main, ["pull", "box1", "--hosts", str(hosts)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "1 pulled" in out and "matching SHA-256" in out
    assert "box1: manifest" in err and "box1: done" in err  # plain lines: not a tty
    assert (tmp_path / "res" / "box1" / "w.pt").stat().st_size == 1234
    assert await asyncio.to_thread(main, ["pull", "nope", "--hosts", str(hosts)]) == 2


async def test_ctrl_c_mid_pull_keeps_the_part_and_says_how_to_resume(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    with open(box_results(fleet) / "big.bin", "wb") as f:  # noqa: ASYNC230
        f.truncate(2 << 30)  # sparse: no disk, and the box reads it fast
    hosts = Path(fleet.hosts_file)
    text = f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n\n' + hosts.read_text()  # noqa: ASYNC240
    hosts.write_text(text)  # noqa: ASYNC240
    part = tmp_path / "res" / "box1" / ".rgt" / "parts" / "big.bin.part"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rgt_tui", "pull", "box1", "--hosts", str(hosts),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        await wait_for(
            lambda: part.exists() and part.stat().st_size > 0, 30, "bytes in the part", every=0.01
        )
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    message = err.decode().strip().splitlines()[-1]
    assert "interrupted" in message and str(part.parent) in message and "resume" in message
    assert 0 < part.stat().st_size < 2 << 30  # kept, and it was cut off mid-file
    assert not (tmp_path / "res" / "box1" / "big.bin").exists()
    assert "big.bin" not in PulledRecord.load(tmp_path / "res" / "box1").files


def test_progress_draws_bars_on_a_tty_and_lines_elsewhere():
    import io

    from rich.console import Console

    from rgt_tui.cli.pull_progress import PullProgressView
    from rgt_tui.services.pull import FileProgress, PullProgress

    f = FileProgress("ckpt/best.pt", 100 * MIB, 40 * MIB, 10 * MIB, 6.0, "pulling")
    p = PullProgress("box1", "pulling", 3, 1, 0, 200 * MIB, 90 * MIB, 80 * MIB, 20 * MIB, 5.5, (f,))
    clock = iter(range(100))
    tty, plain = io.StringIO(), io.StringIO()
    terminal = Console(file=tty, force_terminal=True, force_interactive=True, width=120)
    with PullProgressView(terminal, clock=lambda: next(clock)) as view:
        view(p)
    piped = Console(file=plain, force_terminal=False)
    with PullProgressView(piped, clock=lambda: next(clock)) as view:
        view(p)
    drawn = tty.getvalue()
    assert "━" in drawn and "\x1b[" in drawn  # Rich's bar, coloured: a terminal
    assert "ckpt/best.pt" in drawn and "eta 6s" in drawn and "1/3 files" in drawn
    assert "\x1b" not in plain.getvalue() and plain.getvalue().count("\n") == 1
    assert "1/3 files" in plain.getvalue() and "90M/200M" in plain.getvalue()


async def test_this_machine_pulls_through_the_local_transport(tmp_path):
    from rgt_tui.services.fleet.file import load_fleet

    box = tmp_path / "box"
    digest = random_file(box / "runs" / "a b" / "w.pt", 2 * MIB + 3)
    (box / "runs" / "m.json").write_text('{"x": 1}')
    local = dataclasses.replace(
        load_fleet(None).hosts[0], pull=(str(box / "runs"),), pull_refused=None
    )
    result = await pull(local, tmp_path / "results", options=fast())
    assert result.ok and len(result.pulled) == 2
    assert sha(tmp_path / "results" / "local" / "a b" / "w.pt") == digest
    assert (tmp_path / "results" / "local" / "m.json").read_text() == '{"x": 1}'

    nested = dataclasses.replace(local, pull=(str(tmp_path),))
    with pytest.raises(PullError, match="inside the pull root"):
        await pull(nested, tmp_path / "results", options=fast())


async def test_a_box_file_named_like_a_part_is_pulled_as_itself(make_loopback_fleet, tmp_path):
    """The box's own leftover ``ckpt.bin.part`` beside ``ckpt.bin``: each lands as itself.
    (Parts are kept in .rgt/parts/, where no box file can be; next to the file, the two
    shared a path and one file's bytes ended up under the other's name.)"""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    digests = {
        "ckpt.bin": random_file(res / "ckpt.bin", 6 * MIB),
        "ckpt.bin.part": random_file(res / "ckpt.bin.part", 2 * MIB),
        "log.txt": random_file(res / "log.txt", 1000),
        "log.txt.part": random_file(res / "log.txt.part", 3 * MIB),
    }
    result = await pull(host_of(fleet), tmp_path, options=fast())
    dest = tmp_path / "box1"
    assert result.ok
    assert {name: sha(dest / name) for name in digests} == digests
    assert not list((dest / ".rgt" / "parts").rglob("*.part"))
    again = await pull(host_of(fleet), tmp_path, options=fast())
    assert again.ok and not again.pulled and len(again.skipped) == 4


class _DropsOnce:
    """The real transport, except that the first manifest scan is cut (a dropped
    connection) right after the line ``at`` matches; ``meanwhile()`` runs first, as the
    box going on with its work while the link is down. The pull retries the scan."""

    def __init__(self, transport, at, meanwhile, *, before: bool = False) -> None:
        self._transport = transport
        self._at = at
        self._meanwhile = meanwhile
        self._before = before  # run meanwhile() before the line is passed on
        self.dropped = False

    def __getattr__(self, name):
        return getattr(self._transport, name)

    async def stream_lines(self, command, **kw):
        async for line in self._transport.stream_lines(command, **kw):
            cut = not self.dropped and self._at(line)
            if cut and self._before:
                self._meanwhile()
            yield line
            if cut:
                self.dropped = True
                await asyncio.sleep(0.3)  # what started early runs meanwhile
                if not self._before:
                    self._meanwhile()
                await self._transport.close()  # as a dropped connection leaves it
                raise TransportError(self._transport.host, "connection lost")


async def _pull_through(box, fleet, tmp_path, **kw):  # type: ignore[no-untyped-def]
    try:
        return await pull_host(host_of(fleet), tmp_path, box, options=fast(), **kw)
    finally:
        await box.close()


async def test_a_file_new_in_a_retried_scan_is_pulled(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    random_file(res / "ckpt" / "a.pt", 2 * MIB)
    for i in range(5):
        (res / f"m{i}.json").write_text(json.dumps(i))
    late = lambda: (res / "late.json").write_text('{"late": true}')  # noqa: E731
    box = _DropsOnce(transport_for(host_of(fleet)), lambda ln: 'a.pt"' in ln, late)
    result = await _pull_through(box, fleet, tmp_path)
    assert box.dropped and result.ok
    assert json.loads((tmp_path / "box1" / "late.json").read_text()) == {"late": True}
    assert len(result.pulled) == 7


async def test_a_file_changed_between_scans_is_checked_against_the_kept_manifest(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    random_file(res / "a.pt", 2 * MIB)
    (res / "m.json").write_text("{}")
    rewritten: list[str] = []
    box = _DropsOnce(
        transport_for(host_of(fleet)),
        lambda ln: '"a.pt"' in ln,
        lambda: rewritten.append(random_file(res / "a.pt", 2 * MIB)),
    )
    events = []
    result = await _pull_through(box, fleet, tmp_path, on_progress=events.append)
    (entry,) = [e for e in result.manifest.entries if e.path == "a.pt"]
    assert box.dropped and entry.sha256 == rewritten[0]
    assert result.ok and sha(tmp_path / "box1" / "a.pt") == rewritten[0]
    assert [p.path for p in result.pulled].count("a.pt") == 1
    last = events[-1]  # the older version's pull is not counted on top
    assert (
        (last.files_done, last.bytes_done)
        == (last.files_total, last.bytes_total)
        == (2, entry.size + 2)
    )


async def test_a_box_never_reached_fails_the_pull_at_once_promising_nothing(
    loopback_fleet, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A closed port: no retry loop (with the default 8 attempts it took ~30 s), the
    reason and the fix, no 'partial files are kept' (nothing started), no folder made."""
    box = loopback_fleet.box("box1")
    await box.stop()  # the port is closed now: connections are refused
    host = host_of(loopback_fleet)
    started = asyncio.get_running_loop().time()
    with pytest.raises(PullError) as caught:
        await pull(host, tmp_path / "results")  # default options: 8 attempts, backoff
    waited = asyncio.get_running_loop().time() - started
    # Well under the ~30 s the retry loop took (a cap a busy machine still meets).
    assert waited < 15, f"{waited:.1f} s before giving up on a refused connection"
    assert f"cannot reach {host.name}" in caught.value.message
    assert "nothing was pulled" in caught.value.message and "partial" not in str(caught.value)
    assert caught.value.fix
    # Only the pull's own lock and record: no file of the box, no part.
    made = {p.name for p in (tmp_path / "results" / host.name).rglob("*") if p.is_file()}
    assert made <= {"pull.lock", "pulled.json"}, made


async def test_a_kept_part_of_another_version_comes_again_and_is_said(
    make_loopback_fleet, tmp_path
):
    """h521 #2: a part kept from a cut pull, damaged since, was thrown away and the file
    pulled again whole, unsaid: the summary's "transferred" and its egress read 200M
    low. The file still counts only once its SHA-256 matches; the summary now says it
    came again, and why, and counts its bytes."""
    from rgt_tui.cli.pull_text import format_pull_result

    fleet = await make_loopback_fleet(1)
    size = 24 * MIB
    digest = random_file(box_results(fleet) / "ckpt" / "last.pt", size)
    host, box = host_of(fleet), fleet.box("box1")
    await _cut_mid_file(host, box, tmp_path)
    part = tmp_path / "box1" / ".rgt" / "parts" / "ckpt" / "last.pt.part"
    with part.open("r+b") as f:  # four bytes of the kept part overwritten
        f.seek(1000)
        f.write(b"\0\1\2\3")
    await box.start()
    result, sent = await pull(host, tmp_path, options=fast(progress_interval_s=0), counted=True)
    assert result.ok and sha(tmp_path / "box1" / "ckpt" / "last.pt") == digest
    assert result.again == (("ckpt/last.pt", size, "its kept part was of another version"),)
    assert result.moved == result.to_move + size and sent > size
    said = format_pull_result(result)
    assert (
        "AGAIN     ckpt/last.pt (24M) came again whole: its kept part was of another version"
        in (said)
    ), said
