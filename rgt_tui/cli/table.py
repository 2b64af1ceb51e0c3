"""The table of sub-commands: one ``Command`` row each.

Each row says everything about a sub-command: its name and help, what adds its arguments,
what runs it, whether it takes a HOST and whether it runs on a connection to it;
``run_command`` (runner.py) runs every row the same way, and ``build_parser``
(``rgt_tui.cli``) turns the table into the argument parser. A new command is a row here
and a module of its group beside this one.
"""

from __future__ import annotations

from rgt_tui.cli.add import add_add_arguments, run_add
from rgt_tui.cli.logs import add_logs_arguments, logs_interrupted, run_logs
from rgt_tui.cli.preflight import add_preflight_arguments, run_preflight
from rgt_tui.cli.pull import (
    add_pull_arguments,
    add_verify_arguments,
    pull_interrupted,
    run_pull,
    run_verify,
)
from rgt_tui.cli.queue import (
    add_check_arguments,
    add_launch_arguments,
    json_flag,
    run_append,
    run_check,
    run_diagnose,
    run_launch,
    run_show,
)
from rgt_tui.cli.runner import Command, no_arguments
from rgt_tui.cli.status import add_status_arguments, run_status
from rgt_tui.cli.sync import add_sync_arguments, run_sync
from rgt_tui.cli.teardown import add_teardown_arguments, run_teardown
from rgt_tui.cli.tui import add_demo_arguments, run_demo, run_tui

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
        "preflight",
        "check HOST's box before the meter runs: python, torch, GPUs, driver, disk, durable dir, tmux, code",
        add_preflight_arguments,
        run_preflight,
        host="one",
        connects=True,
    ),
    Command(
        "sync",
        "push HOST's code tree to its workdir, checked by hash (--check: only compare)",
        add_sync_arguments,
        run_sync,
        host="one",
        connects=True,
        description="Send the files of the host's `code` tree that differ from the box's "
        "copy (rsync over your OpenSSH, else SFTP), check their hashes on the box, and move "
        "them into the workdir only while no queue runs there. Nothing on the box is deleted.",
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
