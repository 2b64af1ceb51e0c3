"""Preflight's ``storage`` check (U8): the file system and disk under the data path and
the checkpoint path, and whether staging the data to local NVMe would pay.

A network file system (nfs, cifs, lustre, …), a fuse mount (s3fs, gcsfuse, juicefs, …) or
a spinning disk reads far slower than instance-local NVMe (HDD against NVMe: ~35×), and
the GPU starves between batches (U24). The data path — ``data_dir`` when set, else the
workdir — on one of those fails, acknowledgeable (a dataset that fits
in the page cache does not care); the checkpoint path is named, never failed (durable
storage is often a network volume on purpose, principle 4). Pure.

The facts come from ``preflight_check.py``'s ``storage_facts``: per path its mount, file
system type, source and, for a block device, the whole disk and its ``queue/rotational``.
"""

from __future__ import annotations

from typing import Any

from rgt_tui.domain.preflight import BoxFacts, Check, CheckContext, clip

NETWORK_FS = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre", "gpfs",
        "beegfs", "9p", "afs", "ocfs2", "gfs2", "orangefs", "pvfs2", "wekafs",
    }
)  # fmt: skip
OVERLAY_FS = frozenset({"overlay", "overlayfs", "aufs"})
MEMORY_FS = frozenset({"tmpfs", "ramfs"})
# The kernel's views (/proc, /sys, /dev, cgroups, …): file systems with no storage
# behind them, where a checkpoint can never be written (a durable dir there fails).
PSEUDO_FS = frozenset(
    {
        "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
        "securityfs", "pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs",
        "binfmt_misc", "efivarfs", "autofs", "nsfs", "rpc_pipefs", "selinuxfs",
    }
)  # fmt: skip
LABELS = {"data": "data_dir", "workdir": "workdir", "durable": "durable_dir"}


def is_virtual(disk: str, sys_path: str) -> bool:
    """A paravirtual disk (virtio-blk, xen): its ``rotational`` is 1 unless the host
    says otherwise, so it tells nothing about what backs it (this machine's virtio
    ``vda`` reports 1; tests/fixtures/storage/README.txt)."""
    return disk.startswith(("vd", "xvd")) or "/virtio" in sys_path or "/xen" in sys_path


def kind_of(item: dict[str, Any]) -> tuple[str, bool]:
    """What a path's storage is, in words, and whether data read from it is slow."""
    fstype = str(item.get("fstype") or "")
    disk = str(item.get("disk") or "")
    source = clip(item.get("source") or "?", 80)
    if not fstype:
        return "its mount is unknown", False
    if fstype in NETWORK_FS:
        return f"{fstype}, a network file system ({source})", True
    if fstype == "fuse" or fstype.startswith("fuse.") or fstype == "fuseblk":
        return f"{fstype}, a fuse mount ({source})", True
    if fstype in OVERLAY_FS:
        return f"{fstype}, the container's own layer (its disk is not visible)", False
    if fstype in MEMORY_FS:
        return f"{fstype}, in memory", False
    rotational = item.get("rotational")
    if rotational == "1" and is_virtual(disk, str(item.get("sys") or "")):
        # A virtio/xen disk says "rotational" by default, whatever backs it.
        return (
            f"{fstype} on {disk}, a virtual disk (its rotational flag is the hypervisor's "
            "default, not the backing storage)",
            False,
        )
    if rotational == "1":
        return f"{fstype} on {disk or '?'}, a spinning disk (HDD)", True
    if rotational == "0":
        what = "NVMe" if disk.startswith("nvme") else "SSD (not rotating)"
        return f"{fstype} on {disk}, {what}", False
    return f"{fstype} on {disk or source} (whether it rotates is unknown)", False


def check_storage(facts: BoxFacts, ctx: CheckContext) -> Check:
    """The data path is on local, non-rotating storage; both paths' storage named (U8)."""
    storage = facts.storage
    if not isinstance(storage, dict):
        said = "the run's python did not answer" if facts.python is None else "no answer"
        return Check("storage", False, f"not checked: {said}", "fix python first")
    if "error" in storage:
        return Check(
            "storage",
            False,
            f"could not read the mounts: {clip(storage['error'], 200)}",
            "see that /proc/self/mountinfo is readable on the box",
        )
    items = {str(i.get("label")): i for i in storage.get("paths") or [] if isinstance(i, dict)}
    data = items.get("data")
    first = ""  # said first: a data_dir the run is to make (a download at its start)
    if data is not None:
        # The loader's first batch is where a data_dir that is not there fails (s38 spot
        # hour #5 read "ok storage … ext4" of one). One whose folder above exists may be
        # the run's own to fill (download=True): said, not failed (the review of s38).
        where = clip(data.get("path") or data.get("real") or "?", 160)
        gone, unread = data.get("exists") is False, data.get("readable") is False
        if (gone and data.get("parent") is False) or (unread and not gone):
            what = "does not exist" if gone else "cannot be read"
            return Check(
                "storage",
                False,
                f"the data_dir {where} {what} on the box: the run's data loader fails there",
                f"copy the dataset to {where} on the box, or set data_dir for {ctx.host} to "
                "where it is",
            )
        if gone:
            first = f"data_dir {where} does not exist yet: the run must create or download it; "
    data_label = "data" if "data" in items else "workdir"
    said = []
    slow = ""
    for label in ("data", "workdir", "durable"):
        item = items.get(label)
        if item is None:
            continue
        words, is_slow = kind_of(item)
        role = {"data": "data", "workdir": "workdir", "durable": "checkpoints"}[label]
        if label == data_label:
            role = "data" if label == "data" else "data (workdir; no data_dir set)"
        where = clip(item.get("real") or item.get("path") or "?", 120)
        said.append(f"{role} {where}: {words}")
        if label == data_label and is_slow:
            slow = f"{LABELS[label]} {where} is on {words}"
    detail = first + ("; ".join(said) or "no path reported")
    if slow:
        return Check(
            "storage",
            False,
            f"{slow}: reading training data from it starves the GPU (U8) — {detail}",
            "stage the data to the box's local NVMe before training (copy it once, e.g. "
            f"rsync -a DATA /local/nvme/data, and set data_dir for {ctx.host} there), "
            "write checkpoints back to durable_dir; a dataset that fits in RAM may not "
            "need it: acknowledge the storage check",
        )
    return Check("storage", True, detail)
