"""Preflight of a run template that starts a console script (ux-h #2): torch and arch are
checked with the Python the script's shebang names on the box, not the ``python3`` on
the same PATH, in both directions: a ``torchrun`` from a torch-less env fails though
``python3`` has torch, and a ``torchrun`` from the torch env passes though ``python3``
has none. Loopback boxes whose PATH starts with the folder the test writes (as a
``.bashrc`` line would), the project's real CPU torch and a torch-less venv."""

from __future__ import annotations

import sys
from pathlib import Path

from support.preflight_box import torchless_python
from test_preflight_box import by_name, configured, run_preflight

TEMPLATE = (
    "cd . && torchrun --nnodes 1 --node-rank 0 --nproc-per-node 1 "
    "--rdzv-endpoint 127.0.0.1:29500 train.py {out} {epochs} {cfg}"
)


def _bin(qf, folder: Path, *, python3: str, scripts: dict[str, str]) -> Path:
    """``folder`` first on box1's PATH: ``python3`` running ``python3`` (a real
    interpreter), and each of ``scripts`` (name: its whole text) executable."""
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec "{python3}" "$@"\n')
    wrapper.chmod(0o755)
    for name, text in scripts.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    qf.loopback.box("box1").extra_path.insert(0, folder)
    return folder


def _console_script(python: str) -> str:
    """A console script as pip writes it: its interpreter in the shebang."""
    return (
        f"#!{python}\n# -*- coding: utf-8 -*-\nimport sys\n"
        "from torch.distributed.run import main\nsys.exit(main())\n"
    )


async def test_torch_is_checked_in_the_python_torchrun_runs_not_python3(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1)
    bare = torchless_python(tmp_path / "bare")
    folder = _bin(
        qf,
        tmp_path / "bin",
        python3=sys.executable,
        scripts={"torchrun": _console_script(str(bare))},
    )
    report = await run_preflight(qf, configured(qf, run=TEMPLATE))
    checks = by_name(report)
    python, torch = checks["python"], checks["torch"]
    assert python.ok, python
    assert str(bare) in python.detail
    assert f"the shebang of {folder / 'torchrun'} (#!{bare})" in python.detail
    assert not torch.ok, torch
    assert f"torch does not import in {bare}" in torch.detail
    # The install command names the interpreter torchrun runs, not the template.
    assert f"{bare} -m pip install torch" in torch.fix
    assert not checks["arch"].ok


async def test_a_torchrun_of_the_torch_env_passes_though_python3_has_no_torch(
    make_queue_fleet, tmp_path
):
    qf = await make_queue_fleet(1)
    bare = torchless_python(tmp_path / "bare")
    _bin(
        qf,
        tmp_path / "bin",
        python3=str(bare),
        scripts={"torchrun": _console_script(sys.executable)},
    )
    report = await run_preflight(qf, configured(qf, run=TEMPLATE))
    checks = by_name(report)
    assert checks["python"].ok and sys.executable in checks["python"].detail
    assert checks["torch"].ok, checks["torch"]
    assert checks["torch"].detail.startswith("torch ")


async def test_pips_long_path_form_and_a_missing_script(make_queue_fleet, tmp_path):
    """pip's shebang for an interpreter path with a space or over 127 bytes is
    ``#!/bin/sh`` and an ``'''exec' "PATH"`` line; a template whose script is not on the
    box fails python, naming it, instead of checking python3."""
    qf = await make_queue_fleet(1)
    bare = torchless_python(tmp_path / "an env")
    trampoline = (
        f"#!/bin/sh\n'''exec' \"{bare}\" \"$0\" \"$@\"\n' '''\n"
        "import sys\nfrom torch.distributed.run import main\nsys.exit(main())\n"
    )
    _bin(qf, tmp_path / "bin", python3=sys.executable, scripts={"torchrun": trampoline})
    checks = by_name(await run_preflight(qf, configured(qf, run=TEMPLATE)))
    assert checks["python"].ok and str(bare) in checks["python"].detail
    assert not checks["torch"].ok and str(bare) in checks["torch"].detail

    missing = TEMPLATE.replace("torchrun", "no-such-launcher")
    python = by_name(await run_preflight(qf, configured(qf, run=missing)))["python"]
    assert not python.ok
    assert python.detail.startswith("no-such-launcher is not found on the box")
    assert "`cd . && no-such-launcher`" in python.detail


async def test_a_program_that_is_no_python_script_keeps_python3(make_queue_fleet, tmp_path):
    qf = await make_queue_fleet(1)
    _bin(
        qf, tmp_path / "bin", python3=sys.executable,
        scripts={"launch.sh": "#!/bin/bash\nexec python3 train.py \"$@\"\n"},
    )  # fmt: skip
    python = by_name(await run_preflight(qf, configured(qf, run="launch.sh {cfg}")))["python"]
    assert python.ok, python
    assert "from python3 (its launch.sh is no Python script: " in python.detail
