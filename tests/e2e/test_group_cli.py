"""A group's commands from the command line (issue 41), over two real OpenSSH boxes on
loopback, each with its own HOME: launch, show, logs of either rank, the teardown gate of
one box while the group's cell runs, the kill that stops it on both boxes, and a pull
that takes every rank's durable dir with ``pull_ranks = "all"``.

No torch here (test_group_torchrun.py runs the real torchrun): each rank's cell is a
bash script that prints its rank and waits, so the commands are what is tested.

Just past 450 lines on purpose: two real OpenSSH boxes are started once per test, and
the group's commands are one story on them; split, each file would start its own.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import arun
from support.machine import free_port
from support.queues import QUEUE_PREFLIGHT_ACK, QUEUE_PYTHON, QueueSshServer, started_boxes
from support.waiting import wait_for

from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal, TeardownRecord
from rgt_tui.services.queue.view import read_queue_view
from rgt_tui.services.watch.state import host_state
from rgt_tui.services.watch.tracker import HostMemory, derive
from rgt_tui.transport import transport_for

# Each rank prints its rank, leaves a file in its output that only it writes, and waits
# for $HOME/go (never made here: the kill ends it).
HOLD = (
    'echo "rank $RGT_NODE_RANK of $RGT_NNODES says hello"; mkdir -p "$2"; '
    'echo "$1" > "$2/from_rank$1.txt"; while [ ! -e "$HOME/go" ]; do sleep 0.1; done\n'
)


class _Box(QueueSshServer):
    """A queue box whose SFTP starts in its HOME (the workdir) as a rented box's does:
    sshd's internal-sftp starts in the passwd home, which both boxes here share, and
    ``logs`` reads ``~/.rgt/queue`` over SFTP."""

    def _write_config(self) -> None:
        super()._write_config()
        sftp = "Subsystem sftp internal-sftp"
        text = self.config.read_text()
        assert sftp in text
        self.config.write_text(text.replace(sftp, f"{sftp} -d {self.workdir}"))


@pytest.fixture
def boxes(tmp_path: Path) -> Iterator[tuple[QueueSshServer, QueueSshServer]]:
    with started_boxes(tmp_path, ("box1", "box2"), _Box, _Box) as made:
        yield made[0], made[1]


def _fleet_file(tmp_path: Path, boxes: tuple[QueueSshServer, ...], pull_ranks: str) -> Path:
    acks = ", ".join(f'"{n}"' for n in QUEUE_PREFLIGHT_ACK)
    text = f'[fleet]\nresults_dir = "{tmp_path / "results"}"\n\n'
    for box in boxes:
        text += box._hosts_toml() + f'preflight_ack = [{acks}]\npython = "{QUEUE_PYTHON}"\n\n'
        (box.workdir / "cells").mkdir(parents=True, exist_ok=True)
        (box.workdir / "cells" / "hold.sh").write_text(HOLD)
    queue = tmp_path / "queues" / "pair.txt"
    queue.parent.mkdir(parents=True, exist_ok=True)
    queue.write_text("cells/hold.sh t 1\n")
    text += (
        "[[groups]]\n"
        'name = "pair"\n'
        'hosts = ["box1", "box2"]\n'
        f'queue = "{queue}"\n'
        "run = 'bash {cfg} {node_rank} {out}'\n"
        'workdir = "~"\n'
        'durable_dir = "~/results"\n'
        'master_addr = "127.0.0.1"\n'
        f"master_port = {free_port()}\n"
        'nccl_socket_ifname = "lo"\n'
        f'pull_ranks = "{pull_ranks}"\n'
    )
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


async def _states(hosts: Path) -> list[str]:
    shown = await arun("queue", "show", "pair", "--json", "--hosts", hosts)
    assert shown.returncode == 0, shown.stderr
    return [c["status"] for c in json.loads(shown.stdout)["cells"]]


@pytest.mark.timeout(300)
async def test_launch_show_logs_by_rank_gate_and_kill_a_group(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, "0")

    launched = await arun("launch", "pair", "--hosts", hosts, "--yes", timeout=180)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert "--max-restarts" in launched.stdout  # the group plan's notes are printed (MN5)
    log2 = box2.workdir / ".rgt/queue/cells/hold.log"
    await wait_for(lambda: log2.exists() and "says hello" in log2.read_text(), 60, "rank 1 started")
    await wait_for(lambda: _running(hosts), 60, "the group's cell running")
    shown = await arun("queue", "show", "pair", "--hosts", hosts)
    assert shown.returncode == 0 and "hold" in shown.stdout, shown.stderr
    # A rank's own queue holds the group's cells: the box's show says whose they are.
    own = await arun("queue", "show", "box2", "--hosts", hosts)
    assert own.returncode == 0 and "hold" in own.stdout, own.stderr
    assert own.stdout.startswith("box2 is rank 1 of group pair: cells of pair show here"), (
        own.stdout
    )
    assert "`rgt-tui queue show pair` reads the whole job" in own.stdout

    rank1 = await arun("logs", "pair", "hold", "--rank", "1", "--hosts", hosts)
    assert rank1.returncode == 0, rank1.stderr
    assert "rank 1 of 2 says hello" in rank1.stdout and "rank 0" not in rank1.stdout
    rank0 = await arun("logs", "pair", "hold", "--hosts", hosts)
    assert "rank 0 of 2 says hello" in rank0.stdout
    beyond = await arun("logs", "pair", "--rank", "2", "--hosts", hosts)
    assert beyond.returncode == 2 and "ranks 0 to 1 (box1, box2)" in beyond.stderr
    plain = await arun("logs", "box1", "--rank", "1", "--hosts", hosts)
    assert plain.returncode == 2 and "box1 is not a group" in plain.stderr

    # A box of the running group: its gate is locked, naming the group and the fix.
    gate = await arun("teardown", "box2", "--check", "--hosts", hosts)
    assert gate.returncode != 0
    line = next(x for x in gate.stdout.splitlines() if re.match(r"\s*\[[ x]\] group ", x))
    assert line.lstrip().startswith("[ ]"), line
    assert "rank 1 of group pair" in line and "rgt-tui queue kill pair" in line
    # Hour s22b #5: the idle line's fixes were box2's own kill and --ack-running, both
    # refused on a rank; it points at the group line.
    said = " ".join(gate.stdout.split())
    assert "queue kill box2" not in said and "--ack-running" not in said, gate.stdout
    assert "running: hold (group pair's job)" in said, gate.stdout
    assert "the cell is its group's job on every box: the group line says how" in said

    # A rank asked alone is told to ask its group (s35 Slurm hour #3: the box's refusal
    # read as two entries of one account, a mistake in the fleet file).
    for verb, *rest in (("kill", "--yes"), ("stop", "--yes"), ("retry", "hold", "--yes")):
        alone = await arun("queue", verb, "box2", *rest, "--hosts", hosts)
        said = " ".join(alone.stderr.split())
        assert alone.returncode == 1, alone.stdout + alone.stderr
        assert "box2 is rank 1 of group pair: its cells are pair's" in said, said
        assert f"rgt-tui queue {verb} pair" in said and "one entry per account" not in said

    killed = await arun("queue", "kill", "pair", "--yes", "--then", "stop", "--hosts", hosts)
    assert killed.returncode == 0, killed.stdout + killed.stderr
    await wait_for(lambda: _not_running(hosts), 60, "the group's cell ended on both boxes")
    gate = await arun("teardown", "box2", "--check", "--hosts", hosts)
    said = " ".join(gate.stdout.split())
    # The cell ended, but rank 1 wrote a file into the group's folder on box2 that no
    # verified pull here holds (h501 #1): the group line stays locked, naming it and the
    # pull that brings it (box2's own: its durable dir is the group's folder there).
    assert (
        "found: rank 1 of group pair: the group's folder on this box holds 1 file no "
        "verified pull here holds" in said
    ), gate.stdout
    assert "hold/from_rank1.txt" in said and "`rgt-tui pull box2`" in said, gate.stdout
    pulled = await arun("pull", "box2", "--hosts", hosts, timeout=180)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    await arun("verify", "box2", "--hosts", hosts, timeout=180)  # its roster is the group's
    opened = await arun("teardown", "box2", "--check", "--hosts", hosts)
    line = next(x for x in opened.stdout.splitlines() if re.match(r"\s*\[[ x]\] group ", x))
    assert line.lstrip().startswith("[x]"), opened.stdout
    # The box's own copy is re-hashed once per check, for its own line and the group's:
    # a copy spoilt here unlocks neither.
    kept = next((tmp_path / "results" / "box2").rglob("from_rank1.txt"))
    text = kept.read_text()
    kept.write_text(text.upper() if text.upper() != text else text.replace("1", "2"))
    spoilt = await arun("teardown", "box2", "--check", "--hosts", hosts)
    line = next(x for x in spoilt.stdout.splitlines() if re.match(r"\s*\[[ x]\] group ", x))
    assert line.lstrip().startswith("[ ]") and "from_rank1.txt" in line, spoilt.stdout
    kept.write_text(text)
    # Hour s18b #12: the group's pull is not this box's: said, not only "nothing pulled".
    said = " ".join(gate.stdout.split())
    assert (
        "nothing pulled yet as box2 — a pull of group pair counts for the group, not for "
        "this box's own gate" in said
    ), gate.stdout
    # watch tells the job's end once, under the group's name: each box's records are the
    # group's job (a user's hour: one cell ending, three "queue finished" notifications).
    told = await _queue_news(hosts)
    assert told == {"box1": [], "box2": [], "pair": ["queue_done"]}, told

    # box1 given a queue of its own: its box holds the group's job, which the refusal
    # says, with the --fresh that starts box1's own; then the other way round.
    solo = tmp_path / "queues" / "box1.txt"
    solo.write_text("cells/solo.sh t 1\n")
    (box1.workdir / "cells" / "solo.sh").write_text("echo solo\n")
    hosts.write_text(
        hosts.read_text().replace(
            'name = "box1"\n', f'name = "box1"\nqueue = "{solo}"\nrun = "bash {{cfg}}"\n', 1
        )
    )
    # Its show says so (hour s22b #9: "put the lines shown back as they are on the box"
    # would have written the group's lines over box1's own queue file).
    shown = await arun("queue", "show", "box1", "--hosts", hosts)
    assert shown.returncode == 0, shown.stderr
    assert "note: box1's box holds a group's job (cells hold: it ran as a rank" in (shown.stdout), (
        shown.stdout
    )
    assert "differs from the copy" not in shown.stdout
    appended = await arun("queue", "append", "box1", "--hosts", hosts)  # hour s23c #7
    said = appended.stdout + appended.stderr
    assert appended.returncode != 0 and "box1's box holds a group's job" in said, said
    assert "Put the lines shown back" not in said
    alone = await arun("launch", "box1", "--hosts", hosts, "--yes", timeout=180)
    assert alone.returncode == 1, alone.stdout + alone.stderr
    assert "box1's box holds a group's job (cells hold: it ran as a rank of a group)" in (
        alone.stdout
    ), alone.stdout
    assert "rgt-tui launch box1 --fresh moves them aside" in alone.stdout
    assert "changed since they were sent" not in alone.stdout
    spare = tmp_path / "queues" / "box2.txt"
    spare.write_text("")
    hosts.write_text(
        hosts.read_text().replace('name = "box2"\n', f'name = "box2"\nqueue = "{spare}"\n', 1)
    )
    move = await arun("queue", "move", "solo", "--to", "box2", "--hosts", hosts, "--yes")
    assert move.returncode == 1, move.stdout + move.stderr
    assert "box1's box holds a group's job (cells hold" in move.stdout, move.stdout
    assert "put the sent lines back" not in move.stdout
    fresh = await arun("launch", "box1", "--fresh", "--hosts", hosts, "--yes", timeout=180)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    # box2 recorded torn down: the group's plan refuses that rank (GEN1), as box2's own
    # launch would (the ranks' plans run under the group's name, whose journal is empty).
    journal = Journal(journal_dir(hosts))
    seen = journal.load("box2").box  # box2 as the commands above identified it
    box_id = seen.box_id if seen is not None else None
    record = TeardownRecord(time.time() - 60, "true", 0, "", True, box_id=box_id)
    journal.add_teardown("box2", record)
    again = await arun("launch", "pair", "--hosts", hosts, "--yes", timeout=180)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "REFUSED: rank 1 (box2): box2 (box " in again.stdout, again.stdout
    assert "is recorded as torn down (" in again.stdout and "(GEN1)" in again.stdout
    assert "rank 0 (box1): the box holds its own queue's records (cells solo), not pair's" in (
        again.stdout
    ), again.stdout
    assert "rgt-tui launch pair --fresh moves them aside" in again.stdout


async def _queue_news(hosts: Path) -> dict[str, list[str]]:
    """The events watch's rules owe each host of the fleet for its queue as read now."""
    fleet = load_fleet(hosts)
    told: dict[str, list[str]] = {}
    for host in fleet.hosts:
        transport = transport_for(host)
        try:
            view = await read_queue_view(host, transport)
        finally:
            await transport.close()
        assert view.group_job, host.name  # every box ran the group's cells
        state = host_state(host, None, view, time.time())
        _, events = derive(host.name, HostMemory(), state, reminder_s=3600)
        told[host.name] = [e.kind for e in events]
    return told


async def _running(hosts: Path) -> bool:
    return "running" in await _states(hosts)


async def _not_running(hosts: Path) -> bool:
    return "running" not in await _states(hosts)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("pull_ranks", ["all", "0"])
async def test_pull_ranks_all_takes_every_ranks_durable_dir(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer], pull_ranks: str
) -> None:
    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, pull_ranks)
    for box, rank in ((box1, 0), (box2, 1)):  # what each rank's cell left in its output
        out = box.workdir / "results" / "hold"
        out.mkdir(parents=True)
        (out / f"from_rank{rank}.txt").write_text(f"{rank}\n")
        (out / "metrics.json").write_text(json.dumps({"rank": rank}))  # loads: verified

    pulled = await arun("pull", "pair", "--hosts", hosts, timeout=180)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    results = tmp_path / "results"
    assert (results / "pair" / "hold" / "from_rank0.txt").read_text() == "0\n"
    rank1 = results / "pair.rank1" / "hold" / "from_rank1.txt"
    assert not (results / "pair" / "hold" / "from_rank1.txt").exists()  # never mixed in
    assert rank1.is_file() == (pull_ranks == "all")
    # Every folder, the ranks' too, is verified by the group's name (hour s18b #12: the
    # rank's summary said `rgt-tui verify pair.rank1`, which names no host).
    assert "next: rgt-tui verify pair.rank" not in pulled.stdout, pulled.stdout
    assert pulled.stdout.count("next: rgt-tui verify pair\n") == 1 + (pull_ranks == "all")

    # verify takes each rank's folder too, each re-scanned over its own box.
    checked = await arun("verify", "pair", "--json", "--hosts", hosts, timeout=180)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] and "pair.rank1" not in checked.stdout.split('"ranks"')[0]
    if pull_ranks != "all":
        assert "ranks" not in report
        return
    (rank_report,) = report["ranks"]
    assert rank_report["host"] == "pair.rank1" and rank_report["ok"]
    assert any(c["path"].endswith("from_rank1.txt") for c in rank_report["checks"])
    rank1.write_text("9\n")  # the rank's copy damaged here: the group is not verified
    damaged = await arun("verify", "pair", "--hosts", hosts, timeout=180)
    assert damaged.returncode != 0, damaged.stdout
    assert "pair.rank1" in damaged.stdout and "from_rank1.txt" in damaged.stdout
    # A rank's folder never pulled is pulled by the group's pull: the fix names it
    # (s39 groups hour #9: "run rgt-tui pull pair.rank1", which names no host).
    shutil.rmtree(results / "pair.rank1")
    unpulled = await arun("verify", "pair", "--hosts", hosts, timeout=180)
    assert "nothing was pulled — run `rgt-tui pull pair`" in unpulled.stdout, unpulled.stdout
    assert "rgt-tui pull pair.rank1" not in unpulled.stdout


async def test_a_cell_counts_in_whichever_ranks_folder_holds_it(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    """c10d put the saving worker on box1 for cell a and on box2 for cell b: each folder
    verified alone missed the other's cell, so ``verify pair`` never passed and each
    record locked its gate on a cell safe here (h531 #1)."""
    from rgt_tui.services.records import load_verification

    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, "all")
    queue = tmp_path / "queues" / "pair.txt"
    queue.write_text("cells/a.sh t 1\ncells/b.sh t 1\n")
    for box, cell in ((box1, "a"), (box2, "b")):
        out = box.workdir / "results" / cell
        out.mkdir(parents=True)
        (out / "metrics.json").write_text(json.dumps({"cell": cell}))
    assert (await arun("pull", "pair", "--hosts", hosts, timeout=180)).returncode == 0
    checked = await arun("verify", "pair", "--json", "--hosts", hosts, timeout=180)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] and report["ranks"][0]["ok"], checked.stdout
    results = tmp_path / "results"
    for folder in ("pair", "pair.rank1"):  # what the gates read: both cells present
        roster = load_verification(results / folder)["roster"]
        assert sorted(roster["present"]) == ["a", "b"] and not roster["missing"], roster
    # The TUI's v and watch's periodic pull verify the group the same way, and write
    # the same records (review h534 #3: v rewrote pair's with b missing).
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.services.verify.ranks import verify_on_connections

    fleet = load_fleet(hosts)
    tui = await verify_on_connections(fleet.host("pair"), fleet, lambda box: None)
    assert [r.ok for r in tui] == [True, True], [r.problems for r in tui]
    assert sorted(load_verification(results / "pair")["roster"]["present"]) == ["a", "b"]
    # While a pull writes into one of the folders, nothing is recorded over any of them
    # (review h534 #2: the rank's record was overwritten, and pair's lost cell b).
    from rgt_tui.fsutil import file_lock
    from rgt_tui.services.records import pull_lock_path, verification_path

    before = {f: verification_path(results / f).read_bytes() for f in ("pair", "pair.rank1")}
    with file_lock(pull_lock_path(results / "pair.rank1"), 0):
        busy = await arun("verify", "pair", "--hosts", hosts, timeout=180)
    assert busy.returncode != 0 and "is running: nothing was verified" in busy.stdout
    for folder, record in before.items():
        assert verification_path(results / folder).read_bytes() == record, folder
    # A cell no folder holds is missing from each, as before.
    queue.write_text("cells/a.sh t 1\ncells/b.sh t 1\ncells/c.sh t 1\n")
    missing = await arun("verify", "pair", "--hosts", hosts, timeout=180)
    assert missing.returncode != 0
    assert missing.stdout.count("c: no output directory") == 2, missing.stdout


async def test_a_group_whose_saves_all_landed_on_one_box_verifies(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    """Every save on rank 0's box, rank 1's folder empty: "nothing to verify" kept
    `verify pair` failing beside "2 of 2 cells have verified results" (review h534 #4).
    And a cell whose log claims a save the box never held stays missing, whatever the
    other folder holds of it (review h534 #1: settling the roster let it pass)."""
    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, "all")
    queue = tmp_path / "queues" / "pair.txt"
    queue.write_text("cells/a.sh t 1\ncells/b.sh t 1\n")
    for cell in ("a", "b"):
        out = box1.workdir / "results" / cell
        out.mkdir(parents=True)
        (out / "metrics.json").write_text(json.dumps({"cell": cell}))
    assert not any((box2.workdir / "results").iterdir())  # rank 1 saved nothing
    pulled = await arun("pull", "pair", "--hosts", hosts, timeout=180)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert "NOT COMPLETE" not in pulled.stdout
    assert "nothing under ~/results on this box: a rank may save nothing" in pulled.stdout
    checked = await arun("verify", "pair", "--hosts", hosts, timeout=180)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "nothing to verify" not in checked.stdout, checked.stdout
    # Cell a's log on box1 says it saved a checkpoint the box never held; box2 holds a
    # metrics file of a. The failed save is still said.
    out = box2.workdir / "results" / "a"
    out.mkdir()
    (out / "metrics.json").write_text(json.dumps({"cell": "a"}))
    logs = box1.workdir / ".rgt" / "queue" / "cells"
    logs.mkdir(parents=True, exist_ok=True)
    claim = box1.workdir / "results" / "a" / "ckpt.pt"
    (logs / "a.log").write_text(f"epoch 1\nsaved {claim}\n")
    assert (await arun("pull", "pair", "--hosts", hosts, timeout=180)).returncode == 0
    failed = await arun("verify", "pair", "--hosts", hosts, timeout=180)
    assert failed.returncode != 0, failed.stdout
    assert "the save failed" in failed.stdout, failed.stdout


@pytest.mark.timeout(300)  # 17 commands, each its own process: 29 s quiet, past 120 s at load 12
async def test_a_ranks_gate_waits_for_the_only_copy_in_the_groups_folder(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    """h501 #1: with the group's folder apart from each box's own (`durable_dir =
    "~/g"`) and `pull_ranks = "0"`, the finished cell's only copy was on rank 1's box
    (torchrun's c10d rendezvous ran the saving worker there), and that box's gate opened:
    neither its own pull nor the group's took the file. Its group line now waits for a
    verified copy, and names the setting that brings it."""
    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, "0")
    hosts.write_text(hosts.read_text().replace('durable_dir = "~/results"', 'durable_dir = "~/g"'))

    async def group_line() -> str:
        gate = await arun("teardown", "box2", "--check", "--hosts", hosts)
        return next(x for x in gate.stdout.splitlines() if re.match(r"\s*\[[ x]\] group ", x))

    # The group's folder not made on this box (its rank saved nothing): nothing to save,
    # not a lock no pull could lift (review h506 #1).
    line = await group_line()
    assert line.lstrip().startswith("[x]"), line
    for box in boxes:  # HOME is the workdir
        (box.workdir / "g" / "g1").mkdir(parents=True)
    empty = await arun("pull", "pair", "--hosts", hosts, timeout=180)  # rank 0 wrote nothing
    assert empty.returncode != 0 and "nothing was pulled" in empty.stdout, empty.stdout
    # The way on is said (h501 #2: "nothing was pulled", with no word of pull_ranks).
    assert 'set pull_ranks = "all" in group pair to pull every box' in empty.stdout, empty.stdout
    (box1.workdir / "g" / "g1" / "log.json").write_text(json.dumps({"rank": 0}))  # its log
    out = box2.workdir / "g" / "g1"
    (out / "metrics.json").write_text(json.dumps({"step": 9}))
    line = await group_line()
    assert line.lstrip().startswith("[ ]") and "g/g1/metrics.json" in line, line
    pulled = await arun("pull", "pair", "--hosts", hosts, timeout=180)  # rank 0's alone
    assert pulled.returncode == 0 and "pair.rank1" not in pulled.stdout, pulled.stdout
    await arun("verify", "pair", "--hosts", hosts, timeout=180)
    gate = await arun("teardown", "box2", "--check", "--hosts", hosts)
    said = " ".join(gate.stdout.split())
    assert "holds 1 file no verified pull here holds" in said, gate.stdout
    assert 'set pull_ranks = "all" in group pair' in said, gate.stdout

    hosts.write_text(hosts.read_text().replace('pull_ranks = "0"', 'pull_ranks = "all"'))
    pulled = await arun("pull", "pair", "--hosts", hosts, timeout=180)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert (tmp_path / "results" / "pair.rank1" / "g1" / "metrics.json").is_file()
    checked = await arun("verify", "pair", "--hosts", hosts, timeout=180)
    assert "pair.rank1" in checked.stdout, checked.stdout
    line = await group_line()
    assert line.lstrip().startswith("[x]"), line
    # The copy here is re-hashed, not taken on its record (review h504 #2).
    kept = tmp_path / "results" / "pair.rank1" / "g1" / "metrics.json"
    kept.rename(kept.with_name("gone.json"))
    line = await group_line()
    assert line.lstrip().startswith("[ ]") and "g1/metrics.json" in line, line
    kept.with_name("gone.json").rename(kept)
    assert (await group_line()).lstrip().startswith("[x]")
    # What the listing refuses is never here (review h504 #1): a name that is no text, a
    # link out of the folder to the only copy elsewhere on the box.
    odd = out / "ckpt\udcff.pt"  # the byte 0xff, no UTF-8
    odd.write_bytes(b"odd")
    line = await group_line()
    assert line.lstrip().startswith("[ ]") and "ckpt" in line, line
    odd.unlink()
    (box2.workdir / "scratch").mkdir()
    (box2.workdir / "scratch" / "final.pt").write_bytes(b"only copy")
    (out / "final.pt").symlink_to(box2.workdir / "scratch" / "final.pt")
    line = await group_line()
    assert line.lstrip().startswith("[ ]") and "final.pt" in line, line
    (out / "final.pt").unlink()
    # A file saved there after that verify is unsaved again: the line re-scans each time.
    (out / "ckpt_2.pt").write_bytes(b"late")
    line = await group_line()
    assert line.lstrip().startswith("[ ]") and "ckpt_2.pt" in line, line
    (out / "ckpt_2.pt").unlink()
    assert (await group_line()).lstrip().startswith("[x]")
    # A new box under the same name (its ~/.rgt/box-id another), holding files listed as
    # the earlier box's were: the earlier box's records vouch for none of them (as the
    # box's own gate holds).
    (box2.workdir / ".rgt" / "box-id").write_text("0123456789abcdef0123456789abcdef\n")
    line = await group_line()
    assert line.lstrip().startswith("[ ]") and "g1/metrics.json" in line, line


@pytest.mark.timeout(300)
async def test_a_cell_moved_to_a_group_runs_on_every_rank(tmp_path: Path) -> None:
    """Hour s18b #2: `queue move CELL --to GROUP` rendered the group's template as one
    box's (KeyError 'nnodes') after both queue files were rewritten; through the group's
    backend, the moved cell runs as the group's job on both ranks."""
    with started_boxes(tmp_path, ("box1", "box2", "box3"), _Box, _Box, _Box) as made:
        box1, box2, box3 = made
        hosts = _fleet_file(tmp_path, (box1, box2, box3), "0")
        (tmp_path / "queues" / "pair.txt").write_text("")
        solo = tmp_path / "queues" / "box3.txt"
        solo.write_text("cells/m.sh t 1\n")  # the cell "m"
        for box in (box1, box2):
            (box.workdir / "cells" / "m.sh").write_text(HOLD)
        (box3.workdir / "cells" / "m.sh").write_text("echo failing on box3; exit 3\n")
        hosts.write_text(
            hosts.read_text().replace(
                'name = "box3"\n', f'name = "box3"\nqueue = "{solo}"\nrun = "bash {{cfg}}"\n', 1
            )
        )
        ran = await arun("launch", "box3", "--hosts", hosts, "--yes", timeout=180)
        assert ran.returncode == 0, ran.stdout + ran.stderr

        async def failed_on_box3() -> bool:
            shown = await arun("queue", "show", "box3", "--json", "--hosts", hosts)
            return [c["status"] for c in json.loads(shown.stdout)["cells"]] == ["failed"]

        await wait_for(failed_on_box3, 60, "m failed on box3")
        move = await arun(
            "queue", "move", "m", "--to", "pair", "--from-scratch", "--yes", "--hosts", hosts,
            timeout=180,
        )  # fmt: skip
        assert move.returncode == 0, move.stdout + move.stderr
        assert "Traceback" not in move.stderr and "pair's queue launched" in move.stdout, (
            move.stdout
        )
        for rank, box in enumerate((box1, box2)):
            log = box.workdir / ".rgt/queue/cells/m.log"
            await wait_for(
                lambda log=log: log.exists() and "says hello" in log.read_text(),
                60,
                f"rank {rank} running the moved cell",
            )
            assert f"rank {rank} of 2 says hello" in log.read_text()
        killed = await arun("queue", "kill", "pair", "--yes", "--then", "stop", "--hosts", hosts)
        assert killed.returncode == 0, killed.stdout + killed.stderr


async def _all_done(hosts: Path, count: int) -> bool:
    states = await _states(hosts)
    return len(states) == count and set(states) == {"done"}


@pytest.mark.timeout(300)
async def test_a_new_rendezvous_address_keeps_the_done_cells(
    tmp_path: Path, boxes: tuple[QueueSshServer, QueueSshServer]
) -> None:
    """Hour s22b #3: a `master_addr` or `master_port` changed after cells ran (a box back
    with a new private IP, a port another job holds) refused the next launch as a
    changed queue, whose only way out, --fresh, reran every done cell. The rendezvous is
    read from the rank's environment file, so the done cell stays done and the next one
    meets at the new address."""
    box1, box2 = boxes
    hosts = _fleet_file(tmp_path, boxes, "0")
    meet = 'echo "rank $1 meets at $2"\n'
    for box in boxes:
        (box.workdir / "cells" / "meet.sh").write_text(meet)
        (box.workdir / "cells" / "meet2.sh").write_text(meet)
    queue = tmp_path / "queues" / "pair.txt"
    queue.write_text("cells/meet.sh t 1\n")
    text = hosts.read_text().replace(
        "run = 'bash {cfg} {node_rank} {out}'",
        "run = 'bash {cfg} {node_rank} {master_addr}:{master_port}'",
    )
    old_port = re.search(r"master_port = (\d+)", text)
    assert old_port is not None
    hosts.write_text(text)
    first = await arun("launch", "pair", "--hosts", hosts, "--yes", timeout=180)
    assert first.returncode == 0, first.stdout + first.stderr
    await wait_for(lambda: _all_done(hosts, 1), 60, "the first cell done on both ranks")

    new_port = free_port()
    hosts.write_text(text.replace(old_port.group(0), f"master_port = {new_port}"))
    queue.write_text("cells/meet.sh t 1\ncells/meet2.sh t 1\n")
    again = await arun("launch", "pair", "--hosts", hosts, "--yes", timeout=180)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "no longer match" not in again.stdout
    await wait_for(lambda: _all_done(hosts, 2), 60, "the second cell done on both ranks")
    for rank, box in enumerate(boxes):
        logs = box.workdir / ".rgt/queue/cells"
        assert (logs / "meet.log").read_text().count("meets at") == 1  # not run again
        assert (
            f"rank {rank} meets at 127.0.0.1:{old_port.group(1)}" in (logs / "meet.log").read_text()
        )
        assert f"rank {rank} meets at 127.0.0.1:{new_port}" in (logs / "meet2.log").read_text()
