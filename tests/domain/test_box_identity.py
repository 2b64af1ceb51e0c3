"""Box identity: the id a box keeps in ~/.rgt/box-id (written once by whichever on-box
program runs first), how the probe and the manifest scan report it, and how a manifest
carries it (with the host key) so records of one box never pass for another's."""

from __future__ import annotations

import ast
import inspect
import json
import os
import shlex
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support.machine import oldest_python3

from rgt_tui.agent import agent_source, box_id
from rgt_tui.domain.box_identity import (
    BoxIdentity,
    identity_from_json,
    identity_to_json,
    valid_box_id,
)
from rgt_tui.domain.manifest import manifest_from_json, manifest_to_json
from rgt_tui.domain.manifest_parse import parse_manifest_lines
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.services.manifest import manifest_command, manifest_source


def _env(home: Path) -> dict[str, str]:
    # The C locale, as on a bare box whose python3 may decode names as ASCII.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LC_ALL": "C"}


def scan(home: Path, root: Path, python: str = sys.executable) -> list[str]:
    """The manifest scan as the product runs it (its own command line), in ``home``."""
    command = manifest_command([str(root)], box_id=True).replace("python3", shlex.quote(python))
    out = subprocess.run(
        command,
        shell=True,
        input=manifest_source().encode(),
        capture_output=True,
        env=_env(home),
        check=True,
    )
    return out.stdout.decode("ascii").splitlines()


def sample(home: Path, *extra: str) -> dict:
    """One probe sample, run as ``python3 -u - ...`` in ``home``."""
    out = subprocess.run(
        [sys.executable, "-u", "-", "--count", "1", "--interval", "0", "--no-gpu", *extra],
        input=agent_source(),
        capture_output=True,
        text=True,
        env=_env(home),
        check=True,
    )
    return json.loads(out.stdout.splitlines()[0])


def test_probe_and_manifest_share_one_id_function():
    """Both programs run alone on the box, so each bundle carries the one function."""
    function = inspect.getsource(box_id.read_box_id)
    for source in (agent_source(), manifest_source()):
        assert source.count(function) == 1
        assert source.count("def read_box_id(") == 1


def test_the_first_program_writes_the_id_once_and_every_later_one_reads_it(tmp_path):
    home, root = tmp_path / "home", tmp_path / "runs"
    home.mkdir()
    root.mkdir()
    (root / "a.json").write_text("{}")
    first = sample(home)["box_id"]
    assert valid_box_id(first) and len(first) == 32
    path = home / ".rgt" / "box-id"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    m = parse_manifest_lines("box", scan(home, root))
    assert m.box_id == first and m.box_id_error is None
    assert sample(home)["box_id"] == first  # read, never rewritten
    assert not [p for p in path.parent.iterdir() if p.name != "box-id"]  # no temp file left
    # Another home is another box.
    other = tmp_path / "other"
    other.mkdir()
    assert parse_manifest_lines("box", scan(other, root)).box_id not in (None, first)


def test_programs_starting_at_once_agree_on_one_id(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    # Each process runs the function itself, as the agents do at their start: the scan's
    # bundle as sent, on stdin, with its main left out.
    bundle = tmp_path / "scan.py"
    bundle.write_text(manifest_source())
    runner = (
        "import sys\n"
        "m = {'__name__': 'bundle'}\n"
        "exec(sys.stdin.read(), m)\n"
        "print(m['read_box_id']()[0])\n"
    )
    procs = []
    for _ in range(8):
        with bundle.open() as source:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-S", "-c", runner],
                    stdin=source,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=_env(home),
                )
            )
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 1 and valid_box_id(ids.pop())


def test_the_id_code_is_python36_and_made_there_is_read_here(tmp_path):
    """The oldest python3 boxes run is 3.6: the id code parses as 3.6, and an id the
    oldest python3 here made (3.6 on the dev image; CI cannot install one: no Debian or
    PyPI build of it) is the one this python reads."""
    ast.parse(inspect.getsource(box_id.read_box_id), feature_version=(3, 6))
    home, root = tmp_path / "home", tmp_path / "runs"
    home.mkdir()
    root.mkdir()
    maker, _ = oldest_python3()
    made = parse_manifest_lines("box", scan(home, root, maker)).box_id
    assert valid_box_id(made)
    assert parse_manifest_lines("box", scan(home, root)).box_id == made


def test_an_unreadable_or_garbled_id_is_no_identity_and_says_why(tmp_path):
    home, root = tmp_path / "home", tmp_path / "runs"
    root.mkdir()
    (home / ".rgt" / "box-id").mkdir(parents=True)  # a folder where the id belongs
    m = parse_manifest_lines("box", scan(home, root))
    assert m.box_id is None and m.identity is None and "box-id" in m.box_id_error
    s = snapshot_from_agent("box", sample(home))
    assert s.box_id is None and any("box_id" in p for p in s.problems)

    (home / ".rgt" / "box-id").rmdir()
    (home / ".rgt" / "box-id").write_bytes(b"\xff$(rm -rf /)\n")
    m = parse_manifest_lines("box", scan(home, root))
    assert m.box_id is None and "no valid id" in m.box_id_error
    s = snapshot_from_agent("box", sample(home))
    assert s.box_id is None and any("not a box id" in p for p in s.problems)


def test_the_probe_can_be_told_not_to_touch_the_home(tmp_path):
    data = sample(tmp_path, "--no-box-id")
    assert data["box_id"] is None and not (tmp_path / ".rgt").exists()


def test_a_manifest_record_carries_the_box_and_keeps_old_digests(tmp_path):
    home, root = tmp_path / "home", tmp_path / "runs"
    home.mkdir()
    root.mkdir()
    (root / "a.json").write_text("{}")
    m = parse_manifest_lines("box", scan(home, root))
    keyed = replace(m, host_key="SHA256:abc")
    again = manifest_from_json(json.loads(json.dumps(manifest_to_json(keyed))))
    assert again.identity == BoxIdentity(m.box_id, "SHA256:abc") and again == keyed
    # The identity is part of the digest: a record tied to one box's manifest is not
    # tied to another's, even with the very same files.
    other = replace(keyed, box_id="f" * 32)
    assert other.digest != keyed.digest
    # A manifest from before identities keeps its digest (no new keys when unknown).
    bare = replace(m, box_id=None, host_key=None)
    assert "box_id" not in manifest_to_json(bare)


def test_same_box_rules():
    a = BoxIdentity("a" * 32, "SHA256:one")
    assert a.same_box(BoxIdentity("a" * 32, "SHA256:one"))
    assert a.same_box(BoxIdentity("a" * 32, None))  # a key not known is no contradiction
    assert not a.same_box(BoxIdentity("a" * 32, "SHA256:two"))
    assert not a.same_box(BoxIdentity("b" * 32, "SHA256:one"))
    assert not a.same_box(None)
    assert identity_from_json(identity_to_json(a)) == a
    for bad in ({"box_id": "../../etc"}, {"box_id": "x" * 100}, [1], {"box_id": 3}):
        with pytest.raises(ValueError):
            identity_from_json(bad)


def test_a_box_id_is_the_whole_value_not_a_prefix_of_it(tmp_path):
    good = "a" * 32
    assert valid_box_id(good) == good
    for bad in (good + "\n", good + "\r\n", "\n" + good, good + "\x1b[2J", good + " "):
        assert valid_box_id(bad) is None, repr(bad)
        with pytest.raises(ValueError):
            identity_from_json({"box_id": bad, "host_key": None})
    # As the box reports it: an id with a trailing newline in the scan's start line
    # is no identity (the journal would keep the newline and print it).
    start = {"type": "start", "v": 1, "box_id": good + "\n", "taken_at": 1.0}
    done = {"type": "done", "taken_at": 1.0, "finished_at": 2.0}
    m = parse_manifest_lines("h", [json.dumps(start), json.dumps(done)])
    assert m.box_id is None and m.identity is None
