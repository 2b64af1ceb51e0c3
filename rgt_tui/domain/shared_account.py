"""Two hosts of one fleet file that log in to the same account share its ``~/.rgt``.

The queue runner keeps one queue per account (``~/.rgt/queue``), so two host entries
for one account (two Slurm partitions reached through the same login, the same box
under two names) each read the other's cells as their own, a launch of one is refused
for the other's lines, and ``--fresh`` would archive the other's queue. A launch is
refused while another host of the file names the same account; this says which.

Only what the fleet file itself says is compared (user, host, port; ``local``) unless the
caller passes ``account``: ``add`` resolves each entry through ssh_config, so an alias
for a box already in the file is seen before it is added (a new user's hour, s39 #3).
A launch compares the file's words alone; the box's own owner record
(``~/.rgt/queue/owner``) refuses the second of two entries the file cannot tell apart. A
group is not an account: it runs on its member boxes, each with its own entry.
"""

from __future__ import annotations

from collections.abc import Callable

from rgt_tui.domain.config import Fleet, HostConfig

DEFAULT_PORT = 22


def account_of(host: HostConfig) -> tuple[str, ...] | None:
    """What names ``host``'s login account in the fleet file; None for a group."""
    if host.group is not None:
        return None
    if host.ssh is None:
        return ("local",)
    return (host.ssh.user or "", host.ssh.host.lower(), str(host.ssh.port or DEFAULT_PORT))


def sharing_account(
    fleet: Fleet,
    host: HostConfig,
    account: Callable[[HostConfig], tuple[str, ...] | None] = account_of,
) -> tuple[str, ...]:
    """The other hosts of ``fleet`` that log in to ``host``'s account, by name; each
    account named by ``account`` (the fleet file's words by default)."""
    mine = account(host)
    if mine is None or any(h.group is not None and h.name == host.name for h in fleet.hosts):
        return ()  # a group, or one of its ranks (planned under the group's name)
    return tuple(h.name for h in fleet.hosts if h.name != host.name and account(h) == mine)


def shared_account_problem(fleet: Fleet, host: HostConfig) -> str | None:
    """Why ``host``'s queue must not be launched (another host shares its account)."""
    others = sharing_account(fleet, host)
    if not others:
        return None
    where = "this machine" if host.ssh is None else "the same account"
    names = ", ".join(others)
    return (
        f"{host.name} and {names} log in to {where} ({host.ssh or 'local'}), and one account "
        "holds one queue (~/.rgt/queue): each would show and run the other's cells, and "
        f"--fresh would archive {names}'s queue. Keep one host entry per account (for "
        "another partition or box, log in as another user)"
    )
