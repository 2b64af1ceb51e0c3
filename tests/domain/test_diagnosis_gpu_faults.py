"""Diagnose's GPU steps (U22, GEN5/U10): a dead GPU said first, a CUDA OOM told apart
from a cgroup OOM kill, each with its fix — from recorded text (tests/fixtures/gpu,
SOURCES.txt) and the probe's own answer format (``parse_probe``)."""

from __future__ import annotations

from support.gpu_sequence import GPU_FIXTURES

from rgt_tui.domain.queue_records import (
    cells_tsv_line,
    parse_cell_state,
    parse_cells_tsv,
    parse_runner_state,
)
from rgt_tui.domain.queue_state import derive_view
from rgt_tui.domain.vanished import CUDA_OOM, DEAD_GPU, OOM, YES, BoxFacts, diagnose
from rgt_tui.services.queue.box import parse_probe

BOOT = "11111111-aaaa-bbbb-cccc-000000000001"
DEPLOYED = parse_cells_tsv(cells_tsv_line(0, "a", "run a") + cells_tsv_line(1, "b", "run b"))
CUDA_LINE = (GPU_FIXTURES / "cuda_oom_traceback.txt").read_text().strip()
XID_LINE = (GPU_FIXTURES / "xid_dmesg.txt").read_text().strip()
LOST = (GPU_FIXTURES / "smi_gpu_lost.txt").read_text().strip()
GIB = 2**30


def run(cell_b: str, oom_b: str, **facts):
    # The runner went on and finished the queue: the runner itself did not vanish.
    launches = parse_runner_state(
        f"launch 1000 {BOOT} tmux 0 /h/.rgt/bin/run_queue.x.sh 42\ndone 1021 1 1\n"
    )
    attempts = {
        "a": parse_cell_state(
            f"start 1000 {BOOT} 4710\nend 1010 0\n", "start 1000 0\nend 1010 0\n"
        ),
        "b": parse_cell_state(cell_b, oom_b),
    }
    view = derive_view(
        "box1", DEPLOYED, launches, attempts, boot_id=BOOT, now=1100, runner_alive=False
    )
    box = BoxFacts(boot_id=BOOT, uptime_s=90, session_name="rgt-box1", dmesg="denied", **facts)
    return diagnose(view, launches, attempts, box)


FAILED_1 = (f"start 1010 {BOOT} 4711\nend 1020 1\n", "start 1010 0\nend 1020 0\n")
KILLED_137 = (f"start 1010 {BOOT} 4711\nend 1020 137\n", "start 1010 0\nend 1020 1\n")


def test_a_recorded_cuda_oom_is_named_with_its_size_and_its_fix():
    d = run(*FAILED_1, cuda_oom={"b": CUDA_LINE})
    assert d.cause == CUDA_OOM and d.subject == "cell 1 (b)" and d.resume_index == 1
    (ev,) = d.evidence
    assert ev.verdict == YES and "torch.cuda.OutOfMemoryError: CUDA out of memory" in ev.detail
    assert "tried to allocate 22.00 MiB" in ev.detail and "23.65 GiB card" in ev.detail
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in d.next_step
    assert "batch smaller" in d.next_step and "num_workers" not in d.next_step
    # With the monitor's samples, the peak VRAM against the card's total.
    d = run(*FAILED_1, cuda_oom={"b": CUDA_LINE}, vram_peak=(int(23.5 * GIB), int(23.65 * GIB)))
    assert "the samples saw up to 23.5 GiB of the card's 23.6 GiB in use" in d.evidence[0].detail


def test_an_older_torch_cuda_oom_line_is_read_too():
    older = (GPU_FIXTURES / "cuda_oom_torch_old.txt").read_text().splitlines()[-1]
    d = run(*FAILED_1, cuda_oom={"b": older})
    assert d.cause == CUDA_OOM and "55.57 GiB" in d.evidence[0].detail
    assert "12.00 GiB card" in d.evidence[0].detail


def test_a_cgroup_oom_kill_is_not_a_cuda_oom_and_says_so():
    d = run(*KILLED_137)
    assert d.cause == OOM and "of host RAM (no CUDA out-of-memory line in its log)" in d.summary
    assert "num_workers" in d.next_step and "not GPU memory" in d.next_step
    assert "expandable_segments" not in d.next_step


def test_a_dead_gpu_is_said_first_with_re_rent_as_the_fix():
    # The cell was SIGKILLed and the cgroup counter rose too: the lost GPU still comes first.
    d = run(*KILLED_137, gpu_lines=(LOST,))
    assert d.cause == DEAD_GPU and d.evidence[0].cause == DEAD_GPU
    assert "GPU is lost" in d.evidence[0].detail and "re-rent the box" in d.next_step
    # A kernel log that can be read: the Xid 79 line.
    d = run(*FAILED_1, xid_lines=(XID_LINE,))
    assert d.cause == DEAD_GPU and "Xid (PCI:0000:44:00): 79" in d.evidence[0].detail
    # Uncorrected ECC errors this boot, as nvidia-smi's index,ecc query prints them.
    d = run(*FAILED_1, gpu_lines=("0, 0", "1, 3"), cuda_oom={"b": CUDA_LINE})
    assert d.cause == DEAD_GPU and "GPU 1: 3 uncorrected ECC errors this boot" in d.summary + str(
        d.evidence
    )
    # Healthy GPUs: no GPU step at all.
    d = run(*KILLED_137, gpu_lines=("0, 0",), xid_lines=())
    assert d.cause == OOM and all(e.cause != DEAD_GPU for e in d.evidence)


def test_the_probe_answer_carries_the_gpu_facts():
    text = (
        "home\t/root\nboot\tb\nnow\t1\n"
        f"dmesg\tdenied\ngpu_line\t{LOST}\nxid_line\t{XID_LINE}\ncuda_oom\tb\t{CUDA_LINE}\n"
    )
    facts = parse_probe(text)
    assert facts.gpu_lines == (LOST,) and facts.xid_lines == (XID_LINE,)
    assert facts.cuda_oom == {"b": CUDA_LINE}


def test_a_cuda_oom_that_is_not_fragmentation_is_not_sent_to_the_allocator():
    """A real H200's OOM (tests/fixtures/h200): 64 GiB asked, 1.75 MiB reserved but
    unallocated. torch still suggests expandable_segments; diagnose does not."""
    h200 = (GPU_FIXTURES.parent / "h200" / "cuda_oom_direct.txt").read_text().splitlines()[-1]
    d = run(*FAILED_1, cuda_oom={"b": h200})
    assert d.cause == CUDA_OOM and "tried to allocate 64.00 GiB" in d.evidence[0].detail
    assert "fragmentation is not the cause" in d.next_step and "batch smaller" in d.next_step
    assert "expandable_segments:True (less" not in d.next_step
    assert d.next_step.endswith("then relaunch from cell 1")
