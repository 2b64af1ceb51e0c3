"""The rules of one ``[[groups]]`` entry (issue 41): several boxes of the file running each
cell as one ``torchrun`` job, made into a host (``group_host``).

A group is a host: it has a name, a ``queue``, a ``run`` template (which may also use
``{nnodes}``, ``{node_rank}``, ``{nproc_per_node}``, ``{master_addr}``, ``{master_port}``),
a ``workdir`` and ``durable_dir`` on every box, and it is reached, pulled and shown through
rank 0, the first box of ``hosts``. Its NCCL settings are exported identically to every
rank (MN2, MN3). What is refused, each with the line, the key and the fix: a box that is
no host of the file, a box named twice, fewer than two boxes, a Slurm login node as a box,
a group named like a host. Pure: the boxes' HostConfigs are given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rgt_tui.domain.config import (
    GROUP_FIELDS,
    GROUP_KEYS,
    NCCL_DEBUG_LEVELS,
    PULL_RANKS,
    READY_KEYS,
    RUN_FIELDS,
    GroupConfig,
    HostConfig,
    Readiness,
)
from rgt_tui.domain.config_hosts import NAME_RE, _pull_refused, _run, box_dir, box_dirs, local_path
from rgt_tui.domain.config_ready import readiness
from rgt_tui.domain.config_toml import Table

# An address or host name the other boxes dial: no spaces, quotes or braces (it is put
# into the run template and an env file, both shell-quoted, but it must stay one word).
_ADDR_RE = re.compile(r"[A-Za-z0-9._:%-]+")
# NCCL_SOCKET_IFNAME: interface prefixes, an optional leading ^ (exclude) or = (exact).
_IFNAME_RE = re.compile(r"[\^=]?[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*")
_HCA_RE = re.compile(r"[\^=]?[A-Za-z0-9._:-]+(,[A-Za-z0-9._:-]+)*")
DEFAULT_MASTER_PORT = 29500
DEFAULT_NCCL_TIMEOUT_S = 600  # NCCL's own 1800 s hides a dead rank for half an hour (MN3)


def raw_groups(top: Table) -> list[Mapping[str, Any]]:
    """The ``[[groups]]`` entries as parsed: a list of tables, else a mistake."""
    raw = top.data.get("groups", [])
    if isinstance(raw, dict):
        raise top.error(
            "groups",
            "'groups' is written as a single table [groups]; write one entry per group "
            "with double brackets: [[groups]]",
        )
    if not isinstance(raw, list) or not all(isinstance(g, dict) for g in raw):
        raise top.error("groups", "expected one [[groups]] entry per group (an array of tables)")
    return raw


def group_host(
    t: Table, base: Path, hosts: Sequence[HostConfig], fleet_ready: Readiness
) -> HostConfig | None:
    """Check one ``[[groups]]`` entry against the file's ``hosts`` and make it a host;
    None when it has mistakes (each in ``t.problems``)."""
    before = len(t.problems)
    t.reject_unknown(GROUP_KEYS)
    c = t.checked
    name = c(lambda: _group_name(t, hosts), "")
    members = c(lambda: _members(t, hosts), ())
    if len(t.problems) > before or not members:
        return None
    rank0 = members[0]
    workdir = c(
        lambda: box_dir(t, "workdir", t.text("workdir", rank0.workdir, example="/workspace")),
        rank0.workdir,
    )
    # Like a host's: durable_dir defaults to the workdir; with neither given, rank 0's.
    durable_default = workdir if "workdir" in t.data else rank0.durable_dir
    durable = c(
        lambda: box_dir(
            t, "durable_dir", t.text("durable_dir", durable_default, example="/workspace/runs")
        ),
        durable_default,
    )
    run = c(lambda: _run(t, (*RUN_FIELDS, *GROUP_FIELDS)), None)
    group = GroupConfig(
        hosts=tuple(m.name for m in members),
        members=members,
        nproc_per_node=c(lambda: t.integer("nproc_per_node", 1), 1),
        master_addr=c(lambda: _master_addr(t, rank0), "127.0.0.1"),
        master_port=c(lambda: _port(t), DEFAULT_MASTER_PORT),
        nccl_socket_ifname=c(lambda: _matching(t, "nccl_socket_ifname", _IFNAME_RE, "eth"), None),
        nccl_ib=c(lambda: _nccl_ib(t), "off"),
        nccl_timeout_s=c(
            lambda: t.integer("nccl_timeout_s", DEFAULT_NCCL_TIMEOUT_S), DEFAULT_NCCL_TIMEOUT_S
        ),
        nccl_debug=c(lambda: _choice(t, "nccl_debug", NCCL_DEBUG_LEVELS, "auto"), "auto"),
        pull_ranks=c(lambda: _choice(t, "pull_ranks", PULL_RANKS, "0"), "0"),
        ready_keys=tuple(k for k in READY_KEYS if k in t.data),
    )
    # The group's readiness keys, when it gives any, stand for every rank; else each box's
    # own (each rank's are ``ranks.rank_hosts``'; the group's own are rank 0's).
    ready = readiness(t, base, fleet_ready) if group.ready_keys else rank0.ready
    host = HostConfig(
        name=name,
        ssh=rank0.ssh,  # the group is reached (pulled, shown) through rank 0
        identity_file=rank0.identity_file,
        known_hosts=rank0.known_hosts,
        profile=rank0.profile,
        # Its boxes bill, each on its own pane and in every total (header, status,
        # metrics sum all hosts'): the group's own price would count them twice.
        cost_per_hour=None,
        started_at=None,
        workdir=workdir,
        durable_dir=durable,
        mounts=rank0.mounts,
        mounts_given=rank0.mounts_given,
        queue=local_path(base, c(lambda: t.maybe("queue", example="queues/pair.txt"), None)),
        run=run,
        pull=c(lambda: box_dirs(t, "pull", t.text_list("pull", [durable])), ()),
        teardown=None,  # a group is torn down box by box, each behind its own gate
        epochs=c(lambda: t.integer("epochs", rank0.epochs), rank0.epochs),
        line=t.line(),
        host_key=rank0.host_key,
        pull_refused=_pull_refused(t, name, durable),
        ready=ready,
        group=group,
    )
    return host if len(t.problems) == before else None


def _group_name(t: Table, hosts: Sequence[HostConfig]) -> str:
    """The required ``name``: a plain word (it names local folders), no host's name."""
    name = t.required("name", "pair")
    if not NAME_RE.fullmatch(name) or name in (".", ".."):
        raise t.error(
            "name",
            f"group name {name!r} may only use ASCII letters and digits, '.', '_' and '-' (it names "
            "local folders)",
        )
    clash = next((h for h in hosts if h.name == name), None)
    if clash is not None:
        raise t.error(
            "name",
            f"group name {name!r} is already the name of the host at line {clash.line} — "
            "a group is a host too: give it a name of its own",
        )
    return name


def _members(t: Table, hosts: Sequence[HostConfig]) -> tuple[HostConfig, ...]:
    """``hosts``: at least two distinct box names of this file, rank 0 first."""
    if "hosts" not in t.data:
        raise t.error(
            "hosts", 'missing required key \'hosts\' — add hosts = ["box1", "box2"] (rank 0 first)'
        )
    names = t.text_list("hosts", [], example='["box1", "box2"]', what="host names")
    if len(names) != len(t.data["hosts"]):
        twice = sorted({n for n in t.data["hosts"] if t.data["hosts"].count(n) > 1})
        raise t.error(
            "hosts", f"{', '.join(twice)}: named twice — each box runs one rank of the job"
        )
    if len(names) < 2:
        raise t.error(
            "hosts",
            "a group needs at least two boxes — one box runs its queue as a host of its own",
        )
    known = {h.name: h for h in hosts}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise t.error(
            "hosts",
            f"{', '.join(unknown)}: not a host of this file — add a [[hosts]] entry for "
            f"each box first (known: {', '.join(known) or 'none'})",
        )
    slurm = [n for n in names if known[n].slurm is not None]
    if slurm:
        raise t.error(
            "hosts",
            f"{', '.join(slurm)}: a Slurm login node runs its jobs on the cluster, not on "
            "itself — leave it out of the group",
        )
    return tuple(known[n] for n in names)


def _master_addr(t: Table, rank0: HostConfig) -> str:
    """The address the other boxes reach rank 0 at: the key, else rank 0's SSH host
    (which may be a NAT'd address the others cannot use: preflight checks it)."""
    default = rank0.ssh.host if rank0.ssh is not None else "127.0.0.1"
    addr = t.text("master_addr", default, example="10.0.0.1")
    if not _ADDR_RE.fullmatch(addr):
        raise t.error(
            "master_addr",
            f"{addr!r} is not an address — write the IP or host name rank 0's box is "
            'reached at from the others, e.g. master_addr = "10.0.0.1"',
        )
    return addr


def _port(t: Table) -> int:
    port = t.integer("master_port", DEFAULT_MASTER_PORT)
    if not 1 <= port <= 65535:
        raise t.error("master_port", f"expected a TCP port 1–65535, got {port}")
    return port


def _matching(t: Table, key: str, pattern: re.Pattern[str], example: str) -> str | None:
    value = t.maybe(key, example=example)
    if value is not None and not pattern.fullmatch(value):
        raise t.error(
            key, f'{value!r}: expected interface names like {key} = "{example}" or "^docker0,lo"'
        )
    return value


def _nccl_ib(t: Table) -> str:
    """``nccl_ib``: off (default: a TCP-only rental), on, or the HCA list (``mlx5``)."""
    value = t.data.get("nccl_ib", "off")
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str) and (value in ("on", "off") or _HCA_RE.fullmatch(value)):
        return value
    raise t.error(
        "nccl_ib",
        f'expected "off" (no InfiniBand: NCCL_IB_DISABLE=1), "on", or the HCA list such as '
        f'nccl_ib = "mlx5", got {value!r}',
    )


def _choice(t: Table, key: str, choices: Sequence[str], default: str) -> str:
    value = t.text(key, default, example=default)
    if value not in choices:
        raise t.error(key, f"expected one of: {', '.join(choices)}, got {value!r}")
    return value
