"""A torchrun cell's failure read from torchrun's own summary (ux-c #6, issue 41): the
box script's ``torchrun_cause`` over real torchrun output (tests/fixtures/torchrun,
SOURCES.txt), its record read by ``parse_probe``, and diagnose weighing a worker's
signal instead of torchrun's exit 1.

torchrun exits 1 and ends its log on a ``=====`` banner however its worker died: the
note used to be that banner, and diagnose called a SIGKILLed worker "exited 1 by
itself — not … a kill".
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_state,
    parse_cells_tsv,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import derive_view
from rgt_tui.domain.vanished import MANUAL_KILL, OOM, YES, BoxFacts, diagnose
from rgt_tui.services.box_script import script_text
from rgt_tui.services.queue.box import parse_probe

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "torchrun"
BOOT = "11111111-aaaa-bbbb-cccc-000000000001"
DEPLOYED = parse_cells_tsv(cells_tsv_line(0, "slow", "torchrun …"))


def _cause_record(log: str) -> str:
    """What the box script's ``torchrun_cause`` prints for ``log`` (its tail), run by bash."""
    text = script_text("queue_ctl.sh")
    found = re.search(r"^torchrun_cause\(\) \{\n.*?^\}\n", text, re.M | re.S)
    assert found is not None, "queue_ctl.sh has no torchrun_cause function"
    done = subprocess.run(
        ["bash", "-c", found.group(0) + "torchrun_cause"],
        input=log.encode()[-16384:],
        capture_output=True,
        timeout=30,
        check=True,
    )
    return done.stdout.decode().rstrip("\n")


def _probe(log_name: str) -> tuple[str, str, dict]:
    """The probe's answer for a failed cell whose log is the fixture: (why, note of the
    box's last line before the fix, torchrun facts)."""
    log = (FIXTURES / log_name).read_text()
    last = [line for line in log.splitlines() if line.strip()][-1]
    record = _cause_record(log)
    facts = parse_probe(f"why\tslow\t{last}\ntorchrun\tslow\t{record}\n")
    return facts.why["slow"], last, facts.torchrun


def _diagnose(torchrun: dict, oom_end: int) -> object:
    launches = parse_runner_state(
        f"launch 1000 {BOOT} tmux 0 /h/.rgt/bin/run_queue.x.sh 42\ndone 1028 0 1\n"
    )
    attempts = {
        "slow": parse_cell_state(
            f"start 1000 {BOOT} 4711\nend 1027 1\n", f"start 1000 0\nend 1027 {oom_end}\n"
        )
    }
    view = derive_view(
        "pair", DEPLOYED, launches, attempts, boot_id=BOOT, now=1100, runner_alive=False
    )
    signals = {n: c.signal_number for n, c in torchrun.items() if c.signal_number is not None}
    box = BoxFacts(
        boot_id=BOOT, uptime_s=900, session_name="rgt-pair", session_present=False,
        dmesg="denied", oom_kill_now=oom_end, worker_signals=signals,
    )  # fmt: skip
    return diagnose(view, launches, attempts, box)


def test_a_sigkilled_worker_is_the_note_and_diagnose_weighs_the_kill() -> None:
    why, last, torchrun = _probe("worker_sigkill.log")
    assert set(last) == {"="}  # what the note used to be
    assert why.startswith("a worker was killed by SIGKILL (torchrun: exitcode -9, pid "), why
    d = _diagnose(torchrun, oom_end=0)
    assert d.cause == MANUAL_KILL, d  # type: ignore[attr-defined]
    summary = d.summary  # type: ignore[attr-defined]
    assert "cell 0 (slow) had its worker killed by SIGKILL (torchrun then exited 1)" in summary
    assert "by itself" not in summary
    manual = next(e for e in d.evidence if e.cause == MANUAL_KILL)  # type: ignore[attr-defined]
    assert "torchrun's summary: its worker's exitcode -9 = SIGKILL" in manual.detail
    assert "a kill is what remains" in manual.detail


def test_a_worker_killed_by_the_oom_killer_reads_as_an_oom_kill() -> None:
    _, _, torchrun = _probe("worker_sigkill.log")
    d = _diagnose(torchrun, oom_end=1)  # the cgroup's oom_kill counter rose 0 → 1
    assert d.cause == OOM, d  # type: ignore[attr-defined]
    oom = next(e for e in d.evidence if e.cause == OOM)  # type: ignore[attr-defined]
    assert oom.verdict == YES and "rose 0 → 1" in oom.detail


def test_a_worker_that_raised_names_its_error_and_is_its_own_failure() -> None:
    why, _, torchrun = _probe("worker_raised.log")
    assert why == "RuntimeError: boom: loss is NaN at step 2"
    assert torchrun["slow"].signal_number is None
    d = _diagnose(torchrun, oom_end=0)
    assert d.cause is None and "exited 1 by itself" in d.summary  # type: ignore[attr-defined]


def test_a_retried_cell_is_read_from_its_last_attempt_not_the_first() -> None:
    """Hour s18b #4: the cell log holds every attempt (a retry appends), and the cause was
    the first attempt's — an error fixed before the retry — where the retry's worker was
    SIGKILLed. Each attempt begins with run_one.sh's start mark."""
    raised = (FIXTURES / "worker_raised.log").read_text()
    killed = (FIXTURES / "worker_sigkill.log").read_text()
    mark = "[rgt 2026-12-01 13:00:0{}] cell 0 slow: start in /w (threads 4, tmux)\n"
    log = mark.format(1) + raised + "[rgt 2026-12-01 13:00:30] cell 0 slow: exit 1\n"
    log += mark.format(9) + killed
    record = _cause_record(log)
    last = [line for line in log.splitlines() if line.strip()][-1]
    facts = parse_probe(f"why\tslow\t{last}\ntorchrun\tslow\t{record}\n")
    why = facts.why["slow"]
    assert why.startswith("a worker was killed by SIGKILL (torchrun: exitcode -9"), why
    assert "boom" not in why and facts.torchrun["slow"].signal_number == 9
