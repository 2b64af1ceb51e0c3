"""Prepare what scripts/gpu_record/record.sh runs on a GPU machine (the device tool).

The GPU machine has torch but not this project's dependencies, so the programs the product
sends to a box are built here, with the product's own code, and written to DIR: the
telemetry agent's bundle, and the exact `bash -c` commands and stdin of the smoke step and
the VRAM list. record.sh runs them there as the product would over SSH and keeps their
output verbatim; tests/fixtures/h200/ holds what came back (see its SOURCES.txt).

    .venv/bin/python scripts/gpu_record/prepare.py .devrec
"""

from __future__ import annotations

import sys
from pathlib import Path

from rgt_tui.agent.bundle import PROBE_ENTRY, bundle
from rgt_tui.agent.probe.gpu_smi import SMI_APP_FIELDS, SMI_GPU_FIELDS
from rgt_tui.services.box_ctl import deployed_name
from rgt_tui.services.box_script import box_command, box_path, script_text
from rgt_tui.services.preflight_smoke import cell_env_text

# A forward and backward pass that fits the card, and one whose first forward pass cannot.
SMOKE_FITS = (
    'python3 -c \'import torch,time; m=torch.nn.Linear(8192,8192,device="cuda"); '
    'x=torch.randn(16384,8192,device="cuda"); '
    "[m(x).sum().backward() for _ in range(20)]; torch.cuda.synchronize(); time.sleep(4)'"
)
SMOKE_OOM = (
    'python3 -c \'import torch; m=torch.nn.Linear(65536,65536,device="cuda"); '
    'x=torch.randn(262144,65536,device="cuda"); m(x).sum().backward()\''
)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "agent.py").write_text(bundle(PROBE_ENTRY), encoding="utf-8")
    (out / "gpu_fields").write_text(",".join(SMI_GPU_FIELDS), encoding="utf-8")
    (out / "app_fields").write_text(",".join(SMI_APP_FIELDS), encoding="utf-8")
    runner, env_text = script_text("run_one.sh"), cell_env_text([])
    (out / "smoke.stdin").write_text(runner + env_text, encoding="utf-8")
    for name, command, seconds in (("fits", SMOKE_FITS, 25), ("oom", SMOKE_OOM, 25)):
        line = box_command(
            script_text("smoke.sh"),
            "smoke",
            deployed_name("run_one.sh"),
            len(runner.encode("utf-8")),
            len(env_text.encode("utf-8")),
            box_path("~"),
            seconds,
            command,
        )
        (out / f"smoke_{name}.cmd").write_text(line, encoding="utf-8")
    (out / "vram_list.cmd").write_text(
        box_command(script_text("vram.sh"), "vram", "list"), encoding="utf-8"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else ".devrec"))
