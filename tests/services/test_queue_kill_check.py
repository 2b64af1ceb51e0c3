"""The box's kill check refuses a cell state record it must not act on (issue 39).

``queue_ctl.sh kill`` takes the pid to kill from the cell's start record, which the box
can write anything into. A record naming pid 0 used to pass (``kill -0 0`` asks about
the shell's own process group and succeeds), as did pid 1, the script's own shell, and
any process whose ``/proc/PID/environ`` could not be read (the RGT_CELL_NAME check was
skipped); the detached killer then stops the tree under that pid: for 0, every process
of the box. Now each is refused, through the script's ``refused<TAB>CODE<TAB>DETAIL``
answer that the CLI and the TUI show.

Safety of the test itself: on the code before this change, these records reached the
detached killer, which for pid 0 would stop every process of this machine. So the
script runs here from a file (``bash ~/queue_ctl.sh``) over the real loopback SSH box:
the check is the same code, but the killer it spawns re-runs ``$BASH_EXECUTION_STRING``,
which is unset when bash reads a file, and so signals nothing. The answer line is
what is asserted: "killing<TAB>PID" before the change, a refusal after it.

The unreadable environ: the test machine runs as root, which reads every environ, so
the script runs as ``nobody`` (runuser) against a process of this user that has
RGT_CELL_NAME set and is not dumpable; as another user the test targets a process it
cannot read either way (a non-dumpable process's /proc files belong to root).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rgt_tui.services.box_script import script_text

CELL = "c"
SESSION = "rgt-box1"


def put_script(home: Path) -> Path:
    path = home / "queue_ctl.sh"
    path.write_text(script_text("queue_ctl.sh"))
    return path


def write_start(home: Path, boot_id_file: Path, pid: str) -> None:
    """The cell's state record: a start of this boot naming ``pid``."""
    cells = home / ".rgt" / "queue" / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    boot = boot_id_file.read_text().strip()
    (cells / f"{CELL}.state").write_text(f"start 1767268800 {boot} {pid}\n")


async def kill_answer(transport, prefix: str = "") -> str:  # type: ignore[no-untyped-def]
    """The box's answer to ``kill SESSION c next 1 user``, the script run from its file."""
    result = await transport.run(f"{prefix}bash ~/queue_ctl.sh kill {SESSION} {CELL} next 1 user")
    return result.stdout


async def test_a_record_naming_pid_0_1_or_no_pid_is_refused_and_nothing_is_signalled(
    make_queue_fleet,
):
    qf = await make_queue_fleet(1)
    home, transport = qf.root(), qf.transport()
    await transport.connect()
    boot_file = qf.loopback.box("box1").boot_id_file
    put_script(home)
    try:
        for pid in ("0", "00", "1", "-1", "12x", "99999999999999999999"):
            write_start(home, boot_file, pid)
            answer = await kill_answer(transport)
            assert answer.startswith("refused\tbad-pid\t"), (pid, answer)
            assert f"cell {CELL}'s start record names pid" in answer and "nothing was signalled" in answer  # fmt: skip
        state = (qf.qdir() / "cells" / f"{CELL}.state").read_text()
        assert "kill " not in state  # refused before the kill record is written
    finally:
        await transport.close()


async def test_a_record_naming_the_scripts_own_shell_or_its_session_is_refused(make_queue_fleet):
    qf = await make_queue_fleet(1)
    home, transport = qf.root(), qf.transport()
    await transport.connect()
    put_script(home)
    state = qf.qdir() / "cells" / f"{CELL}.state"
    state.parent.mkdir(parents=True, exist_ok=True)
    # Each writes the record just before the script runs, naming the pid the script will
    # have ($$: exec keeps it) or its parent's; RGT_CELL_NAME is set so that the old
    # check, reading the environ, found "the cell" there.
    own = f'echo "start 1 $(cat "$RGT_BOOT_ID_FILE") $$" > {state}; RGT_CELL_NAME={CELL} exec bash ~/queue_ctl.sh kill {SESSION} {CELL} next 1 user'  # fmt: skip
    parent = f'export RGT_CELL_NAME={CELL}; echo "start 1 $(cat "$RGT_BOOT_ID_FILE") $$" > {state}; bash ~/queue_ctl.sh kill {SESSION} {CELL} next 1 user; exit $?'  # fmt: skip
    try:
        for command in (own, parent):
            result = await transport.run(f"bash -c {shlex.quote(command)}")
            assert result.stdout.startswith("refused\tbad-pid\t"), (command, result.stdout)
    finally:
        await transport.close()


async def test_a_live_process_that_is_not_the_cell_is_not_killed(make_queue_fleet):
    """A recycled pid: alive, environ readable, no RGT_CELL_NAME=c (passed before too)."""
    qf = await make_queue_fleet(1)
    home, transport = qf.root(), qf.transport()
    await transport.connect()
    put_script(home)
    other = start(["sleep", "600"], {})
    try:
        write_start(home, qf.loopback.box("box1").boot_id_file, str(other.pid))
        answer = await kill_answer(transport)
        assert answer.startswith("refused\tnot-running\t")
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
        await transport.close()


def start(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """A process of this test (not of the box): only ``env`` and PATH in its environment."""
    env = {"PATH": os.environ["PATH"], **env}
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)


def other_users_home(boot_id_file: Path, pid: int) -> tuple[Path, str]:
    """A home under /tmp with the script and a start record naming ``pid``, and the
    command prefix that runs the script there as a user who cannot read that pid's
    environ: ``nobody`` when the test runs as root (root reads every environ; nobody
    cannot enter pytest's 0700 temp folders, hence /tmp), else this user itself."""
    home = Path(tempfile.mkdtemp(prefix="rgt-kill-"))
    home.chmod(0o755)
    boot_file = home / ".boot_id"
    shutil.copy(boot_id_file, boot_file)
    put_script(home)
    write_start(home, boot_file, str(pid))
    prefix = f"env HOME={home} RGT_BOOT_ID_FILE={boot_file} "
    if os.geteuid() == 0:
        for path in [home, *home.rglob("*")]:
            os.chown(path, 65534, 65534)
        return home, f"runuser -u nobody -- {prefix}"
    assert not os.access(f"/proc/{pid}/environ", os.R_OK)  # not dumpable: root's now
    return home, prefix


# A process holding RGT_CELL_NAME=c that no other user may read: not dumpable, so its
# /proc/PID/environ belongs to root (and only its own user's root, never nobody).
HIDDEN = (
    "import ctypes, sys, time\n"
    "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


async def test_an_unreadable_environ_fails_the_check(make_queue_fleet):
    qf = await make_queue_fleet(1)
    transport = qf.transport()
    await transport.connect()
    cell = start([sys.executable, "-c", HIDDEN], {"RGT_CELL_NAME": CELL})
    assert cell.stdout is not None and cell.stdout.readline() == "ready\n"  # not dumpable now
    home, prefix = other_users_home(qf.loopback.box("box1").boot_id_file, cell.pid)
    try:
        result = await transport.run(
            f"{prefix}bash {home}/queue_ctl.sh kill {SESSION} {CELL} next 1 user"
        )
        answer = result.stdout
        assert answer.startswith("refused\tunverified\t"), (answer, result.stderr)
        assert f"cannot read /proc/{cell.pid}/environ" in answer and f"cell {CELL}" in answer
        assert cell.poll() is None
    finally:
        cell.kill()
        cell.wait()
        shutil.rmtree(home, ignore_errors=True)
        await transport.close()
