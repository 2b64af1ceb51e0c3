"""The rules of one ``[[hosts]]`` entry: its name, how it is reached, its run template,
its profile, its pull folders, every default filled in (``host_config``).

A host's ``pull`` defaults to its ``durable_dir`` (itself defaulting to ``workdir``), but
never to a whole home: with no ``pull`` and a default that names one (``~``, ``~user``,
``$HOME``, ``${HOME}``, ``/root``, ``/home/<user>``), or a ``pull`` list that names one,
the host's pulls are refused: ``HostConfig.pull_refused`` holds the message (the file,
the line, the host and the fix, ``pull = ["~/runs"]``). A home holds ``.ssh`` and other
credentials, the code tree, caches and rgt-tui's own records, everything the user never
meant to copy: a pull of it brings gigabytes of them home, and its results are hard to
tell from the rest. The file still loads: watching a box needs no pull folder, so a
minimal ``name`` + ``ssh`` block stays valid. "This machine alone" (no fleet file) is
refused the same way. A root above a home (``/``, ``/home``) is the user's explicit
choice: secrets in it are skipped by rule (``rgt_tui.agent.secret_paths``), and so is the
box's own ``~/.rgt``.
"""

from __future__ import annotations

import difflib
import posixpath
import re
import string
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from rgt_tui.domain.config import (
    GROUP_FIELDS,
    HOST_KEY_POLICIES,
    HOST_KEYS,
    RUN_FIELDS,
    FleetWatch,
    HostConfig,
    Readiness,
)
from rgt_tui.domain.config_ready import readiness
from rgt_tui.domain.config_slurm import slurm_config
from rgt_tui.domain.config_toml import Table
from rgt_tui.domain.config_watch import host_watch
from rgt_tui.domain.literal_secret import literal_secret
from rgt_tui.domain.profiles import DEFAULT_PROFILE
from rgt_tui.domain.queue_file import bracket_problem
from rgt_tui.domain.ssh_target import (
    SshCommand,
    is_ssh_command,
    parse_ssh_command,
    parse_ssh_target,
)

NAME_RE = re.compile(r"[A-Za-z0-9._-]+")  # a host name: it names local folders
# A remote folder that is a whole home, as far as its text alone tells.
_HOME_RE = re.compile(r"~[A-Za-z0-9._-]*|\$HOME|\$\{HOME\}|/root|/home/[^/]+")


def host_config(
    t: Table,
    base: Path,
    default_epochs: int,
    profiles: Sequence[str],
    fleet_ready: Readiness | None = None,
    fleet_watch: FleetWatch | None = None,
) -> HostConfig | None:
    """Check one ``[[hosts]]`` entry and fill in its defaults (``fleet_ready``: the
    ``[fleet]`` readiness keys); None when it has mistakes (each in ``t.problems``)."""
    before = len(t.problems)
    t.reject_unknown(HOST_KEYS)
    c = t.checked
    name = c(lambda: _host_name(t), "")
    pasted = c(lambda: _ssh(t, name), None)
    workdir = c(lambda: box_dir(t, "workdir", t.text("workdir", "~", example="/workspace")), "~")
    durable = c(
        lambda: box_dir(t, "durable_dir", t.text("durable_dir", workdir, example="/workspace")),
        workdir,
    )
    # A Slurm host with nodes = N runs each cell as one torchrun job (issue 41): its
    # template may use the group placeholders, filled in the job (config_slurm).
    fields = (*RUN_FIELDS, *GROUP_FIELDS) if "nodes" in t.data else RUN_FIELDS
    run = c(lambda: _run(t, fields), None)
    identity = c(lambda: t.maybe("identity_file", example="~/.ssh/id_ed25519"), None)
    identity_at = f"{t.path}:{t.line('identity_file')}"
    if pasted is not None and pasted.identity_file is not None:
        if identity is None:
            identity = pasted.identity_file
            identity_at = f"{t.path}:{t.line('ssh')} (the -i of ssh)"
        elif Path(identity).expanduser() != Path(pasted.identity_file).expanduser():
            t.problems.append(
                t.error(
                    "ssh",
                    f"the pasted command's -i {pasted.identity_file} is not identity_file = "
                    f'"{identity}" — keep one of them',
                )
            )
    slurm = slurm_config(t)
    profile = c(lambda: _profile(t, profiles), DEFAULT_PROFILE)
    if slurm is not None and "profile" not in t.data and "slurm" in profiles:
        profile = "slurm"  # a login node's facts are the cluster's, not a bare box's
    host = HostConfig(
        name=name,
        ssh=pasted.target if pasted is not None else None,
        identity_file=local_path(None, identity),
        known_hosts=local_path(
            None, c(lambda: t.maybe("known_hosts", example="~/.ssh/known_hosts"), None)
        ),
        profile=profile,
        cost_per_hour=c(lambda: t.number("cost_per_hour", None, allow_zero=True), None),
        started_at=c(lambda: _started_at(t), None),
        workdir=workdir,
        durable_dir=durable,
        mounts=c(lambda: t.text_list("mounts", ["/", workdir, durable]), ()),
        mounts_given="mounts" in t.data,
        queue=local_path(base, c(lambda: t.maybe("queue", example="queues/a100.txt"), None)),
        run=run,
        pull=c(lambda: box_dirs(t, "pull", t.text_list("pull", [durable])), ()),
        teardown=c(lambda: _teardown(t), None),
        epochs=c(lambda: t.integer("epochs", default_epochs), default_epochs),
        line=t.line(),
        identity_at=identity_at if identity is not None else "",
        host_key=c(lambda: _host_key(t), "strict"),
        pull_refused=_pull_refused(t, name, durable),
        ready=readiness(t, base, fleet_ready),
        watch=host_watch(t, fleet_watch or FleetWatch()),
        slurm=slurm,
        data_dir=c(lambda: t.maybe("data_dir", example="/workspace/data"), None),
        egress_usd_per_gb=c(lambda: t.number("egress_usd_per_gb", None, allow_zero=True), None),
        preempt_mtbf_hours=c(lambda: t.number("preempt_mtbf_hours", None), None),
    )
    return host if len(t.problems) == before else None


def _host_name(t: Table) -> str:
    """The required ``name``: it names local folders, so a plain word."""
    name = t.required("name", "a100-1")
    if not NAME_RE.fullmatch(name):
        raise t.error(
            "name",
            f"host name {name!r} may only use ASCII letters and digits, '.', '_' and '-' (it names local folders)",
        )
    if name in (".", ".."):
        # The name is the host's results folder: ".." would put results beside results_dir.
        raise t.error("name", f"host name {name!r} names a folder of its own — pick a real name")
    return name


def _ssh(t: Table, name: str) -> SshCommand | None:
    """The required ``ssh``: a target, or a pasted ``ssh …`` command read as one
    (rgt_tui.domain.ssh_target); None for this machine (``local``)."""
    whose = f" to the [[hosts]] entry for {name!r}" if name else " to this [[hosts]] entry"
    if "ssh" not in t.data:
        raise t.error("ssh", f"missing required key 'ssh' — add ssh = \"user@host:port\"{whose}")
    text = t.text("ssh", "", example="user@host:port")
    try:
        if is_ssh_command(text):
            return parse_ssh_command(text)
        target = parse_ssh_target(text)
    except ValueError as exc:  # only the parsers': the checks above raise ConfigError
        raise t.error("ssh", str(exc)) from None
    return SshCommand(target) if target is not None else None


def _run(t: Table, fields: Sequence[str] = RUN_FIELDS) -> str | None:
    """The optional ``run`` template, its fields (``fields``: a group's add GROUP_FIELDS)
    and quoting checked."""
    run = t.maybe("run", example="python train.py --config {cfg} --out {out}")
    if run is not None:
        _check_template(t, run, fields)
        secret = literal_secret(run)
        if secret is not None:
            raise t.error(
                "run",
                f"holds what looks like a secret ({secret}): the run line is written into "
                "the box's queue scripts and logs — give it under [fleet.credentials] "
                '(e.g. WANDB_API_KEY = { env = "WANDB_API_KEY" }), sent over stdin, and '
                "take it out of run",
            )
    return run


def _teardown(t: Table) -> str | None:
    """The optional ``teardown`` command, run here; never with a secret written in it."""
    command = t.maybe("teardown", example="vastai destroy instance 123")
    secret = literal_secret(command) if command is not None else None
    if secret is not None:
        raise t.error(
            "teardown",
            f"holds what looks like a secret ({secret}): it would be on the command's "
            "command line while it runs (ps) and shown in the teardown checklist — keep the "
            "key where the provider's CLI reads it (vastai set api-key …, runpodctl config "
            '--apiKey …) and take it out of the command (a "$VAR" in its place keeps it out of the '
            "fleet file and the checklist, but not out of ps)",
        )
    return command


def box_dir(t: Table, key: str, value: str) -> str:
    """``value``, a folder on the box, when it starts at the root, the home or a variable
    (``/``, ``~``, ``$HOME``); a relative one is refused: a cell's run reads it from the
    workdir it runs in, while ssh (pull, preflight, disk) reads it from the home, so one
    text named two folders — preflight passed one, the cells wrote to another and the
    pull looked in a third (s36 acts hour #1)."""
    if value.startswith(("/", "~", "$")):
        return value
    raise t.error(
        key,
        f'"{value}" is relative: a run reads it from its workdir, ssh from the home, '
        f'so it names two folders — write it from the root or the home, e.g. "~/{value}"',
    )


def box_dirs(t: Table, key: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """Each of ``values`` checked by ``box_dir``."""
    return tuple(box_dir(t, key, v) for v in values)


def _pull_refused(t: Table, name: str, durable: str) -> str | None:
    """Why this host must not be pulled as written (a ``pull`` folder that is a whole home,
    or no ``pull`` and a default that is one: see the module's doc); None when its pull
    folders are fine."""
    if "pull" in t.data:
        given = t.data["pull"]
        homes = (
            [p for p in given if isinstance(p, str) and is_home(p)]
            if isinstance(given, list)
            else []
        )
        if not homes:
            return None
        message = (
            f'host {name!r} pulls "{homes[0]}": the whole home on the box (.ssh, the code, '
            "caches, rgt-tui's own records and all) — name the folders your results are in "
            'instead, e.g. pull = ["~/runs"]'
        )
        return str(t.error("pull", message))
    if not is_home(durable):
        return None
    source = next((k for k in ("durable_dir", "workdir") if k in t.data), None)
    why = f"from {source}" if source else "the default workdir"
    message = (
        f'host {name!r} names no pull folders, and pulls would default to "{durable}" '
        f"({why}): the whole home on the box, .ssh and all — name the folders to pull, "
        'e.g. pull = ["~/runs"] (or set durable_dir = "/workspace/results")'
    )
    return str(t.error("pull", message))


def is_home(path: str) -> bool:
    """True when the remote folder ``path`` is a whole home, as far as its text tells
    (``~``, ``~/``, ``~user``, ``$HOME``, ``${HOME}``, ``/root``, ``/home/<user>``)."""
    text = path.strip()
    if not text:
        return False
    return _HOME_RE.fullmatch(re.sub("^/+", "/", posixpath.normpath(text))) is not None


def _host_key(t: Table) -> str:
    """The host-key policy; never looser than OpenSSH's accept-new."""
    policy = t.text("host_key", "strict", example="accept-new")
    if policy not in HOST_KEY_POLICIES:
        raise t.error(
            "host_key",
            f"unknown host_key policy {policy!r} — expected one of: {', '.join(HOST_KEY_POLICIES)} "
            "(there is no setting that turns host-key checking off)",
        )
    return policy


def _profile(t: Table, profiles: Sequence[str]) -> str:
    """One of ``profiles`` (the shipped platform profiles, whose facts drive teardown and
    the danger clocks)."""
    name = t.text("profile", DEFAULT_PROFILE, example=DEFAULT_PROFILE)
    if name not in profiles:
        close = difflib.get_close_matches(name, profiles, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise t.error("profile", f"unknown profile '{name}' — {hint}known: {', '.join(profiles)}")
    return name


def _check_template(t: Table, run: str, known: Sequence[str] = RUN_FIELDS) -> None:
    """Refuse ``{fields}`` other than ``known``, broken braces, and malformed ``[...]``
    optional parts (``domain.queue_file.template_parts``) in a ``run`` template."""
    allowed = ", ".join("{" + f + "}" for f in known)
    if run.rstrip().endswith("\\") and not run.rstrip().endswith("\\\\"):
        # A command pasted over lines kept its first one (h619 #1): the cells would run
        # "train.py --config {cfg} \" with every argument after it lost.
        raise t.error(
            "run",
            "the template ends with a backslash: a command pasted over lines kept only its "
            "first — write the whole command on one line",
        )
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(run) if f is not None]
    except ValueError as exc:
        raise t.error(
            "run", f"bad braces in the template ({exc}); write {{{{ and }}}} for literal braces"
        ) from None
    for field in fields:
        if field in GROUP_FIELDS and field not in known:
            raise t.error(
                "run",
                f"{{{field}}} is a [[groups]] placeholder: one torchrun over several boxes "
                "is a [[groups]] entry naming them (docs/groups.md), or nodes = N on a "
                "Slurm host (docs/slurm.md)",
            )
        if field not in known:
            raise t.error(
                "run", f"unknown field {{{field}}} in the template — expected only {allowed}"
            )
    quoted = _quoted_placeholder(run)
    if quoted is not None:
        raise t.error(
            "run",
            f"the placeholder {{{quoted}}} is inside quotes — write {{{quoted}}} bare: every "
            "value is already shell-quoted, and quotes around it would undo that",
        )
    brackets = bracket_problem(run)
    if brackets is not None:
        raise t.error("run", brackets)


def _quoted_placeholder(run: str) -> str | None:
    """The first ``{field}`` that stands inside single or double quotes, else None.

    A shell-quoted value inside double quotes is no longer quoted (``"'$(x)'"`` runs $(x)),
    and inside single quotes the quoting is printed literally; either re-opens injection
    or breaks the command, so such templates are refused at load time.
    """
    quote: str | None = None
    i = 0
    while i < len(run):
        ch = run[i]
        if ch == "\\" and quote != "'":  # an escaped character: neither quote nor brace
            i += 2
            continue
        if ch in "'\"" and (quote is None or quote == ch):
            quote = None if quote == ch else ch
        elif ch == "{":
            if run.startswith("{{", i):
                i += 2
                continue
            end = run.find("}", i)
            if quote is not None and end != -1:
                return run[i + 1 : end]
        i += 1
    return None


def _started_at(t: Table) -> datetime | None:
    """``started_at`` as an aware UTC datetime; naive values are taken as UTC."""
    value = t.data.get("started_at")
    if value is None:
        return None
    if isinstance(value, str):
        try:
            # Python 3.10's fromisoformat does not take a trailing "Z".
            text = value.strip()
            text = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
            value = datetime.fromisoformat(text)
        except ValueError:
            value = None
    if not isinstance(value, datetime):
        raise t.error(
            "started_at",
            "expected a date-time such as started_at = 2024-05-01T12:00:00Z (naive means UTC)",
        )
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def local_path(base: Path | None, text: str | None) -> Path | None:
    """A local path with ``~`` expanded; relative ones joined to ``base`` when given
    (``base`` is the fleet file's folder: the reader passes it in)."""
    if text is None:
        return None
    path = Path(text).expanduser()
    return path if path.is_absolute() or base is None else base / path
