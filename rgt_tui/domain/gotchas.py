"""The gotchas the health rules cite: one line of cause and one of fix each.

Condensed from ../shared/reference (gotchas_universal.md, generic-ssh.md, principles.md);
the ids are the catalog's, so a user can look the full entry up.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gotcha:
    """A catalogued failure mode: what causes it and what to do."""

    id: str
    title: str
    cause: str
    fix: str


_ENTRIES = (
    Gotcha(
        "U7",
        "Disk dies on inodes before bytes",
        "Many small files (per-sample eval output, caches) exhaust inodes while `df -h` looks fine.",
        "Watch `df -i`; tar small files into shards; delete reproducible scratch, keep metric JSONs.",
    ),
    Gotcha(
        "U6",
        "Disk-full crashes torch.save",
        "A full disk makes a checkpoint write fail half-way, often as an iostream error.",
        "Free space before the next save; prune superseded periodic checkpoints.",
    ),
    Gotcha(
        "U9",
        "cgroup OOM-kill: bare 'Killed', exit 137",
        "DataLoader workers each copy a big in-RAM object and blow the cgroup memory.max.",
        "Size num_workers against memory.max, share one copy (memmap), confirm via oom_kill.",
    ),
    Gotcha(
        "U41",
        "Host-wide figures are not your container's",
        "uptime/free/top describe the shared physical host; your limits are the cgroup's.",
        "Judge the box by cgroup memory.current/max and the oom_kill counter.",
    ),
    Gotcha(
        "GEN6",
        "A reboot silently orphans the run",
        "tmux and nohup jobs do not survive a reboot; the boot id changes.",
        "Check the queue state and resume from the last finished cell (checkpoint + resume).",
    ),
    Gotcha(
        "U21",
        "GPU util % lies",
        "Util counts windows where any kernel ran, not useful work; a trickle of tiny kernels reads 100%.",
        "Read SM clock and power beside util; low clock at high util means the GPU is underfed (U24).",
    ),
    Gotcha(
        "U23",
        "Thermal/power throttling steals 25–40 %",
        "The card throttles around 83 °C or at its power cap; a tenant cannot fix cooling.",
        "Flag the box and re-rent a healthier one; do not read the slowdown as a model regression.",
    ),
    Gotcha(
        "U22",
        "Xid 48/79: a dead GPU",
        "Xid 48 is a double-bit ECC error, Xid 79 a GPU fallen off the bus: hardware faults. "
        "In a container the kernel log is unreadable: nvidia-smi's 'GPU is lost'/ERR!, rising "
        "ECC counts or a GPU gone from the listing are the signs.",
        "Stop the instance and re-rent another box; do not debug code for a hardware fault.",
    ),
    Gotcha(
        "U24",
        "The GPU starves waiting on the dataloader",
        "The input pipeline cannot keep up: GPU util stays low while the log advances and the "
        "container's CPU quota is used up (U38: heavy per-sample CPU transforms).",
        "Raise DataLoader num_workers (up to the CPU quota − 1), pin_memory=True, "
        "persistent_workers=True, prefetch_factor=2; rent more vCPUs; stage data on local NVMe (U8).",
    ),
    Gotcha(
        "U11",
        "A zombie holds VRAM nvidia-smi cannot see",
        "A defunct process or dead container keeps a CUDA context; the GPU looks empty but OOMs.",
        "Find holders with `fuser -v /dev/nvidia*` and kill them, or restart the container.",
    ),
    Gotcha(
        "GEN7",
        "Two runs on one GPU halve throughput",
        "A second concurrent process oversubscribes the GPU's SMs and memory bandwidth.",
        "Run one job per GPU; queue the rest.",
    ),
    Gotcha(
        "U40",
        "Torch threads sized to host cores starve a vCPU slice",
        "OpenMP/torch default to the host core count, far above the cgroup's vCPU quota.",
        "Export OMP_NUM_THREADS and MKL_NUM_THREADS equal to the quota before launch.",
    ),
    Gotcha(
        "U43",
        "A detached run's log looks frozen",
        "stdout is block-buffered off a TTY, so a healthy run's log stays silent for minutes.",
        "Run with PYTHONUNBUFFERED=1 / python -u; judge liveness by artifact mtimes.",
    ),
    Gotcha(
        "U35",
        "A run with no tracker key records no curves",
        "Without its API key a logger wrapper disables the tracker (not offline): no run line, no curves.",
        "Send the key (credentials in hosts.toml) before launch; a log with no run line is a failure.",
    ),
    Gotcha(
        "GEN8",
        "A dropped poll is not a dead run",
        "The monitoring connection failed; the detached run on the box may be fine.",
        "Wait for the reconnect and check the run itself (tmux session, artifacts) before acting.",
    ),
    Gotcha(
        "GEN1",
        "A forgotten box bills 24/7",
        "The queue ended (it finished, or was stopped) but nobody released the box; nothing "
        "reclaims it.",
        "Relaunch what a stop left, or pull, verify and tear it down as soon as its results "
        "load locally.",
    ),
    Gotcha(
        "P4",
        "Know what survives stop vs destroy",
        "Each platform keeps or wipes different disks on stop, and some release stopped boxes.",
        "Read the profile's survival facts; pull before the platform's release clock runs out.",
    ),
    Gotcha(
        "RGT1",  # rgt-tui's own: a box is hostile input (DESIGN.md, "Trust")
        "A box reports more than any machine has",
        "Its sample listed more GPUs, disks, processes or throttle reasons than rgt-tui keeps "
        "(a broken driver, or a box that is not what it claims).",
        "Check the box by hand (nvidia-smi -L, df); if it is not what you rented, tear it down.",
    ),
    Gotcha(
        "P1",
        "Every idle paid minute is money",
        "The meter runs while the box is up, whether or not the GPU works.",
        "Start the next job, or pull, verify and tear the box down.",
    ),
)

GOTCHAS: dict[str, Gotcha] = {g.id: g for g in _ENTRIES}


def gotcha(gotcha_id: str) -> Gotcha | None:
    """The catalog entry for an id such as "U7", or None when it is not catalogued."""
    return GOTCHAS.get(gotcha_id.split("/")[0])
