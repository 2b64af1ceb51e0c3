"""A demo box's GPU: a stand-in ``nvidia-smi`` replaying a real recorded NVIDIA H100.

No GPU exists where the demo runs, so each demo box gets, first on its PATH, a small
``nvidia-smi`` that prints rows recorded on a real H100 80GB HBM3 (``demo/gpu/``, see
its SOURCES.txt): idle, then under load, alternating every few seconds so the panes
move. The rows are the recording's own values, re-ordered into the agent's fields; the
app says the GPUs are replayed. Tests replay the same recordings the same way.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from rgt_tui.agent.probe.gpu_smi import SMI_APP_FIELDS, SMI_GPU_FIELDS

RECORDINGS = Path(__file__).with_name("gpu")
# The recording names two of the agent's fields by nvidia-smi's other spelling.
CSV_ALIASES = {"clocks.sm": "clocks.current.sm", "used_memory": "used_gpu_memory"}
PHASE_S = 6  # seconds idle, then as many under load


def rebuild_rows(recorded: str, fields: Sequence[str]) -> str:
    """Recorded ``--format=csv`` rows, re-emitted in ``fields`` order as
    ``csv,noheader,nounits``: the recording's real values selected by column name, the
    unit suffix dropped as ``nounits`` does."""
    lines = recorded.splitlines()
    header = [re.sub(r" \[[^\]]*\]$", "", c.strip()) for c in lines[0].split(",")]
    rows = []
    for line in lines[1:]:
        cells = dict(zip(header, (c.strip() for c in line.split(",")), strict=True))
        values = [cells[CSV_ALIASES.get(f, f)] for f in fields]
        rows.append(", ".join(re.sub(r" (MiB|W|%|MHz|us)$", "", v) for v in values))
    return "\n".join(rows) + "\n"


def install_nvidia_smi(folder: Path) -> Path:
    """Write the stand-in ``nvidia-smi`` (and the rows it prints) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = {
        "idle.csv": rebuild_rows(_recorded("h100_idle_query_gpu.csv"), SMI_GPU_FIELDS),
        "load.csv": rebuild_rows(_recorded("h100_load_query_gpu.csv"), SMI_GPU_FIELDS),
        "apps.csv": rebuild_rows(_recorded("h100_load_query_compute_apps.csv"), SMI_APP_FIELDS),
    }
    for name, text in rows.items():
        (folder / name).write_text(text)
    q = {name: shlex.quote(str(folder / name)) for name in rows}
    script = folder / "nvidia-smi"
    script.write_text(
        f"""#!/bin/sh
# rgt-tui demo: replays a recorded NVIDIA H100 (rgt_tui/demo/gpu_replay.py); no GPU here.
busy=$(( $(date +%s) / {PHASE_S} % 2 ))
case "$*" in
  *--query-gpu=*) if [ "$busy" = 1 ]; then cat {q["load.csv"]}; else cat {q["idle.csv"]}; fi ;;
  *--query-compute-apps=*) if [ "$busy" = 1 ]; then cat {q["apps.csv"]}; fi ;;
  *) echo "nvidia-smi (rgt-tui demo replay): only --query-gpu and --query-compute-apps" >&2
     exit 2 ;;
esac
"""
    )
    script.chmod(0o755)
    return script


def _recorded(name: str) -> str:
    return (RECORDINGS / name).read_text()
