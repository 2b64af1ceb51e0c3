"""The ``syntax`` check compiles the run template's script from the code tree before a
launch (hour s18b #6: a SyntaxError failed every cell of a Slurm array, each allocation
spent on it). Real files, this machine's compiler; the launch refuses until fixed or
acknowledged."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rgt_tui.domain.config import Readiness
from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.services.preflight_syntax import scripts_of, syntax_check

FLEET = """
[[hosts]]
name = "slurm-ish"
ssh = "root@10.0.0.5:22"
run = "cd ~/proj && torchrun --nproc_per_node=2 src/train.py --cfg {cfg} --out {out}"
"""


def _host(code: Path):  # type: ignore[no-untyped-def]
    host = parse_fleet(Path("hosts.toml"), FLEET, ["generic-ssh"]).host("slurm-ish")
    return dataclasses.replace(host, ready=dataclasses.replace(host.ready, code=code))


def test_a_syntax_error_is_named_by_file_and_line_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    script = tmp_path / "src" / "train.py"
    script.write_text("import sys\n\nhist = [\nprint(hist)\n")
    check = syntax_check(_host(tmp_path))
    assert not check.ok
    assert check.detail.startswith("src/train.py:3: SyntaxError: '[' was never closed"), check
    assert "acknowledge syntax" in (check.fix or "")
    script.write_text("hist = []\nprint(hist)\n")
    fixed = syntax_check(_host(tmp_path))
    assert fixed.ok and fixed.detail == "src/train.py compiles"


def test_what_cannot_be_found_is_said_not_failed(tmp_path: Path) -> None:
    assert scripts_of("python train.py {cfg} && python /abs/eval.py") == ["train.py"]
    assert scripts_of("python -m pkg.train {cfg}") == []
    check = syntax_check(_host(tmp_path))  # no src/train.py in the tree
    assert check.ok and "not a file of the code tree" in check.detail
    # Not run, never read as passed: "ok syntax … not checked" and "ready" hid a typo in
    # the run template's path (a user's hour, s42).
    assert not check.ran and "is the run template's path right?" in check.detail
    host = _host(tmp_path)
    no_code = dataclasses.replace(host, ready=Readiness())
    assert syntax_check(no_code).ok
    assert "no code key" in syntax_check(no_code).detail
    # A code tree and no run template (each queue line its own command): said so, not
    # "no code key" on a host that has one (h543 #7).
    no_run = dataclasses.replace(host, run=None)
    assert syntax_check(no_run).detail.startswith("no run template"), syntax_check(no_run)
