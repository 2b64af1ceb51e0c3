"""nvidia-smi's rows are split on newlines only: a GPU or process name holding any other
character ``str.splitlines`` breaks at (\\r, \\v, \\f, \\x1c-\\x1e, \\x85, U+2028, U+2029)
broke its row, and the GPU vanished: ``status`` said "no NVIDIA device" (a hostile hour).
Rows that come back and cannot be read are said as such, not as no device.

Real recorded H200 rows (tests/fixtures/h200), with the hostile names written into them,
printed by a stand-in ``nvidia-smi`` the agent's probe runs as a process."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from support import FIXTURES

from rgt_tui.agent.probe import gpu_smi

GPU_ROW = (FIXTURES / "h200" / "load_query_gpu.csv").read_text().strip()
APP_ROW = (FIXTURES / "h200" / "load_query_compute_apps.csv").read_text().strip()
# A \n itself ends a row, as nvidia-smi writes them: a name holding one cannot be told
# from two rows, and its row is named as unreadable (below).
BREAKS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _stand_in(tmp_path: Path, gpu_rows: str, app_rows: str = "") -> Path:
    """An ``nvidia-smi`` answering --query-gpu and --query-compute-apps with these bytes."""
    (tmp_path / "gpu.csv").write_bytes(gpu_rows.encode())
    (tmp_path / "apps.csv").write_bytes(app_rows.encode())
    script = tmp_path / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f'case "$1" in --query-gpu=*) cat {shlex.quote(str(tmp_path / "gpu.csv"))} ;;\n'
        f"  *) cat {shlex.quote(str(tmp_path / 'apps.csv'))} ;; esac\n"
    )
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("brk", BREAKS, ids=[repr(b) for b in BREAKS])
def test_a_line_break_character_in_a_name_keeps_the_gpu_and_its_process(
    tmp_path: Path, brk: str
) -> None:
    row = GPU_ROW.replace("NVIDIA H200", f"NVIDIA{brk}H200")
    app = APP_ROW.replace("python3", f"python3{brk}evil")
    source = gpu_smi.SmiSource(str(_stand_in(tmp_path, row + "\n", app + "\n")))
    gpus, why, errors = source.gpus()
    assert why is None and not errors, (why, errors)
    (gpu,) = gpus
    assert gpu["index"] == 0 and gpu["util_pct"] == 96.0 and "H200" in gpu["name"]
    procs = source.procs(gpus, errors)
    assert procs is not None and [p["pid"] for p in procs] == [572], (procs, errors)


def test_rows_that_cannot_be_read_are_not_no_device(tmp_path: Path) -> None:
    source = gpu_smi.SmiSource(str(_stand_in(tmp_path, "-1, N, x\nnot a row\n")))
    gpus, why, errors = source.gpus()
    assert gpus == [] and why is not None
    assert why != gpu_smi.NO_DEVICE and why.startswith("nvidia-smi's GPU rows could not be read")
    assert "unparsed GPU row: '-1, N, x'" in why


def test_a_name_that_is_not_utf8_keeps_the_gpu(tmp_path: Path) -> None:
    script = _stand_in(tmp_path, "")
    (tmp_path / "gpu.csv").write_bytes(GPU_ROW.replace("H200", "H\xff").encode("latin-1") + b"\n")
    gpus, why, _ = gpu_smi.SmiSource(str(script)).gpus()
    assert why is None and [g["name"] for g in gpus] == ["NVIDIA H\ufffd"]


@pytest.mark.parametrize(
    ("field", "value"),
    [(3, "1e308"), (3, "99garbage"), (11, "NaN"), (9, "inf")],
    ids=["exponent", "trailing-garbage", "nan", "inf"],
)
def test_a_number_with_anything_but_a_unit_after_it_is_named_not_read_by_prefix(
    field: int, value: str
) -> None:
    """``1e308`` read as 1 % and ``99garbage`` as 99 (hour s20a #9); NaN and inf became
    "?" with nothing said. Each is now no value, and named."""
    cells = GPU_ROW.split("\n")[0].split(",")
    cells[field] = f" {value}"
    problems: list[str] = []
    (gpu,) = gpu_smi.parse_smi_gpus(",".join(cells), problems)
    key = {3: "util_pct", 11: "temp_c", 9: "power_w"}[field]
    assert gpu[key] is None
    (said,) = problems
    assert said.startswith("nvidia-smi: ") and f"is not a number: '{value}'" in said
    # A real row, with its units as nvidia-smi prints them without nounits, still reads.
    assert gpu_smi.smi_number(" 250.00 W") == 250.0 and gpu_smi.smi_number("45 %") == 45.0


def test_a_number_too_long_for_a_float_loses_that_cell_not_the_gpu(tmp_path: Path) -> None:
    """h602 #4: a 400-digit memory.used read as inf, int() of it raised OverflowError, and
    every GPU of the box was gone ("no GPU: GPU probe failed") with its alerts and the
    autostop's view of it. That cell alone reads as unknown."""
    for digits in (400, 305):  # inf as read; finite as read, inf once in bytes (h605 #6)
        fields = [f.strip() for f in GPU_ROW.split(",")]
        fields[7] = "9" * digits  # memory.used (41843 in the recording)
        source = gpu_smi.SmiSource(str(_stand_in(tmp_path, ", ".join(fields) + "\n")))
        gpus, why, errors = source.gpus()
        assert why is None, (digits, why, errors)
        (gpu,) = gpus
        assert gpu["mem_used"] is None and gpu["util_pct"] == 96.0 and "H200" in gpu["name"]
