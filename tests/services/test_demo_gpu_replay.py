"""The demo's stand-in nvidia-smi answers whatever field list is asked, as nvidia-smi
does: the agent's, preflight's, any other, from the recorded H100's own values."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rgt_tui.agent.probe.gpu_smi import SMI_APP_FIELDS, SMI_GPU_FIELDS
from rgt_tui.demo import gpu_replay


def smi(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=30)


def held_in_load_phase(folder: Path) -> Path:
    """The stand-in, its clock's phase held at "load" (it alternates otherwise)."""
    script = gpu_replay.install_nvidia_smi(folder)
    text = script.read_text()
    assert "busy=$((" in text
    script.write_text(text.replace("busy=$((", "busy=1 # ", 1))
    return script


@pytest.fixture
def loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in under load: its phase held there, on a box whose queue runs a cell."""
    cells = tmp_path / "home" / ".rgt" / "queue" / "cells"
    cells.mkdir(parents=True)
    (cells / "a.state").write_text("start 1 boot 42\nend 2 0\n")
    (cells / "b.state").write_text("start 3 boot 43\ncode abc\n")  # b runs
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return held_in_load_phase(tmp_path / "bin")


def test_a_box_with_no_cell_running_reads_idle_in_any_phase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user's hour: the demo's boxes that had run nothing read 100 % busy half the time.
    cells = tmp_path / "home" / ".rgt" / "queue" / "cells"
    cells.mkdir(parents=True)
    (cells / "a.state").write_text("start 1 boot 42\ncode abc\nend 2 0\n")  # ended
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    script = held_in_load_phase(tmp_path / "bin")
    fields = "--query-gpu=" + ",".join(SMI_GPU_FIELDS)
    gpus = smi(script, fields, "--format=csv,noheader,nounits")
    idle = gpu_replay._recorded("h100_idle_query_gpu.csv")
    assert gpus.stdout == gpu_replay.rebuild_rows(idle, SMI_GPU_FIELDS)
    apps = smi(script, "--query-compute-apps=" + ",".join(SMI_APP_FIELDS), "--format=csv")
    assert apps.returncode == 0 and apps.stdout == ""


def test_the_agents_fields_are_the_recorded_values(loaded: Path) -> None:
    gpus = smi(loaded, "--query-gpu=" + ",".join(SMI_GPU_FIELDS), "--format=csv,noheader,nounits")
    recorded = gpu_replay._recorded("h100_load_query_gpu.csv")
    assert gpus.stdout == gpu_replay.rebuild_rows(recorded, SMI_GPU_FIELDS)
    apps = smi(loaded, "--query-compute-apps=" + ",".join(SMI_APP_FIELDS), "--format=csv")
    recorded = gpu_replay._recorded("h100_load_query_compute_apps.csv")
    assert apps.stdout == gpu_replay.rebuild_rows(recorded, SMI_APP_FIELDS)
    assert "11327" in apps.stdout


def test_preflights_questions_get_the_recorded_answers(loaded: Path) -> None:
    rows = smi(loaded, "--query-gpu=index,driver_version,name", "--format=csv,noheader")
    assert rows.stdout == "0, 590.48.01, NVIDIA H100 80GB HBM3\n"
    apps = smi(loaded, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
    assert apps.stdout.splitlines() == ["11327, 2566", "11328, 1542", "11345, 15690"]
    assert "CUDA Version        : 13.1" in smi(loaded, "--version").stdout


def test_a_field_the_recording_lacks_is_refused_as_nvidia_smi_refuses_it(loaded: Path) -> None:
    answer = smi(loaded, "--query-gpu=index,not.a.field", "--format=csv")
    assert answer.returncode == 2 and answer.stdout == ""
    assert 'Field "not.a.field" is not a valid field to query.' in answer.stderr
