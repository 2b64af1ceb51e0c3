"""U22: a dead GPU's fix is re-renting the box, and — where the host has ``spare`` hosts
(issue 40) — moving the queue to one, named in the alert and in diagnose's next step."""

from __future__ import annotations

from support.gpu_sequence import GPU_FIXTURES, gpu_rows

from rgt_tui.agent.probe import gpu_smi
from rgt_tui.domain.health import HealthContext, HealthState, evaluate
from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_state,
    parse_cells_tsv,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import derive_view
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.domain.vanished import DEAD_GPU, BoxFacts, diagnose

LOST = (GPU_FIXTURES / "smi_gpu_lost.txt").read_text()
BOOT = "11111111-aaaa-bbbb-cccc-000000000001"
MOVE = "or move the queue to a spare: rgt-tui queue move"


def sample(seq: int, stdout: str, cell: str | None = None) -> dict:
    gpus = gpu_smi.parse_smi_gpus(stdout)
    return {
        "v": 1, "t": 1_767_268_800.0 + 60 * seq, "seq": seq, "boot_id": "boot-1",
        "gpu_source": "nvidia-smi" if gpus else "none", "gpus": gpus,
        "gpu_unavailable_reason": None if gpus else gpu_smi.first_line("", stdout),
        "kmsg_readable": False, "gpu_lost": gpu_smi.lost_gpu_lines(stdout, ""),
        "xids": [], "errors": [], "cell": cell,
    }  # fmt: skip


def dead_gpu_alert(spare: tuple[str, ...]):
    state, snap = HealthState(), None
    for data in (sample(0, gpu_rows("load"), "lr_3e-4"), sample(1, LOST, "lr_3e-4")):
        snap = snapshot_from_agent("box1", data)
        state = state.observe(snap)
    (alert,) = [a for a in evaluate(snap, state, HealthContext(spare=spare)) if a.id == "gpu.xid"]
    return alert


def test_the_dead_gpu_alert_names_the_move_to_a_spare_only_where_one_is_set():
    alert = dead_gpu_alert(("h100-b", "h100-c"))
    assert "re-rent the box" in alert.message
    assert f"— {MOVE} lr_3e-4 --to h100-b (spare = [h100-b, h100-c])" in alert.message, (
        alert.message
    )
    assert MOVE not in dead_gpu_alert(()).message


def diagnosed(spare: tuple[str, ...]):
    deployed = parse_cells_tsv(cells_tsv_line(0, "a", "run a") + cells_tsv_line(1, "b", "run b"))
    launches = parse_runner_state(
        f"launch 1000 {BOOT} tmux 0 /h/.rgt/bin/run_queue.x.sh 42\ndone 1021 1 1\n"
    )
    attempts = {
        "a": parse_cell_state(f"start 1000 {BOOT} 4710\nend 1010 0\n", "start 1000 0\nend 1010 0\n"),
        "b": parse_cell_state(f"start 1010 {BOOT} 4711\nend 1020 1\n", "start 1010 0\nend 1020 0\n"),
    }  # fmt: skip
    view = derive_view("box1", deployed, launches, attempts, boot_id=BOOT, now=1100,
                       runner_alive=False)  # fmt: skip
    box = BoxFacts(boot_id=BOOT, uptime_s=90, session_name="rgt-box1", dmesg="denied",
                   gpu_lines=(LOST.strip(),), spare=spare)  # fmt: skip
    return diagnose(view, launches, attempts, box)


def test_diagnose_names_the_move_of_the_failed_cell_to_a_spare():
    d = diagnosed(("h100-b",))
    assert d.cause == DEAD_GPU and "re-rent the box" in d.next_step
    assert d.next_step.endswith(f"— {MOVE} b --to h100-b (spare = [h100-b])"), d.next_step
    assert MOVE not in diagnosed(()).next_step
