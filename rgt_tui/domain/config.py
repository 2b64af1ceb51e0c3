"""The fleet file's model (``hosts.toml``): frozen data, its keys, and its errors.

A fleet file has an optional ``[fleet]`` table and one ``[[hosts]]`` block per box; the
commented ``hosts.example.toml`` at the project root documents every key (the user's own
``./hosts.toml`` is theirs, ignored by git). A missing file, or one with no host, means
"this machine alone" (``Fleet.is_default``, ``make_fleet``). Every mistake is reported
with the file, the line and the key, and what to write instead (``ConfigError``).

Where the rest is: checking the TOML (``config_parse``: the file's tables, every mistake
found in one pass; ``config_toml``: typed access that knows each key's line) and each
host's rules (``config_hosts``); reading the file from disk is
``rgt_tui.services.fleet.file`` (``load_fleet``, ``resolve_fleet_path``): no I/O here.

Past 450 lines on purpose: every key the file may hold and the frozen record it fills,
side by side, so a new key is one edit in one place; the parsing lives elsewhere (above).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime
from functools import cached_property
from pathlib import Path

from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.profiles import DEFAULT_PROFILE
from rgt_tui.domain.ssh_target import (
    LOCAL,
    SSH_FORMS,
    SshTarget,
    parse_ssh_target,
)

__all__ = [
    "ConfigError", "Credential", "Fleet", "FleetWatch", "GroupConfig", "HostConfig", "HostWatch",
    "Readiness", "SlurmConfig", "SshTarget", "Thresholds",
    "make_fleet", "parse_ssh_target", "SSH_FORMS", "LOCAL",
]  # fmt: skip

FLEET_FILE_NAME = "hosts.toml"
ENV_VAR = "RGT_HOSTS"
RUN_FIELDS = ("cfg", "task", "epochs", "name", "out")

TOP_KEYS = ("fleet", "hosts", "groups")
# Readiness keys (issue 29: sync, credentials, preflight, tracker) may stand in [fleet],
# as every host's default, or in a [[hosts]] entry, which wins; see config_ready.
READY_KEYS = (
    "code", "code_exclude", "credentials", "tracker", "tracker_patterns", "python",
    "checkpoint_gb", "keep_checkpoints", "preflight_ack",
)  # fmt: skip
# Issue 42: the smoke step before the queue (GEN5/U10) and the China routes (generic-ssh
# §3): mirrors exported to every cell, the route measured from the box.
READY_KEYS += ("smoke", "smoke_seconds", "china_mirrors", "pip_index_url", "hf_endpoint")
READY_KEYS += ("github_url",)
# Preflight's checks, by the names `--ack`, the plan dialog and `preflight_ack` use.
PREFLIGHT_CHECKS = (
    "python", "torch", "gpu", "driver", "arch", "gpu-busy", "disk", "storage", "durable",
    "tmux", "code", "crlf", "syntax", "signal-lead", "partition", "smoke", "route",
)  # fmt: skip
# A group's checks across its boxes (issue 41, MN1-MN4: domain.preflight_group).
GROUP_PREFLIGHT_CHECKS = ("same-code", "same-stack", "rendezvous", "nic", "mtu", "fabric", "clocks")
PREFLIGHT_CHECKS += GROUP_PREFLIGHT_CHECKS
# Watching while the app is closed (issue 31): see config_watch.
WATCH_FLEET_KEYS = ("notify", "notify_reminder_minutes", "tui_notify", "pull_rate_mbit")
WATCH_HOST_KEYS = ("notify", "pull_every", "stop", "autostop_minutes")
# Interruptible boxes (issue 40): the host says it is one; what watch and the TUI do when
# it is preempted (``on_preempt``), and where a moved cell may go (``spare``, hosts of
# this file). ``on_preempt`` and ``spare`` may stand in [fleet] as every host's default.
PREEMPT_FLEET_KEYS = ("on_preempt", "spare")
WATCH_FLEET_KEYS += PREEMPT_FLEET_KEYS
WATCH_HOST_KEYS += ("interruptible", *PREEMPT_FLEET_KEYS)
ON_PREEMPT = ("off", "move", "relaunch")
# A Slurm cluster's login node as a host (issue 32): see config_slurm.
SLURM_KEYS = (
    "scheduler", "partition", "account", "gres", "time", "mem", "cpus_per_task",
    "max_parallel", "signal_lead_s", "sbatch_args", "checkpoint_write_s",
    # One cell over several nodes (issue 41): one torchrun agent per node, under srun.
    "nodes", "nproc_per_node", "master_port",
)  # fmt: skip
SCHEDULERS = ("none", "slurm")
FLEET_KEYS = (
    "results_dir", "poll_seconds", "default_epochs", "thresholds", "verify_python",
    "verify_safe_globals", *READY_KEYS,
    *WATCH_FLEET_KEYS,
)  # fmt: skip
THRESHOLD_KEYS = tuple(f.name for f in fields(Thresholds))
HOST_KEYS = (
    "name", "ssh", "identity_file", "known_hosts", "profile", "cost_per_hour", "started_at",
    "workdir", "durable_dir", "data_dir", "mounts", "queue", "run", "pull", "teardown", "epochs",
    "host_key", *READY_KEYS, *WATCH_HOST_KEYS, *SLURM_KEYS,
)  # fmt: skip
# What a GB leaving the box costs, overriding the profile's (U14; domain/egress.py).
HOST_KEYS += ("egress_usd_per_gb",)
# Mean hours between preemptions, over the profile's (issue 40: Young/Daly W; docs/spot.md).
HOST_KEYS += ("preempt_mtbf_hours",)
# A group of boxes running one job (issue 41): see config_groups. A group is a host whose
# cells run as one torchrun over its boxes; its run template may use GROUP_FIELDS too.
GROUP_FIELDS = ("nnodes", "node_rank", "nproc_per_node", "master_addr", "master_port")
GROUP_ONLY_KEYS = (
    "hosts", "nproc_per_node", "master_addr", "master_port", "nccl_socket_ifname", "nccl_ib",
    "nccl_timeout_s", "nccl_debug", "pull_ranks",
)  # fmt: skip
GROUP_KEYS = (
    "name", *GROUP_ONLY_KEYS, "queue", "run", "workdir", "durable_dir", "pull", "epochs",
    *READY_KEYS,
)  # fmt: skip
NCCL_DEBUG_LEVELS = ("auto", "INFO", "WARN", "VERSION", "TRACE", "off")
PULL_RANKS = ("0", "all")
# How an unknown host key is treated: "strict" refuses it until the user trusts it;
# "accept-new" (OpenSSH's meaning) records a first key and still refuses a changed one.
HOST_KEY_POLICIES = ("strict", "accept-new")


# Trackers whose "run started" line the tracker check knows (U35), and the default
# patterns of each (regular expressions, matched against a cell's log lines).
TRACKER_PATTERNS: dict[str, tuple[str, ...]] = {
    "wandb": (r"wandb: (?:🚀 )?(?:View run|Syncing run)",),
    "mlflow": (r"(?:🏃 )?View run \S+ at: https?://",),
    "tensorboard": (r"TensorBoard \S* ?at https?://", r"events\.out\.tfevents\."),
}
# Where a credential's value comes from on this machine.
CREDENTIAL_SOURCES = ("env", "netrc", "file")


class ConfigError(ValueError):
    """Fleet-file mistakes: where each is (file, line, key) and what to write instead.

    ``problems`` holds every mistake found, in line order, each a ConfigError of its own;
    ``file``, ``line``, ``key`` and ``message`` are the first one's. ``str()`` is the one
    ``file:line: key: message`` line, or with several a count and then one such line each.
    """

    def __init__(
        self, file: str | Path, message: str, *, line: int | None = None, key: str | None = None
    ) -> None:
        self.file = str(file)
        self.line = line
        self.key = key
        self.message = message
        self.problems: tuple[ConfigError, ...] = (self,)
        # Set when every mistake lies inside some [[hosts]] / [[groups]] entries.
        self.partial: PartialFleet | None = None
        super().__init__(self.where_what())

    @classmethod
    def collect(cls, problems: Iterable[ConfigError]) -> ConfigError:
        """One error for many, ordered by line, each distinct mistake once."""
        unique = {p.where_what(): p for p in problems}.values()
        ordered = sorted(unique, key=lambda p: p.line or 0)
        if not ordered:
            raise ValueError("ConfigError.collect needs at least one problem")
        if len(ordered) == 1:
            return ordered[0]
        first = ordered[0]
        error = cls(first.file, first.message, line=first.line, key=first.key)
        error.problems = tuple(ordered)
        error.args = (str(error),)
        return error

    def where_what(self) -> str:
        """This one mistake as ``file:line: key: message``."""
        where = self.file + (f":{self.line}" if self.line is not None else "")
        return ": ".join(part for part in (where, self.key, self.message) if part)

    def __str__(self) -> str:
        if len(self.problems) == 1:
            return self.where_what()
        head = f"{len(self.problems)} mistakes in {self.file}:"
        return "\n".join([head, *(p.where_what() for p in self.problems)])


@dataclass(frozen=True)
class Credential:
    """One secret a run needs, exported to each cell as the variable ``name``.

    ``source`` says where its value is read on this machine when a launch sends it:
    ``env`` (the variable ``ref`` of rgt-tui's environment), ``netrc`` (the password of
    machine ``ref`` in ``~/.netrc``) or ``file`` (the content of the file ``ref``). The
    value itself is never held in the config, so it never reaches a message or a log.
    """

    name: str
    source: str  # one of CREDENTIAL_SOURCES
    ref: str
    line: int | None = None


@dataclass(frozen=True)
class Readiness:
    """What a box needs before the meter runs (issue 29), with defaults filled in.

    ``code``: the local tree ``rgt-tui sync`` pushes to the workdir (None: no sync);
    ``code_exclude``: gitignore-style patterns left out besides ``.gitignore``'s;
    ``credentials``: exported to every cell; ``tracker``: "" (no check), wandb, mlflow or
    tensorboard, whose run line a cell's log must print (U35), ``tracker_patterns`` the
    regular expressions that count as that line; ``python``: the run's interpreter on the
    box (None: read from the ``run`` template); ``checkpoint_gb`` × ``keep_checkpoints``:
    the disk budget preflight checks (None: the newest checkpoint found decides);
    ``preflight_ack``: checks (PREFLIGHT_CHECKS) a launch may go ahead without.
    """

    code: Path | None = None
    code_exclude: tuple[str, ...] = ()
    credentials: tuple[Credential, ...] = ()
    tracker: str = ""
    tracker_patterns: tuple[str, ...] = ()
    python: str | None = None
    checkpoint_gb: float | None = None
    keep_checkpoints: int = 2
    # Preflight checks acknowledged for every launch of the host (a CPU-only box: "gpu").
    preflight_ack: tuple[str, ...] = ()
    # GEN5/U10: ``smoke``, a command run on the box before the queue in the cells'
    # environment (None: the queue's first cell, when ``smoke_seconds`` is set), for at
    # most ``smoke_seconds`` (None with a command: SMOKE_DEFAULT_S); no smoke without either.
    smoke: str | None = None
    smoke_seconds: float | None = None
    # generic-ssh §3, principle 7: None leaves it to the profile (china, autodl: on);
    # the mirrors (None: the profile's default, else the official) are exported to every
    # cell; ``github_url`` is the GitHub address the route check measures.
    china_mirrors: bool | None = None
    pip_index_url: str | None = None
    hf_endpoint: str | None = None
    github_url: str | None = None


@dataclass(frozen=True)
class HostWatch:
    """A host's keys for ``rgt-tui watch`` (issue 31), defaults filled in.

    ``notify``: Apprise URLs (the fleet's, then the host's own), written with
    ``${VAR}`` where a secret goes — expanded from the environment at send time, never
    stored; ``pull_every_s``: seconds between periodic pulls (None: the profile's
    default, else none); ``stop``: the provider's reversible stop command ``watch`` may
    run (opt-in, never a destroy); ``autostop_minutes``: how long the GPUs must idle
    after the queue ended, every result pulled and verified, before that stop.
    """

    notify: tuple[str, ...] = ()
    pull_every_s: float | None = None
    stop: str | None = None
    autostop_minutes: float | None = None
    # Issue 40: the box may be preempted (vast.ai interruptible, RunPod spot, a preemptible
    # Slurm partition); what is done then, unattended (one of ON_PREEMPT, the fleet's
    # default filled in), and the hosts a moved cell may go to, in order.
    interruptible: bool = False
    on_preempt: str = "off"
    spare: tuple[str, ...] = ()


@dataclass(frozen=True)
class FleetWatch:
    """The ``[fleet]`` keys of ``rgt-tui watch``: the fleet's notification targets
    (every host's, before its own), how long an open alert waits before a reminder,
    whether the TUI sends notifications too (off: ``watch`` is the one sender, so no one
    is told twice), and the bandwidth budget every pull of the fleet shares."""

    notify: tuple[str, ...] = ()
    reminder_minutes: float = 60.0
    tui_notify: bool = False
    pull_rate_mbit: float | None = None
    on_preempt: str = "off"  # every host's default (issue 40)
    spare: tuple[str, ...] = ()


@dataclass(frozen=True)
class SlurmConfig:
    """A host that is a Slurm cluster's login node: a queue is one job array there.

    Every field is passed to ``sbatch`` as written (None/empty: not passed, the
    cluster's default); ``max_parallel``: the array's ``%N``; ``signal_lead_s``: seconds
    before the walltime the cell gets SIGTERM (``--signal=B:USR1@N`` to the task
    script, which passes TERM on; SLURM2);
    ``sbatch_args``: extra options, each checked to be one ``--option[=value]``.
    """

    partition: str | None = None
    account: str | None = None
    gres: str | None = None  # e.g. "gpu:1"
    time: str | None = None  # e.g. "04:00:00"
    mem: str | None = None  # e.g. "32G"
    cpus_per_task: int | None = None
    max_parallel: int | None = None
    signal_lead_s: int = 300
    sbatch_args: tuple[str, ...] = ()
    # How long one checkpoint takes to write (SLURM2): the lead must cover it plus
    # Slurm's 60 s slack. Nothing on the box measures it yet, so it is the user's figure.
    checkpoint_write_s: int = 60
    # Issue 41: each cell one job over ``nodes`` nodes (None: one node, the array's
    # task), one torchrun agent per node; ``nproc_per_node`` None: the gres count;
    # ``master_port`` None: derived from the job id (services/queue/slurm/sbatch.py).
    nodes: int | None = None
    nproc_per_node: int | None = None
    master_port: int | None = None


@dataclass(frozen=True)
class GroupConfig:
    """A ``[[groups]]`` entry: boxes of this file running each cell as one torchrun job.

    ``members`` are the boxes' own HostConfigs in rank order (rank 0 first);
    ``master_addr``: the address the other boxes reach rank 0 at (the group's key, else
    rank 0's SSH host: the preflight checks it is reachable); the NCCL settings are
    exported identically to every rank (MN2, MN3): ``nccl_ib`` "off" sets
    ``NCCL_IB_DISABLE=1`` (a TCP-only rental), "on" leaves NCCL's own probing, any other
    text is the HCA list (``NCCL_IB_HCA``); ``nccl_debug`` "auto" is INFO on the group's
    first launch and WARN after; ``pull_ranks`` "all" pulls every rank's durable dir;
    ``ready_keys``: the readiness keys the entry itself gives (they stand for every
    rank; a rank takes its own box's for the others: ``python`` key by key).
    """

    hosts: tuple[str, ...]
    members: tuple[HostConfig, ...]
    nproc_per_node: int = 1
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    nccl_socket_ifname: str | None = None
    nccl_ib: str = "off"
    nccl_timeout_s: int = 600
    nccl_debug: str = "auto"
    pull_ranks: str = "0"
    ready_keys: tuple[str, ...] = ()

    @property
    def nnodes(self) -> int:
        """How many boxes (torchrun's ``--nnodes``)."""
        return len(self.hosts)


@dataclass(frozen=True)
class HostConfig:
    """One ``[[hosts]]`` block with every default filled in."""

    name: str
    ssh: SshTarget | None  # None means this machine, reached without SSH
    identity_file: Path | None
    known_hosts: Path | None  # None: the transport uses ~/.ssh/known_hosts
    profile: str
    cost_per_hour: float | None
    started_at: datetime | None  # always timezone-aware, UTC
    workdir: str
    durable_dir: str
    mounts: tuple[str, ...]
    queue: Path | None
    run: str | None
    pull: tuple[str, ...]
    teardown: str | None
    epochs: int
    line: int | None = None  # line of the block's [[hosts]] header, for messages
    # Where identity_file is written (``hosts.toml:14``: its own line, or the ssh line
    # whose -i gave it): a key that cannot be used at connect time is named there.
    identity_at: str = ""
    host_key: str = "strict"  # one of HOST_KEY_POLICIES
    # Why this host must not be pulled as configured (``pull`` would default to a whole
    # home): "<file>:<line>: pull: ..." naming the host and the fix. A pull refuses with
    # it before anything runs on the box; None: pulls may go ahead.
    pull_refused: str | None = None
    ready: Readiness = Readiness()
    watch: HostWatch = HostWatch()
    slurm: SlurmConfig | None = None  # set when scheduler = "slurm"
    # Where the run reads its data (U8: preflight's storage check); None: the workdir.
    data_dir: str | None = None
    # USD per GB leaving the box (U14), over the profile's; None: the profile's price.
    egress_usd_per_gb: float | None = None
    # Mean hours between preemptions (Young/Daly W), over the profile's; None: the profile's.
    preempt_mtbf_hours: float | None = None
    # Set for a [[groups]] entry (issue 41): its cells run on every member box at once.
    group: GroupConfig | None = None
    # The entry names its ``mounts`` (not the default "/", workdir, durable_dir): one the
    # box cannot read is a typo to tell (``disk.unread``); a default one not made yet is not.
    mounts_given: bool = False

    @property
    def is_local(self) -> bool:
        """True for this machine (``ssh = "local"``)."""
        return self.ssh is None

    @property
    def alert_rate(self) -> float | None:
        """The rate the cost alerts (GEN1, P1) read: ``cost_per_hour``, None (not set:
        told as billed at a rate not set, h513 #1) only for a rented box that can take
        one. A group (its boxes bill), this machine, and a cluster's login node never
        bill as a box: 0, no cost alert (review h514 #4)."""
        if self.group is not None or self.is_local or self.is_login_node:
            return self.cost_per_hour or 0.0
        return self.cost_per_hour

    @property
    def is_login_node(self) -> bool:
        """True when the host only hands cells to a scheduler and runs none itself (a
        Slurm login node): what it is, read once from its settings, so the domain's rules
        (which checks preflight runs there) need not know which scheduler it is."""
        return self.slurm is not None


@dataclass(frozen=True)
class Fleet:
    """The whole fleet file; ``is_default`` when it named no host and this machine stands in."""

    path: Path | None
    results_dir: Path
    poll_seconds: float
    default_epochs: int
    thresholds: Thresholds
    hosts: tuple[HostConfig, ...]
    is_default: bool = False
    # The interpreter verify loads checkpoints with (one that has torch, such as the
    # training environment's); None: this app's own interpreter.
    verify_python: str | None = None
    ready: Readiness = Readiness()  # the [fleet] defaults every host's own keys override
    watch: FleetWatch = FleetWatch()
    # Globals a checkpoint may name and still load (``module.Name``; torch's
    # add_safe_globals), trusted by the user: argparse.Namespace in Lightning-style files.
    verify_safe_globals: tuple[str, ...] = ()
    # The file as it was read (inode, size, mtime ns; ``services.fleet.file.load_fleet``):
    # the live fleet file watch's baseline, so an edit saved while the app starts is a
    # change, not taken as what runs. None: not read from a file.
    read_stamp: tuple[int, int, int] | None = field(default=None, compare=False, repr=False)

    @cached_property
    def _by_name(self) -> dict[str, HostConfig]:
        # Built once per fleet (it is frozen): the TUI looks a host up for every sample,
        # and a scan of 500 hosts 500 times a second cost ~1 % of a core.
        return {h.name: h for h in reversed(self.hosts)}  # the first of a name wins

    def find(self, name: str) -> HostConfig | None:
        """The host called ``name``, or None."""
        return self._by_name.get(name)

    def host(self, name: str) -> HostConfig:
        """The host called ``name``; KeyError listing the known names otherwise."""
        host = self.find(name)
        if host is not None:
            return host
        known = ", ".join(h.name for h in self.hosts) or "none"
        raise KeyError(f"no host named {name!r} in {self.path or 'the fleet'}; known: {known}")

    def groups_of(self, name: str) -> tuple[HostConfig, ...]:
        """Every ``[[groups]]`` entry box ``name`` is a rank of."""
        return tuple(h for h in self.hosts if h.group is not None and name in h.group.hosts)

    def rank_of(self, name: str) -> tuple[str, int] | None:
        """(group, rank) of the first ``[[groups]]`` entry box ``name`` is a rank of; None
        when it is none's."""
        for host in self.hosts:
            if host.group is not None and name in host.group.hosts:
                return host.name, host.group.hosts.index(name)
        return None


@dataclass(frozen=True)
class PartialFleet:
    """What is sound of a fleet file whose mistakes all lie inside some ``[[hosts]]`` or
    ``[[groups]]`` entries: the fleet without those entries, and each one left out (its
    name, else its place, and its line; a name two entries use comes twice, once with each
    line, for both are left out). The command line goes on with it for the commands
    that only read, stop or pull (``cli/runner.py``), so a typo in one entry never blocks
    an emergency stop of another host."""

    fleet: Fleet
    left_out: tuple[tuple[str, int | None], ...]
    # (box, group): a box whose own entry is sound, left out as a rank of a broken group
    # (its queue commands would not see the group's job there).
    ranks: tuple[tuple[str, str], ...] = ()


def make_fleet(
    path: Path | None,
    results_dir: Path,
    poll: float,
    epochs: int,
    thresholds: Thresholds,
    hosts: tuple[HostConfig, ...],
    verify_python: str | None = None,
    ready: Readiness = Readiness(),
    watch: FleetWatch = FleetWatch(),
    verify_safe_globals: tuple[str, ...] = (),
) -> Fleet:
    """Assemble a Fleet, standing this machine in when no host was configured."""
    if hosts:
        return Fleet(
            path, results_dir, poll, epochs, thresholds, hosts, False, verify_python, ready, watch,
            verify_safe_globals,
        )  # fmt: skip
    local = HostConfig(
        name=LOCAL, ssh=None, identity_file=None, known_hosts=None, profile=DEFAULT_PROFILE,
        cost_per_hour=None, started_at=None, workdir="~", durable_dir="~", mounts=("/", "~"),
        queue=None, run=None, pull=("~",), teardown=None, epochs=epochs,
        pull_refused=(
            "no fleet file: this machine stands in, and its pulls would default to the whole "
            'home — write a hosts.toml naming the folders to pull, e.g. pull = ["~/runs"]'
        ),
        ready=ready,
    )  # fmt: skip
    return Fleet(
        path, results_dir, poll, epochs, thresholds, (local,), True, verify_python, ready, watch,
        verify_safe_globals,
    )  # fmt: skip
