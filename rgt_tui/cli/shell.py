"""`rgt-tui shell HOST` (a row of table.py): the ``s`` key's twin.

Runs the user's own ``ssh`` to the host with rgt-tui's host-key check and no agent, X11
or port forwarding (``services.box.shell``): a login shell in a new window of the queue's
tmux session at the workdir when the queue runs on the box (``exit`` or tmux's detach
closes that window and comes back; the runner's window is never touched), else a login
shell in the workdir; this terminal stays attached.

Exit codes: ssh's own (the shell's last status; 255 when ssh could not connect), 1 when
no ssh command could be built (the reason and the fix on stderr), 2 for bad input.
"""

from __future__ import annotations

from rgt_tui.cli.exit_codes import EXIT_PROBLEMS
from rgt_tui.cli.runner import Call

SHELL_FIX = (
    "the shell uses your OpenSSH `ssh` with the fleet's known_hosts and strict checking; "
    "fix what is named above (install openssh-client, or take the setting out of "
    "~/.ssh/config for this host)"
)


def run_shell(call: Call) -> int:
    """Open the shell on the host; returns ssh's exit status."""
    from rgt_tui.services.box.shell import keys_to_the_shell, run_attached, shell_command

    command = shell_command(call.host)
    if isinstance(command, str):
        return call.fail(command, fix=SHELL_FIX, code=EXIT_PROBLEMS)
    with keys_to_the_shell():
        return run_attached(command)
