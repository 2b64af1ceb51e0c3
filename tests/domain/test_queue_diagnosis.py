"""The four causes of a vanished run (U3), each decided from recorded facts (pure)."""

from __future__ import annotations

from support import FIXTURES

from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_marks,
    parse_cell_state,
    parse_cells_tsv,
    parse_oom_counter,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import DONE, CellView, derive_view
from rgt_tui.domain.vanished import (
    HANGUP,
    LIKELY,
    MANUAL_KILL,
    NO,
    OOM,
    REBOOT,
    UNKNOWN,
    YES,
    BoxFacts,
    diagnose,
)

BOOT, OTHER = "11111111-aaaa-bbbb-cccc-000000000001", "22222222-aaaa-bbbb-cccc-000000000002"
DEPLOYED = parse_cells_tsv(cells_tsv_line(0, "a", "run a") + cells_tsv_line(1, "b", "run b"))
# The fixture trees' counters (tests/fixtures/*/README.txt): the limited v2 container's
# memory.events (oom_kill 2) and the v1 memory cgroup recorded on the dev VM (oom_kill 0).
V2_OOM_KILLS = parse_oom_counter(
    (FIXTURES / "cgroup_v2_limited/sys/fs/cgroup/memory.events").read_text()
)
V1_OOM_KILLS = parse_oom_counter(
    next(
        (FIXTURES / "cgroup_v1/sys/fs/cgroup/memory").rglob("process_api/*/memory.oom_control")
    ).read_text()
)
OOM_LINE = (
    "[ 8812.120310] Out of memory: Killed process 4711 (python3) total-vm:9316884kB, "
    "anon-rss:7962712kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:15912kB oom_score_adj:0"
)


def run(cell_b: str, oom_b: str, *, detach="tmux", boot=BOOT, done="", launches=None, **facts):
    launches = parse_runner_state(
        f"launch 1000 {BOOT} {detach} 0 /h/.rgt/bin/run_queue.x.sh 42\n{done}"
        if launches is None
        else launches
    )
    attempts = {
        "a": parse_cell_state(
            f"start 1000 {BOOT} 4710\nend 1010 0\n", "start 1000 0\nend 1010 0\n"
        ),
        "b": parse_cell_state(cell_b, oom_b),
    }
    view = derive_view(
        "box1", DEPLOYED, launches, attempts, boot_id=boot, now=1100, runner_alive=False
    )
    box = BoxFacts(boot_id=boot, uptime_s=90, session_name="rgt-box1", **facts)
    return diagnose(view, launches, attempts, box)


def verdicts(d) -> dict[str, str]:
    return {e.cause: e.verdict for e in d.evidence}


def test_recorded_counters_parse():
    assert (V2_OOM_KILLS, V1_OOM_KILLS) == (2, 0)


def test_the_runner_itself_vanishing_between_cells():
    d = run(f"start 1010 {BOOT} 4711\nend 1020 0\n", "", oom_kill_now=0, dmesg="ok")
    assert d.subject == "the runner" and d.cause == MANUAL_KILL and verdicts(d)[OOM] == UNKNOWN
    # Both cells done: a relaunch would run them again, paid work (h541 #6).
    assert "relaunch" not in d.next_step.replace("do not relaunch", ""), d.next_step
    assert d.next_step.endswith(
        "kill-session); do not relaunch: nothing is left to run here (its cells are done, "
        "or moved: rgt-tui queue show box1 says where each went)"
    ), d.next_step
    # A reboot's own words stand without "(each cell reloads its latest checkpoint)"
    # around them (review h544 #1).
    rebooted = run(
        f"start 1010 {BOOT} 4711\nend 1020 0\n", "", boot=OTHER, oom_kill_now=0, dmesg="ok"
    )
    assert rebooted.cause == REBOOT
    assert rebooted.next_step.startswith("find out why the box rebooted"), rebooted.next_step
    assert "reloads" not in rebooted.next_step and "nothing is left" in rebooted.next_step


def test_the_runner_gone_after_its_interrupted_cell_moved_away():
    """h541 #6: b was interrupted, then moved to box2 (its skip record): diagnose ended
    "then relaunch the queue", which runs nothing here, or a again."""
    launches = parse_runner_state(f"launch 1000 {BOOT} tmux 0 /h/.rgt/bin/run_queue.x.sh 42\n")
    cells = {
        "a": f"start 1000 {BOOT} 4710\nend 1010 0\n",
        "b": f"start 1010 {BOOT} 4711\nskip 1050 moved to box2 (queue move)\n",
    }
    attempts = {n: parse_cell_state(t) for n, t in cells.items()}
    view = derive_view(
        "box1", DEPLOYED, launches, attempts, boot_id=BOOT, now=1100, runner_alive=False,
        marks={n: parse_cell_marks(t) for n, t in cells.items()},
    )  # fmt: skip
    d = diagnose(view, launches, attempts, BoxFacts(boot_id=BOOT, uptime_s=90, dmesg="ok"))
    assert "nothing is left to run here" in d.next_step, d.next_step
    assert "relaunch the queue" not in d.next_step


def test_reboot_is_named_from_the_boot_id():
    d = run(f"start 1010 {BOOT} 4711\n", "start 1010 0\n", boot=OTHER, oom_kill_now=0, dmesg="ok")
    assert d.cause == REBOOT and d.subject == "cell 1 (b)" and d.resume_index == 1
    assert verdicts(d)[REBOOT] == YES and verdicts(d)[OOM] == UNKNOWN
    assert "11111111" in d.evidence[0].detail and "22222222" in d.evidence[0].detail
    assert "relaunch from cell 1" in d.next_step and "checkpoint" in d.next_step
    assert "--start" not in d.next_step and "rgt-tui" not in d.next_step


def test_oom_from_the_cgroup_counter_that_rose():
    d = run(
        f"start 1010 {BOOT} 4711\nend 1020 137\n",
        f"start 1010 {V1_OOM_KILLS}\nend 1020 {V2_OOM_KILLS}\n",
        dmesg="denied",
    )
    assert d.cause == OOM and verdicts(d)[OOM] == YES
    oom = next(e for e in d.evidence if e.cause == OOM)
    assert "0 → 2" in oom.detail and "dmesg is denied" in oom.detail
    assert "num_workers" in d.next_step and "batch" in d.next_step


def test_oom_from_the_kernel_log_naming_the_pid():
    d = run(
        f"start 1010 {BOOT} 4711\n",
        "start 1010 ?\n",
        oom_kill_now=None,
        dmesg="ok",
        dmesg_lines=(OOM_LINE,),
    )
    assert d.cause == OOM
    assert "Killed process 4711" in next(e for e in d.evidence if e.cause == OOM).detail


def test_a_kernel_log_line_of_another_pid_is_not_quoted_as_this_cells():
    """h583 #3: an earlier cell's OOM kill (or, on a shared host, another container's) was
    quoted under this cell's "OOM kill: no", as if it were its evidence."""
    other = OOM_LINE.replace("process 4711", "process 9178")
    d = run(
        f"start 1010 {BOOT} 4711\nend 1020 143\n",
        "start 1010 2\nend 1020 2\n",
        dmesg="ok",
        dmesg_lines=(other,),
    )
    oom = next(e for e in d.evidence if e.cause == OOM)
    assert oom.verdict == NO and "9178" not in oom.detail
    assert "none of the kernel log's 1 OOM-killer line names its pid 4711" in oom.detail


def test_hang_up_when_the_runner_was_not_detached():
    d = run(
        f"start 1010 {BOOT} 4711\n", "start 1010 0\n", detach="none", oom_kill_now=0, dmesg="ok"
    )
    assert d.cause == HANGUP and verdicts(d) == {
        REBOOT: NO,
        OOM: NO,
        HANGUP: YES,
        MANUAL_KILL: UNKNOWN,
    }
    assert "detached" in d.next_step


def test_sigkill_with_a_quiet_counter_is_a_manual_kill_and_says_why_it_is_ambiguous():
    d = run(
        f"start 1010 {BOOT} 4711\nend 1020 137\n",
        "start 1010 0\nend 1020 0\n",
        oom_kill_now=0,
        dmesg="ok",
    )
    assert d.cause == MANUAL_KILL
    assert verdicts(d) == {REBOOT: NO, OOM: NO, HANGUP: NO, MANUAL_KILL: LIKELY}
    manual = d.evidence[-1].detail
    assert "SIGKILL" in manual and "OOM killer" in manual and "cannot tell them apart" in manual
    assert "did not move (0 → 0)" in d.evidence[1].detail
    assert "killed (SIGKILL)" in d.summary


def test_a_kill_without_counters_cannot_rule_out_oom():
    d = run(
        f"start 1010 {BOOT} 4711\n", "", oom_kill_now=None, dmesg="denied", session_present=False
    )
    assert d.cause == MANUAL_KILL and verdicts(d)[OOM] == UNKNOWN
    assert "(an OOM kill cannot be ruled out: see the evidence)" in d.summary
    assert "gone now" in next(e for e in d.evidence if e.cause == HANGUP).detail


def test_a_kill_without_a_launch_record_cannot_rule_out_a_hang_up_either():
    d = run(f"start 1010 {BOOT} 4711\n", "", oom_kill_now=None, dmesg="denied", launches="")
    assert verdicts(d)[HANGUP] == UNKNOWN and verdicts(d)[MANUAL_KILL] == UNKNOWN
    assert "(an OOM kill and a hang-up cannot be ruled out: see the evidence)" in d.summary


def test_a_segfault_or_a_bus_error_is_the_programs_crash_not_a_kill():
    """h552 #1: exit 139 (SIGSEGV) and 135 (SIGBUS) read "manual kill … a kill is what
    remains" and sent the user after a pkill or a teammate."""
    for code, sig, hint in ((139, "SIGSEGV", "segfault"), (135, "SIGBUS", "/dev/shm")):
        d = run(
            f"start 1010 {BOOT} 4711\nend 1020 {code}\n",
            "",
            oom_kill_now=0,
            dmesg="ok",
            done="done 1021 1 1\n",  # the runner went on to its end
        )
        assert d.cause is None and d.by_itself and not d.found, d
        assert f"cell 1 (b) crashed with {sig} (exit {code})" in d.summary, d.summary
        assert "the program's own fault, not a vanished run" in d.summary and hint in d.summary
        assert "read its log (~/.rgt/queue/cells/b.log)" in d.next_step
        assert "kill" not in d.next_step and d.resume_index == 1


def test_an_ordinary_failure_is_not_a_vanished_run():
    d = run(f"start 1010 {BOOT} 4711\nend 1020 1\n", "", oom_kill_now=0, done="done 1021 1 1\n")
    assert d.cause is None and d.subject == "cell 1 (b)" and "exited 1 by itself" in d.summary
    assert "cells/b.log" in d.next_step
    assert d.by_itself and not d.found  # diagnose exits 0: nothing vanished


def test_each_front_end_adds_its_own_resume_hint():
    """The domain says "relaunch from cell 1"; the CLI names its flag, the TUI its key."""
    from rgt_tui.cli.queue import format_diagnosis
    from rgt_tui.screens.diagnosis import diagnosis_body

    d = run(f"start 1010 {BOOT} 4711\n", "start 1010 0\n", boot=OTHER, oom_kill_now=0, dmesg="ok")
    cli = format_diagnosis(d)
    assert "resume: rgt-tui launch box1 --start 1" in cli
    launches = parse_runner_state(f"launch 1000 {BOOT} tmux 0 /h/.rgt/bin/run_queue.x.sh 42\n")
    view = derive_view("box1", DEPLOYED, launches, {}, boot_id=OTHER, now=1100, runner_alive=False)
    tui = diagnosis_body(view, d).plain
    # ux-e #3: L launches (l moves right, as in vim).
    assert "Escape, then L" in tui and "cell 1" in tui
    assert "--start" not in tui and "rgt-tui" not in tui
    # ux-e #17: each cause is padded to the widest one, so none runs into its verdict.
    rows = {line.split()[0]: line for line in tui.splitlines() if line.startswith("  ")}
    assert "  manual kill  unknown " in tui or "  manual kill  likely " in tui, tui
    assert rows["reboot"].index("yes") == rows["manual"].index("kill") + len("kill  "), tui


def test_a_failure_after_cells_that_never_ran_names_them_in_the_next_step():
    """A retry's runner runs only the retried cell (and what is appended after it): cells
    before the failed one that never ran stay pending in a finished queue, and a relaunch
    from the failed cell would leave them again — the next step says so."""
    deployed = parse_cells_tsv(
        cells_tsv_line(0, "a", "run a") + cells_tsv_line(1, "b", "run b")
        + cells_tsv_line(2, "c", "run c")
    )  # fmt: skip
    launches = parse_runner_state(
        f"launch 1000 {BOOT} tmux 2 /h/.rgt/bin/run_queue.x.sh 42\ndone 1021 0 1\n"
    )
    attempts = {
        "c": parse_cell_state(f"start 1010 {BOOT} 4711\nend 1020 1\n", ""),
    }
    view = derive_view(
        "box1", deployed, launches, attempts, boot_id=BOOT, now=1100, runner_alive=False
    )
    d = diagnose(view, launches, attempts, BoxFacts(boot_id=BOOT, uptime_s=90, oom_kill_now=0))
    assert d.cause is None and d.subject == "cell 2 (c)" and d.resume_index == 2
    assert d.next_step.endswith(
        "rerun the identical config from cell 2; cells 0 (a), 1 (b) before it never ran: a "
        "launch from cell 2 leaves them, rgt-tui launch box1 --start 0 runs from them (the "
        "plan lists every cell it runs)"
    ), d.next_step


def test_the_cli_resume_line_names_the_done_cells_a_relaunch_runs_again():
    """s35 Slurm hour #7: after an OOM in cell 1 of an array whose cell 2 went on and
    finished, "resume: … --start 1" would run cell 2 again: it says so, and names the
    resume that runs the cell alone."""
    from rgt_tui.cli.queue import format_diagnosis, resume_line

    d = run(f"start 1010 {BOOT} 4711\n", "start 1010 0\n", boot=OTHER, oom_kill_now=0, dmesg="ok")
    cells = (CellView(0, "a", DONE), CellView(1, "b", "OUT_OF_MEMORY"), CellView(2, "c", DONE))
    assert resume_line("box1", 1, cells) == (
        "resume: rgt-tui launch box1 --start 1 (runs done cell 2 again too), or rgt-tui "
        "queue retry box1 b --resume (that cell alone, from its checkpoint if it wrote one)"
    )
    assert "runs done cell 2 again too" in format_diagnosis(d, cells)
    assert resume_line("box1", 2, cells) == "resume: rgt-tui launch box1 --start 2"


def test_the_tui_resume_hint_names_the_index_to_type_and_the_done_cells_it_reruns():
    """h612 #4: the TUI said "Escape, then L — the launch plan starts at cell 1" while L
    opened at another start (its own rule), and a start at 1 also ran done cell 2 again:
    the hint names the index to type, those done cells, and R for the cell alone, as the
    command line's resume line does by its commands."""
    from rgt_tui.screens.diagnosis import resume_keys

    deployed = parse_cells_tsv(
        cells_tsv_line(0, "a", "run a") + cells_tsv_line(1, "b", "run b")
        + cells_tsv_line(2, "c", "run c")
    )  # fmt: skip
    launches = parse_runner_state(f"launch 1000 {BOOT} tmux 0 /h/.rgt/bin/run_queue.x.sh 42\n")
    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 4710\nend 1010 0\n"),
        "b": parse_cell_state(f"start 1010 {BOOT} 4711\n"),
        "c": parse_cell_state(f"start 1020 {BOOT} 4712\nend 1030 0\n"),
    }
    view = derive_view(
        "box1", deployed, launches, attempts, boot_id=BOOT, now=1100, runner_alive=False
    )
    said = resume_keys(view, 1)
    assert said.startswith("to resume cell 1 (b): Escape, then R on the Queue tab resumes it alone")
    assert "L, then type 1 in its start box" in said and "runs done cell 2 again too" in said
    alone = resume_keys(view, 2)
    assert alone == (
        "to resume from cell 2 (c): Escape, then L, then type 2 in its start box (it may "
        "offer another)"
    ), alone
