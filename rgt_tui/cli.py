"""The command line: one table of sub-commands, and the TUI when none is given.

Each row of ``COMMANDS`` says everything about a sub-command: its name and help, what adds
its arguments, what runs it, whether it takes a HOST and whether it runs on a connection
to it; ``run_command`` (cli_command.py) runs every row the same way. Exit codes:
rgt_tui.exit_codes.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from rgt_tui import __version__
from rgt_tui.cli_add import add_add_arguments, run_add
from rgt_tui.cli_args import add_hosts_arg
from rgt_tui.cli_command import Call, Command, no_arguments, run_command
from rgt_tui.cli_logs import add_logs_arguments, logs_interrupted, run_logs
from rgt_tui.cli_pull import (
    add_pull_arguments,
    add_verify_arguments,
    pull_interrupted,
    run_pull,
    run_verify,
)
from rgt_tui.cli_queue import (
    add_check_arguments,
    add_launch_arguments,
    json_flag,
    run_append,
    run_check,
    run_diagnose,
    run_launch,
    run_show,
)
from rgt_tui.cli_status import add_status_arguments, run_status
from rgt_tui.cli_teardown import add_teardown_arguments, run_teardown
from rgt_tui.exit_codes import EXIT_BAD_INPUT


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """``--boxes`` and ``--theme``."""
    parser.add_argument("--boxes", type=int, default=3, help="number of demo boxes (default 3)")
    # SUPPRESS: `rgt-tui --theme light demo` keeps the top level's value (no None over it).
    parser.add_argument("--theme", metavar="NAME", default=argparse.SUPPRESS, help="colour theme")


def refuse_unknown_theme(call: Call) -> int | None:
    """Exit 2 before the app starts when ``--theme`` names no theme, listing rgt-tui's
    own themes apart from Textual's built-in ones; None when it names one, or none."""
    name = getattr(call.args, "theme", None)
    if name is None:
        return None
    from rgt_tui.themes import unknown_theme  # Textual: only for the commands that draw

    problem = unknown_theme(name)
    if problem is None:
        return None
    message, fix = problem
    return call.fail(message, fix=fix, code=EXIT_BAD_INPUT)


def run_demo(call: Call) -> int:
    """Start N loopback boxes, open the TUI on them, stop them on exit."""
    from rgt_tui.demo.run import run_demo as demo

    if call.args.boxes < 1:
        return call.fail("--boxes must be at least 1", code=EXIT_BAD_INPUT)
    refused = refuse_unknown_theme(call)
    if refused is not None:
        return refused
    return demo(call.args.boxes, theme=call.args.theme)


def run_tui(call: Call) -> int:
    """Open the TUI on the fleet file (every mistake in it, or a bad --theme, exits 2
    first: run_command reports a ConfigError with all of the file's mistakes)."""
    from rgt_tui.app import run_app

    refused = refuse_unknown_theme(call)
    if refused is not None:
        return refused
    return run_app(call.fleet, theme=call.args.theme)


# Groups of sub-commands (`rgt-tui queue show`): their help; their actions are rows below.
GROUPS = {"queue": "check queue files, show a queue, append cells"}

COMMANDS: tuple[Command, ...] = (
    Command(
        "status",
        "one telemetry sample from every host (or HOST), as a table or JSON",
        add_status_arguments,
        run_status,
        host="optional",  # samples each host on a connection of its own: not `connects`
    ),
    Command(
        "queue check",
        "check every queue of the fleet (plus FILEs)",
        add_check_arguments,
        run_check,
    ),
    Command(
        "queue show",
        "every cell's state on HOST, from the box's records",
        json_flag("the view"),
        run_show,
        host="one",
        connects=True,
    ),
    Command(
        "queue append",
        "send lines appended to HOST's queue file",
        no_arguments,
        run_append,
        host="one",
        connects=True,
    ),
    Command(
        "launch",
        "launch HOST's queue, detached (asks first)",
        add_launch_arguments,
        run_launch,
        host="one",  # asks between two connections of its own: not `connects`
    ),
    Command(
        "diagnose",
        "why HOST's last run vanished (reboot, OOM, hang-up, kill)",
        json_flag("the diagnosis"),
        run_diagnose,
        host="one",
        connects=True,
    ),
    Command(
        "logs",
        "print or follow a host's queue log, or one cell's log",
        add_logs_arguments,
        run_logs,
        host="one",
        connects=True,
        interrupted=logs_interrupted,
        description="Print a host's queue log (no CELL) or one cell's own log; "
        "--follow keeps printing new lines until Ctrl-C, across drops and log rotation.",
    ),
    Command(
        "pull",
        "pull HOST's results: manifest on the box, resumable hash-checked copies",
        add_pull_arguments,
        run_pull,
        host="one",
        connects=True,
        interrupted=pull_interrupted,
    ),
    Command(
        "verify",
        "verify HOST's pulled copy: hashes, loads, leftovers, roster",
        add_verify_arguments,
        run_verify,
        host="one",
        connects=True,
    ),
    Command(
        "teardown",
        "the teardown checklist; tears down only after every check and your typed confirmation",
        add_teardown_arguments,
        run_teardown,
        host="one",  # asks between two connections of its own: not `connects`
    ),
    Command(
        "add",
        "add a box: paste its SSH command, check its host key, append it to the fleet file",
        add_add_arguments,
        run_add,
        description="Add a box to the fleet file from the provider's SSH command (or "
        "user@host:port): asks for what is missing, shows the box's host key to trust, "
        "then appends a commented [[hosts]] block, leaving the rest of the file as it is.",
    ),
    Command(
        "demo",
        "start a loopback demo fleet and open the TUI on it",
        add_demo_arguments,
        run_demo,
    ),
)

# No sub-command: the TUI. Not a row: it is what `rgt-tui` alone does, not a COMMAND.
TUI = Command("", "open the TUI on the fleet", no_arguments, run_tui)

HOST_HELP = {
    "one": "host name from the fleet file",
    "optional": "only this host, by its name in the fleet file (default: every host)",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: the top-level options, then one sub-parser per row."""
    parser = argparse.ArgumentParser(
        prog="rgt-tui",
        description="Terminal fleet manager for rented GPU boxes. With no command, opens the TUI.",
    )
    parser.add_argument("--version", action="version", version=f"rgt-tui {__version__}")
    add_hosts_arg(parser)
    parser.add_argument("--theme", metavar="NAME", help="colour theme (see themes/)")
    parser.set_defaults(command_row=TUI)
    top = parser.add_subparsers(dest="command", metavar="COMMAND")
    groups: dict[str, Any] = {}
    for row in COMMANDS:
        *group, name = row.name.split()
        where = top
        if group:
            if group[0] not in groups:
                holder = top.add_parser(group[0], help=GROUPS[group[0]])
                add_hosts_arg(holder)
                groups[group[0]] = holder.add_subparsers(
                    dest=f"{group[0]}_command", metavar="ACTION", required=True
                )
            where = groups[group[0]]
        sub = where.add_parser(name, help=row.help, description=row.description)
        add_hosts_arg(sub)
        if row.host != "none":
            sub.add_argument(
                "host",
                metavar="HOST",
                nargs=None if row.host == "one" else "?",
                help=HOST_HELP[row.host],
            )
        row.add_arguments(sub)
        sub.set_defaults(command_row=row)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rgt-tui` console script."""
    args = build_parser().parse_args(argv)
    return run_command(args.command_row, args)
