"""A name that is no cell of the host's queue is bad input (exit 2, naming the cells),
for every command that takes a cell; a cell of the queue that cannot be acted on now is
a refusal (exit 1). The real entry point over loopback boxes."""

from __future__ import annotations

from support.cli import arun
from support.queues import SCRIPT_RUN, wait_view

from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.services.queue.launch import launch, plan_launch


async def test_queue_kill_a_name_that_is_no_cell_is_bad_input(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    hold = qf.cell_script("hold", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done')
    later = qf.cell_script("later", "echo later")
    qf.write_queue(f"{hold} t\n{later} t\n")

    # Not launched yet: the local queue file knows the cells.
    typo = await arun("queue", "kill", "box1", "nosuch", "--hosts", hosts, "--yes")
    assert typo.returncode == 2, typo.stderr
    assert "no cell named nosuch in its queue: nothing to kill" in typo.stderr
    assert "Its cells: hold, later" in typo.stderr
    idle = await arun("queue", "kill", "box1", "later", "--hosts", hosts, "--yes")
    assert idle.returncode == 1 and "cell later is not running: nothing to kill" in idle.stderr

    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
    typo = await arun("queue", "kill", "box1", "nosuch", "--hosts", hosts, "--yes")
    assert typo.returncode == 2 and "Its cells: hold, later" in typo.stderr, typo.stderr
    pending = await arun("queue", "kill", "box1", "later", "--hosts", hosts, "--yes")
    assert pending.returncode == 1, pending.stderr
    assert "kill " not in qf.state("hold")
    (qf.root() / "go").touch()


async def test_logs_of_a_name_that_is_no_cell_is_bad_input(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    first = qf.cell_script("first", "echo first ran")
    hold = qf.cell_script("hold", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done')
    later = qf.cell_script("later", "echo later")
    qf.write_queue(f"{first} t\n{hold} t\n{later} t\n")

    typo = await arun("logs", "box1", "nosuch", "--hosts", hosts)
    assert typo.returncode == 2, typo.stderr
    assert "no cell named 'nosuch' in its queue" in typo.stderr
    assert "Its cells: first, hold, later" in typo.stderr
    unlaunched = await arun("logs", "box1", "later", "--hosts", hosts)
    assert unlaunched.returncode == 1 and "has not been launched" in unlaunched.stderr

    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[1].status == RUNNING, what="hold to run")
    typo = await arun("logs", "box1", "nosuch", "--hosts", hosts)
    assert typo.returncode == 2 and "Its cells: first, hold, later" in typo.stderr
    waiting = await arun("logs", "box1", "later", "--hosts", hosts)
    assert waiting.returncode == 1, waiting.stderr
    assert "cell 'later' has not started yet" in waiting.stderr
    assert "not in this host's queue" not in waiting.stderr  # it is: the file says so
    assert "the copy a pull brought" not in waiting.stderr  # none was pulled
    # A pull brought a log of it (a --fresh launch then moved the box's records aside):
    # said where, not only "not started" (hour s23c #10).
    pulled = qf.fleet.results_dir / "box1" / ".rgt" / "box-logs" / "cells" / "later.log"
    pulled.parent.mkdir(parents=True)
    pulled.write_text("later ran once\n")
    aside = await arun("logs", "box1", "later", "--hosts", hosts)
    assert aside.returncode == 1 and f"the copy a pull brought is {pulled}" in " ".join(
        aside.stderr.split()
    ), aside.stderr

    # A cell whose line left the queue file keeps its log on the box: still shown.
    qf.write_queue(f"{hold} t\n{later} t\n")
    shown = await arun("logs", "box1", "first", "--hosts", hosts)
    assert shown.returncode == 0 and "first ran" in shown.stdout, shown.stderr
    (qf.root() / "go").touch()


async def test_queue_move_a_name_that_is_no_cell_is_bad_input(make_queue_fleet):
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue(f"{qf.cell_script('a', 'echo a')} t\n")
    qf.write_queue(f"{qf.cell_script('b', 'echo b', 'box2')} t\n", "box2")

    typo = await arun("queue", "move", "nosuch", "--to", "box2", "--hosts", hosts, "--yes")
    assert typo.returncode == 2, typo.stderr
    assert "no cell 'nosuch' in any host's queue file" in typo.stderr
    # Pointed at a command that lists cells (queue check only counts them).
    assert "rgt-tui queue show HOST lists a host's cells" in typo.stderr, typo.stderr
    assert "queue check lists" not in typo.stderr
    # A near miss names the cell meant, and whose it is (hour s24a #10).
    near = qf.cell_script("lr02", "echo lr02")
    qf.write_queue(f"{qf.cell_script('a', 'echo a')} t\n{near} t\n")
    close = await arun("queue", "move", "lr2", "--to", "box2", "--hosts", hosts, "--yes")
    assert close.returncode == 2
    assert "no cell 'lr2' in any host's queue file (did you mean 'lr02', box1's?)" in " ".join(
        close.stderr.split()
    ), close.stderr
    qf.write_queue(f"{qf.cell_script('a', 'echo a')} t\n")
    # A real cell on two hosts at once is a refusal of the move, not a wrong name.
    both = await arun("queue", "move", "a", "b", "--to", "box2", "--hosts", hosts, "--yes")
    assert both.returncode == 1 and "move one host's at a time" in both.stderr, both.stderr
    assert qf.queue_file().read_text().endswith("a.sh t\n")  # nothing was moved


async def test_logs_follow_of_a_cell_still_to_run_waits_for_it(make_queue_fleet):
    """s37 dev-loop #15: `logs box1 later -f` said "has not started yet" and ended; it
    waits for the cell's log, then follows it."""
    import asyncio
    import signal

    from support.cli import RGT, cli_env

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hold = qf.cell_script("hold", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done')
    later = qf.cell_script("later", 'echo "later ran"; sleep 30')
    qf.write_queue(f"{hold} t\n{later} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")
    proc = await asyncio.create_subprocess_exec(
        *RGT, "logs", "box1", "later", "-f", "--poll", "0.2",
        "--hosts", str(qf.loopback.hosts_file),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        said = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert "cell 'later' has not started yet; waiting for its log" in said, said
        (qf.root() / "go").touch()
        lines: list[str] = []
        while "later ran\n" not in lines:  # after the runner's own start line
            lines.append((await asyncio.wait_for(proc.stdout.readline(), 60)).decode())
            assert lines[-1], lines  # ended before the cell's output
    finally:
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.wait(), 30)


async def test_logs_follow_waiting_for_a_cell_ends_in_words_not_a_traceback(make_queue_fleet):
    """A review (s38 #5): the wait ran inside the FileNotFoundError handler, so a log
    that appeared unreadable (a directory) ended `logs -f` in a traceback; and a queue
    stopped before the cell started left it waiting forever."""
    import asyncio

    from support.cli import RGT, cli_env

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    hold = qf.cell_script("hold", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done')
    later = qf.cell_script("later", 'echo "later ran"')
    qf.write_queue(f"{hold} t\n{later} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
    await transport.close()
    await wait_view(qf, lambda v: v.cells[0].status == RUNNING, what="hold to run")

    async def follow():  # type: ignore[no-untyped-def]
        proc = await asyncio.create_subprocess_exec(
            *RGT, "logs", "box1", "later", "-f", "--poll", "0.2",
            "--hosts", str(qf.loopback.hosts_file),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
        )  # fmt: skip
        assert proc.stderr is not None
        said = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert "has not started yet; waiting for its log" in said, said
        return proc

    proc = await follow()
    log = qf.qdir() / "cells" / "later.log"
    log.mkdir()  # appears, and cannot be read as a log
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1 and "Traceback" not in err.decode(), err.decode()
    assert "cannot read ~/.rgt/queue/cells/later.log" in err.decode(), err.decode()
    log.rmdir()

    proc = await follow()
    stopped = await arun(
        "queue", "kill", "box1", "hold", "--then", "stop", "--yes",
        "--hosts", str(qf.loopback.hosts_file),
    )  # fmt: skip
    assert stopped.returncode == 0, stopped.stderr
    _, err = await asyncio.wait_for(proc.communicate(), 90)  # the queue is read every 10 s
    assert proc.returncode == 1, err.decode()
    assert (
        "cell 'later' has not started and the queue is stopped by the user: it will not start; "
        in (err.decode())
    )


async def test_a_followed_log_replaced_by_a_directory_ends_in_words_not_a_traceback(
    make_queue_fleet,
):
    """h552 #2: a log that became a directory while `logs -f` followed it ended the
    command in a traceback (`OSError: [Errno 5] box1: Is a directory`)."""
    import asyncio

    from support.cli import RGT, cli_env

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    log = qf.qdir() / "cells" / "seq.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("a\n")
    proc = await asyncio.create_subprocess_exec(
        *RGT, "logs", "box1", "seq", "-f", "--poll", "0.2",
        "--hosts", str(qf.loopback.hosts_file),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    assert (await asyncio.wait_for(proc.stdout.readline(), 60)).decode() == "a\n"
    log.unlink()
    log.mkdir()  # while it follows
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    said = " ".join(err.decode().split())
    assert proc.returncode == 1 and "Traceback" not in said, said
    assert "cannot read ~/.rgt/queue/cells/seq.log any more: Is a directory" in said, said
    assert "fix: once it is a readable file again, follow it again" in said, said
    # Read once, not followed: the same words, the host said once (h555 #5).
    once = await arun("logs", "box1", "seq", "--hosts", str(qf.loopback.hosts_file))
    said = " ".join(once.stderr.split())
    assert once.returncode == 1 and "cannot read ~/.rgt/queue/cells/seq.log: Is a directory" in (
        said
    ), said
    assert said.count("box1") == 1, said


async def test_logs_follow_of_a_cell_that_ran_but_has_no_log_says_so(make_queue_fleet):
    """A cell that ran, whose log is gone from the box (deleted by hand), while the queue
    runs on: `logs -f` used to end with "it will not start", which is false of a cell that
    ran; it says the cell ran and its log is not there."""
    import asyncio

    from support.cli import RGT, cli_env

    from rgt_tui.domain.queue_state import DONE

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    first = qf.cell_script("first", 'echo "first ran"')
    hold = qf.cell_script("hold", 'while [ ! -e "$HOME/go" ]; do sleep 0.05; done')
    qf.write_queue(f"{first} t\n{hold} t\n")
    transport = qf.transport()
    await launch(await plan_launch(qf.fleet, qf.host(), transport, preflight=False), transport)
    await transport.close()
    try:
        await wait_view(
            qf, lambda v: v.cells[0].status == DONE and v.cells[1].status == RUNNING, what="hold"
        )
        (qf.qdir() / "cells" / "first.log").unlink()
        proc = await asyncio.create_subprocess_exec(
            *RGT, "logs", "box1", "first", "-f", "--poll", "0.2",
            "--hosts", str(qf.loopback.hosts_file),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 90)  # the queue is read every 10 s
        assert proc.returncode == 1, err.decode()
        said = " ".join(err.decode().split())
        assert "cell 'first' is done but its log is not there; stopped waiting" in said, said
        assert "will not start" not in said
    finally:
        (qf.root() / "go").touch()


async def test_a_log_linked_to_a_device_is_refused_not_read_forever(make_queue_fleet):
    """h552 #5: a cell log that is a symlink to /dev/zero on the box was read forever
    (`logs` never returned, a quarter of a core on each side): no regular file, no log."""
    import asyncio

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    cells = qf.qdir() / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    (cells / "zero.log").symlink_to("/dev/zero")
    hosts = ("--hosts", str(qf.loopback.hosts_file))
    said = await asyncio.wait_for(arun("logs", "box1", "zero", *hosts), 60)
    assert said.returncode == 1, said.stdout + said.stderr
    assert "not a regular file" in " ".join(said.stderr.split()), said.stderr


async def test_logs_follow_into_a_reader_that_went_away_exits_quietly(make_queue_fleet):
    """Review h554 #2: `logs -f … | head -1` ended with "cannot read … any more" and exit
    1 once head had gone (the local broken pipe read as the box's file error); it exits
    141 without a word, as before."""
    import asyncio
    import shlex

    from support.cli import RGT, cli_env

    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    log = qf.qdir() / "cells" / "seq.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("a\n")
    command = shlex.join(
        [*RGT, "logs", "box1", "seq", "-f", "--poll", "0.2", "--hosts", str(qf.loopback.hosts_file)]
    )
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", f'{command} | head -1; echo "rc=${{PIPESTATUS[0]}}"',
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL, env=cli_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    assert (await asyncio.wait_for(proc.stdout.readline(), 60)).decode() == "a\n"
    done = asyncio.ensure_future(proc.communicate())
    n = 0
    while not done.done():  # lines for it to write into the pipe head left
        n += 1
        with log.open("a") as f:
            f.write(f"line {n}\n")
        await asyncio.wait([done], timeout=0.2)
    out, err = done.result()
    assert out.decode().strip() == "rc=141", (out, err)
    assert "cannot read" not in err.decode() and "Traceback" not in err.decode(), err.decode()


async def test_logs_of_a_cell_moved_or_in_another_hosts_queue_names_that_host(make_queue_fleet):
    """h612 #6: `logs box1 k` for a cell whose line reads `#moved-to box2` said "no cell
    named 'k'", listing box1's cells: it names box2 and the command that shows the log."""
    qf = await make_queue_fleet(2, run=SCRIPT_RUN)
    hosts = str(qf.loopback.hosts_file)
    qf.write_queue("cells/a.sh t\n#moved-to box2: cells/k.sh t\n", "box1")
    qf.write_queue("cells/k.sh t\ncells/z.sh t\n", "box2")
    moved = await arun("logs", "box1", "k", "--hosts", hosts)
    assert moved.returncode == 2, moved.stderr
    said = " ".join(moved.stderr.split())
    assert "box1: cell 'k' was moved to box2: rgt-tui logs box2 k" in said, said
    other = await arun("logs", "box1", "z", "--hosts", hosts)
    said = " ".join(other.stderr.split())
    assert "box1: cell 'z' is not its: it is in the queue of box2: rgt-tui logs box2 z" in said
    typo = await arun("logs", "box1", "nosuch", "--hosts", hosts)
    assert "no cell named 'nosuch' in its queue" in typo.stderr, typo.stderr
