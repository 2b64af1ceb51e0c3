"""Adding a box (issue 22, "paste a box"): what the command line's ``add`` and the TUI's
add screen share.

1. ``read_target``: the provider's ``ssh -p PORT user@host [-i KEY] [-L …]`` or a
   ``user@host:port``, read by the fleet file's own parser (``domain.ssh_target``);
   ``suggest_name`` and ``guess_profile`` give the defaults to offer;
   ``check_name`` / ``check_profile`` / ``read_cost`` check what the user typed.
2. ``check_host_key``: one connection, to show the key the box presents. An unknown key
   is trusted only by ``trust_key``, after the user compared the fingerprint and said
   so; a changed or revoked key is refused with its fix (``transport.known_hosts``); a
   refused login's fix names the pasted command's ``-i``, not the unwritten identity_file.
3. ``fleet_append.add_to_fleet``: the commented ``[[hosts]]`` block, appended.
   ``same_account``: what to say when another entry already logs in to the pasted
   account (a launch of either would be refused: one account holds one queue).
4. ``fleet_in_code``: a warning when the fleet file (or the new queue file) lies in the
   host's code tree where git lists it: sync never sends it, but a commit would.

Just past 450 lines on purpose: these are the add's checks, which the command line and the
add screen both call in this order; split, each half would be read only with the other.
"""

from __future__ import annotations

import difflib
import ipaddress
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rgt_tui.domain.config import HostConfig, SshTarget, parse_ssh_target
from rgt_tui.domain.errors import HostKeyError, TransportError
from rgt_tui.domain.profiles import DEFAULT_PROFILE
from rgt_tui.domain.shared_account import account_of, sharing_account
from rgt_tui.domain.ssh_target import is_ssh_command, parse_ssh_command
from rgt_tui.profiles import KNOWN_PROFILES
from rgt_tui.services.code_sync.rules import (
    git_top,
    git_would_list,
    held_back,
    reads_as_queue_file,
)
from rgt_tui.services.fleet.append import (
    AddRefused,
    FleetFile,
    LaunchKeys,
    NewHost,
    add_to_fleet,
    fleet_file_for_add,
    free_name,
    name_taken,
    read_fleet_file,
    render_block,
)
from rgt_tui.transport import open_transport
from rgt_tui.transport.known_hosts import resolve_destination, trust_host_key
from rgt_tui.transport.ssh import ANSWERED_BEFORE

__all__ = [
    "AddRefused", "FleetFile", "KeyCheck", "NewHost", "Pasted", "add_to_fleet",
    "check_host_key", "check_name", "check_profile", "fingerprint_matches", "fleet_in_code",
    "fleet_file_for_add", "fleet_known_hosts", "guess_profile", "read_cost", "read_fleet_file",
    "read_target", "render_block", "same_account", "suggest_name", "trust_key",
]  # fmt: skip

# The fleet file's rule for a name (it names the host's local results folder).
_NAME_RE = re.compile(r"[A-Za-z0-9._-]+")
# Host-name endings of each platform's SSH endpoints.
_PROFILE_BY_DOMAIN = (
    ("vast.ai", "vastai"),
    ("runpod.io", "runpod"),
    ("runpod.net", "runpod"),
    ("autodl.com", "autodl"),
    ("seetacloud.com", "autodl"),  # AutoDL's SSH gateways (connect.<region>.seetacloud.com)
    ("paperspace.com", "paperspace"),
    ("lambdalabs.com", "lambda"),
    ("lambda.ai", "lambda"),
)
# RunPod's proxied endpoint (`ssh <pod>@ssh.runpod.io`): a PTY-only relay (reference:
# ssh_transport.md, proxied SSH).
RUNPOD_PROXY = "ssh.runpod.io"
# Short names for the platforms' shared SSH gateways, where the host tells nothing else.
_SHORT = {"vastai": "vast", "runpod": "runpod", "autodl": "autodl", "paperspace": "paperspace"}
# Host-name labels that say nothing about the box (ssh4.vast.ai, connect.x.com).
_GENERIC_LABEL = re.compile(r"(ssh|sshd|gw|gateway|proxy|connect|login|www|region)[-0-9]*")


@dataclass(frozen=True)
class Pasted:
    """What the pasted text says: where to log in and, from ``-i``, with which key."""

    target: SshTarget | None  # None: this machine ("local")
    identity_file: str | None
    text: str


def read_target(text: str) -> Pasted:
    """Read a pasted ``ssh …`` command or an ``ssh`` value (``user@host:port``, an alias,
    ``local``) with the fleet file's own parser; AddRefused (field ``target``) with its
    message otherwise."""
    text = text.strip()
    if not text:
        raise AddRefused(
            "no box given",
            "paste the provider's SSH command, e.g. ssh -p 22034 root@ssh4.vast.ai",
            field="target",
        )
    if text.startswith("ssh://"):  # a URL alone, as some pages give it (h553 #7)
        text = f"ssh {text}"
    try:
        if is_ssh_command(text):
            command = parse_ssh_command(text)
            pasted = Pasted(command.target, command.identity_file, text)
        else:
            pasted = Pasted(parse_ssh_target(text), None, text)
    except ValueError as exc:
        raise AddRefused(str(exc), field="target") from None
    if pasted.target is not None and pasted.target.host.lower().rstrip(".") == RUNPOD_PROXY:
        # It answers a login, so the host key check and "the box answered" passed, and
        # every command after it failed with words about python3 or bash (h553 #5).
        raise AddRefused(
            f"{RUNPOD_PROXY} is RunPod's proxied SSH: it carries an interactive shell only "
            "(no commands, no SFTP, no forwarding), so nothing rgt-tui does works through it",
            "paste the pod's direct TCP command instead (Connect → SSH over exposed TCP: "
            "ssh root@IP -p PORT; expose TCP port 22 in the pod's template if none is listed)",
            field="target",
        )
    return pasted


def guess_profile(target: SshTarget | None) -> str:
    """The platform profile a host name points to (``*.vast.ai`` → vastai), else
    generic-ssh."""
    if target is None:
        return DEFAULT_PROFILE
    host = target.host.lower().rstrip(".")
    for domain, profile in _PROFILE_BY_DOMAIN:
        if host == domain or host.endswith("." + domain):
            return profile
    return DEFAULT_PROFILE


def suggest_name(target: SshTarget | None, taken: Iterable[str] = ()) -> str:
    """A name from the host: the platform or the host's first telling label, with the
    port when it is not 22 (boxes on one gateway differ by port only), made unique
    against ``taken`` (``vast-22034``, ``gpu1``, ``10-0-0-5``, ``local``)."""
    if target is None:
        base = "local"
    else:
        host = target.host.lower().rstrip(".")
        try:
            ipaddress.ip_address(host.split("%")[0])
            base = host.replace(".", "-").replace(":", "-")
        except ValueError:
            base = _SHORT.get(guess_profile(target)) or _telling_label(host)
        if target.port not in (None, 22):
            base = f"{base}-{target.port}"
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "box"
    return free_name(base, dict.fromkeys(taken))


def _telling_label(host: str) -> str:
    labels = host.split(".")
    useful = [label for label in labels[:-1] if not _GENERIC_LABEL.fullmatch(label)]
    return (useful or labels)[0]


def check_name(name: str, fleet_file: FleetFile) -> str:
    """``name`` when the fleet file would take it; AddRefused (field ``name``) naming the
    line that already uses it, or the rule it breaks."""
    name = name.strip()
    if not name:
        raise AddRefused("the name is empty", "give the box a name", field="name")
    if not _NAME_RE.fullmatch(name) or name in (".", ".."):
        raise AddRefused(
            f"host name {name!r} may only use ASCII letters and digits, '.', '_' and '-' "
            "(it names the host's local results folder)",
            f"e.g. {re.sub(r'[^A-Za-z0-9._-]+', '-', name).strip('-.') or 'a100-1'!r}",
            field="name",
        )
    refused = name_taken(name, fleet_file)
    if refused is not None:
        raise refused
    return name


def check_profile(name: str) -> str:
    """``name`` when it is a bundled profile; AddRefused (field ``profile``) otherwise."""
    name = name.strip()
    if name in KNOWN_PROFILES:
        return name
    close = difflib.get_close_matches(name, KNOWN_PROFILES, n=1)
    raise AddRefused(
        f"unknown profile {name!r}" + (f" — did you mean {close[0]!r}?" if close else ""),
        f"one of: {', '.join(KNOWN_PROFILES)}",
        field="profile",
    )


def read_cost(text: str | float | None) -> float | None:
    """Dollars per hour (``1.29``, ``$1.29``, ``1,29``, ``$1.29/h``, as the providers'
    pages write it); None for nothing given; AddRefused (field ``cost``) for anything else."""
    if text is None:
        return None
    raw = str(text).strip().removeprefix("$").strip()
    raw = re.sub(r"\s*(/\s*(h|hr|hour)|per\s+hour)$", "", raw, flags=re.IGNORECASE)
    if not raw:
        return None
    if re.fullmatch(r"\d+,\d{3}", raw):
        # "1,299": a thousands comma to some, a decimal one to others: read as 1.299 it
        # was a thousand times off, unsaid (h604 #6).
        raise AddRefused(
            f"cost per hour {str(text).strip()!r} could be {raw.replace(',', '')} or "
            f"{raw.replace(',', '.')} dollars",
            "write it with a dot for cents (such as 1.29), and no thousands separator",
            field="cost",
        )
    raw = raw.replace(",", ".")
    try:
        cost = float(raw)
    except ValueError:
        cost = -1.0
    if not math.isfinite(cost) or cost < 0:
        raise AddRefused(
            f"cost per hour {str(text).strip()!r} is not an amount of dollars",
            "write a number such as 1.29, or leave it empty",
            field="cost",
        )
    return cost


def same_account(target: SshTarget | None, fleet_file: FleetFile) -> str | None:
    """What to say before ``target`` is added when entries of the fleet file already log
    in to its account (by ``domain.shared_account``, the rule a launch refuses with):
    each named with its line. None when none does."""
    if fleet_file.fleet is None or fleet_file.fleet.is_default:
        return None
    # Not named yet: "" is no host's name, so sharing_account leaves none of them out.
    others = sharing_account(
        fleet_file.fleet, probe_config(NewHost("", target, DEFAULT_PROFILE)), resolved_account
    )
    if not others:
        return None
    named = ", ".join(f"{name} ({fleet_file.where(name)})" for name in others)
    account = "this machine" if target is None else str(target)
    return (
        f"{named} already {'logs' if len(others) == 1 else 'log'} in to {account}: a second "
        "entry shows its status too, but one account holds one queue (~/.rgt/queue), so a "
        "launch of either is refused while both are in the fleet file"
    )


def resolved_account(host: HostConfig) -> tuple[str, ...] | None:
    """``host``'s account as ssh_config resolves it (user, HostName, Port), so an alias
    and the address it names compare equal; the fleet file's words where ssh_config
    cannot be read (``account_of``). Reads ~/.ssh/config: for ``add``, not a poll."""
    if host.group is not None or host.ssh is None:
        return account_of(host)
    try:
        to = resolve_destination(host.ssh.host, host.ssh.port, host.ssh.user)
    except (ValueError, OSError):
        return account_of(host)
    # Reached through another jump host, one private address is another machine (two
    # sites' 10.0.0.5): the route is part of the account (the review of s39 #7).
    return (to.user, to.host.lower(), str(to.port), to.jump or "", to.proxy_command)


def fleet_known_hosts(fleet_file: FleetFile) -> Path | None:
    """The known_hosts file every box of the fleet file names, when they all name the
    same one (a fleet that keeps its keys apart from ``~/.ssh``, as the demo does): a box
    added to it is checked against that file, trusted into it and names it too, or its
    key would be called unknown and written to ``~/.ssh/known_hosts`` beside the fleet's.
    None: no box, one that names none (ssh's default), or boxes that differ."""
    fleet = fleet_file.fleet
    named = {h.known_hosts for h in fleet.hosts if h.ssh is not None} if fleet else set()
    return named.pop() if len(named) == 1 else None


def probe_config(new: NewHost) -> HostConfig:
    """The host as the fleet file will have it, for one connection before it is added."""
    identity = Path(new.identity_file).expanduser() if new.identity_file else None
    return HostConfig(
        name=new.name, ssh=new.target, identity_file=identity, known_hosts=new.known_hosts,
        profile=new.profile, cost_per_hour=new.cost_per_hour, started_at=None, workdir="~",
        durable_dir="~", mounts=("/",), queue=None, run=None, pull=(), teardown=None,
        epochs=1, host_key=new.host_key,
        # Nothing is written yet: a key file missing is the pasted command's (h472 #8:
        # "check identity_file in the fleet file" sent the user to a file not yet there).
        identity_at="the -i or --identity-file given to add" if identity is not None else "",
    )  # fmt: skip


KeyStatus = Literal["trusted", "unknown", "refused", "unreachable", "local"]


@dataclass(frozen=True)
class KeyCheck:
    """What one connection said about the box's host key.

    - ``trusted``: a known_hosts file already holds it (or accept-new just recorded it);
    - ``unknown``: no line holds it; ``trust_key`` adds it once the user confirms;
    - ``refused``: changed or revoked: never trusted here, ``fix`` says what to do;
    - ``unreachable``: no answer, or the login was refused (the key may be fine);
    - ``local``: this machine, no key.
    """

    status: KeyStatus
    host: str  # user@host:port
    fingerprint: str | None  # "ssh-ed25519 SHA256:…" (trusted: "SHA256:…")
    message: str
    fix: str | None = None
    error: HostKeyError | None = None  # the refusal, kept for ``trust_key``

    @property
    def can_trust(self) -> bool:
        """Whether ``trust_key`` may add this key (an unknown key, with its line)."""
        e = self.error
        return self.status == "unknown" and e is not None and bool(e.trust_line)

    @property
    def known_hosts_file(self) -> Path | None:
        """Where trusting writes the key's line."""
        return self.error.known_hosts_file if self.error is not None else None

    @property
    def trust_line(self) -> str | None:
        """The exact line trusting appends."""
        return self.error.trust_line if self.error is not None else None


async def check_host_key(new: NewHost) -> KeyCheck:
    """Connect once to ``new``'s box and say what its host key is; never trusts a key
    (except where the host opted into ``accept-new``, as the transport does for it)."""
    where = new.ssh
    if new.target is None:
        return KeyCheck("local", where, None, "this machine: no host key to check")
    try:
        async with open_transport(probe_config(new)) as transport:
            await transport.connect()
            seen = transport.host_key_fingerprint
            recorded = transport.recorded_key_in
    except HostKeyError as exc:
        status: KeyStatus = "unknown" if exc.kind == "unknown" and exc.trust_line else "refused"
        return KeyCheck(status, where, exc.presented, exc.message, exc.fix, exc)
    except TransportError as exc:
        return KeyCheck("unreachable", where, None, exc.message, _login_fix(new, exc))
    if recorded is not None:  # nothing held it: accept-new wrote it just now
        return KeyCheck(
            "trusted", where, seen,
            f"host key {seen} recorded in {recorded} (host_key = accept-new: the first key "
            "the box shows is kept, a changed one refused); the box answered",
        )  # fmt: skip
    held = f" in {new.known_hosts}, the fleet's own known_hosts" if new.known_hosts else ""
    return KeyCheck(
        "trusted", where, seen, f"host key {seen} is already trusted{held}; the box answered"
    )


def _login_fix(new: NewHost, exc: TransportError) -> str | None:
    """The transport's fix, its address sent to the pasted command, not to the fleet file
    the host is not in yet; except for a login the box itself refused: that one names the
    fleet file's ``identity_file``, which is not written yet; here the key is the pasted
    command's ``-i`` (or ``--identity-file``). A jump host's refusal keeps its own fix."""
    if not exc.message.startswith("authentication refused ("):  # ssh.py: the box's own
        # The host is not in the fleet file yet: its address is the pasted command's
        # (the dialog sent a user to "the fleet file's ssh" of a box not added).
        fix = exc.fix
        if fix is not None:
            # A box being added never answered before: that way on is not its.
            fix = fix.replace(ANSWERED_BEFORE, "")
            fix = fix.replace(f"the fleet file's ssh for {exc.host}", "the pasted command")
            fix = fix.replace(f"{exc.host}'s ssh = ... in the fleet file", "the pasted command")
        return fix
    if new.identity_file is None:
        return "add `-i <key file>` to the pasted command, or load the key into ssh-agent"
    if exc.fix and exc.fix.startswith("identity_file needs a passphrase"):
        return exc.fix.replace("identity_file", f"the key file {new.identity_file}", 1)
    return (
        f"check that the box's authorized_keys holds the public key of {new.identity_file}, "
        "or load the right key into ssh-agent"
    )


def trust_key(check: KeyCheck) -> Path:
    """Append the unknown key's line to its known_hosts file, after the user compared the
    fingerprint and confirmed; returns the file. ValueError for any other check (a
    changed or revoked key is never trusted this way). Blocking file I/O."""
    if not check.can_trust or check.error is None:
        raise ValueError(f"{check.host}: only an unknown host key can be trusted ({check.status})")
    return trust_host_key(check.error)


def fingerprint_matches(presented: str, given: str) -> bool:
    """Whether ``given`` (``SHA256:abc…``, with or without the key type, or the bare hash)
    names the ``presented`` key (``ssh-ed25519 SHA256:abc…``)."""
    want = given.strip().split()[-1] if given.strip() else ""
    have = presented.split()[-1]
    return bool(want) and want.removeprefix("SHA256:") == have.removeprefix("SHA256:")


def _queues_only(queue: Path) -> bool:
    """Whether every file beside ``queue`` is a queue file ``add`` made, or it (a folder
    not made yet: ``add`` makes it for queue files)."""
    try:
        beside = list(queue.parent.iterdir())
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return all(p == queue or (p.is_file() and reads_as_queue_file(p)) for p in beside)


def fleet_in_code(
    keys: LaunchKeys | None, fleet_path: Path, results_dir: Path | None = None
) -> str | None:
    """What to say when the fleet file, the new host's queue file or the fleet's
    ``results_dir`` (the pulled results) lies inside its ``code`` tree and git there does
    not ignore it (``git status`` lists it; a commit would publish every box's address and
    key path, or every result): which ``.gitignore`` lines keep it out. None otherwise.
    Sync never sends them either way. Blocking (runs git)."""
    if keys is None or keys.code is None:
        return None
    base = fleet_path.absolute().parent
    code = Path(keys.code).expanduser()
    code = code if code.is_absolute() else base / code
    # The git work tree the fleet file lies in, when it lies in one (the code tree may be
    # a folder of it: `code = "./src"` from the project's top left hosts.toml beside it
    # unwarned, s36 acts hour #10); else the code tree.
    top = git_top(base)
    root = code if top is None or top.resolve() == code.resolve() else top
    queue = Path(keys.queue).expanduser() if keys.queue else None
    queue = queue if queue is None or queue.is_absolute() else base / queue
    fleet_rel = held_back(root, [fleet_path])
    queue_rel = held_back(root, [queue] if queue is not None else [])
    # A folder: asked of git as one (results/ matches only a folder), though none yet.
    results_rel = {r + "/" for r in held_back(root, [results_dir] if results_dir else [])}
    listed = git_would_list(root, sorted(fleet_rel | queue_rel | results_rel))
    if not listed:
        return None
    # The fleet file itself; a queue file's folder when it holds queue files only
    # (queues/: the next box's queue too), else the file (h553 #3: experiments/ of
    # configs ignored whole, so a new config there was never sent); the results folder.
    lines = [
        f"/{r}"
        if r in fleet_rel or r in results_rel
        else (r.rpartition("/")[0] + "/" if "/" in r and _queues_only(root / r) else f"/{r}")
        for r in listed
    ]
    shown = [r.rstrip("/") + (" (the pulled results)" if r in results_rel else "") for r in listed]
    tree = "the code tree" if root == code else "the git work tree"
    return (
        f"{' and '.join(shown)} {'is' if len(listed) == 1 else 'are'} inside {tree} "
        f"{root}, and git there lists {'it' if len(listed) == 1 else 'them'}: rgt-tui sync "
        "never sends the fleet file, its queue files or the pulled results, but a commit "
        f"would publish every box's address — keep them out of git with these lines in "
        f"{root / '.gitignore'}: {' '.join(dict.fromkeys(lines))}"
    )
