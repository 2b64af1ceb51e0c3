"""A fleet file's mistakes all at once (issue 22): every one with its line and fix, a pasted
``ssh …`` command read as the target it names, and keys in the wrong table told where to go."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fleet_files import load_error, write_hosts

from rgt_tui.domain.config import SSH_FORMS, SshTarget
from rgt_tui.domain.ssh_target import is_ssh_command, parse_ssh_command, parse_ssh_target
from rgt_tui.services.fleet.file import load_fleet

MANY = """
poll_seconds = 3

[fleet]
default_epochs = 0

[[hosts]]
name = "a100"
ssh = "root@@host:abc"
cost_per_hr = 1.2

[[hosts]]
name = "b"
results_dir = "x"

[[hosts]]
name = "a100"
ssh = "box"
profile = "vast"
"""
# Every mistake of MANY: (line, key, a phrase of its message).
MANY_MISTAKES = [
    (1, "poll_seconds", "move it under [fleet]"),
    (4, "default_epochs", "expected a whole number > 0, got 0"),
    (8, "ssh", "'@' is doubled"),
    (9, "cost_per_hr", "did you mean 'cost_per_hour'?"),
    (11, "ssh", "missing required key 'ssh'"),
    (13, "results_dir", "move it under [fleet]"),
    (16, "name", "host name 'a100' is already used by the entry at line 6"),
    (18, "profile", "did you mean 'vastai'?"),
]


def test_every_mistake_of_a_file_is_reported_once_with_its_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, MANY)
    found = [(p.line, p.key) for p in err.problems]
    assert found == [(line, key) for line, key, _ in MANY_MISTAKES]  # each once, in order
    for problem, (_, _, phrase) in zip(err.problems, MANY_MISTAKES, strict=True):
        assert phrase in problem.message
    # The error itself reads as the first mistake, as one-mistake callers expect.
    assert (err.line, err.key) == (1, "poll_seconds")
    lines = str(err).splitlines()
    assert lines[0] == f"{len(MANY_MISTAKES)} mistakes in {err.file}:"
    assert lines[1:] == [str(p) for p in err.problems]
    for line, key, _ in MANY_MISTAKES:
        assert sum(s.startswith(f"{err.file}:{line}: {key}: ") for s in lines) == 1


def test_fixing_one_mistake_leaves_the_others_reported(tmp_path: Path) -> None:
    fixed = MANY.replace('profile = "vast"', 'profile = "vastai"')
    err = load_error(tmp_path, fixed)
    assert [p.line for p in err.problems] == [m[0] for m in MANY_MISTAKES if m[1] != "profile"]


def test_one_mistake_reads_as_before(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[[hosts]]\nname = "a"\nssh = "a"\nepochs = 0\n')
    assert err.problems == (err,)
    assert str(err) == f"{err.file}:4: epochs: expected a whole number > 0, got 0"


def test_the_same_mistake_in_many_entries_is_reported_for_each(tmp_path: Path) -> None:
    text = '[[hosts]]\nname = "a"\n\n[[hosts]]\nname = "b"\n\n[[hosts]]\nname = "c"\n'
    err = load_error(tmp_path, text)
    assert [(p.line, p.key) for p in err.problems] == [(1, "ssh"), (4, "ssh"), (7, "ssh")]
    assert "'b'" in err.problems[1].message


def test_a_missing_ssh_names_the_file_once(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[[hosts]]\nname = "a"\n')
    assert str(err).count(err.file) == 1
    assert str(err) == (
        f"{err.file}:1: ssh: missing required key 'ssh' — add ssh = \"user@host:port\" "
        "to the [[hosts]] entry for 'a'"
    )


def test_a_syntax_error_stops_the_reading_and_comes_alone(tmp_path: Path) -> None:
    err = load_error(tmp_path, 'poll_seconds = 3\n[[hosts]]\nname = "a\n')
    assert len(err.problems) == 1 and err.line == 3 and "TOML syntax error" in err.message


# --- the ssh value ----------------------------------------------------------------------


def test_a_double_at_and_a_bad_port_are_both_named_and_the_user_is_not_blamed() -> None:
    with pytest.raises(ValueError) as info:
        parse_ssh_target("root@@host:abc")
    message = str(info.value)
    assert "'@' is doubled ('@@')" in message
    assert "the port 'abc' after ':' is not a number" in message
    assert "login name" not in message and "user 'root'" not in message
    assert SSH_FORMS in message


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("a@b@c", "'@' appears 2 times"),
        ("root@host:", "the port '' after ':' is empty"),
        ("us er@host", "it contains whitespace"),
        ("-p 22 root@h", "starts with 'ssh'"),
    ],
)
def test_other_ssh_faults_are_named(text: str, phrase: str) -> None:
    with pytest.raises(ValueError, match="accepted forms") as info:
        parse_ssh_target(text)
    assert phrase in str(info.value)


@pytest.mark.parametrize(
    ("command", "target", "identity"),
    [
        (
            "ssh -p 22034 root@ssh4.vast.ai -L 8080:localhost:8080",
            SshTarget("root", "ssh4.vast.ai", 22034),
            None,
        ),
        (
            "ssh root@213.173.108.12 -p 17445 -i ~/.ssh/id_ed25519",
            SshTarget("root", "213.173.108.12", 17445),
            "~/.ssh/id_ed25519",
        ),
        ("ssh -i key.pem ubuntu@1.2.3.4", SshTarget("ubuntu", "1.2.3.4", None), "key.pem"),
        ("ssh -NfL 6006:localhost:6006 -p22 u@h", SshTarget("u", "h", 22), None),
        ("ssh -l root -p 2222 box", SshTarget("root", "box", 2222), None),
        ("ssh ssh://root@box:2200", SshTarget("root", "box", 2200), None),
        (
            "ssh -o StrictHostKeyChecking=no -o Port=2201 -o User=me box",
            SshTarget("me", "box", 2201),
            None,
        ),
        ("/usr/bin/ssh -A -v root@box", SshTarget("root", "box", None), None),
        (
            "ssh -o 'Port = 22' -o 'IdentityFile ~/.ssh/k' box",
            SshTarget(None, "box", 22),
            "~/.ssh/k",
        ),
    ],
)
def test_a_pasted_ssh_command_is_read_as_its_target(
    command: str, target: SshTarget, identity: str | None
) -> None:
    assert is_ssh_command(command)
    pasted = parse_ssh_command(command)
    assert (pasted.target, pasted.identity_file) == (target, identity)


def test_ssh_alone_is_a_host_alias_not_a_command() -> None:
    assert not is_ssh_command("ssh")
    assert parse_ssh_target("ssh") == SshTarget(None, "ssh", None)


@pytest.mark.parametrize(
    ("command", "phrase", "fix"),
    [
        (
            "ssh -p 22 root@box nvidia-smi -L",
            "runs a command on the box (nvidia-smi -L)",
            "root@box:22",
        ),
        ("ssh -p 22 -p 23 root@box", "-p is given twice (22 and 23)", "root@box:22"),
        ("ssh -l bob alice@box", "two different users", "alice@box"),
    ],
)
def test_a_pasted_command_that_cannot_be_taken_shows_the_value_to_write(
    command: str, phrase: str, fix: str
) -> None:
    with pytest.raises(ValueError) as info:
        parse_ssh_command(command)
    message = str(info.value)
    assert phrase in message
    assert message.endswith(f'write ssh = "{fix}"')


@pytest.mark.parametrize(
    ("command", "phrase", "host"),
    [
        ("ssh -J jump -p 22034 root@ssh4.vast.ai", "-J (a jump host)", "ssh4.vast.ai"),
        ("ssh -o ProxyCommand=nc root@box -p 2222", "-o ProxyCommand=nc", "box"),
        ("ssh -F ~/.ssh/work root@box", "-F (another ssh config file)", "box"),
    ],
)
def test_a_setting_only_ssh_config_carries_is_fixed_by_an_alias_not_the_bare_address(
    command: str, phrase: str, host: str
) -> None:
    """h581 #1: "-J … cannot be taken (put it under a Host alias) — write ssh =
    root@ssh4.vast.ai:22034" named an address the box cannot be reached at alone."""
    with pytest.raises(ValueError) as info:
        parse_ssh_command(command)
    message = str(info.value)
    assert phrase in message and "write ssh =" not in message
    assert message.endswith(
        f'write the Host alias (HostName {host} and the rest), then ssh = "<that alias>"'
    )


@pytest.mark.parametrize(
    ("command", "phrase"),
    [
        ("ssh -p", "it names no user@host"),
        ("ssh -p abc root@box", "the port 'abc' given to -p is not a number"),
        ("ssh -p 22 'root@box", "cannot read the pasted ssh command"),
    ],
)
def test_a_pasted_command_with_no_usable_target_says_why(command: str, phrase: str) -> None:
    with pytest.raises(ValueError, match="pasted ssh command") as info:
        parse_ssh_command(command)
    assert phrase in str(info.value)


def test_a_pasted_command_in_the_fleet_file_fills_the_target_and_the_key(tmp_path: Path) -> None:
    path = write_hosts(
        tmp_path,
        """
        [[hosts]]
        name = "vast"
        ssh = "ssh -p 22034 root@ssh4.vast.ai -L 8080:localhost:8080"

        [[hosts]]
        name = "pod"
        ssh = "ssh root@1.2.3.4 -p 17445 -i ~/.ssh/id_pod"
        """,
    )
    vast, pod = load_fleet(path).hosts
    assert vast.ssh == SshTarget("root", "ssh4.vast.ai", 22034) and vast.identity_file is None
    assert pod.ssh == SshTarget("root", "1.2.3.4", 17445)
    assert pod.identity_file == Path("~/.ssh/id_pod").expanduser()


def test_a_pasted_key_never_overrides_identity_file(tmp_path: Path) -> None:
    same = '[[hosts]]\nname = "a"\nssh = "ssh -i ~/.ssh/k root@h"\nidentity_file = "~/.ssh/k"\n'
    (host,) = load_fleet(write_hosts(tmp_path, same)).hosts
    assert host.identity_file == Path("~/.ssh/k").expanduser()
    err = load_error(
        tmp_path, same.replace('identity_file = "~/.ssh/k"', 'identity_file = "~/.ssh/j"')
    )
    assert (err.line, err.key) == (3, "ssh")
    assert "-i ~/.ssh/k is not identity_file" in err.message and "keep one" in err.message


def test_a_refused_pasted_command_in_the_file_keeps_file_line_and_fix(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[[hosts]]\nname = "a"\nssh = "ssh -J j -p 2 root@h"\n')
    assert (err.line, err.key) == (3, "ssh")
    assert str(err).count(err.file) == 1
    assert str(err).endswith(
        'write the Host alias (HostName h and the rest), then ssh = "<that alias>"'
    )


# --- keys in the wrong table ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "key", "phrase"),
    [
        (
            "poll_seconds = 3\n",
            1,
            "poll_seconds",
            "'poll_seconds' is a [fleet] setting — move it under [fleet]",
        ),
        (
            '# c\nname = "a"\n',
            2,
            "name",
            "'name' is a host setting — move it into a [[hosts]] entry",
        ),
        ("temp_c = 80\n", 1, "temp_c", "move it under [fleet.thresholds]"),
        ("[fleet]\ntemp_c = 80\n", 2, "temp_c", "move it under [fleet.thresholds]"),
        ('[fleet]\nssh = "a"\n', 2, "ssh", "move it into a [[hosts]] entry"),
        ("[thresholds]\ntemp_c = 80\n", 1, "thresholds", "write its header as [fleet.thresholds]"),
        ("[fleet.thresholds]\npoll_seconds = 1\n", 2, "poll_seconds", "move it under [fleet]"),
        ('[[host]]\nname = "a"\n', 1, "host", "unknown table [[host]] — did you mean [[hosts]]?"),
        (
            "colour = 3\n",
            1,
            "colour",
            "the top level holds only the [fleet] table and [[hosts]] entries",
        ),
    ],
)
def test_a_key_in_the_wrong_table_is_told_where_it_belongs(
    tmp_path: Path, text: str, line: int, key: str, phrase: str
) -> None:
    err = load_error(tmp_path, text)
    assert (err.line, err.key) == (line, key)
    assert phrase in err.message
    assert "expected one of" not in err.message


def test_a_fleet_key_after_a_hosts_header_names_that_header(tmp_path: Path) -> None:
    text = (
        '[[hosts]]\nname = "a"\nssh = "a"\n\n[[hosts]]\nname = "b"\nssh = "b"\npoll_seconds = 5\n'
    )
    err = load_error(tmp_path, text)
    assert (err.line, err.key) == (8, "poll_seconds")
    assert "move it under [fleet]" in err.message
    assert "the nearest table header above it: here the [[hosts]] entry at line 5" in err.message


def test_messages_name_hosts_entries_with_double_brackets(tmp_path: Path) -> None:
    err = load_error(tmp_path, 'name = "a"\nssh = "a"\n[hosts]\nname = "b"\n')
    assert len(err.problems) == 3
    for problem in err.problems:
        assert "[[hosts]]" in problem.message
        assert "[[host]]" not in problem.message
