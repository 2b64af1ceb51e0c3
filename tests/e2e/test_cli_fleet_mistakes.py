"""Hour s22b #10: a typo in one [[groups]] or [[hosts]] entry stopped every command, an
emergency `queue kill` of another host included. The commands that only read, stop or pull
now go on with the entries that are sound, saying which are left out and why; every other
command, and any command on a host whose own entry is wrong, still refuses the file.
A loopback box running the real runner, the real command line."""

from __future__ import annotations

import asyncio
import re

import pytest
from support.cli import RGT, arun, cli_env, rgt
from support.queues import SCRIPT_RUN, launched_holding, wait_view

from rgt_tui.domain.queue_state import RUNNING

# Its ranks are not box1's: a rank of a group left out is left out too (review s25 #6).
BROKEN_GROUP = '\n[[groups]]\nname = "pair"\nhosts = ["box7", "box9"]\nnproc_per_nod = 2\n'
BROKEN_HOST = '\n[[hosts]]\nname = "box7"\nssh = "local"\ncost_per_hour = "cheap"\n'


@pytest.mark.timeout(300)  # several starts of the command line on a loaded machine
async def test_a_mistake_in_another_entry_does_not_block_a_kill(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = qf.loopback.hosts_file
    await launched_holding(qf)
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
    sound = hosts.read_text()
    hosts.write_text(sound + BROKEN_GROUP + BROKEN_HOST)

    killed = await arun("queue", "kill", "box1", "--hosts", str(hosts), "--yes", "--grace", "2")
    assert killed.returncode == 0, killed.stdout + killed.stderr
    assert "box1: cell hold killed" in killed.stdout
    assert re.search(r"^kill \d+ user next$", qf.state("hold"), re.M)
    # The user is told what was left out, where, and that the file still needs the fix.
    head = killed.stderr.splitlines()[0]
    assert head.startswith("rgt-tui queue kill: going on without pair (line "), head
    assert "box7 (line " in head and f"3 mistakes in {hosts}" in head
    assert "nproc_per_nod" in killed.stderr and "cost_per_hour" in killed.stderr
    assert "fix: correct the file" in killed.stderr

    shown = await arun("queue", "show", "box1", "--hosts", str(hosts))
    assert shown.returncode == 0 and "hold" in shown.stdout, shown.stderr

    # A command that acts on what the whole file says still refuses it, naming those
    # that would run; so does any command on the broken entry's own host.
    launched = await arun("launch", "box1", "--hosts", str(hosts), "--yes")
    assert launched.returncode == 2, launched.stdout + launched.stderr
    assert "nproc_per_nod" in launched.stderr and "queue kill" in launched.stderr
    assert "cell" not in launched.stdout
    # box1's own entry is sound: said first, or the refusal read as another entry's
    # error alone (h491 #12).
    assert launched.stderr.startswith(
        "rgt-tui launch: box1: refused — its own entry is sound, but launch acts on what the "
        "whole fleet file says, which has a mistake: "
    ), launched.stderr
    own = await arun("status", "box7", "--hosts", str(hosts))
    assert own.returncode == 2 and "going on" not in own.stderr, own.stderr
    assert "cost_per_hour" in own.stderr and "its own entry is sound" not in own.stderr

    # A mistake of the whole file ([fleet]) is every host's: nothing goes on.
    hosts.write_text(sound.replace("[[hosts]]", "[fleet]\npoll_second = 2\n\n[[hosts]]", 1))
    whole = await arun("queue", "show", "box1", "--hosts", str(hosts))
    assert whole.returncode == 2 and "poll_second" in whole.stderr, whole.stderr
    assert "going on" not in whole.stderr


def test_a_name_used_twice_is_named_with_both_lines_and_status_is_not_all_well(
    tmp_path,
) -> None:
    """Hour s31 CLI #1, #2, #9: two entries named box1 were both left out, but the message
    named one line (the user read the other as kept); `status` then exited 0 as if every
    host had answered; and the fix said "every other command refuses it" when status,
    pull, queue show… all go on."""
    local = 'ssh = "local"\n'
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[[hosts]]\nname = "box1"\n{local}\n[[hosts]]\nname = "box2"\n{local}\n'
        f'[[hosts]]\nname = "box1"\n{local}'
    )
    status = rgt("status", "--hosts", hosts)
    assert status.returncode == 1, status.stdout + status.stderr
    assert status.stdout.startswith("box2 "), status.stdout  # the sound entry is sampled
    head, fix = status.stderr.splitlines()[:2]
    assert head.startswith("rgt-tui status: going on without box1 (lines 1 and 9): "), head
    assert fix.startswith("  fix: correct the file; until then diagnose, logs, pull, "), fix
    assert fix.endswith("every other command refuses it"), fix
    # Asked of the sound host by name, the answer is whole: that host's own exit code.
    one = rgt("status", "box2", "--hosts", hosts)
    assert one.returncode in (0, 3), one.stdout + one.stderr
    # An entry with no name is named by its line, once (h581 #9: "at line 9 (line 9)").
    hosts.write_text(f'[[hosts]]\nname = "box2"\n{local}\n[[hosts]]\n{local}')
    nameless = rgt("status", "--hosts", hosts)
    head = nameless.stderr.splitlines()[0]
    assert "going on without the [[hosts]] entry at line 5: " in head, head
    assert "(line 5)" not in head, head


async def test_watch_goes_on_without_a_broken_entry_and_takes_it_once_fixed(tmp_path) -> None:
    """Hour s31 CLI #3: `watch` refused the whole file over one entry's typo, so a systemd
    unit restarted into the same refusal and no box was watched. It now watches the sound
    entries, says which it left out, and adds the entry once the file is fixed; `--once`
    exits 1 (a pass that did not look at every entry)."""
    hosts = tmp_path / "hosts.toml"
    sound = '[[hosts]]\nname = "box2"\nssh = "local"\n'
    hosts.write_text(sound + BROKEN_HOST)
    once = await arun("watch", "--once", "--timeout", "20", "--hosts", hosts)
    assert once.returncode == 1, once.stdout + once.stderr
    err = once.stderr
    assert err.startswith("rgt-tui watch: going on without box7 (line 5): "), err
    assert "one pass over 1 host of" in err, err
    assert "1 entry of the fleet file left out (above): exit 1" in err, err

    proc = await asyncio.create_subprocess_exec(
        *RGT, "watch", "--hosts", str(hosts),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        seen = []
        while not any("watching 1 host of" in line for line in seen):
            seen.append((await asyncio.wait_for(proc.stderr.readline(), 60)).decode())
        assert "going on without box7" in seen[0], seen
        hosts.write_text(sound + BROKEN_HOST.replace('"cheap"', "0.5"))  # the fix
        line = ""
        while "fleet file: added box7" not in line:
            line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
            assert line, "watch ended before it took the fixed file"
    finally:
        proc.terminate()
        await proc.wait()


async def test_an_entry_watch_starts_without_is_told_to_the_targets_once(tmp_path) -> None:
    """Hour s34 CLI #2: a watch restarted (systemd) with an entry left out said so on its
    stderr alone; that box, still billing, had no alerts, autostop or metric series, and
    nothing reached the phone. Now a warning goes to the fleet's targets — once per
    reading of the file, not at every restart of a unit in a loop."""
    from support.webhook import webhook

    hosts = tmp_path / "hosts.toml"
    with webhook() as hook:
        fleet = f'[fleet]\nnotify = ["{hook.url("/phone")}"]\n\n'
        hosts.write_text(fleet + '[[hosts]]\nname = "box2"\nssh = "local"\n' + BROKEN_HOST)
        once = await arun("watch", "--once", "--timeout", "20", "--hosts", hosts)
        assert once.returncode == 1, once.stdout + once.stderr
        assert "left_out" in once.stdout and "box7" in once.stdout, once.stdout
        (told,) = [b for b in hook.at("/phone") if "box7" in b["title"]]
        assert (
            told["title"] == "[rgt-tui] box7 left out of the fleet file for a mistake: not watched"
        )
        assert f"{hosts} (line 8) has a mistake" in told["message"], told["message"]
        assert "no alerts, no autostop and no periodic pulls" in told["message"]
        assert "cheap" not in told["message"]  # the file's values stay on this machine

        again = await arun("watch", "--once", "--timeout", "20", "--hosts", hosts)
        assert again.returncode == 1, again.stdout + again.stderr
        assert len([b for b in hook.at("/phone") if "box7" in b["title"]]) == 1


def test_a_sound_box_left_out_with_its_broken_group_is_said_as_its_rank(tmp_path):
    # s35 Slurm hour #8: "going on without bad (line 20), cl (line 20), box2 (line 20)"
    # read as box2's and cl's own mistakes at the group's line.
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "box1"\nssh = "local"\n\n'
        '[[hosts]]\nname = "box2"\nssh = "root@127.0.0.1:1"\n\n'
        '[[hosts]]\nname = "cl"\nssh = "root@127.0.0.1:2"\nscheduler = "slurm"\n\n'
        '[[groups]]\nname = "bad"\nhosts = ["cl", "box2"]\nqueue = "q.txt"\nrun = "x {cfg}"\n'
    )
    done = rgt("status", "box1", "--hosts", hosts, cwd=tmp_path)
    head = done.stderr.splitlines()[0]
    assert head.startswith(
        "rgt-tui status: going on without box2 (line 5, a rank of bad), cl (line 9, a rank "
        "of bad), bad (line 14): "
    ), head
    assert "a Slurm login node runs its jobs on the cluster" in head
