"""Tests for the fleet-file loader (rgt_tui.domain.config) and the XDG paths (rgt_tui.paths).

Long because the fleet file has many keys, each with its refusals; one file keeps every message's wording in one place.

Over 450 lines on purpose: one table of the fleet file's keys and mistakes, each case a
line or two; split by key it would repeat the loader's fixtures in every file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support import ROOT
from support.fleet_files import load_error, write_hosts

from rgt_tui import paths
from rgt_tui.domain.config import (
    FLEET_KEYS,
    GROUP_KEYS,
    HOST_KEYS,
    SSH_FORMS,
    THRESHOLD_KEYS,
    ConfigError,
    Fleet,
    SshTarget,
    Thresholds,
    parse_ssh_target,
)
from rgt_tui.services.fleet.file import load_fleet, resolve_fleet_path

REPO_HOSTS = ROOT / "hosts.example.toml"
UTC = timezone.utc


# --- valid files ------------------------------------------------------------------------


def test_full_file_round_trips_every_key(tmp_path: Path) -> None:
    path = write_hosts(
        tmp_path,
        """
        [fleet]
        results_dir = "pulled"
        poll_seconds = 0.5
        default_epochs = 12

        [fleet.thresholds]
        inode_pct = 80
        disk_pct = 85.5
        cgroup_mem_pct = 95
        temp_c = 80
        idle_minutes = 10

        [[hosts]]
        name = "a100-1"
        ssh = "root@ssh4.vast.ai:22034"
        identity_file = "~/.ssh/id_vast"
        known_hosts = "/etc/rgt/known_hosts"
        profile = "vastai"
        cost_per_hour = 1.29
        started_at = 2024-05-01T09:30:00+02:00
        workdir = "/workspace"
        durable_dir = "/workspace/persist"
        mounts = ["/", "/dev/shm", "/", "/workspace"]
        queue = "queues/a100.txt"
        run = "python train.py {cfg} {task} --epochs {epochs} --name {name} --out {out}"
        pull = ["/workspace/persist/runs", "/workspace/logs"]
        teardown = "vastai destroy instance 42"
        epochs = 30
        """,
    )
    fleet = load_fleet(path)
    assert fleet.path == path
    assert fleet.is_default is False
    assert fleet.results_dir == tmp_path / "pulled"
    assert fleet.poll_seconds == 0.5
    assert fleet.default_epochs == 12
    assert fleet.thresholds == Thresholds(
        inode_pct=80, disk_pct=85.5, cgroup_mem_pct=95, temp_c=80, idle_minutes=10
    )
    (host,) = fleet.hosts
    assert host.name == "a100-1"
    assert host.ssh == SshTarget("root", "ssh4.vast.ai", 22034)
    assert host.is_local is False
    assert host.identity_file == Path("~/.ssh/id_vast").expanduser()
    assert "~" not in str(host.identity_file)
    assert host.known_hosts == Path("/etc/rgt/known_hosts")
    assert host.profile == "vastai"
    assert host.cost_per_hour == 1.29
    assert host.started_at == datetime(2024, 5, 1, 7, 30, tzinfo=UTC)
    assert host.started_at.utcoffset() == timedelta(0)
    assert host.workdir == "/workspace"
    assert host.durable_dir == "/workspace/persist"
    assert host.mounts == ("/", "/dev/shm", "/workspace")  # de-duplicated, order kept
    assert host.queue == tmp_path / "queues" / "a100.txt"
    assert host.run is not None and host.run.startswith("python train.py {cfg}")
    assert host.pull == ("/workspace/persist/runs", "/workspace/logs")
    assert host.teardown == "vastai destroy instance 42"
    assert host.epochs == 30
    assert host.line == 13
    assert fleet.host("a100-1") is host


def test_minimal_host_gets_every_default(tmp_path: Path) -> None:
    path = write_hosts(tmp_path, '[[hosts]]\nname = "box"\nssh = "box"\n')
    fleet = load_fleet(path)
    assert fleet.is_default is False
    assert fleet.results_dir == tmp_path / "results"
    assert fleet.poll_seconds == 2.0
    assert fleet.default_epochs == 20
    assert fleet.thresholds == Thresholds(
        inode_pct=90, disk_pct=90, cgroup_mem_pct=90, temp_c=83, idle_minutes=30
    )
    (host,) = fleet.hosts
    assert host.ssh == SshTarget(None, "box", None)
    assert (host.identity_file, host.known_hosts) == (None, None)
    assert host.profile == "generic-ssh"
    assert (host.cost_per_hour, host.started_at) == (None, None)
    assert (host.workdir, host.durable_dir) == ("~", "~")
    assert host.mounts == ("/", "~")
    assert (host.queue, host.run, host.teardown) == (None, None, None)
    assert host.pull == ("~",)
    assert host.epochs == 20
    assert host.line == 1


def test_a_byte_order_mark_a_windows_editor_saved_is_read_past(tmp_path: Path) -> None:
    """h553 #6: a Notepad-saved fleet file read "TOML syntax error: Invalid statement
    (column 1)" on line 1, naming neither the mark nor a fix."""
    path = tmp_path / "hosts.toml"
    path.write_bytes(b'\xef\xbb\xbf[[hosts]]\r\nname = "box"\r\nssh = "box"\r\n\r\nbad =\r\n')
    error = load_error(tmp_path, path.read_text(encoding="utf-8"))
    assert error.line == 5, error  # the lines count as written, the mark no line of its own
    path.write_bytes(b'\xef\xbb\xbf[[hosts]]\r\nname = "box"\r\nssh = "box"\r\n')
    (host,) = load_fleet(path).hosts
    assert (host.name, host.line) == ("box", 1)


@pytest.mark.parametrize(
    ("extra", "durable", "mounts", "pull"),
    [
        ('workdir = "/w"', "/w", ("/", "/w"), ("/w",)),
        ('workdir = "/w"\ndurable_dir = "/d"', "/d", ("/", "/w", "/d"), ("/d",)),
        ('workdir = "/"\ndurable_dir = "/"', "/", ("/",), ("/",)),
        ('durable_dir = "/vol"\npull = ["/vol/a"]', "/vol", ("/", "~", "/vol"), ("/vol/a",)),
    ],
)
def test_durable_mounts_and_pull_defaults(
    tmp_path: Path, extra: str, durable: str, mounts: tuple[str, ...], pull: tuple[str, ...]
) -> None:
    path = write_hosts(tmp_path, f'[[hosts]]\nname = "b"\nssh = "b"\n{extra}\n')
    (host,) = load_fleet(path).hosts
    assert (host.durable_dir, host.mounts, host.pull) == (durable, mounts, pull)


def test_local_host_and_epoch_fallback(tmp_path: Path) -> None:
    text = """
    [fleet]
    default_epochs = 7
    [[hosts]]
    name = "here"
    ssh = "local"
    [[hosts]]
    name = "there"
    ssh = "u@there"
    epochs = 3
    """
    fleet = load_fleet(write_hosts(tmp_path, text))
    here, there = fleet.hosts
    assert here.ssh is None and here.is_local
    assert here.epochs == 7
    assert not there.is_local and there.epochs == 3
    assert [h.line for h in fleet.hosts] == [3, 6]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-05-01T12:00:00", datetime(2024, 5, 1, 12, tzinfo=UTC)),  # naive TOML → UTC
        ("2024-05-01T12:00:00-05:00", datetime(2024, 5, 1, 17, tzinfo=UTC)),
        ('"2024-05-01T12:00:00Z"', datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ('"2024-05-01 12:00"', datetime(2024, 5, 1, 12, tzinfo=UTC)),  # naive string → UTC
        ('"2024-05-01T14:00:00+02:00"', datetime(2024, 5, 1, 12, tzinfo=UTC)),
    ],
)
def test_started_at_forms_become_aware_utc(tmp_path: Path, value: str, expected: datetime) -> None:
    path = write_hosts(tmp_path, f'[[hosts]]\nname = "b"\nssh = "b"\nstarted_at = {value}\n')
    (host,) = load_fleet(path).hosts
    assert host.started_at == expected
    assert host.started_at.tzinfo is not None and host.started_at.utcoffset() == timedelta(0)


def test_results_dir_absolute_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    path = write_hosts(tmp_path, f'[fleet]\nresults_dir = "{target}"\n')
    assert load_fleet(path).results_dir == target


def test_fleet_host_lookup_error_lists_known_names(tmp_path: Path) -> None:
    fleet = load_fleet(write_hosts(tmp_path, '[[hosts]]\nname = "a"\nssh = "a"\n'))
    with pytest.raises(KeyError, match=r"no host named 'zz'.*known: a"):
        fleet.host("zz")
    assert fleet.find("zz") is None and fleet.find("a") is fleet.host("a") is fleet.hosts[0]


def test_fleet_lookup_follows_a_replaced_fleet(tmp_path: Path) -> None:
    """The name index is the fleet's own: a fleet made from another (an edit) finds its
    own hosts, not the index the first one built."""
    fleet = load_fleet(write_hosts(tmp_path, '[[hosts]]\nname = "a"\nssh = "a"\n'))
    assert fleet.find("a") is not None
    b = dataclasses.replace(fleet.hosts[0], name="b")
    edited = dataclasses.replace(fleet, hosts=(fleet.hosts[0], b))
    assert edited.find("b") is b and fleet.find("b") is None


# --- the default fleet ------------------------------------------------------------------


def _assert_default(fleet: Fleet) -> None:
    assert fleet.is_default is True
    assert [h.name for h in fleet.hosts] == ["local"]
    assert fleet.hosts[0].is_local and fleet.hosts[0].ssh is None
    assert fleet.host("local").profile == "generic-ssh"


def test_no_file_is_this_machine_alone() -> None:
    fleet = load_fleet(None)
    _assert_default(fleet)
    assert fleet.path is None
    assert fleet.results_dir == Path.cwd() / "results"


@pytest.mark.parametrize(
    "text",
    [
        "# only a comment\n\n# [[hosts]]\n# name = 'x'\n",
        "",
        "hosts = []\n",
    ],
)
def test_file_without_hosts_is_default_fleet(tmp_path: Path, text: str) -> None:
    path = write_hosts(tmp_path, text)
    fleet = load_fleet(path)
    _assert_default(fleet)
    assert fleet.path == path


def test_fleet_settings_apply_to_the_default_fleet(tmp_path: Path) -> None:
    fleet = load_fleet(write_hosts(tmp_path, "[fleet]\npoll_seconds = 5\ndefault_epochs = 3\n"))
    _assert_default(fleet)
    assert fleet.poll_seconds == 5.0
    assert fleet.hosts[0].epochs == 3


def test_shipped_example_is_the_default_fleet() -> None:
    _assert_default(load_fleet(REPO_HOSTS))


def test_shipped_example_hosts_are_valid_when_uncommented(tmp_path: Path) -> None:
    text = REPO_HOSTS.read_text(encoding="utf-8")
    uncommented = re.sub(r"(?m)^# ", "", text)
    fleet = load_fleet(write_hosts(tmp_path, uncommented))
    # A [[groups]] entry is a host too (issue 41).
    blocks = len(re.findall(r"(?m)^# \[\[(hosts|groups)\]\]\s*$", text))
    assert blocks >= 3
    assert len(fleet.hosts) == blocks and not fleet.is_default
    assert "[fleet]" in uncommented and fleet.thresholds == Thresholds()
    # Every key the loader accepts is shown in at least one example.
    for key in (*HOST_KEYS, *FLEET_KEYS, *THRESHOLD_KEYS, *GROUP_KEYS):
        assert re.search(rf"(?m)^# (\[fleet\.)?{key}\b", text), key
    assert any(h.is_local for h in fleet.hosts)
    assert any(h.ssh is not None and ":" in h.ssh.host for h in fleet.hosts)  # IPv6 example


# --- fleet-file path order ----------------------------------------------------------------


def test_path_order(tmp_path: Path) -> None:
    cli = write_hosts(tmp_path, "", "cli.toml")
    env = write_hosts(tmp_path, "", "env.toml")
    assert resolve_fleet_path(None, {}, tmp_path) is None
    local = write_hosts(tmp_path, "")
    assert resolve_fleet_path(None, {}, tmp_path) == local
    assert resolve_fleet_path(None, {"RGT_HOSTS": str(env)}, tmp_path) == env
    assert resolve_fleet_path(str(cli), {"RGT_HOSTS": str(env)}, tmp_path) == cli
    assert resolve_fleet_path("cli.toml", {}, tmp_path) == cli  # relative to cwd
    assert resolve_fleet_path(None, {"RGT_HOSTS": ""}, tmp_path) == local  # empty = unset


def test_missing_cli_path_is_an_error_even_with_fallbacks(tmp_path: Path) -> None:
    write_hosts(tmp_path, "")
    env = write_hosts(tmp_path, "", "env.toml")
    with pytest.raises(ConfigError) as info:
        resolve_fleet_path("nope.toml", {"RGT_HOSTS": str(env)}, tmp_path)
    assert info.value.key == "--hosts"
    assert info.value.file == str(tmp_path / "nope.toml")
    assert "not found" in str(info.value)


def test_missing_env_path_is_an_error(tmp_path: Path) -> None:
    write_hosts(tmp_path, "")
    with pytest.raises(ConfigError) as info:
        resolve_fleet_path(None, {"RGT_HOSTS": str(tmp_path / "gone.toml")}, tmp_path)
    assert info.value.key == "$RGT_HOSTS"
    assert "gone.toml" in str(info.value)


def test_load_missing_or_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_fleet(tmp_path / "absent.toml")
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'x = "\xe9"\n')
    with pytest.raises(ConfigError, match="UTF-8"):
        load_fleet(bad)


# --- malformed files: each error names the line and the key --------------------------------


def test_toml_syntax_error_line_and_key(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[[hosts]]\nname = "a"\nssh = "unterminated\n')
    assert (err.line, err.key) == (3, "ssh")
    assert "TOML syntax error" in err.message and "column" in err.message
    assert str(err).startswith(f"{err.file}:3: ssh: TOML syntax error")


def test_toml_duplicate_key_is_a_syntax_error_on_its_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[[hosts]]\nname = "a"\nname = "b"\n')
    assert (err.line, err.key) == (3, "name")
    assert err.message == "name is set twice (line 2): keep one"


@pytest.mark.parametrize(
    ("text", "line", "key", "phrase"),
    [
        (
            '[[hosts]]\nname = "a"\nssh = "a"\ncost_per_hr = 1\n',
            4,
            "cost_per_hr",
            "unknown key 'cost_per_hr' — did you mean 'cost_per_hour'?",
        ),
        ("[fleet]\n\npoll_secs = 3\n", 3, "poll_secs", "did you mean 'poll_seconds'?"),
        ("[fleet.thresholds]\ninode = 80\n", 2, "inode", "did you mean 'inode_pct'?"),
        (
            "# x\n[fleets]\nresults_dir = 'r'\n",
            2,
            "fleets",
            "unknown table [fleets] — did you mean [fleet]?",
        ),
        ('[[host]]\nname = "a"\n', 1, "host", "unknown table [[host]] — did you mean [[hosts]]?"),
        ('[[hosts]]\nname = "a"\nssh = "a"\nzzz = 1\n', 4, "zzz", "expected one of: name, ssh"),
        # Where the port goes, not ~60 keys (hour s33 CLI #14).
        (
            '[[hosts]]\nname = "a"\nssh = "a"\nport = 22\n',
            4,
            "port",
            "unknown key 'port' — a host's port goes in its ssh key: ssh = \"user@host:port\"",
        ),
        ('[[hosts]]\nname = "a"\nssh = "a"\nHostName = "h"\n', 4, "HostName", "address goes in"),
    ],
)
def test_unknown_keys(tmp_path: Path, text: str, line: int, key: str, phrase: str) -> None:
    err = load_error(tmp_path, text)
    assert (err.line, err.key) == (line, key)
    assert phrase in err.message


def test_duplicate_host_names_name_both_lines(tmp_path: Path) -> None:
    text = """
    [[hosts]]
    ssh = "a"
    name = "a100"

    [[hosts]]
    name = "b"
    ssh = "b"

    [[hosts]]
    ssh = "c"
    name = "a100"
    """
    err = load_error(tmp_path, text)
    assert (err.line, err.key) == (11, "name")
    assert "host name 'a100' is already used by the entry at line 1" in err.message


@pytest.mark.parametrize(
    "ssh", ["user@", "@host", "host:notaport", "host:70000", "host:0", "us er@host", "a@b@c",
            "::1", "u@[::1", "u@[::1]:", "u@[host]", "host/x"],
)  # fmt: skip
def test_bad_ssh_lists_accepted_forms(tmp_path: Path, ssh: str) -> None:
    err = load_error(tmp_path, f'[[hosts]]\nname = "a"\n\nssh = "{ssh}"\n')
    assert (err.line, err.key) == (4, "ssh")
    assert SSH_FORMS in err.message
    assert "user@host:port" in str(err) and "user@[::1]:2222" in str(err)


@pytest.mark.parametrize(
    ("body", "line", "key", "phrase"),
    [
        ('cost_per_hour = "1.2"', 4, "cost_per_hour", "expected a number ≥ 0"),
        ("cost_per_hour = -1", 4, "cost_per_hour", "expected a number ≥ 0, got -1"),
        ("cost_per_hour = true", 4, "cost_per_hour", "expected a number"),
        ("epochs = 2.5", 4, "epochs", "expected a whole number > 0"),
        ("epochs = 0", 4, "epochs", "expected a whole number > 0"),
        ('mounts = "/"', 4, "mounts", "expected a non-empty list"),
        ("pull = []", 4, "pull", "expected a non-empty list"),
        # Each list key's example is of its own kind, not a folder (hour s17b, 13g).
        (
            'code_exclude = "data/"',
            4,
            "code_exclude",
            'of gitignore-style patterns such as code_exclude = ["data/", "*.ckpt"]',
        ),
        (
            "preflight_ack = [3]",
            4,
            "preflight_ack",
            'not one of the check names — write each as a quoted string, e.g. preflight_ack = ["gpu", "driver"]',
        ),
        (
            'tracker_patterns = "x"',
            4,
            "tracker_patterns",
            'of regular expressions such as tracker_patterns = ["wandb: View run"]',
        ),
        ('workdir = ""', 4, "workdir", "expected a non-empty string"),
        ("profile = 3", 4, "profile", "expected a non-empty string"),
        ('started_at = "yesterday"', 4, "started_at", "expected a date-time"),
        ("started_at = 2024-05-01", 4, "started_at", "expected a date-time"),
        ('run = "x {cfg} {cfgs}"', 4, "run", "unknown field {cfgs}"),
        ('run = "x {cfg.attr}"', 4, "run", "expected only {cfg}, {task}, {epochs}, {name}, {out}"),
        ('run = "x {}"', 4, "run", "unknown field {}"),
        ('run = "x {cfg"', 4, "run", "bad braces"),
        ('run = "x {cfg} [--epochs {epochs}"', 4, "run", "is never closed — close it"),
        ('run = "x {cfg} --epochs {epochs}]"', 4, "run", "closes no '['"),
        ('run = "x {cfg} [[--epochs {epochs}]]"', 4, "run", "nested brackets around a placeholder"),
        ('run = "x [--config {cfg}]"', 4, "run", "holds no {epochs}"),
    ],
)
def test_wrong_host_values(tmp_path: Path, body: str, line: int, key: str, phrase: str) -> None:
    err = load_error(tmp_path, f'[[hosts]]\nname = "a"\nssh = "a"\n{body}\n')
    assert (err.line, err.key) == (line, key)
    assert phrase in err.message


def test_quoted_number_suggests_dropping_quotes(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[[hosts]]\nname = "a"\nssh = "a"\ncost_per_hour = "1.2"\n')
    assert "expected a number" in err.message
    assert "drop the quotes: cost_per_hour = 1.2" in err.message
    # A price written as on the provider's page, or negative: the fix is said (h513 #12).
    for written, fix in (('"$2.49"', "cost_per_hour = 2.49"), ('"0.8 USD"', "cost_per_hour = 0.8")):
        err = load_error(tmp_path, f'[[hosts]]\nname = "a"\nssh = "a"\ncost_per_hour = {written}\n')
        assert f"drop the quotes: {fix}" in err.message, err.message
    err = load_error(tmp_path, '[[hosts]]\nname = "a"\nssh = "a"\ncost_per_hour = -1\n')
    assert "got -1 — write cost_per_hour = 1" in err.message, err.message


@pytest.mark.parametrize(
    ("body", "line", "key", "phrase"),
    [
        ("poll_seconds = 0", 2, "poll_seconds", "expected a number > 0"),
        ('poll_seconds = "2"', 2, "poll_seconds", "expected a number > 0"),
        ("poll_seconds = inf", 2, "poll_seconds", "expected a finite number > 0, got inf"),
        ("poll_seconds = 0.05", 2, "poll_seconds", "expected 0.2 to 600 seconds between"),
        ("poll_seconds = 100000", 2, "poll_seconds", "got 100000 — the default is 2"),
        ("pull_rate_mbit = nan", 2, "pull_rate_mbit", "expected a finite number > 0, got nan"),
        ("default_epochs = -3", 2, "default_epochs", "expected a whole number > 0"),
        ("results_dir = 1", 2, "results_dir", "expected a non-empty string"),
        ("thresholds = 5", 2, "thresholds", "expected a table"),
        ("thresholds = { disk_pct = 120 }", 2, "disk_pct", "percentage in (0, 100]"),
    ],
)
def test_wrong_fleet_values(tmp_path: Path, body: str, line: int, key: str, phrase: str) -> None:
    err = load_error(tmp_path, f"[fleet]\n{body}\n")
    assert (err.line, err.key) == (line, key)
    assert phrase in err.message


def test_threshold_out_of_range_points_at_its_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, "[fleet]\n[fleet.thresholds]\ntemp_c = 83\ninode_pct = 101\n")
    assert (err.line, err.key) == (4, "inode_pct")
    # A GPU temperature no alert can mean: 1000 never fired, 5 always did (h553).
    for value in ("1000", "5", "185"):
        err = load_error(tmp_path, f"[fleet]\n[fleet.thresholds]\ntemp_c = {value}\n")
        assert (err.line, err.key) == (3, "temp_c"), err
        assert "expected a GPU temperature in °C from 40 to 110" in err.message
        assert "a value in °F?" in err.message


@pytest.mark.parametrize("name", ["a 100", "a/b", "ü", "x:y"])
def test_bad_host_name_characters(tmp_path: Path, name: str) -> None:
    err = load_error(tmp_path, f'[[hosts]]\nssh = "a"\nname = "{name}"\n')
    assert (err.line, err.key) == (3, "name")
    assert "ASCII letters and digits, '.', '_' and '-'" in err.message


@pytest.mark.parametrize(("present", "missing"), [('name = "a"', "ssh"), ('ssh = "a"', "name")])
def test_missing_required_key_points_at_block_header(
    tmp_path: Path, present: str, missing: str
) -> None:
    text = f'[[hosts]]\nname = "ok"\nssh = "ok"\n\n[[hosts]]\n{present}\n'
    err = load_error(tmp_path, text)
    assert (err.line, err.key) == (5, missing)
    assert f"missing required key '{missing}'" in err.message


def test_hosts_written_as_a_single_table(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[fleet]\npoll_seconds = 1\n[hosts]\nname = "a"\nssh = "a"\n')
    assert (err.line, err.key) == (3, "hosts")
    assert "[[hosts]]" in err.message and "[hosts]" in err.message


def test_hosts_not_tables(tmp_path: Path) -> None:
    err = load_error(tmp_path, '# c\nhosts = ["a", "b"]\n')
    assert (err.line, err.key) == (2, "hosts")
    assert "[[hosts]]" in err.message


def test_fleet_not_a_table(tmp_path: Path) -> None:
    err = load_error(tmp_path, "fleet = 3\n")
    assert (err.line, err.key) == (1, "fleet")
    assert "[fleet]" in err.message


def test_inline_hosts_array_falls_back_to_its_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, '# fleet\nhosts = [{ name = "a" }]\n')
    assert (err.line, err.key) == (2, "ssh")


def test_key_lines_inside_multiline_strings_are_not_mistaken(tmp_path: Path) -> None:
    text = '''
    [[hosts]]
    name = "a"
    ssh = "a"
    run = """
    cost_per_hour = 1
    python train.py {cfg}
    """
    cost_per_hour = "x"
    '''
    err = load_error(tmp_path, text)
    assert (err.line, err.key) == (8, "cost_per_hour")


def test_quoted_keys_get_their_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[[hosts]]\n"name" = "a"\n\'ssh\' = "a"\n"epochs" = "5"\n')
    assert (err.line, err.key) == (4, "epochs")
    assert "drop the quotes" in err.message


def test_errors_in_later_blocks_get_that_blocks_lines(tmp_path: Path) -> None:
    text = '[[hosts]]\nname = "a"\nssh = "a"\nepochs = 1\n[[hosts]]\nname = "b"\nssh = "b"\nepochs = 0\n'
    err = load_error(tmp_path, text)
    assert (err.line, err.key) == (8, "epochs")


# --- ConfigError and SshTarget ------------------------------------------------------------


def test_config_error_string_forms() -> None:
    assert str(ConfigError("f.toml", "bad", line=3, key="k")) == "f.toml:3: k: bad"
    assert str(ConfigError("f.toml", "bad", key="k")) == "f.toml: k: bad"
    assert str(ConfigError("f.toml", "bad", line=3)) == "f.toml:3: bad"
    assert str(ConfigError("f.toml", "bad")) == "f.toml: bad"
    err = ConfigError(Path("f.toml"), "bad", line=1, key="k")
    assert isinstance(err, ValueError) and err.file == "f.toml" and err.message == "bad"


@pytest.mark.parametrize(
    ("text", "user", "host", "port"),
    [
        ("root@1.2.3.4:2222", "root", "1.2.3.4", 2222),
        ("ubuntu@box.example.com", "ubuntu", "box.example.com", None),
        ("box", None, "box", None),
        ("my_alias-1", None, "my_alias-1", None),
        ("box:22", None, "box", 22),
        ("user@[::1]:2222", "user", "::1", 2222),
        ("[fe80::1%eth0]", None, "fe80::1%eth0", None),
        ("u.x-y@h:65535", "u.x-y", "h", 65535),
    ],
)
def test_parse_ssh_target_accepted_forms(
    text: str, user: str | None, host: str, port: int | None
) -> None:
    target = parse_ssh_target(text)
    assert target == SshTarget(user, host, port)
    assert target is not None and target.is_local is False
    assert str(target) == text  # round trip


def test_parse_ssh_target_local_and_errors() -> None:
    assert parse_ssh_target("local") is None
    with pytest.raises(
        ValueError, match=r"port 70000 is outside 1-65535; accepted forms: user@host:port"
    ):
        parse_ssh_target("h:70000")
    # Six digits are a number too, out of range, not "not a number" (h462 #6).
    with pytest.raises(ValueError, match=r"port 441411 is outside 1-65535"):
        parse_ssh_target("root@127.0.0.1:441411")
    with pytest.raises(ValueError, match="brackets"):
        parse_ssh_target("fe80::1")


# --- XDG paths ----------------------------------------------------------------------------


def test_xdg_dirs_from_environment() -> None:
    env = {"XDG_STATE_HOME": "/xs", "XDG_CONFIG_HOME": "/xc", "HOME": "/home/u"}
    assert paths.state_dir(env) == Path("/xs/rgt-tui")
    assert paths.config_dir(env) == Path("/xc/rgt-tui")


@pytest.mark.parametrize("value", [None, "", "relative/dir"])
def test_xdg_dirs_fall_back_to_home(value: str | None) -> None:
    env = {"HOME": "/home/u"}
    if value is not None:
        env |= {"XDG_STATE_HOME": value, "XDG_CONFIG_HOME": value}
    assert paths.state_dir(env) == Path("/home/u/.local/state/rgt-tui")
    assert paths.config_dir(env) == Path("/home/u/.config/rgt-tui")


def test_xdg_dirs_default_to_process_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.state_dir() == tmp_path / "state" / "rgt-tui"
    assert paths.config_dir() == tmp_path / ".config" / "rgt-tui"
    assert not (tmp_path / "state").exists()  # nothing is created


# --- trust: names, run templates, host-key policy, verify_python ----------------------


@pytest.mark.parametrize("name", [".", ".."])
def test_dot_host_names_are_refused(tmp_path: Path, name: str) -> None:
    err = load_error(tmp_path, f'[[hosts]]\nname = "{name}"\nssh = "root@box"\n')
    assert (err.line, err.key) == (2, "name")
    assert "folder of its own" in err.message


@pytest.mark.parametrize(
    "run, field",
    [
        ('python t.py --task "{task}"', "task"),
        ("python t.py --cfg '{cfg}' {out}", "cfg"),
        ('sh -c "python t.py {out}"', "out"),
    ],
)
def test_run_placeholder_inside_quotes_is_refused(tmp_path: Path, run: str, field: str) -> None:
    path = tmp_path / "hosts.toml"
    # A TOML literal string holds either quote kind without escapes.
    path.write_text(f"[[hosts]]\nname = \"b\"\nssh = \"root@box\"\nrun = '''{run}'''\n")
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    assert (info.value.line, info.value.key) == (4, "run")
    assert f"{{{field}}} is inside quotes" in info.value.message
    assert "already shell-quoted" in info.value.message


def test_a_run_template_ending_in_a_backslash_is_refused(tmp_path: Path) -> None:
    """h619 #1: a command pasted over lines kept its first one, `... --config {cfg} \\`:
    every argument after it lost, and the launch plan said nothing of why."""
    path = tmp_path / "hosts.toml"
    run = "python t.py --config {cfg} \\"
    path.write_text(f"[[hosts]]\nname = \"b\"\nssh = \"root@box\"\nrun = '''{run}'''\n")
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    assert (info.value.line, info.value.key) == (4, "run")
    assert "ends with a backslash" in info.value.message
    assert "write the whole command on one line" in info.value.message
    # An escaped backslash at the end is a literal one: accepted.
    path.write_text(f"[[hosts]]\nname = \"b\"\nssh = \"root@box\"\nrun = '''{run}\\'''\n")
    assert load_fleet(path).hosts[0].run == run + "\\"


@pytest.mark.parametrize(
    "run",
    [
        "python t.py --task {task} --out {out}",
        'echo "starting" && python t.py {cfg}',
        'echo "it\'s" {cfg}',
        'echo \\"{cfg}',
    ],
)
def test_run_placeholder_outside_quotes_is_accepted(tmp_path: Path, run: str) -> None:
    path = tmp_path / "hosts.toml"
    path.write_text(f"[[hosts]]\nname = \"b\"\nssh = \"root@box\"\nrun = '''{run}'''\n")
    assert load_fleet(path).hosts[0].run == run


def test_host_key_policy(tmp_path: Path) -> None:
    fleet = load_fleet(
        write_hosts(
            tmp_path,
            """
            [[hosts]]
            name = "a"
            ssh = "root@a"
            [[hosts]]
            name = "b"
            ssh = "root@b"
            host_key = "accept-new"
            """,
        )
    )
    assert [h.host_key for h in fleet.hosts] == ["strict", "accept-new"]
    err = load_error(tmp_path, '[[hosts]]\nname = "a"\nssh = "root@a"\nhost_key = "no"\n')
    assert (err.line, err.key) == (4, "host_key")
    assert "no setting that turns host-key checking off" in err.message


def test_verify_python_is_a_local_path(tmp_path: Path) -> None:
    fleet = load_fleet(write_hosts(tmp_path, '[fleet]\nverify_python = "envs/train/bin/python"\n'))
    assert fleet.verify_python == str(tmp_path / "envs/train/bin/python")
    assert load_fleet(write_hosts(tmp_path, "[fleet]\n")).verify_python is None


# --- the default pull root is never a whole home -----------------------------------------


@pytest.mark.parametrize(
    ("extra", "default"),
    [
        ("", '"~" (the default workdir)'),
        ('workdir = "~/"', '"~/" (from workdir)'),
        ('workdir = "$HOME"', '"$HOME" (from workdir)'),
        ('workdir = "/w"\ndurable_dir = "${HOME}/."', '"${HOME}/." (from durable_dir)'),
        ('workdir = "/root/"', '"/root/" (from workdir)'),
        ('workdir = "/home/ubuntu"', '"/home/ubuntu" (from workdir)'),
        ('workdir = "~ubuntu"', '"~ubuntu" (from workdir)'),
    ],
)
def test_a_default_pull_of_the_whole_home_is_refused_with_the_fix(
    tmp_path: Path, extra: str, default: str
) -> None:
    path = write_hosts(tmp_path, f'[[hosts]]\nname = "ok"\nssh = "a"\npull = ["/"]\n\n'
                 f'[[hosts]]\nname = "a100"\nssh = "b"\n{extra}\n')  # fmt: skip
    ok, host = load_fleet(path).hosts  # the file loads: watching needs no pull folder
    assert ok.pull == ("/",) and ok.pull_refused is None  # above a home: the user's choice
    assert host.pull_refused == (
        f"{path}:6: pull: host 'a100' names no pull folders, and pulls would default to "
        f"{default}: the whole home on the box, .ssh and all — name the folders to pull, "
        'e.g. pull = ["~/runs"] (or set durable_dir = "/workspace/results")'
    )


@pytest.mark.parametrize(
    "pull", ['["~"]', '["~/"]', '["/workspace/runs", "$HOME"]', '["/root"]', '["/home/ubuntu/"]']
)
def test_an_explicit_pull_of_the_whole_home_is_refused_with_the_fix(
    tmp_path: Path, pull: str
) -> None:
    """``pull = ["~"]`` (which ``add`` took) pulled the code, caches and rgt-tui's own
    records too; refused as a defaulted home is, naming the folder and the fix."""
    path = write_hosts(tmp_path, f'[[hosts]]\nname = "a100"\nssh = "b"\npull = {pull}\n')
    (host,) = load_fleet(path).hosts  # the file loads: watching needs no pull folder
    home = [p for p in json.loads(pull) if p != "/workspace/runs"][0]
    assert host.pull_refused == (
        f"{path}:4: pull: host 'a100' pulls \"{home}\": the whole home on the box (.ssh, the "
        "code, caches, rgt-tui's own records and all) — name the folders your results are in "
        'instead, e.g. pull = ["~/runs"]'
    )


@pytest.mark.parametrize(
    "extra",
    [
        'pull = ["~/runs"]',
        'pull = ["/home", "/"]',
        'workdir = "~/experiments"',
        'workdir = "/workspace"',
        'durable_dir = "/workspace/persist"',
        'workdir = "/home"',
        'workdir = "/root/work"',
        'workdir = "/"\ndurable_dir = "/"',
    ],
)
def test_a_default_pull_below_or_beside_the_home_is_allowed(tmp_path: Path, extra: str) -> None:
    (host,) = load_fleet(
        write_hosts(tmp_path, f'[[hosts]]\nname = "b"\nssh = "b"\n{extra}\n')
    ).hosts
    assert host.pull_refused is None


def test_this_machine_alone_is_never_pulled_whole() -> None:
    (host,) = load_fleet(None).hosts
    assert host.pull_refused is not None and 'pull = ["~/runs"]' in host.pull_refused
    assert "whole home" in host.pull_refused


def test_the_repo_examples_keep_loading_with_their_pulls(tmp_path: Path) -> None:
    """Uncommented, the examples load and only the one that says so refuses its pull (the
    demo's fleet file is checked where a demo fleet runs: test_loopback)."""
    uncommented = re.sub(r"(?m)^# ", "", REPO_HOSTS.read_text(encoding="utf-8"))
    refused = {
        h.name for h in load_fleet(write_hosts(tmp_path, uncommented)).hosts if h.pull_refused
    }
    assert refused <= {"lambda-h100"}  # "everything else takes its default"


def test_run_template_brackets_load_and_literal_shell_brackets_stay(tmp_path: Path) -> None:
    """An optional [--epochs {epochs}] part loads; brackets around no placeholder are shell
    text (a test, a glob), so templates written before optional parts keep loading."""
    for run in (
        "python t.py --config {cfg} [--epochs {epochs}] --out {out}",
        "[ -d x ] && [[ -f y ]] && ls r[0-9] && python t.py {cfg} --epochs {epochs}",
    ):
        path = tmp_path / "hosts.toml"
        path.write_text(f"[[hosts]]\nname = \"b\"\nssh = \"root@box\"\nrun = '''{run}'''\n")
        assert load_fleet(path).hosts[0].run == run


@pytest.mark.parametrize("name", ["PATH", "HOME", "LD_PRELOAD", "UID", "CUDA_VISIBLE_DEVICES"])
def test_a_credential_cannot_take_a_name_the_cells_live_by(tmp_path: Path, name: str) -> None:
    """A credential exported as PATH broke every cell ("exec: bash: not found", a user's
    hour): refused with its line and how to name it."""
    err = load_error(tmp_path, f'[fleet]\n[fleet.credentials]\n{name} = {{ env = "X1" }}\n')
    assert err.key == name and err.line == 3, (err.line, err.key)
    assert f"{name} is a variable the cells' shell or runner lives by" in err.message
    assert "WANDB_API_KEY" in err.message


def test_a_credential_with_a_secrets_name_loads(tmp_path: Path) -> None:
    path = tmp_path / "hosts.toml"
    path.write_text(
        '[fleet]\n[fleet.credentials]\nHF_TOKEN = { env = "X1" }\npath = { env = "X2" }\n'
    )
    # Environment names are case-sensitive: a lower-case "path" is not PATH.
    assert [c.name for c in load_fleet(path).ready.credentials] == ["HF_TOKEN", "path"]


def test_every_credential_mistake_is_named_at_its_own_line_in_one_run(tmp_path: Path) -> None:
    """A user's hour met [fleet.credentials] mistakes one per run, each at the table's
    header line, and "unknown source 'netrc'" for a netrc whose value was a number."""
    err = load_error(
        tmp_path,
        "[fleet]\n[fleet.credentials]\n"
        'HF_TOKEN = { env = "X" }\n'  # 3: good
        'PATH = { env = "X" }\n'  # 4
        "FOO = { netrc = 3 }\n"  # 5
        'BAR = "literal-secret-value"\n'  # 6
        'BAZ = { vault = "x" }\n',  # 7
    )
    found = [(p.line, p.key) for p in err.problems]
    assert found == [(4, "PATH"), (5, "FOO"), (6, "BAR"), (7, "BAZ")], found
    said = [p.message for p in err.problems]
    assert said[1].startswith("netrc must be a non-empty text, not a number"), said[1]
    assert "unknown source" not in said[1]
    assert said[3].startswith("unknown source 'vault' — expected one of env, netrc, file")
    assert not any("literal-secret-value" in m for m in said)  # never the secret itself
    # The key names the credential once: "hosts.toml:5: FOO: netrc must …".
    assert ": FOO: netrc must" in str(err.problems[1]) and "FOO: FOO" not in str(err.problems[1])
    two = load_error(tmp_path, '[fleet]\n[fleet.credentials]\nX_KEY = { env = "A", file = "/b" }\n')
    assert two.message.startswith("one source, not 2 (env, file)"), two.message
    shaped = load_error(tmp_path, "[fleet]\n[fleet.credentials]\nX_KEY = { env = 123456 }\n")
    assert "123456" not in str(shaped), str(shaped)  # a mis-shaped value may be the secret


def test_a_token_pasted_where_its_source_goes_is_refused_without_repeating_it(
    tmp_path: Path,
) -> None:
    """h573 #3: a token given as an env variable's or a file's name was echoed whole,
    three times per credential, by every preflight and launch ("the variable hf_… is not
    set … export hf_…=")."""
    err = load_error(
        tmp_path,
        "[fleet]\n[fleet.credentials]\n"
        'HF_TOKEN = { env = "hf_ENVNAMESECRETx1234567abcdefGHIJKLmn" }\n'  # 3
        'GH_TOKEN = { file = "~/ghp_abcdefghijklmnopqrstuVWXYZ0123456789" }\n'  # 4
        'WANDB_API_KEY = { env = "WANDB_API_KEY" }\n'  # 5: good
        'HUB_KEY = { env = "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" }\n'  # 6: letters alone
        # Names, not tokens (review h574 #2): descriptive, not a provider's random shape.
        'HF_HOME_TOKEN = { file = "~/.secrets/hf_token_for_cluster" }\n'
        'GITLAB_TOKEN = { file = "~/keys/glpat-ci-runner-project-main" }\n'
        'HUB_TOKEN = { env = "hf_token_production_write" }\n'
        'CI_TOKEN = { env = "CI_RUNNER_PROJECT_MAIN" }\n'
        # h603 #3: keys of no known prefix (W&B's 40 hex digits, an OpenAI sk-…).
        'WANDB_KEY = { env = "a3f9c2e18b7d4f6a9c0e2b5d8f1a4c7e9b2d5f80" }\n'  # 11
        'OPENAI_API_KEY = { env = "sk-proj-Zq8xY2VbN0" }\n'  # 12
        'NETRC_KEY = { netrc = "a3f9c2e18b7d4f6a9c0e2b5d8f1a4c7e9b2d5f81" }\n'  # 13
        'LONG_NAME = { env = "WANDB_API_KEY_FOR_PROJECT_2024_11_30_TEAM" }\n'
        # Keys that are valid variable names by shape (an AWS key id, Stripe's).
        'AWS_ACCESS_KEY_ID = { env = "AKIAIOSFODNN7EXAMPLE" }\n'  # 15
        'STRIPE_KEY = { env = "sk_live_4eC39HqLyjWDarjtT1zdp7dc" }\n'  # 16
        'AWS_KEY_NAME = { env = "AKIA_KEY_FOR_TEAM" }\n',  # a name
    )
    assert [(p.line, p.key) for p in err.problems] == [
        (3, "HF_TOKEN"),
        (4, "GH_TOKEN"),
        (6, "HUB_KEY"),
        (11, "WANDB_KEY"),
        (12, "OPENAI_API_KEY"),
        (13, "NETRC_KEY"),
        (15, "AWS_ACCESS_KEY_ID"),
        (16, "STRIPE_KEY"),
    ]
    said = " ".join(p.message for p in err.problems) + str(err)
    assert "ENVNAMESECRET" not in said and "abcdefghijklmnop" not in said, said
    assert "NqVwYSVP" not in said and "c2e18b7d" not in said and "Zq8xY" not in said, said
    assert "IOSFODNN" not in said and "4eC39Hq" not in said, said
    assert "env must name an environment variable" in said, said
    assert "the env given is a token itself (hf_…), not where one is" in said, said
    assert "the file given is a token itself (ghp…)" in said, said  # by the file's name


def test_a_fleet_file_that_is_there_but_no_file_is_named_not_called_missing(tmp_path: Path) -> None:
    """h581 #8: ./hosts.toml as a link to nothing read "no hosts.toml here" and 'local'
    stood in; a FIFO named by --hosts read "fleet file not found"."""
    (tmp_path / "hosts.toml").symlink_to(tmp_path / "gone" / "real.toml")
    with pytest.raises(ConfigError, match=r"a symlink to .*gone/real\.toml, which is not there"):
        resolve_fleet_path(None, {}, tmp_path)
    os.mkfifo(tmp_path / "fifo.toml")
    with pytest.raises(ConfigError, match="not a regular file"):
        resolve_fleet_path("fifo.toml", {}, tmp_path)
    (tmp_path / "hosts.toml").unlink()
    assert resolve_fleet_path(None, {}, tmp_path) is None  # nothing there: 'local' stands in
    (tmp_path / "hosts.toml").mkdir()  # a folder: said as one (review h584 #3)
    with pytest.raises(ConfigError, match="is a folder, not a fleet file"):
        resolve_fleet_path(None, {}, tmp_path)
