"""The keys of a host that is a Slurm cluster's login node (issue 32).

``scheduler = "slurm"`` makes a host's queue one job array (``sbatch --array``) instead
of a tmux session on the login node, the one place a cluster forbids training. The
other keys (``partition``, ``account``, ``gres``, ``time``, ``mem``, ``cpus_per_task``,
``max_parallel``, ``signal_lead_s``, ``sbatch_args``) go to ``sbatch``; they are refused
on a host without ``scheduler = "slurm"``, where they would silently do nothing.

``nodes = N`` (N >= 2, issue 41) makes each cell one job over N nodes, one torchrun
agent per node started by ``srun`` (``nproc_per_node``: processes per node, default the
``gres`` count; ``master_port``: the rendezvous port, default derived from the job id);
both are refused without ``nodes``. The run template may then use the group
placeholders (``{nnodes}``…), filled in the job from its allocation (docs/slurm.md).
"""

from __future__ import annotations

import re

from rgt_tui.domain.config import SCHEDULERS, SLURM_KEYS, SlurmConfig
from rgt_tui.domain.config_toml import Table

# One sbatch option: --name or --name=value, the value free of whitespace and quotes
# (each is passed as one argument, shell-quoted; still, a newline or quote in it is a
# mistake, not a value).
_OPTION = re.compile(r"--[a-z][a-z0-9-]*(=[^\s'\"\\]+)?")
_TIME = re.compile(r"(\d+-)?\d{1,3}(:\d{2}){0,2}")
_MEM = re.compile(r"\d+[KMGT]?")
# Options the product sets itself: giving them again would change what the array is.
_OWN = ("--array", "--signal", "--requeue", "--output", "--error", "--chdir", "--job-name")


def slurm_config(t: Table) -> SlurmConfig | None:
    """The host's Slurm keys, or None for a host without ``scheduler = "slurm"``
    (mistakes recorded in ``t.problems``)."""
    c = t.checked
    scheduler = c(lambda: t.text("scheduler", "none", example="slurm"), "none")
    if scheduler not in SCHEDULERS:
        t.problems.append(
            t.error("scheduler", f"unknown scheduler {scheduler!r} — expected one of: slurm")
        )
        return None
    if scheduler != "slurm":
        for key in SLURM_KEYS[1:]:
            if key in t.data:
                # nproc_per_node, master_port: also a group's (one job over boxes).
                also = " (or, for one job over several boxes, a [[groups]] key)" if (
                    key in ("nproc_per_node", "master_port")
                ) else ""  # fmt: skip
                t.problems.append(
                    t.error(
                        key, f'{key} is a Slurm setting: add scheduler = "slurm" to this host{also}'
                    )
                )
        return None
    return SlurmConfig(
        partition=c(lambda: t.maybe("partition", example="gpu"), None),
        account=c(lambda: t.maybe("account", example="my-lab"), None),
        gres=c(lambda: t.maybe("gres", example="gpu:1"), None),
        time=c(lambda: _checked(t, "time", _TIME, "04:00:00"), None),
        mem=c(lambda: _checked(t, "mem", _MEM, "32G"), None),
        cpus_per_task=c(lambda: _maybe_int(t, "cpus_per_task"), None),
        max_parallel=c(lambda: _maybe_int(t, "max_parallel"), None),
        signal_lead_s=c(lambda: t.integer("signal_lead_s", 300), 300),
        sbatch_args=c(lambda: _sbatch_args(t), ()),
        checkpoint_write_s=c(lambda: t.integer("checkpoint_write_s", 60), 60),
        nodes=c(lambda: _nodes(t), None),
        nproc_per_node=c(lambda: _with_nodes(t, "nproc_per_node", 65536), None),
        master_port=c(lambda: _with_nodes(t, "master_port", 65535), None),
    )


def _nodes(t: Table) -> int | None:
    """``nodes``: at least 2 (one node is every Slurm host's cell: leave it out)."""
    if "nodes" not in t.data:
        return None
    n = t.integer("nodes", 2)
    if n < 2:
        raise t.error(
            "nodes",
            f"nodes = {n}: a cell on one node is the default — leave nodes out, or give "
            "2 or more for one torchrun job over several nodes",
        )
    return n


def _with_nodes(t: Table, key: str, most: int) -> int | None:
    """A multi-node key (``nproc_per_node``, ``master_port``): only beside ``nodes``."""
    if key not in t.data:
        return None
    if "nodes" not in t.data:
        raise t.error(key, f"{key} is for a cell over several nodes: add nodes = 2 (or more)")
    n = t.integer(key, 1)
    if n > most:
        raise t.error(key, f"{key} = {n} is more than {most}")
    return n


def _checked(t: Table, key: str, pattern: re.Pattern[str], example: str) -> str | None:
    value = t.maybe(key, example=example)
    if value is not None and not pattern.fullmatch(value):
        raise t.error(key, f'{value!r} is not a Slurm {key} — write e.g. {key} = "{example}"')
    return value


def _maybe_int(t: Table, key: str) -> int | None:
    return t.integer(key, 1) if key in t.data else None


def _sbatch_args(t: Table) -> tuple[str, ...]:
    """Extra sbatch options: each one ``--option`` or ``--option=value``."""
    if "sbatch_args" not in t.data:
        return ()
    args = t.text_list(
        "sbatch_args", [], example='["--qos=normal", "--constraint=a100"]', what="sbatch options"
    )
    for arg in args:
        if not _OPTION.fullmatch(arg):
            raise t.error(
                "sbatch_args",
                f"{arg!r} is not one sbatch option — write each as --option or --option=value "
                '(e.g. "--qos=normal"), no spaces or quotes',
            )
        if arg.split("=", 1)[0] == "--time":
            # The signal lead is checked against the time key: a --time here overrode it
            # unseen, and every cell got its TERM in its first second (h531 #4).
            raise t.error(
                "sbatch_args",
                f'{arg!r}: give the walltime as the host\'s time key (time = "04:00:00"), '
                "which the warning signal's lead is checked against — not in sbatch_args",
            )
        if arg.split("=", 1)[0] in _OWN:
            raise t.error(
                "sbatch_args",
                f"{arg.split('=', 1)[0]} is set by rgt-tui itself (the array, the warning "
                "signal, requeue, the output files) — leave it out",
            )
    return args
