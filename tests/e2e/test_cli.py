"""The command line's one table: every row parsed, run and reported the same way.

Over 450 lines: one table of every command, checked row by row; split, the rows would
no longer be seen against each other."""

from __future__ import annotations

import ast
import asyncio
import inspect
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from support.machine import closed_port

import rgt_tui
from rgt_tui.cli import exit_codes, main
from rgt_tui.cli.logs import LogPrinter
from rgt_tui.cli.runner import Lazy
from rgt_tui.cli.table import COMMANDS, GROUPS
from rgt_tui.domain.logscan import KILLED, NCCL, LogLine

HOST_ROWS = [row for row in COMMANDS if row.host != "none"]


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--help"])
    assert stopped.value.code == 0
    return capsys.readouterr().out


def _listed(help_text: str) -> set[str]:
    """The sub-commands a --help lists: the names indented under the COMMAND/ACTION line."""
    return set(re.findall(r"^    (\S+)(?:\s|$)", help_text, re.MULTILINE))


def test_the_table_is_every_command_help_shows(capsys: pytest.CaptureFixture[str]) -> None:
    top = {row.name.split()[0] for row in COMMANDS}
    assert _listed(_help(capsys)) == top
    for group in GROUPS:
        actions = {row.name.split()[1] for row in COMMANDS if row.name.startswith(f"{group} ")}
        assert actions and _listed(_help(capsys, group)) == actions
        # The top level's line for the group names each action (hour s31 CLI #13: it
        # named check, show and append, and a user looked elsewhere for kill).
        assert actions <= set(re.findall(r"\w+", GROUPS[group])), GROUPS[group]


@pytest.mark.parametrize("row", COMMANDS, ids=lambda row: row.name)
def test_each_row_has_help_and_a_host_argument_as_it_says(
    row, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = _help(capsys, *row.name.split()).split("\n\n")[0]
    # Every row takes the fleet file but the demo, which makes its own (it was accepted
    # and ignored: a user's hour).
    assert row.help and ("--hosts PATH" in usage) == row.fleet == (row.name != "demo")
    assert ("[HOST]" in usage) == (row.host in ("optional", "one-or-all"))
    # One spelling across commands (hour s33 CLI #13: `logs HOST [cell]` beside a help
    # that said CELL; `status --timeout TIMEOUT` where the others said S): positional
    # arguments in capitals, a seconds option's value S.
    rest = " ".join(usage.split())[len(f"usage: rgt-tui {row.name}") :]
    words = re.sub(r"\{[^}]*\}|--?[\w-]+", "", rest)  # choices and option names aside
    assert not re.findall(r"\b[a-z]\w*\b", words), usage
    for option, value in re.findall(r"--([\w-]+) ([A-Z_]+)", rest):
        assert value == "S" or not ("timeout" in option or option in ("poll", "seconds")), usage
    # `queue move CELL... --to HOST` names its destination by an option, not a host argument.
    bare = usage.replace("[HOST]", "").replace("--to HOST", "")
    assert (" HOST" in bare) == (row.host == "one")


def test_a_command_imports_its_own_module_and_no_other_commands() -> None:
    # Importing every command's module (each with its services) was a third of a one-shot
    # pull's start-up (issue 44); a fresh interpreter shows what one command loads.
    script = (
        "import sys\n"
        "from rgt_tui.cli import build_parser\n"
        "argv = ['queue', 'show', 'box1', '--json']\n"
        "args = build_parser(argv).parse_args(argv)\n"
        "assert args.json and args.host == 'box1', args\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('rgt_tui.cli.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(done.stdout.split())
    assert {"rgt_tui.cli.table", "rgt_tui.cli.runner"} <= loaded, loaded
    others = {"pull", "queue", "teardown", "watch", "add", "disk", "logs", "status", "tui"}
    assert not {f"rgt_tui.cli.{name}" for name in others} & loaded, loaded


@pytest.mark.parametrize("row", COMMANDS, ids=lambda row: row.name)
def test_connecting_rows_run_on_a_connection_and_the_others_do_not(row) -> None:
    # run_command awaits a connecting row's runner inside its event loop and calls the
    # others plainly: a row whose flag and runner disagree would never run.
    run = row.run.resolve() if isinstance(row.run, Lazy) else row.run
    assert inspect.iscoroutinefunction(run) == row.connects
    assert not row.connects or row.host == "one"


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    """Two hosts on this machine: looking them up never reaches a network."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "box1"\nssh = "local"\n\n[[hosts]]\nname = "gpu-a"\nssh = "local"\n'
    )
    return hosts


@pytest.mark.parametrize("row", HOST_ROWS, ids=lambda row: row.name)
def test_an_unknown_host_exits_2_naming_the_fleet_file_and_the_closest_name(
    row, fleet_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    more = ["cell_a"] if row.name == "queue retry" else []  # its CELLs are required
    code = main([*row.name.split(), "bxo1", *more, "--hosts", str(fleet_file)])
    err = capsys.readouterr().err
    assert code == exit_codes.EXIT_BAD_INPUT == 2, err
    assert f"rgt-tui {row.name}: no host named 'bxo1' in {fleet_file}" in err
    assert "known: box1, gpu-a" in err and "fix: did you mean 'box1'?" in err


def test_an_unknown_host_without_a_fleet_file_says_there_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RGT_HOSTS", "")
    assert main(["logs", "zzz"]) == exit_codes.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "no fleet file was found" in err and "known: local" in err and "--hosts PATH" in err


def test_status_of_one_host_samples_only_that_host(
    fleet_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "gpu-a", "--hosts", str(fleet_file), "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["name"] == "gpu-a" and report["reachable"]


def test_status_names_a_damaged_journal_with_its_file_and_fix(
    fleet_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bytes that are not UTF-8 in a host's journal raised a traceback in status; bad
    JSON there was silent, its spend's start and any teardown lost without a word (s36
    faults #1, #8)."""
    from rgt_tui.services.fleet.file import load_fleet
    from rgt_tui.services.journal import journal_for

    path = journal_for(load_fleet(fleet_file)).path("gpu-a")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xa3\x00garbage")
    assert main(["status", "gpu-a", "--hosts", str(fleet_file), "--json"]) == 0
    out, err = capsys.readouterr()
    (report,) = json.loads(out)
    assert report["name"] == "gpu-a" and report["reachable"]
    assert f"warning: gpu-a: {path}: the journal is damaged" in err, err
    assert f"mv {path} {path}.damaged" in err


@pytest.mark.parametrize("argv", [["queue", "show"], ["diagnose"], ["logs"]], ids=" ".join)
def test_an_unreachable_host_exits_1_with_one_message(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = tmp_path / "hosts.toml"
    with closed_port() as port:  # refuses, and no test beside this one can take it
        hosts.write_text(f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\n')
        assert main([*argv, "box1", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    out, err = capsys.readouterr()
    assert out == ""
    # The address and port refused (hour s22a #10: it named neither), and the fix.
    assert err.splitlines() == [
        f"rgt-tui {' '.join(argv)}: box1 unreachable: connection refused by "
        f"127.0.0.1:{port}: is sshd running on that port?",
        "  fix: check the port in the provider's SSH command (the fleet file's ssh for box1); "
        "if it answered there before, its sshd or the box restarted or stopped (a reboot, a "
        "stop, a preemption): try again once it is back",
    ]


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
def test_a_port_that_closes_before_the_handshake_says_so_not_connection_lost(
    reset: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hour s24b #6: a provider's proxy that accepts and closes before sshd answers (the
    container still starting) read only "connection lost", for a box never reached. As
    the timing goes the client meets a close or a reset (a CI run): both are said so."""
    import socket
    import struct
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    done = threading.Event()

    def close_each() -> None:
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            if reset:  # SO_LINGER 0: the close sends a reset
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    closer = threading.Thread(target=close_each, daemon=True)
    closer.start()
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\n')
    try:
        assert main(["diagnose", "box1", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    finally:
        done.set()
        closer.join(5)
        listener.close()
    err = capsys.readouterr().err
    assert (
        f"127.0.0.1:{port} accepted the connection and closed it before the SSH handshake ended"
        in err
    ), err
    assert "fix: wait a minute and try again" in err and "connection lost" not in err


def test_a_refusal_through_an_ssh_config_alias_names_where_it_went(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Host alias with a wrong Port (hour s22a #10): the refusal names the address and
    port ssh_config sent it to, and the alias's block to fix."""
    hosts = tmp_path / "hosts.toml"
    with closed_port() as port:
        (home / ".ssh").mkdir()
        (home / ".ssh" / "config").write_text(
            f"Host gpu-a\n  HostName 127.0.0.1\n  Port {port}\n  User me\n"
        )
        hosts.write_text('[[hosts]]\nname = "box1"\nssh = "gpu-a"\n')
        assert main(["queue", "show", "box1", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    err = capsys.readouterr().err
    assert (
        f"box1 unreachable: connection refused by 127.0.0.1:{port} (HostName 127.0.0.1 and "
        f"Port {port} from ~/.ssh/config): is sshd running on that port?"
    ) in err, err
    assert "and what ~/.ssh/config sets for gpu-a" in err


@pytest.mark.parametrize(
    "argv",
    [["queue", "show"], ["diagnose"], ["preflight"], ["vram"], ["disk"]],
    ids=" ".join,
)
def test_an_unreachable_host_with_json_is_a_json_answer_too(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``… --json | jq`` reads an answer: the host, unreachable, why (as status --json)."""
    hosts = tmp_path / "hosts.toml"
    with closed_port() as port:
        hosts.write_text(f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\n')
        assert main([*argv, "box1", "--hosts", str(hosts), "--json"]) == exit_codes.EXIT_PROBLEMS
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "host": "box1",
        "reachable": False,
        "error": f"connection refused by 127.0.0.1:{port}: is sshd running on that port?",
        "fix": "check the port in the provider's SSH command (the fleet file's ssh for box1); "
        "if it answered there before, its sshd or the box restarted or stopped (a reboot, a "
        "stop, a preemption): try again once it is back",
    }
    assert "box1 unreachable: connection refused" in err


def test_a_name_that_does_not_resolve_says_so_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in the address (.invalid never resolves, RFC 6761): the name and the fix."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "ghost"\nssh = "root@nonexistent-box.invalid"\n')
    assert main(["status", "ghost", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    out, err = capsys.readouterr()
    said = out + err
    assert "the address 'nonexistent-box.invalid' does not resolve" in said, said
    assert "check ghost's ssh = ... in the fleet file" in said, said


async def test_a_refused_host_key_exits_1_with_the_fix(make_loopback_fleet, tmp_path: Path) -> None:
    fleet = await make_loopback_fleet(1)
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    hosts = tmp_path / "hosts.toml"
    text = fleet.hosts_file.read_text()  # noqa: ASYNC240
    hosts.write_text(text.replace(str(fleet.known_hosts), str(empty)))  # noqa: ASYNC240
    err = io.StringIO()

    def run() -> int:  # the box lives in this event loop: the command runs in a thread
        import contextlib

        with contextlib.redirect_stderr(err):
            return main(["queue", "show", "box1", "--hosts", str(hosts)])

    assert await asyncio.to_thread(run) == exit_codes.EXIT_PROBLEMS
    message, fix = err.getvalue().splitlines()
    assert message.startswith("rgt-tui queue show: box1: unknown host key ssh-ed25519 SHA256:")
    assert str(empty) in message and "unreachable" not in message
    assert fix.startswith("  fix: if ssh-ed25519 SHA256:") and f">> {empty}" in fix


def test_the_launch_row_of_the_commands_doc_names_every_option_its_help_has(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Messages send users to these options ("relaunch with --fresh"): the doc must say them.
    options = set(re.findall(r"\[(--[a-z-]+)", _help(capsys, "launch").split("\n\n")[0]))
    doc = (Path(rgt_tui.__file__).parents[1] / "docs" / "commands.md").read_text()
    (row,) = [line for line in doc.splitlines() if line.startswith("| `rgt-tui launch ")]
    usage = re.split(r"(?<!\\)\|", row)[1]  # `auto\|tmux` is one cell
    assert {"--start", "--yes", "--detach", "--fresh", "--ack"} <= options
    assert [o for o in sorted(options - {"--hosts"}) if o not in usage] == []
    assert "`--detach`" in row and "`--fresh`" in row  # each said what it does


def test_the_exit_code_table_is_the_module_constants() -> None:
    rows = re.findall(r"^\| (\d+) \| `(EXIT_\w+)` \|", exit_codes.__doc__ or "", re.MULTILINE)
    documented = {name: int(code) for code, name in rows}
    defined = {k: v for k, v in vars(exit_codes).items() if k.startswith("EXIT_")}
    assert documented == defined and len(set(defined.values())) == len(defined)


def _package_sources() -> list[Path]:
    return sorted(Path(rgt_tui.__file__).parent.rglob("*.py"))


def test_exit_codes_are_defined_nowhere_else() -> None:
    where = []
    for path in _package_sources():
        if path.relative_to(Path(rgt_tui.__file__).parent) == Path("cli/exit_codes.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            targets += [node.target] if isinstance(node, ast.AnnAssign) else []
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            where += [f"{path.name}:{node.lineno}" for n in names if n.startswith("EXIT_")]
    assert not where, f"EXIT_* defined outside rgt_tui/cli/exit_codes.py: {where}"


def test_the_command_line_writes_no_escape_codes_by_hand() -> None:
    root = Path(rgt_tui.__file__).parent
    sources = [root / "__main__.py", *(root / "cli").glob("*.py")]
    assert root / "cli" / "runner.py" in sources
    for path in sources:
        text = path.read_text()
        assert not re.search(r"\\x1b|\\033|\\u001b|\\e\[", text), f"{path.name}: use Rich"


def _printed(console: Console, *lines: LogLine) -> str:
    LogPrinter(console, console).lines(lines)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_log_lines_reach_a_pipe_byte_for_byte_and_crashes_are_red_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    lines = (
        LogLine("step\t1\tloss 0.5", None),
        LogLine("RuntimeError: NCCL error", NCCL),
        LogLine("Killed", KILLED),
    )
    plain = _printed(Console(file=io.StringIO(), force_terminal=False), *lines)
    assert plain == "step\t1\tloss 0.5\n!! RuntimeError: NCCL error\n!! Killed\n"
    coloured = _printed(Console(file=io.StringIO(), force_terminal=True), *lines)
    assert "step\t1\tloss 0.5\n" in coloured  # tabs kept on a terminal too
    assert "\x1b[31m!! RuntimeError" in coloured and "\x1b[1;31m!! Killed" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    uncoloured = _printed(Console(file=io.StringIO(), force_terminal=True), *lines)
    assert "31m" not in uncoloured and "!! RuntimeError: NCCL error\n" in uncoloured


# --- issue 22: every fleet-file mistake at once; a bad --theme before the app starts ------


@pytest.fixture
def no_app(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """Stand in for the TUI and the demo: what they were started with, if they were."""
    started: list[dict[str, object]] = []

    def run_app(fleet: object, *, theme: str | None = None) -> int:
        started.append({"what": "app", "theme": theme})
        return 0

    def run_demo(boxes: int, *, theme: str | None = None) -> int:
        started.append({"what": "demo", "theme": theme})
        return 0

    monkeypatch.setattr("rgt_tui.app.run_app", run_app)
    monkeypatch.setattr("rgt_tui.demo.run.run_demo", run_demo)
    return started


@pytest.mark.parametrize("argv", [[], ["status"], ["queue", "check"]], ids=" ".join)
def test_every_mistake_of_the_fleet_file_is_shown_in_one_run(
    argv: list[str],
    tmp_path: Path,
    no_app: list[dict[str, object]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        'poll_seconds = 3\n[[hosts]]\nname = "a"\nssh = "root@@h:abc"\nepochs = 0\n'
        '[[hosts]]\nname = "b"\n'
    )
    code = main(["--hosts", str(hosts), *argv])
    err = capsys.readouterr().err
    assert code == exit_codes.EXIT_BAD_INPUT == 2 and no_app == []
    assert f"4 mistakes in {hosts}:" in err.splitlines()[0]
    for line, key in ((1, "poll_seconds"), (4, "ssh"), (5, "epochs"), (6, "ssh")):
        assert err.count(f"{hosts}:{line}: {key}: ") == 1, err
    assert "move it under [fleet]" in err and "'@' is doubled" in err


def _theme_lines(err: str) -> dict[str, list[str]]:
    """The groups a refused --theme lists: label -> names."""
    groups = {}
    for line in err.splitlines():
        label, sep, names = line.strip().partition(": ")
        if sep and not line.startswith("rgt-tui") and not label.startswith("fix"):
            groups[label] = [] if names == "none" else names.split(", ")
    return groups


@pytest.mark.parametrize("argv", [["--theme", "nosuch"], ["--theme", "nosuch", "demo"],
                                  ["demo", "--theme", "nosuch"]], ids=" ".join)  # fmt: skip
def test_an_unknown_theme_exits_2_before_anything_starts(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_app: list[dict[str, object]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user_dir = tmp_path / "xdg" / "rgt-tui" / "themes"
    user_dir.mkdir(parents=True)
    (user_dir / "mine.toml").write_text("primary = '#336699'\n")
    monkeypatch.chdir(tmp_path)
    assert main(argv) == exit_codes.EXIT_BAD_INPUT
    assert no_app == []
    err = capsys.readouterr().err
    assert "--theme nosuch: no such theme" in err.splitlines()[0]
    groups = _theme_lines(err)
    assert groups["rgt-tui's own"] == ["dark", "high-contrast", "light"]
    assert groups[f"yours, from {user_dir}"] == ["mine"]
    builtin = groups["Textual's built-in"]
    assert "textual-dark" in builtin and "nord" in builtin
    assert not {"dark", "light", "mine"} & set(builtin)


def test_a_near_miss_theme_gets_did_you_mean(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_app: list[dict[str, object]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    assert main(["--theme", "hihg-contrast"]) == exit_codes.EXIT_BAD_INPUT
    assert "fix: did you mean --theme high-contrast?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "started"),
    [
        (["--theme", "light"], {"what": "app", "theme": "light"}),
        (["--theme", "textual-light"], {"what": "app", "theme": "textual-light"}),
        (["--theme", "mine"], {"what": "app", "theme": "mine"}),
        (["--theme", "light", "demo"], {"what": "demo", "theme": "light"}),
        (["demo", "--theme", "mine"], {"what": "demo", "theme": "mine"}),
        (["demo"], {"what": "demo", "theme": None}),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_a_known_theme_reaches_the_app(
    argv: list[str],
    started: dict[str, object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_app: list[dict[str, object]],
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user_dir = tmp_path / "xdg" / "rgt-tui" / "themes"
    user_dir.mkdir(parents=True)
    (user_dir / "mine.toml").write_text("primary = '#336699'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RGT_HOSTS", "")
    assert main(argv) == 0
    assert no_app == [started]


def test_a_box_never_reached_is_told_how_to_stop_counting_it(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hour s24b #7: a box never reached has no way through its gate; the checklist said
    only "once the box answers", not that a box never started is dropped from the file."""
    hosts = tmp_path / "hosts.toml"
    with closed_port() as port:
        hosts.write_text(f'[[hosts]]\nname = "box1"\nssh = "me@127.0.0.1:{port}"\n')
        code = main(["teardown", "box1", "--check", "--hosts", str(hosts)])
    out = " ".join(capsys.readouterr().out.split())
    assert code != 0 and "box not identified" in out, out
    assert "if it never started, or is destroyed already — look in the provider's console" in out
    assert (
        "there is nothing to tear down: remove its [[hosts]] entry from the fleet file to stop "
        "watching it and counting its cost"
    ) in out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        # A poll of 0 read the box's log in a busy loop; NaN never slept (hour s31 CLI #11).
        (["logs", "box1", "--poll", "0"], "argument --poll: must be at least 0.05 seconds, got 0"),
        # 1e-9 passed "more than 0" and polled in a busy loop (hour s33 CLI #3).
        (["logs", "box1", "--poll", "1e-9"], "argument --poll: must be at least 0.05 seconds"),
        (["logs", "box1", "--poll", "nan"], "argument --poll: must be a finite number of seconds"),
        (["status", "--timeout", "-1"], "argument --timeout: must be at least 0.05 seconds"),
        (["watch", "--once", "--timeout", "inf"], "argument --timeout: must be a finite number"),
        # Options the watch would have ignored: refused, not dropped.
        (["watch", "--timeout", "5"], "rgt-tui watch: --timeout bounds the wait of --once only"),
        (
            ["watch", "--once", "--metrics", "127.0.0.1:9"],
            "rgt-tui watch: --metrics serves a watch that keeps running; --once ends after",
        ),
    ],
)
def test_seconds_and_options_that_would_do_nothing_are_refused(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "box1"\nssh = "root@192.0.2.1"\n')
    try:
        code = main([*argv, "--hosts", str(hosts)])
    except SystemExit as stopped:  # argparse's own refusal
        code = stopped.code
    assert code == exit_codes.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert said in err, err


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["status", "--bogus"], "usage: rgt-tui status [-h]"),
        (["queue", "show", "box1", "--bogus", "x"], "usage: rgt-tui queue show [-h]"),
        (["--bogus"], "usage: rgt-tui [-h] [--version]"),
    ],
)
def test_a_mistyped_option_is_told_with_its_own_commands_usage(
    argv: list[str], usage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hour s31 CLI #7: `rgt-tui status --bogus` printed the top level's usage, which lists
    no option of status's; the command's own usage says what it takes."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == exit_codes.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(usage), err
    assert f"error: unrecognized arguments: {' '.join(argv[argv.index('--bogus') :])}" in err
