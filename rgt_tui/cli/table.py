"""The table of sub-commands: one ``Command`` row each.

Each row says everything about a sub-command: its name and help, what adds its arguments,
what runs it, whether it takes a HOST and whether it runs on a connection to it;
``run_command`` (runner.py) runs every row the same way, and ``build_parser``
(``rgt_tui.cli``) turns the table into the argument parser. A new command is a row here
and a module of its group beside this one.
"""

from __future__ import annotations

from collections.abc import Callable

from rgt_tui.cli.runner import Call, Command, interrupted_saying, json_flag, lazy, no_arguments


def _asked(what: str) -> Callable[[Call], int]:
    """Ctrl-C of a queue action that asks first (h472 #9: it ended silent): what it did
    not do, and where to look."""
    return interrupted_saying(
        lambda name: (
            f"nothing was {what} unless the question was answered yes before it — "
            f"rgt-tui queue show {name} says what the box holds now"
        )
    )


# Each command's module is imported when that command runs or has its arguments added
# (``build_parser`` adds only the chosen command's): importing every one — each with its
# services, asyncssh and rich — took a third of a one-shot `rgt-tui pull`'s start-up and
# every command's first half-second (issue 44).
add_add_arguments, run_add = lazy("rgt_tui.cli.add", "add_add_arguments", "run_add")
add_disk_arguments, run_disk = lazy("rgt_tui.cli.disk", "add_disk_arguments", "run_disk")
add_logs_arguments, logs_interrupted, run_logs = lazy(
    "rgt_tui.cli.logs", "add_logs_arguments", "logs_interrupted", "run_logs"
)
add_preflight_arguments, run_preflight = lazy(
    "rgt_tui.cli.preflight", "add_preflight_arguments", "run_preflight"
)
(
    add_pull_arguments,
    add_verify_arguments,
    pull_interrupted,
    run_pull,
    run_verify,
    verify_interrupted,
) = lazy(
    "rgt_tui.cli.pull",
    "add_pull_arguments",
    "add_verify_arguments",
    "pull_interrupted",
    "run_pull",
    "run_verify",
    "verify_interrupted",
)
add_check_arguments, run_append, run_check, run_diagnose, run_show = lazy(
    "rgt_tui.cli.queue",
    "add_check_arguments",
    "run_append",
    "run_check",
    "run_diagnose",
    "run_show",
)
add_launch_arguments, launch_interrupted, run_launch = lazy(
    "rgt_tui.cli.launch", "add_launch_arguments", "launch_interrupted", "run_launch"
)
add_kill_arguments, add_retry_arguments, add_yes, run_kill, run_retry, run_stop = lazy(
    "rgt_tui.cli.queue_control",
    "add_kill_arguments",
    "add_retry_arguments",
    "add_yes",
    "run_kill",
    "run_retry",
    "run_stop",
)
add_move_arguments, run_move = lazy("rgt_tui.cli.queue_move", "add_move_arguments", "run_move")
(run_shell,) = lazy("rgt_tui.cli.shell", "run_shell")
add_status_arguments, run_status = lazy("rgt_tui.cli.status", "add_status_arguments", "run_status")
add_sync_arguments, run_sync, sync_interrupted = lazy(
    "rgt_tui.cli.sync", "add_sync_arguments", "run_sync", "sync_interrupted"
)
add_teardown_arguments, run_teardown, teardown_interrupted = lazy(
    "rgt_tui.cli.teardown", "add_teardown_arguments", "run_teardown", "teardown_interrupted"
)
add_demo_arguments, run_demo, run_tui = lazy(
    "rgt_tui.cli.tui", "add_demo_arguments", "run_demo", "run_tui"
)
add_tunnel_arguments, run_tunnel, tunnel_interrupted = lazy(
    "rgt_tui.cli.tunnel", "add_tunnel_arguments", "run_tunnel", "tunnel_interrupted"
)
add_vram_arguments, run_vram = lazy("rgt_tui.cli.vram", "add_vram_arguments", "run_vram")
add_watch_arguments, run_watch, watch_interrupted = lazy(
    "rgt_tui.cli.watch", "add_watch_arguments", "run_watch", "watch_interrupted"
)

# Groups of sub-commands (`rgt-tui queue show`): their help; their actions are rows below.
GROUPS = {"queue": "check queue files, show a queue, append cells; stop, kill, retry or move cells"}

COMMANDS: tuple[Command, ...] = (
    Command(
        "status",
        "one telemetry sample from every host (or HOST), as a table or JSON",
        add_status_arguments,
        run_status,
        host="optional",  # samples each host on a connection of its own: not `connects`
    ),
    Command(
        "watch",
        "watch the fleet headless: notifications, metrics (--metrics), --once, --install",
        add_watch_arguments,
        run_watch,  # one connection per host of its own, for as long as it runs
        description="Run the TUI's health and cost rules over every host until Ctrl-C: one "
        "line per event (a new alert, a reminder, a finished queue, a silent, rebooted or "
        "forgotten box), sent to each host's notify targets once ever; what was told is "
        "kept in the fleet's journal, so a restart repeats nothing. --install writes a "
        "systemd user unit and starts nothing.",
        interrupted=watch_interrupted,
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
        "queue move",
        "move cells to another host's queue (--to HOST); an unfinished one with its verified checkpoint",
        add_move_arguments,
        run_move,  # the cells' names say which host they are on; asks between connections
        description="Move CELLs (names) from the host whose queue file holds them to the end "
        "of HOST's queue file, names unchanged. A line its box already holds becomes "
        "'#moved-to HOST: <line>' (cells keep their index) and that box skips the cell: asks "
        "first, or --yes. A line no box holds yet moves without a question (it is cut from "
        "one local file and added to the other; nothing ran it). Refused: a running cell, "
        "one with verified results, a name HOST already uses. One cell that ran and did not finish (interrupted, killed, failed, "
        "preempted, or its box gone) is resumed on HOST: its files pulled and verified here "
        "are pushed and checked by hash, and HOST runs it from its last verified checkpoint "
        "(--from-scratch when it has none: the run starts over). HOST's running queue gets it "
        "appended; an idle one is launched by the move, and HOST's own pending cells just "
        "before it then run too (the plan names them before it asks).",
    ),
    Command(
        "queue stop",
        "stop HOST's queue after its current cell (asks first)",
        add_yes,
        run_stop,
        host="one",  # asks between two connections of its own: not `connects`
        interrupted=_asked("asked to stop"),
        description="Ask HOST's runner to stop before its next cell (a stop record in "
        "runner.state); the current cell finishes. The queue shows 'stopped by the user "
        "after cell k'; launch --start N goes on later. Asks first, or --yes.",
    ),
    Command(
        "queue kill",
        "kill HOST's running cell now, then go on (--then next) or stop (asks first)",
        add_kill_arguments,
        run_kill,
        host="one",
        interrupted=_asked("killed"),
        description="TERM the running cell's process tree, KILL what is left after --grace "
        "seconds, from a process detached on the box (the SSH session may drop: checked in "
        "a new call). The cell's state records the kill by the user. Asks first, or --yes.",
    ),
    Command(
        "queue retry",
        "re-run failed or killed CELLs under their names; earlier outputs set aside, or kept "
        "with --resume (asks first)",
        add_retry_arguments,
        run_retry,
        host="one",
        interrupted=_asked("retried"),
        description="Each CELL's {out} folder is renamed to <out>.before-retry-<time> (never "
        "deleted) and the cell runs again under its name; with --resume its {out} is kept, "
        "so a run that loads its latest checkpoint goes on from it. A running queue runs it "
        "before its next cell; a stopped one is launched for the retried cells only (and any "
        "set to run again earlier, which the plan names). Refused "
        "for a running cell, one that never ran, and a done cell unless --done (a done cell "
        "has nothing to resume).",
    ),
    Command(
        "launch",
        "launch HOST's queue, detached (asks first)",
        add_launch_arguments,
        run_launch,
        host="one",  # asks between two connections of its own: not `connects`
        interrupted=launch_interrupted,
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
        "--follow keeps printing new lines until Ctrl-C, across drops and log rotation. "
        "The box's escape sequences are dropped but a log's colours (on a terminal only); "
        "--raw passes them all through, for a pipe.",
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
        interrupted=sync_interrupted,
        description="Send the files of the host's `code` tree that differ from the box's "
        "copy (rsync over your OpenSSH, else SFTP), check their hashes on the box, and move "
        "them into the workdir only while no queue runs there. Only files an earlier sync put "
        "there, unchanged since, that the tree no longer has are removed (and listed); "
        "nothing else on the box is deleted.",
    ),
    Command(
        "shell",
        "a shell on HOST: your ssh, our host-key check; a new window of the queue's tmux "
        "session if it runs (never the runner's)",
        no_arguments,
        run_shell,
        host="one",  # ssh connects on its own: not `connects`
    ),
    Command(
        "pull",
        "pull HOST's results (or --all hosts'): manifest on the box, resumable hash-checked copies",
        add_pull_arguments,
        run_pull,
        host="one-or-all",  # --all: every host on a connection of its own: not `connects`
        interrupted=pull_interrupted,
    ),
    Command(
        "verify",
        "verify HOST's pulled copy: hashes, loads, leftovers, roster",
        add_verify_arguments,
        run_verify,
        host="one",
        connects=True,
        interrupted=verify_interrupted,
    ),
    Command(
        "disk",
        "what fills HOST's disk (largest folders, HF cache, superseded checkpoints); --delete PATH",
        add_disk_arguments,
        run_disk,
        host="one",  # asks between two connections of its own: not `connects`
        description="Audit the box's watched mounts (bytes and inodes), its Hugging Face "
        "cache by model and the checkpoints superseded by a newer verified one. --delete "
        "removes one listed entry after you type it as listed (a folder's path, a model's "
        "ORG/NAME, a checkpoint's CELL/FILE); anything under a "
        "pull root that is not pulled and verified is refused, naming what would be lost.",
    ),
    Command(
        "vram",
        "who holds HOST's GPU memory (nvidia-smi, /dev/nvidia* holders); --kill PID reclaims it",
        add_vram_arguments,
        run_vram,
        host="one",  # asks between connections of its own, and looks again after a kill
        description="List the processes holding HOST's VRAM: nvidia-smi's compute processes "
        "and every process with a /dev/nvidia* file open, and why the container hides PIDs. "
        "--kill PID (typed again to confirm, or --yes) sends SIGTERM, then SIGKILL after 10 s, "
        "only to a listed holder that is no running queue cell's.",
    ),
    Command(
        "tunnel",
        "forward HOST's PORT (TensorBoard's 6006) to http://127.0.0.1:N/ here until Ctrl-C",
        add_tunnel_arguments,
        run_tunnel,
        host="one",
        connects=True,
        interrupted=tunnel_interrupted,
        description="Forward PORT on the box (default 6006, TensorBoard's) to 127.0.0.1 here "
        "over the host's one SSH connection (no new login; never every interface), print the "
        "URL, and say whether the box's TensorBoard reads where the runs write events. Runs "
        "until Ctrl-C; after a drop it comes back on the same URL.",
    ),
    Command(
        "teardown",
        "the teardown checklist; tears down only after every check and your typed confirmation",
        add_teardown_arguments,
        run_teardown,
        host="one",  # asks between two connections of its own: not `connects`
        # Ctrl-C while the teardown command runs is run_teardown's own (it goes on).
        interrupted=teardown_interrupted,
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
        fleet=False,  # its fleet file is its own (the header names it)
    ),
)

# No sub-command: the TUI. Not a row: it is what `rgt-tui` alone does, not a COMMAND.
TUI = Command("", "open the TUI on the fleet", no_arguments, run_tui)

HOST_HELP = {
    "one": "host name from the fleet file",
    "optional": "only this host, by its name in the fleet file (default: every host)",
    "one-or-all": "host name from the fleet file (or --all for every host)",
}
