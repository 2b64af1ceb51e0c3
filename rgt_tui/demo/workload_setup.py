"""Put the demo workload on a box: ``train.py``, its configs, and the box's queue file.

Each box gets cells named after itself (``box1_lr3e-4``…): names are the cells'
isolation keys and must be unique across the whole fleet. The run template uses this
interpreter's absolute path, so the demo boxes find the torch installed next to rgt-tui.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path


@dataclass(frozen=True)
class DemoCell:
    """One demo cell: its name suffix, task, epochs (None: the host's default) and config."""

    suffix: str
    task: str
    epochs: int | None
    config: dict = field(default_factory=dict)


BASE_CONFIG = {
    "lr": 1e-3,
    "hidden": 32,
    "batch": 32,
    "seed": 0,
    "steps_per_epoch": 5,
    "checkpoint_every": 5,
    "step_sleep_s": 0.02,
}
DEMO_CELLS = (
    DemoCell("lr3e-4", "reconstruction", 3, {"lr": 3e-4}),
    DemoCell("lr1e-3", "reconstruction", None, {"lr": 1e-3}),
    DemoCell("wide", "classification", 5, {"hidden": 128, "seed": 1}),
)


def workload_run_template(python: str | None = None) -> str:
    """The ``run`` template for the workload (fields are quoted by rgt-tui, not here)."""
    exe = shlex.quote(python or sys.executable)
    return f"{exe} train.py --config {{cfg}} --task {{task}} --epochs {{epochs}} --out {{out}}"


def install_workload(
    box_root: Path,
    box_name: str,
    queue_file: Path,
    cells: tuple[DemoCell, ...] = DEMO_CELLS,
) -> list[str]:
    """Copy train.py into ``box_root``, write one config per cell and the queue file.

    Returns the cell names in queue order.
    """
    box_root = Path(box_root)
    source = resources.files("rgt_tui.demo.workload").joinpath("train.py")
    with resources.as_file(source) as path:
        shutil.copyfile(path, box_root / "train.py")
    configs = box_root / "configs"
    configs.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# Demo queue for {box_name}: <cfg_path> <task> [epochs]; a missing epochs",
        "# takes the host's default. Append lines while it runs: rgt-tui queue append HOST",
    ]
    names = []
    for cell in cells:
        name = f"{box_name}_{cell.suffix}"
        (configs / f"{name}.json").write_text(
            json.dumps({**BASE_CONFIG, **cell.config}, indent=2) + "\n"
        )
        epochs = "" if cell.epochs is None else f" {cell.epochs}"
        lines.append(f"configs/{name}.json {cell.task}{epochs}")
        names.append(name)
    queue_file.parent.mkdir(parents=True, exist_ok=True)
    queue_file.write_text("\n".join(lines) + "\n")
    return names
