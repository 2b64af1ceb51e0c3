"""The sampler: one dict with every protocol key, built from each sub-probe."""

import os
import socket
import time

from ..box_id import read_box_id
from .artifacts import ArtifactScanner
from .cgroup import CgroupProbe
from .common import PROTOCOL_VERSION, read_text, safe
from .disks import DiskProbe
from .gpu import GpuProbe
from .host import parse_meminfo, read_boot_id, read_container_start, read_loadavg, read_uptime
from .kmsg import KmsgReader
from .processes import read_proc_threads
from .queue_watch import QueueWatch, queue_boot_id
from .tracker_scan import TrackerScan


class Agent:
    """Holds the state kept between samples (GPU source, kmsg position, scan cache)."""

    def __init__(self, args):
        self.args = args
        self.gpu = GpuProbe(args)
        self.disks = DiskProbe(args.proc_root)
        # An unread path is said as the fleet file writes it (``~/data``), so the client
        # matches it to the host's ``mounts`` exactly.
        self.mount_given = dict(zip(args.mount, args.mount_given))  # noqa: B905 - python 3.6 here
        self.cgroup = CgroupProbe(args.proc_root, args.sys_root)
        self.kmsg = KmsgReader(args.dev_root)
        every = args.scan_every
        self.artifacts = ArtifactScanner(args.artifacts, every) if args.artifacts else None
        self.queue = None
        if args.queue_dir:
            self.queue = QueueWatch(args.queue_dir, args.out_root, args.proc_root, every)
        self.tracker_errors = []  # patterns this python cannot compile: said every sample
        self.tracker = TrackerScan(args.tracker_pattern or (), self.tracker_errors)
        self.container_start = None  # read once, at the first sample (see host.py)
        self.container_start_read = False

    def sample(self, seq):
        """Build one sample (a dict with every protocol key) for sequence number seq."""
        a = self.args
        errors = []
        mem_total, mem_available = safe(
            errors,
            "meminfo",
            lambda: parse_meminfo(read_text(os.path.join(a.proc_root, "meminfo"))),
            (None, None),
        )
        sample = {
            "v": PROTOCOL_VERSION,
            "t": time.time(),
            "seq": seq,
            "hostname": safe(errors, "hostname", socket.gethostname),
            "boot_id": safe(errors, "boot_id", lambda: read_boot_id(a.proc_root)),
            "uptime_s": safe(errors, "uptime", lambda: read_uptime(a.proc_root)),
            "loadavg": safe(errors, "loadavg", lambda: read_loadavg(a.proc_root)),
            "host_cpus": os.cpu_count(),
            "host_mem_total": mem_total,
            "host_mem_available": mem_available,
            "disks": safe(errors, "disks", lambda: self.disks.sample(a.mount, errors), []),
            "disks_unread": [[self.mount_given.get(p, p), why] for p, why in self.disks.unread],
            "cgroup": None,
            "gpu_source": "none",
            "gpu_unavailable_reason": None,
            "gpus": [],
            "gpu_processes": None,
            # The samples between two process lists carry the last one (the domain's
            # carry_processes), up to the next listing due: the cadence says when.
            "proc_every": a.proc_every,
            "xids": [],
            "kmsg_readable": None,
            "gpu_lost": [],
            "log_mtime": None,
            "artifact_mtime": None,
            "ckpt": None,  # the running cell's checkpoints (issue 40; probe/checkpoints.py)
            "cell": None,
            "queue_done_at": None,
            "queue_stopped": False,
            "cell_started": None,
            "tracker_seen": None,
            "box_id": None,
            "container_start": None,
            "errors": errors,
        }
        if not self.container_start_read:
            self.container_start_read = True  # unknown stays unknown: no re-read per sample
            self.container_start = safe(
                errors, "container_start", lambda: read_container_start(a.proc_root)
            )
        sample["container_start"] = self.container_start
        sample["cgroup"] = safe(
            errors,
            "cgroup",
            lambda: self.cgroup.sample(mem_total, errors),
        )
        poll_procs = seq % a.proc_every == 0
        gpu = safe(errors, "gpu", lambda: self.gpu.sample(seq, poll_procs, errors))
        if gpu is None:
            gpu = ("none", "GPU probe failed (see errors)", [], None)
        source, reason, gpus, procs = gpu
        if procs is not None:
            for p in procs:
                threads, omp = safe(
                    errors,
                    "process {}".format(p["pid"]),
                    lambda p=p: read_proc_threads(a.proc_root, p["pid"]),
                    (None, None),
                )
                p["threads"], p["omp_threads"] = threads, omp
        sample["gpu_source"] = source
        sample["gpu_unavailable_reason"] = reason
        sample["gpus"] = gpus
        sample["gpu_processes"] = procs
        sample["xids"] = safe(errors, "kmsg", self.kmsg.read_new, [])
        sample["kmsg_readable"] = self.kmsg.readable
        # What the GPU source said about a lost card (U22): the only sign of a dead GPU
        # where the kernel log is not readable.
        nvml = self.gpu.nvml
        sample["gpu_lost"] = list(nvml.lost if nvml.nvml is not None else self.gpu.smi.lost)
        log, artifacts = a.log, self.artifacts
        if self.queue is not None:
            boot = queue_boot_id(sample["boot_id"])
            cell, cell_log, scanner, done_at = safe(
                errors, "queue", lambda: self.queue.poll(boot), (None, None, None, None)
            )
            sample["cell"], sample["queue_done_at"] = cell, done_at
            sample["queue_stopped"] = self.queue.stopped
            if cell is not None:
                started = self.queue.started
                sample["cell_started"] = started
                sample["tracker_seen"] = safe(
                    errors, "tracker", lambda: self.tracker.poll((cell, started), cell_log)
                )
            errors.extend(self.tracker_errors)
            # --log / --artifacts, when given, name the paths outright.
            log = log or cell_log
            artifacts = artifacts or scanner
        if log:
            sample["log_mtime"] = safe(errors, "log", lambda: _mtime_or_none(log))
        if artifacts is not None:
            sample["artifact_mtime"] = safe(errors, "artifacts", artifacts.newest_mtime)
            sample["ckpt"] = safe(errors, "checkpoints", artifacts.checkpoints.sample)
        if not a.no_box_id:
            # Read every sample (one small file): a box re-created under the same name
            # must never pass for the old one, however long this agent has been running.
            sample["box_id"], why = read_box_id(a.box_id_file)
            if why:
                errors.append("box_id: " + why)
        return sample


def _mtime_or_none(path):
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return None  # the queue has not written its log yet
