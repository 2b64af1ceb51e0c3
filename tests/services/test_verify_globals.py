"""What verify says of checkpoints torch's safe loader refuses, through the real worker
and torch (hour s19a #4, #13):

- a checkpoint naming a data class (argparse.Namespace, as Lightning-style files do) is
  unsafe, and the line names the fleet key that allows it; with ``[fleet]
  verify_safe_globals`` it loads, through the command line as through the service;
- a name that cannot be imported is said, naming the key; a module whose globals run
  code is refused by the fleet file;
- a plain pickle (pickle.dump) is named as one, not "truncated or damaged", and one
  naming code is unsafe and never runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support.pulls import box_results

from rgt_tui.domain.config import ConfigError
from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.services.verify.loader import VerifyLoader


class Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


def _check(path: Path, safe_globals: tuple[str, ...] = ()) -> tuple[str, str]:
    with VerifyLoader(safe_globals=safe_globals) as loader:
        return loader.check("torch", path, path.stat().st_size)


def test_a_trusted_data_class_loads_once_the_fleet_allows_it(tmp_path: Path) -> None:
    path = tmp_path / "final_with_args.pt"
    torch.save({"w": torch.zeros(2), "args": argparse.Namespace(lr=0.1, bs=32)}, path)
    status, detail = _check(path)
    assert status == "unsafe" and "GLOBAL argparse.Namespace" in detail
    assert 'allow it: add "argparse.Namespace" to [fleet] verify_safe_globals' in detail
    assert _check(path, ("argparse.Namespace",))[0] == "verified"
    status, detail = _check(path, ("argparse.Nope",))
    assert status == "not-verified"
    assert "[fleet] verify_safe_globals: argparse.Nope cannot be imported" in detail
    # A typo names the close one (hour s20c #11).
    detail = _check(path, ("argparse.Namspace",))[1]
    assert "argparse has no Namspace; did you mean argparse.Namespace?" in detail


class Timed:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        import timeit

        return (timeit.timeit, ("pass", f"open({str(self.marker)!r}, 'w').write('ran')"))


def test_a_function_a_checkpoint_names_is_never_offered_nor_allowed(tmp_path: Path) -> None:
    """h591 #1: verify said "if timeit.timeit is a data class you trust, allow it", the
    fleet file took it, and the next verify ran the box's code here. A name that is no
    class is not offered, and the worker refuses it whatever the fleet file says."""
    marker = tmp_path / "RAN"
    path = tmp_path / "timed.pt"
    torch.save({"w": torch.zeros(2), "x": Timed(marker)}, path)
    status, detail = _check(path)
    assert status == "unsafe" and "GLOBAL timeit.timeit" in detail, detail
    assert "if timeit.timeit is a function, loading the file would call it" in detail
    status, detail = _check(path, ("timeit.timeit",))
    assert status == "not-verified", detail
    assert "timeit.timeit is a function, not a data class" in detail
    assert "fix: remove it from the fleet file" in detail
    assert not marker.exists()
    assert _check(path, ("argparse.Namespace",))[0] == "unsafe"  # a class: allowed, not it


class TimerPayload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        import timeit

        # Timer's __init__ compiles and runs its setup text (a lone \r gets past its
        # indenting): review h594 #1 ran this with the class allowed.
        code = f"pass\ropen({str(self.marker)!r}, 'w').write('ran')\rdef g():\r    pass"
        return (timeit.Timer, ("pass", code))


class ZipPayload:
    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):  # type: ignore[no-untyped-def]
        import zipfile

        return (zipfile.ZipFile, (str(self.target), "w"))


@pytest.mark.parametrize("kind", ["timer", "zip"])
def test_a_class_that_runs_code_when_built_is_never_allowed(tmp_path: Path, kind: str) -> None:
    """Review h594 #1: "only classes" let timeit.Timer (whose __init__ runs its setup
    text) and zipfile.ZipFile (which truncates a file) be built from the box's bytes once
    the fleet file named them; both were verified, and the code ran."""
    marker = tmp_path / "RAN"
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file")
    payload = TimerPayload(marker) if kind == "timer" else ZipPayload(victim)
    name = "timeit.Timer" if kind == "timer" else "zipfile.ZipFile"
    path = tmp_path / "evil.pt"
    torch.save({"w": torch.zeros(2), "x": payload}, path)
    status, detail = _check(path, (name,))
    assert status == "not-verified", detail
    assert f"{name} is no plain data class: its __init__ ({name}) is code of its own" in detail
    assert "fix: remove it from the fleet file" in detail
    assert not marker.exists() and victim.read_text() == "the user's file"


def test_plain_data_classes_still_load_once_allowed(tmp_path: Path, monkeypatch) -> None:
    """What the key is for: a dataclass of a run's settings (only its fields set) and the
    stdlib's data types load once named; one with a __post_init__ runs code: refused."""
    import datetime

    from support.verify_classes import Checked, Settings

    # The worker imports them as it would the user's own package.
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))

    path = tmp_path / "with_settings.pt"
    when = datetime.datetime(2026, 12, 7, 18, 0)
    torch.save({"w": torch.zeros(2), "cfg": Settings(lr=0.1), "at": when}, path)
    allowed = ("support.verify_classes.Settings", "datetime.datetime")
    assert _check(path, allowed)[0] == "verified"
    path = tmp_path / "with_checked.pt"
    torch.save({"cfg": Checked(lr=0.1)}, path)
    status, detail = _check(path, ("support.verify_classes.Checked",))
    assert status == "not-verified" and "its __post_init__" in detail, detail
    # datetime.datetime is one of the worker's data types: no "if it is a function".
    status, detail = _check(tmp_path / "with_settings.pt", ("support.verify_classes.Settings",))
    assert status == "unsafe" and "GLOBAL datetime.datetime" in detail, detail
    assert "is a function" not in detail


def test_a_class_of_the_saving_script_is_not_offered(tmp_path: Path) -> None:
    """h595 #3: verify offered "__main__.Cfg" (a dataclass of the training script), which
    nothing here can import; named in the key, it failed every checkpoint of the box."""
    path = tmp_path / "main_cfg.pt"
    script = (
        "import dataclasses, sys, torch\n"
        "@dataclasses.dataclass\nclass Cfg:\n    lr: float = 0.1\n"
        f"torch.save({{'cfg': Cfg()}}, {str(path)!r})\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    status, detail = _check(path)
    assert status == "unsafe" and "GLOBAL __main__.Cfg" in detail, detail
    assert "verify_safe_globals" not in detail
    assert "defined in the script that saved it" in detail and "as a dict" in detail


def test_a_plain_pickle_is_named_as_one_and_code_in_it_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    (tmp_path / "evil.pt").write_bytes(pickle.dumps({"model": Payload(marker)}))
    (tmp_path / "plain.pt").write_bytes(pickle.dumps({"acc": [0.9, 0.8]}))
    status, detail = _check(tmp_path / "evil.pt")
    assert status == "unsafe" and "a plain pickle (pickle.dump)" in detail
    assert "posix.system" in detail and not marker.exists()
    status, detail = _check(tmp_path / "plain.pt")
    # Before: "corrupt … torch's safe loader refused it: Unsupported operand 149".
    assert status == "not-verified" and "a plain pickle (pickle.dump), not a torch" in detail
    assert "truncated" not in detail
    # The gate's fix for it says a pull cannot help (hour s20c #8).
    from rgt_tui.domain.gate_fixes import fix
    from rgt_tui.domain.teardown_gate import Condition

    line = Condition("loaded", False, f"0/1 loaded — FAILED plain.pt: {detail}")
    said = fix(line, "box1", tui=False)
    assert said.startswith("a pull brings the same bytes: re-save the file on the box"), said


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ('["os.system"]', "a module whose globals run code (os)"),
        ('["builtins.eval"]', "a module whose globals run code (builtins)"),
        ('["Namespace"]', "not a global written module.Name"),
    ],
)
def test_the_fleet_file_refuses_globals_that_run_code(value: str, said: str) -> None:
    with pytest.raises(ConfigError, match=r"hosts\.toml:2: verify_safe_globals: .*") as refused:
        parse_fleet(Path("hosts.toml"), f"[fleet]\nverify_safe_globals = {value}\n", ["default"])
    assert said in str(refused.value)
    fleet = parse_fleet(
        Path("hosts.toml"), '[fleet]\nverify_safe_globals = ["argparse.Namespace"]\n', ["default"]
    )
    assert fleet.verify_safe_globals == ("argparse.Namespace",)


async def test_the_command_line_verifies_with_the_fleet_key(make_loopback_fleet, tmp_path, capsys):
    from rgt_tui.cli import main

    fleet = await make_loopback_fleet(1)
    torch.save(
        {"w": torch.ones(1), "args": argparse.Namespace(lr=0.1)}, box_results(fleet) / "best.pt"
    )
    text = fleet.hosts_file.read_text()  # noqa: ASYNC240
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n\n{text}')  # noqa: ASYNC240
    assert await asyncio.to_thread(main, ["pull", "box1", "--hosts", str(hosts)]) == 0
    assert await asyncio.to_thread(main, ["verify", "box1", "--hosts", str(hosts)]) == 1
    assert 'add "argparse.Namespace" to [fleet] verify_safe_globals' in capsys.readouterr().out
    # The gate's fix for the loaded line names the key, not "re-pull" (the same bytes).
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "rgt_tui", "teardown", "box1", "--check", "--hosts", str(hosts)],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=120,
    )  # fmt: skip
    assert "add it to [fleet] verify_safe_globals as its line says" in out.stdout, out.stdout
    hosts.write_text(  # noqa: ASYNC240
        f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n'
        f'verify_safe_globals = ["argparse.Namespace"]\n\n{text}'
    )
    assert await asyncio.to_thread(main, ["verify", "box1", "--hosts", str(hosts), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["checks"][0]["status"] == "verified", record["checks"]

    # A typo in the key: its problem is told, and "loaded with" still names the torch
    # that loaded (it held the globals error: hour s21b #8).
    hosts.write_text(hosts.read_text().replace("argparse.Namespace", "argparse.Namspace"))  # noqa: ASYNC240
    assert await asyncio.to_thread(main, ["verify", "box1", "--hosts", str(hosts)]) == 1
    out = capsys.readouterr().out
    assert "did you mean argparse.Namespace?" in out
    (loaded,) = [line for line in out.splitlines() if "loaded with:" in line]
    assert f"torch {torch.__version__} — " in loaded and "Namspace" not in loaded, loaded
