"""Platform profiles: what a teardown verb destroys and what keeps billing, as data.

The model only: the facts live in one TOML file per platform in ``rgt_tui/profiles/``
(from reference/platforms.md), and the one loader that reads and checks them is
``rgt_tui.profiles`` (the known names are the files present).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PROFILE = "generic-ssh"  # a host that names no profile: a bare SSH box


@dataclass(frozen=True)
class Profile:
    """The facts of one platform that teardown and the danger clocks show."""

    name: str
    title: str
    teardown_verb: str
    irreversible: bool
    destroys: str
    stop_survives: str
    meter_stop_survives: str
    keeps_billing: tuple[str, ...]
    danger_clocks: tuple[str, ...]
    spot_grace: str
    release_after_off_days: float | None = None  # auto-release of a powered-off box
    # Where a durable dir survives the teardown verb (principle 4), checked by preflight
    # on the box's resolved path: under one of ``durable_under`` (none: no path rule),
    # never under one of ``durable_not_under`` ("$TMPDIR": the box's value), and, with
    # ``durable_own_mount``, on a mount of its own (not the container's overlay root).
    durable_under: tuple[str, ...] = ()
    durable_not_under: tuple[str, ...] = ()
    durable_own_mount: bool = False
    # With ``durable_own_mount``: what becomes of a durable dir on the root filesystem
    # (the pod's, RunPod's container disk) and the fix ("{host}": the host's name).
    durable_mount_lost: str = ""
    durable_mount_fix: str = ""
    # Whether the platform has a stop that can be undone (the box starts again with its
    # disk): the only kind ``rgt-tui watch`` may run on its own (a host's opt-in ``stop``
    # with ``autostop_minutes``). False where the only verb destroys (Lambda: terminate)
    # or where there is no stop to speak of (a bare SSH box, Slurm, a pod).
    reversible_stop: bool = False
    # The platform's reversible stop as a fleet file's ``stop`` would hold it (an example
    # instance id): autostop's refusals offer it ("" where none is known; h602 #7 offered
    # vast.ai's to a RunPod host).
    stop_example: str = ""
    # Seconds between periodic pulls (``watch``, the TUI) of a host that sets no
    # ``pull_every``: where a box can vanish with its disk (spot, auto-release, a pod),
    # results must leave it as they appear. None: no periodic pull unless asked.
    pull_every: float | None = None
    # What `rgt-tui add` and the add screen offer a new host of this platform (Enter takes
    # it): where its code is synced and cells run, and where results go (``{out}`` is
    # ``<durable_dir>/<cell>``; ``pull`` is offered as ``[durable_dir]``). A ``<word>`` in
    # it is a part only the user knows (Lambda's filesystem name): it must be replaced.
    # The defaults here are a bare box's, under its home (never the whole home).
    suggested_workdir: str = "~/code"
    suggested_durable_dir: str = "~/runs"
    # USD per GB pulled off a box (U14: the pull plan's cost line); None where the
    # platform publishes no one price (set it per host: ``egress_usd_per_gb``).
    egress_usd_per_gb: float | None = None
    # Whether the platform rents interruptible boxes at all (vast.ai interruptible, RunPod
    # spot, a Slurm partition with preemption): a host of it says ``interruptible = true``
    # when it is one. ``spot_grace_s``: the seconds such a box gets between the first sign
    # and the kill (the number behind ``spot_grace``'s words: vast.ai 0, RunPod 5, Slurm
    # KillWait 30); a box unreachable longer than it is taken as preempted (on_preempt).
    interruptible_possible: bool = False
    spot_grace_s: float | None = None
    # Mean hours between preemptions of an interruptible box: the MTBF of Young/Daly's
    # W = √(2·MTBF·C) (domain.young_daly; docs/spot.md). A rough default a host overrides
    # with its own ``preempt_mtbf_hours``; None: the platform has no preemption to time.
    preempt_mtbf_hours: float | None = None
    # generic-ssh §3: a platform whose boxes sit behind the GFW (the China family,
    # AutoDL). Its hosts' route to the pip index, Hugging Face and GitHub is measured by
    # preflight (``route``), and these mirrors are every cell's PIP_INDEX_URL and
    # HF_ENDPOINT unless the host sets its own (domain.routes).
    china_mirrors: bool = False
    pip_index_url: str | None = None
    hf_endpoint: str | None = None

    @property
    def clock_lines(self) -> tuple[str, ...]:
        """The danger clocks, then the spot grace: what the platform does to a box and a
        run without asking, and how long a run gets to save itself when interrupted."""
        return (*self.danger_clocks, f"spot grace: {self.spot_grace}")


def danger_clock_note(profile: Profile) -> str:
    """The profile's clocks and spot grace as bullet lines, for a notification."""
    return "\n".join(f"• {line}" for line in profile.clock_lines)
