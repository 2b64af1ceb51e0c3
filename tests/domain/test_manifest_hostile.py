"""A hostile box's scan output: every lie is refused by name, none lowers a total, none
reaches the terminal or the local disk; caps fail the whole manifest, never truncate it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rgt_tui.domain.manifest import Manifest, ManifestError
from rgt_tui.domain.manifest_names import (
    SECRET_PATHS,
    SECRET_RULE,
    refuse_unwritable,
    root_labels,
    secret_reason,
    unsafe_path_reason,
)
from rgt_tui.domain.manifest_parse import (
    MAX_FILE_SIZE,
    MAX_LINE_BYTES,
    ManifestLimits,
    parse_manifest_lines,
)
from rgt_tui.domain.text import printable

SHA = "0123456789abcdef" * 4


def line(**fields: Any) -> str:
    return json.dumps(fields)


def scan(*body: str, roots: tuple[str, ...] = ("/r",)) -> list[str]:
    """A complete scan output around ``body`` (file, link and refused lines)."""
    head = [line(type="start", v=1, taken_at=1.0)]
    head += [line(type="root", index=i, given=r, path=r, error=None) for i, r in enumerate(roots)]
    return [*head, *body, line(type="done", taken_at=1.0, finished_at=2.0)]


def file(path: Any, size: Any = 1, mtime: Any = 1.0, sha256: Any = SHA, root: Any = 0) -> str:
    return line(type="file", root=root, path=path, size=size, mtime=mtime, sha256=sha256)


def refusals(m: Manifest) -> dict[str, str]:
    return {r.path: r.reason for r in m.refused}


def test_an_honest_line_is_kept_beside_the_refused_ones():
    m = parse_manifest_lines("box", scan(file("ok/a.pt", size=10), file("../x", size=99)))
    assert [(e.path, e.size) for e in m.entries] == [("ok/a.pt", 10)]
    assert m.total_bytes == 10 and "unsafe path" in refusals(m)["../x"]


# -- caps: the whole manifest fails, naming the host and the cap -------------------------


def test_a_line_over_the_cap_fails_the_whole_manifest():
    long_name = "a" * MAX_LINE_BYTES
    with pytest.raises(ManifestError, match=r"gpu-7: a manifest line is over 64 KiB"):
        parse_manifest_lines("gpu-7", scan(file("ok"), file(long_name)))
    # Counted in bytes: 30,000 three-byte characters are over 64 KiB too.
    with pytest.raises(ManifestError, match="over 64 KiB"):
        ManifestLimits("h").take("€" * 30_000)


def test_more_lines_than_the_count_cap_fail_the_whole_manifest(monkeypatch):
    import rgt_tui.domain.manifest_parse as manifest

    monkeypatch.setattr(manifest, "MAX_LINES", 10)
    with pytest.raises(ManifestError, match=r"box: the box.s scan printed over 10 lines"):
        parse_manifest_lines("box", scan(*(file(f"f{i}") for i in range(20))))
    assert len(parse_manifest_lines("box", scan(*(file(f"f{i}") for i in range(5)))).entries) == 5


def test_more_bytes_than_the_total_cap_fail_the_whole_manifest(monkeypatch):
    import rgt_tui.domain.manifest_parse as manifest

    monkeypatch.setattr(manifest, "MAX_MANIFEST_BYTES", 2000)
    with pytest.raises(ManifestError, match=r"box: the manifest is over 0 MiB"):
        parse_manifest_lines("box", scan(*(file(f"f{i}" + "x" * 100) for i in range(30))))


def test_garbage_that_would_crash_a_json_reader_is_a_manifest_error():
    with pytest.raises(ManifestError, match="not JSON"):
        parse_manifest_lines("box", scan("[" * 50_000))  # RecursionError inside json
    with pytest.raises(ManifestError, match=r"not JSON: '\\\\x1b\[2J"):
        parse_manifest_lines("box", scan("\x1b[2J not json"))  # shown escaped


# -- sizes, mtimes, hashes: that entry refused by name, never in a total ----------------


@pytest.mark.parametrize(
    ("size", "why"),
    [
        (-(2**40), "negative size"),
        (-1, "negative size"),
        (1.5, "not a whole number"),
        ("12", "not a whole number"),
        (None, "not a whole number"),
        (True, "not a whole number"),
        (float("inf"), "not a whole number"),
        (MAX_FILE_SIZE + 1, "absurd size"),
        (10**400, "absurd size"),
    ],
)
def test_a_lying_size_refuses_that_file_and_never_lowers_the_total(size: Any, why: str):
    m = parse_manifest_lines("box", scan(file("good", size=100), file("liar", size=size)))
    assert [e.path for e in m.entries] == ["good"] and m.total_bytes == 100
    assert why in refusals(m)["liar"]


@pytest.mark.parametrize("mtime", [float("nan"), float("inf"), float("-inf"), "yesterday", 10**400])
def test_a_non_finite_mtime_refuses_that_file(mtime: Any):
    m = parse_manifest_lines("box", scan(file("good"), file("when", mtime=mtime)))
    assert [e.path for e in m.entries] == ["good"]
    assert "mtime from the box is not a finite number" in refusals(m)["when"]
    assert m.last_write == 1.0


@pytest.mark.parametrize("sha", ["x", SHA.upper(), SHA[:-1], SHA + "0", 123, "g" * 64])
def test_a_hash_that_is_not_64_lowercase_hex_refuses_that_file(sha: Any):
    m = parse_manifest_lines("box", scan(file("good"), file("hash", sha256=sha)))
    assert [e.path for e in m.entries] == ["good"]
    assert "not 64 lowercase hex" in refusals(m)["hash"]


def test_a_no_hash_rescan_still_lists_files_without_a_hash():
    m = parse_manifest_lines("box", scan(file("a", sha256=None)))
    assert [e.sha256 for e in m.entries] == [None] and not m.hashed


def test_a_growing_file_is_believed_only_as_a_hashed_entry_and_kept_in_the_record():
    """``growing`` (the box still wrote it while hashing) changes only the summary's words:
    a strict JSON true on a hashed line; the size and hash still decide what is pulled."""
    from rgt_tui.domain.manifest import manifest_from_json, manifest_to_json

    grow = json.loads(file("log"))
    lines = [
        json.dumps({**grow, "growing": True}),
        json.dumps({**grow, "path": "b", "growing": 1}),
        json.dumps({**grow, "path": "c", "growing": True, "sha256": None}),
        file("d"),
    ]
    m = parse_manifest_lines("box", scan(*lines))
    assert {e.path: e.growing for e in m.entries} == {
        "log": True,
        "b": False,
        "c": False,
        "d": False,
    }
    assert manifest_from_json(manifest_to_json(m)) == m
    plain = parse_manifest_lines("box", scan(file("d")))
    assert "growing" not in json.dumps(manifest_to_json(plain))  # older digests stay


def test_times_of_the_whole_scan_must_be_finite():
    lines = scan(file("a"))
    lines[-1] = '{"type": "done", "taken_at": NaN, "finished_at": 2.0}'
    with pytest.raises(ManifestError, match="taken_at is not a finite number"):
        parse_manifest_lines("box", lines)


# -- names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("/etc/passwd", "absolute path"),
        ("../../.bashrc", "'..'"),
        ("a/../../b", "'..'"),
        ("a//b", "empty component"),
        ("./a", "'.'"),
        ("", "empty name"),
        ("a\x00b", "NUL in name"),
        ("evil\x1b]0;pwned\x07.txt", "control character in name ('\\x1b')"),
        ("line\nbreak", "control character in name ('\\n')"),
        ("del\x7f", "control character in name ('\\x7f')"),
        ("c1\x9b31m", "control character in name ('\\x9b')"),
        ("report\u202etxt.exe", "bidirectional control character in name (U+202E)"),
        ("a\u2066b", "bidirectional control character in name (U+2066)"),
        ("half\ud800", "not valid UTF-8"),
        (["a"], "the name is not text"),
        (7, "the name is not text"),
    ],
)
def test_unsafe_names_are_refused_by_name_and_shown_escaped(name: Any, why: str):
    m = parse_manifest_lines("box", scan(file("ok"), file(name)))
    assert [e.path for e in m.entries] == ["ok"]
    ((shown, reason),) = [(r.path, r.reason) for r in m.refused]
    assert reason.startswith("unsafe path from the box") and why in reason
    # Nothing shown to the user carries a control character or a lone surrogate.
    for text in (shown, reason):
        assert printable(text) == text
        text.encode("utf-8")


@pytest.mark.parametrize(
    "name", [".rgt/manifest.json", ".RGT/x", ".Rgt", "．ｒｇｔ/x", ".rg\u200bt/x"]
)
def test_names_that_fold_to_the_records_folder_are_refused(name: str):
    m = parse_manifest_lines("box", scan(file(name), file("ok")))
    assert [e.path for e in m.entries] == ["ok"]
    # Shown as the user reads it: the zero-width space escaped (\u200b), not hidden.
    assert "reserved for rgt-tui's records" in refusals(m)[printable(name, None)]


def test_a_root_whose_name_folds_to_the_records_folder_gets_a_label_of_its_own():
    assert root_labels(["/a/.RGT", "/b/runs"]) == ("root1", "runs")


def test_names_the_box_lists_twice_or_below_a_file_are_refused():
    body = [
        file("a"),
        file("a", size=5),
        file("a/b"),
        line(type="link", root=0, path="a", target="c"),
    ]
    m = parse_manifest_lines("box", scan(file("c"), *body))
    assert sorted(e.path for e in m.entries) == ["a", "c"] and m.total_bytes == 2
    assert [r.reason for r in m.refused if r.path == "a"] == ["listed twice by the box"] * 2
    assert "listed below a" in refusals(m)["a/b"]


def test_entries_of_unknown_or_failed_roots_are_refused():
    failed = line(type="root", index=1, given="/gone", path="/gone", error="no such folder")
    lines = scan(file("a", root=1), file("b", root=5), file("c", root="0"), file("d", root=-1))
    lines.insert(2, failed)
    m = parse_manifest_lines("box", lines)
    assert m.entries == ()
    reasons = refusals(m)
    assert "pull root has an error" in reasons["a"]
    assert reasons["b"] == "unknown root index 5" and reasons["d"] == "unknown root index -1"
    assert reasons["c"] == "unknown root index -1"  # a root index that is not a number
    assert m.display(-1, "d") == "<root -1>/d"


def test_a_root_line_out_of_place_or_with_a_strange_path_is_not_believed():
    lines = scan(file("a"))
    lines[1] = line(type="root", index=3, given="/r", path="/r", error=None)
    with pytest.raises(ManifestError, match="root line 1 has index 3"):
        parse_manifest_lines("box", lines)
    lines[1] = line(type="root", index=0, given="/r", path="relative\x1b", error=None)
    m = parse_manifest_lines("box", lines)
    assert m.entries == () and m.roots[0].path == "relative\\x1b"
    assert "unusable resolved path" in refusals(m)["."]


def test_refusals_the_box_reports_are_shown_escaped_and_must_name_a_root():
    told = line(type="refused", root=0, path="x\x1b[31m", reason="because\x07" + "!" * 1000)
    m = parse_manifest_lines("box", scan(told))
    ((r,),) = [m.refused]
    assert r.path == "x\\x1b[31m" and r.reason.startswith("because\\x07!") and len(r.reason) < 400
    with pytest.raises(ManifestError, match="refused line names no pull root"):
        parse_manifest_lines("box", scan(line(type="refused", root=9, path="x", reason="r")))


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("/etc/shadow", "unsafe link target from the box: absolute path"),
        ("../../outside", "unsafe link target from the box: '..'"),
        ("a\x1bb", "unsafe link target from the box: control character"),
        (".", "unsafe link target from the box: '..', '.'"),
        (None, "unsafe link target from the box: the name is not text"),
        (".ssh/id_ed25519", f"{SECRET_RULE} (.ssh)"),
        # A box link to its ~/.rgt (the pull root its home) came home as a link into
        # rgt-tui's own local records, results/HOST/.rgt (a user's hour).
        (".rgt", "a link into '.rgt', reserved for rgt-tui's records in the local copy"),
        (".RGT/pulled.json", "a link into '.rgt', reserved for rgt-tui's records"),
    ],
)
def test_link_targets_are_checked_like_names(target: Any, why: str):
    link = line(type="link", root=0, path="latest", target=target)
    ok = line(type="link", root=0, path="best", target="runs/a.pt")
    m = parse_manifest_lines("box", scan(link, ok))
    assert [(ln.path, ln.target) for ln in m.links] == [("best", "runs/a.pt")]
    assert why in refusals(m)["latest"]


# -- secrets ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("root", "name", "which"),
    [
        ("/root", ".ssh/id_ed25519", ".ssh"),
        ("/root", ".netrc", ".netrc"),
        ("/root", ".aws/credentials", ".aws"),
        ("/root", ".config/gcloud/credentials.db", ".config/gcloud"),
        ("/root", ".cache/huggingface/token", ".cache/huggingface/token"),
        ("/root", ".git-credentials", ".git-credentials"),
        ("/root/.config", "gcloud/legacy_credentials/x", ".config/gcloud"),
        ("/", "home/bob/.SSH/authorized_keys", ".ssh"),
        ("/workspace/runs", "backup/home/.aws/config", ".aws"),
        # A shell history keeps a typed `export HF_TOKEN=…` (a user's hour pulled one).
        ("/root", ".bash_history", ".bash_history"),
        ("/home", "bob/.kaggle/kaggle.json", ".kaggle/kaggle.json"),
        ("/root", ".config/gh/hosts.yml", ".config/gh"),
    ],
)
def test_secrets_are_refused_by_rule_whatever_the_scan_says(root: str, name: str, which: str):
    m = parse_manifest_lines("box", scan(file(name), file("ok.pt"), roots=(root,)))
    assert [e.path for e in m.entries] == ["ok.pt"]
    assert refusals(m)[name] == f"{SECRET_RULE} ({which})"


def test_what_only_looks_like_a_secret_is_pulled():
    for name in (
        "ssh/keys.json", "my.netrc.bak", ".cache/huggingface/hub/model.bin", "aws.json",
        "bash_history.txt", "kaggle.json", ".docker/daemon.json",
    ):  # fmt: skip
        assert secret_reason("/r", name) is None
    assert secret_reason("/r/.ssh", "") == f"{SECRET_RULE} (.ssh)"
    assert unsafe_path_reason("a/b c/ü.pt") is None


def test_a_root_inside_a_secret_is_refused_whole():
    m = parse_manifest_lines("box", scan(file("id_ed25519"), roots=("/root/.ssh",)))
    assert m.entries == () and m.roots[0].error == f"{SECRET_RULE} (.ssh)"
    assert refusals(m)["."] == f"pull root /root/.ssh: {SECRET_RULE} (.ssh)"


# -- the real scan over a home with secrets ---------------------------------------------

# Prepended to the scan's source: every file the scan opens (or lists) under the home's
# secrets is written to stderr, so a test sees whether their content was ever touched.
# A file is opened by its name in its folder (agent/no_follow.py): the names count too.
AUDIT = (
    "import sys\n"
    "def _rgt_audit(event, args):\n"
    "    if event in ('open', 'os.listdir', 'os.scandir') and args and args[0] is not None:\n"
    "        p = args[0]\n"
    "        p = p.decode('utf-8', 'replace') if isinstance(p, bytes) else str(p)\n"
    "        if any(s in p for s in ('.ssh', '.netrc', '.aws', 'gcloud', 'huggingface/token',\n"
    "                                '.git-credentials', 'id_ed25519', 'authorized_keys',\n"
    "                                'credentials')):\n"
    "            sys.stderr.write('TOUCHED ' + p + '\\n')\n"
    "sys.addaudithook(_rgt_audit)\n"
)


def test_the_scan_skips_a_homes_secrets_by_rule_and_never_reads_them(tmp_path):
    import hashlib
    import os
    import subprocess
    import sys

    from rgt_tui.agent import manifest as agent
    from rgt_tui.services.manifest import manifest_source

    assert agent.SECRET_PATHS is SECRET_PATHS  # one list, for the box and the client
    home = tmp_path / "root"
    secrets = {
        ".ssh/id_ed25519": b"-----BEGIN OPENSSH PRIVATE KEY-----",
        ".ssh/authorized_keys": b"ssh-ed25519 AAAA",
        ".netrc": b"machine x login y password z",
        ".aws/credentials": b"[default]\naws_secret_access_key=k",
        ".git-credentials": b"https://u:token@example.invalid",
        ".config/gcloud/application_default_credentials.json": b"{}",
        ".cache/huggingface/token": b"hf_secret",
    }
    results = {"runs/a/metrics.json": b'{"acc": 1}', "runs/a/model.pt": b"w" * 5000}
    kept = {".cache/huggingface/hub/model.bin": b"m", ".config/app.toml": b"x = 1"}
    for rel, data in {**secrets, **results, **kept}.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_bytes(data)
    os.symlink(".ssh/id_ed25519", home / "key-link")  # a link into a secret
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LC_ALL": "C"}
    proc = subprocess.run(
        [sys.executable, "-S", "-u", "-", "--root", "~", "--root", str(home / ".ssh")],
        input=(AUDIT + manifest_source()).encode(),
        capture_output=True,
        env=env,
        check=True,
    )
    assert b"TOUCHED" not in proc.stderr, proc.stderr.decode()
    m = parse_manifest_lines("box", proc.stdout.decode("ascii").splitlines())
    assert {e.path for e in m.entries} == set(results) | set(kept)
    digests = {e.sha256 for e in m.entries}
    assert all(hashlib.sha256(d).hexdigest() not in digests for d in secrets.values())
    skipped = {r.path: r.reason for r in m.refused if r.root == 0}
    assert skipped == {
        ".ssh": f"{SECRET_RULE} (.ssh)",
        ".netrc": f"{SECRET_RULE} (.netrc)",
        ".aws": f"{SECRET_RULE} (.aws)",
        ".git-credentials": f"{SECRET_RULE} (.git-credentials)",
        ".config/gcloud": f"{SECRET_RULE} (.config/gcloud)",
        ".cache/huggingface/token": f"{SECRET_RULE} (.cache/huggingface/token)",
        "key-link": f"{SECRET_RULE} (.ssh) (link to it)",
    }
    # A root that is itself a secret is not walked at all.
    assert m.roots[1].error == f"{SECRET_RULE} (.ssh)"
    assert [r.reason for r in m.refused if r.root == 1] == [
        f"pull root {home}/.ssh: {m.roots[1].error}"
    ]


# -- every line counts; sizes parsed once, by this parser ---------------------------------


def test_empty_lines_count_against_the_caps_with_their_newline():
    limits = ManifestLimits("h")
    for raw in ("", "   ", "\t"):
        limits.take(raw)
    assert (limits.lines, limits.bytes) == (3, 1 + 4 + 2)


def test_a_flood_of_empty_lines_meets_the_line_cap(monkeypatch):
    import rgt_tui.domain.manifest_parse as manifest

    monkeypatch.setattr(manifest, "MAX_LINES", 1000)
    flood = scan(file("a"))
    flood[1:1] = [""] * 1000
    with pytest.raises(ManifestError, match=r"h: the box's scan printed over 1,000 lines"):
        parse_manifest_lines("h", flood)


def test_a_size_of_thousands_of_digits_is_refused_by_name_without_int():
    digits = "9" * 5000  # int() of it raises under Python 3.11's limit
    body = file("huge.bin").replace('"size": 1', f'"size": {digits}')
    m = parse_manifest_lines("box", scan(file("good", size=100), body))
    assert [e.path for e in m.entries] == ["good"] and m.total_bytes == 100
    assert refusals(m)["huge.bin"].startswith("absurd size from the box (<a number of 5000 digits>")
    # Anywhere else a number that long is no value either: named, never int()'d.
    start = scan()[0].replace('"taken_at": 1.0', f'"taken_at": {digits}')
    m = parse_manifest_lines("box", [start, *scan()[1:]])
    assert m.taken_at == 1.0  # the done line's


def test_a_size_that_is_not_json_refuses_that_file_by_name():
    body = file("evil\x1b[2J.bin", size=7).replace('"size": 7', '"size": \u00b2')
    m = parse_manifest_lines("box", scan(file("good", size=100), body))
    assert [e.path for e in m.entries] == ["good"] and m.total_bytes == 100
    ((name, reason),) = refusals(m).items()
    assert name == "evil\\x1b[2J.bin"  # shown escaped, as every name from the box
    assert reason.startswith("the box's line for this file is not valid JSON")
    assert printable(reason) == reason
    # A line that names no file still fails the whole output, with the host named.
    with pytest.raises(ManifestError, match=r"box: manifest line is not JSON"):
        parse_manifest_lines("box", scan('{"type": "root", "index": \u00b2}'))


def test_case_twins_follow_the_disks_simple_case_mapping():
    """On a disk that folds case, Model.pt and model.pt are one file (the first in sorted
    order is kept, the other refused by name); straße.pt and strasse.pt are two names
    there, as APFS, exFAT and NTFS keep them (casefold joined them: review s35), and the
    two Unicode forms of café.pt are one, as macOS makes them."""
    m = parse_manifest_lines(
        "box",
        scan(
            file("Model.pt"), file("model.pt"), file("straße.pt"), file("strasse.pt"),
            file("caf\u00e9.pt"), file("cafe\u0301.pt"),
        ),
    )  # fmt: skip
    folded = refuse_unwritable(m, 255, 4000, folds_case=True)
    kept = sorted(e.path for e in folded.entries)
    assert kept == sorted(["Model.pt", "straße.pt", "strasse.pt", "cafe\u0301.pt"]), kept
    refused = {r.path: r.reason for r in folded.refused}
    assert set(refused) == {"model.pt", "caf\u00e9.pt"}
    assert refused["model.pt"].startswith("differs only by case from Model.pt")
    assert refuse_unwritable(m, 255, 4000) == m  # a disk that tells case apart: all kept
