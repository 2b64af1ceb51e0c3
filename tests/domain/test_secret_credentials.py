"""The launch's credentials file (``~/.rgt/credentials.env``, U34) is a secret like
``.ssh``: never pulled from any root at any depth, by the box's scan and by the client,
and so is the temp file the box writes it through (``.rgt/.credentials.env.<pid>``).

A pull root above a home (``pull = ["/home"]``, a provider whose HOME sits under
``/workspace``) sees the home's ``.rgt`` as an ordinary folder: only a root's own
``.rgt`` is reserved, so the file must be on the one secret list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from rgt_tui.domain.manifest_names import SECRET_RULE, secret_reason
from rgt_tui.domain.manifest_parse import parse_manifest_lines

SHA = "0123456789abcdef" * 4
CREDS = f"{SECRET_RULE} (.rgt/credentials.env)"
TEMP = f"{SECRET_RULE} (.rgt/.credentials.env.*)"


def line(**fields: Any) -> str:
    return json.dumps(fields)


def scan(*names: str, root: str) -> list[str]:
    """A scan's output listing ``names`` as files under ``root`` (the box lying: it
    reports what it should have skipped)."""
    head = [line(type="start", v=1, taken_at=1.0)]
    head.append(line(type="root", index=0, given=root, path=root, error=None))
    body = [
        line(type="file", root=0, path=n, size=1, mtime=1.0, sha256=SHA, mode=0o600) for n in names
    ]
    return [*head, *body, line(type="done", taken_at=1.0, finished_at=2.0)]


@pytest.mark.parametrize(
    ("root", "name", "reason"),
    [
        ("/home", "alice/.rgt/credentials.env", CREDS),
        ("/workspace", "root/.rgt/credentials.env", CREDS),
        ("/", "home/bob/.RGT/Credentials.ENV", CREDS),  # case-folded, as the others are
        ("/home", "alice/.rgt/.credentials.env.4242", TEMP),  # queue_ctl.sh's temp file
        ("/workspace/runs", "copied/home/.rgt/credentials.env", CREDS),  # any depth
        ("/home/alice/.rgt", "credentials.env", CREDS),  # a root inside .rgt
    ],
)
def test_the_credentials_file_is_refused_by_rule_under_any_root(root, name, reason):
    m = parse_manifest_lines("box", scan(name, "alice/.rgt/queue/queue.txt", root=root))
    assert [e.path for e in m.entries] == ["alice/.rgt/queue/queue.txt"]
    assert {r.path: r.reason for r in m.refused} == {name: reason}


def test_only_the_credentials_file_is_a_secret_not_its_neighbours():
    for name in (
        "u/credentials.env",  # not in a .rgt folder
        "u/.rgt/credentials.env.bak",
        "u/.rgt/queue/credentials.env",
        "u/rgt/.credentials.env.1",
        "u/.rgt/box-id",
    ):
        assert secret_reason("/home", name) is None, name
    assert secret_reason("/home/u/.rgt/credentials.env", "") == CREDS  # a root that is one


def test_the_box_scan_skips_the_credentials_file_of_a_home_below_the_root(tmp_path):
    """The real scan (the bundled source, run as a box runs it) over a parent of a home
    (another user's: the box's own ~/.rgt is skipped whole, test_verify has it) never
    lists, reads or hashes the credentials file or its temp sibling."""
    from rgt_tui.services.manifest import manifest_source

    parent = tmp_path / "home"
    rgt = parent / "alice" / ".rgt"
    (rgt / "queue").mkdir(parents=True)
    (rgt / "credentials.env").write_text("export TOKEN='rgt-secret-x'\n")
    (rgt / ".credentials.env.77").write_text("export TOKEN='rgt-secret-y'\n")
    (rgt / "queue" / "queue.txt").write_text("cells/a.sh t\n")
    os.symlink("alice/.rgt/credentials.env", parent / "creds-link")  # a link to it
    proc = subprocess.run(
        [sys.executable, "-S", "-u", "-", "--root", str(parent), "--root", str(rgt)],
        input=manifest_source().encode(),
        capture_output=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "me")},
        check=True,
    )
    assert b"rgt-secret" not in proc.stdout
    m = parse_manifest_lines("box", proc.stdout.decode("ascii").splitlines())
    assert {(e.root, e.path) for e in m.entries} == {
        (0, "alice/.rgt/queue/queue.txt"),
        (1, "queue/queue.txt"),
    }
    assert {(r.root, r.path): r.reason for r in m.refused} == {
        (0, "alice/.rgt/credentials.env"): CREDS,
        (0, "alice/.rgt/.credentials.env.77"): TEMP,
        (0, "creds-link"): f"{CREDS} (link to it)",
        (1, "credentials.env"): CREDS,
        (1, ".credentials.env.77"): TEMP,
    }


def test_a_name_that_is_not_utf8_is_refused_with_its_bytes_shown(tmp_path):
    """The real scan: a name with bytes that are not UTF-8 is refused naming them as
    ``\\xff`` (it read ``nonutf8_��.txt``: two such names looked the same, and the user
    was told to rename a name they could not read)."""
    from rgt_tui.services.manifest import manifest_source

    root = tmp_path / "results"
    root.mkdir()
    (root / "ok.txt").write_text("ok\n")
    for raw in (b"nonutf8_\xff\xfe.txt", b"nonutf8_\xfe\xff.txt"):
        with open(os.path.join(os.fsencode(root), raw), "wb"):
            pass
    proc = subprocess.run(
        [sys.executable, "-S", "-u", "-", "--root", str(root)],
        input=manifest_source().encode(),
        capture_output=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "me")},
        check=True,
    )
    m = parse_manifest_lines("box", proc.stdout.decode("ascii").splitlines())
    assert [e.path for e in m.entries] == ["ok.txt"]
    refused = {r.path: r.reason for r in m.refused}
    assert set(refused) == {"nonutf8_\\xff\\xfe.txt", "nonutf8_\\xfe\\xff.txt"}, refused
    assert all("not valid UTF-8" in why for why in refused.values())
