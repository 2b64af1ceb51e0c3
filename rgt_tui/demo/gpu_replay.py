"""A demo box's GPU: a stand-in ``nvidia-smi`` replaying a real recorded NVIDIA H100.

No GPU exists where the demo runs, so each demo box gets, first on its PATH, a small
``nvidia-smi`` that prints rows recorded on a real H100 80GB HBM3 (``demo/gpu/``, see
its SOURCES.txt): idle while no queue cell runs on the box; while one runs, idle, then
under load, alternating every few seconds so the panes move. It answers any ``--query-gpu=`` / ``--query-compute-apps=`` field list the way
nvidia-smi does (the recording's own values, picked by column name, units dropped; a
field the recording lacks is refused as nvidia-smi refuses it), and ``--version`` with
the recorded text, so the agent and preflight both read it as they read a real one. The
app says the GPUs are replayed. Tests replay the same recordings the same way.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

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


def recorded_table(recorded: str) -> str:
    """Recorded ``--format=csv`` output as a tab-separated table the stand-in selects
    columns from: header names without their unit, values without theirs (``nounits``),
    and the agent's other spellings (CSV_ALIASES) as extra columns."""
    lines = recorded.splitlines()
    header = [re.sub(r" \[[^\]]*\]$", "", c.strip()) for c in lines[0].split(",")]
    aliases = [(alias, header.index(name)) for alias, name in CSV_ALIASES.items() if name in header]
    out = ["\t".join(header + [alias for alias, _ in aliases])]
    for line in lines[1:]:
        values = [re.sub(r" (MiB|W|%|MHz|us)$", "", c.strip()) for c in line.split(",")]
        out.append("\t".join(values + [values[i] for _, i in aliases]))
    return "\n".join(out) + "\n"


# Picks the asked fields from a table by header name, in the asked order; an unknown
# field is refused with nvidia-smi's own message and exit status.
_SELECT = r"""awk -F '\t' -v want="$fields" '
NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    n = split(want, w, ",")
    for (j = 1; j <= n; j++) if (!(w[j] in col)) {
        print "Field \"" w[j] "\" is not a valid field to query." > "/dev/stderr"; exit 2
    }
    next
}
{ line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? ", " : "") $col[w[j]]; print line }'"""


def install_nvidia_smi(folder: Path) -> Path:
    """Write the stand-in ``nvidia-smi`` (and the tables it answers from) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    tables = {
        "idle.tsv": recorded_table(_recorded("h100_idle_query_gpu.csv")),
        "load.tsv": recorded_table(_recorded("h100_load_query_gpu.csv")),
        "apps.tsv": recorded_table(_recorded("h100_load_query_compute_apps.csv")),
        "version.txt": _recorded("h100_smi_version.txt"),
    }
    for name, text in tables.items():
        (folder / name).write_text(text)
    q = {name: shlex.quote(str(folder / name)) for name in tables}
    script = folder / "nvidia-smi"
    script.write_text(
        f"""#!/bin/sh
# rgt-tui demo: replays a recorded NVIDIA H100 (rgt_tui/demo/gpu_replay.py); no GPU here.
busy=$(( $(date +%s) / {PHASE_S} % 2 ))
# A box with no cell running reads idle: the load phase on a box that ran nothing read as
# paid work (a user's hour). A cell runs while its last start/end record is a start.
running=
for f in "$HOME"/.rgt/queue/cells/*.state; do
  [ -f "$f" ] || continue
  case "$(grep -E '^(start|end) ' "$f" | tail -n 1)" in "start "*) running=1; break ;; esac
done
[ -n "$running" ] || busy=0
asked() {{ printf '%s\\n' "$*" | tr ' ' '\\n' | sed -n "s/^--query-$1=//p" | head -n 1; }}
case "$*" in
  *--query-gpu=*)
    fields=$(asked gpu "$@")
    if [ "$busy" = 1 ]; then table={q["load.tsv"]}; else table={q["idle.tsv"]}; fi ;;
  *--query-compute-apps=*)
    fields=$(asked compute-apps "$@")
    table={q["apps.tsv"]}
    [ "$busy" = 1 ] || table=/dev/null ;;
  *--version*) cat {q["version.txt"]}; exit 0 ;;
  *) echo "nvidia-smi (rgt-tui demo replay): only --query-gpu, --query-compute-apps, --version" >&2
     exit 2 ;;
esac
[ "$table" = /dev/null ] && exit 0
{_SELECT} "$table"
"""
    )
    script.chmod(0o755)
    return script


def _recorded(name: str) -> str:
    return (RECORDINGS / name).read_text()
