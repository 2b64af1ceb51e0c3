#!/usr/bin/env python3
"""Record the /proc and /sys files the telemetry agent reads, from a live box, as a fixture.

The agent (``rgt_tui/agent/probe/``) takes ``--proc-root`` and ``--sys-root``, so a tree
of real files copied from a box replays that box in tests. This script copies exactly the
files the agent reads (and nothing else: no environ, no cmdline, no keys) into DEST::

    DEST/proc/self/cgroup, DEST/proc/self/mountinfo, DEST/proc/uptime, DEST/proc/loadavg,
    DEST/proc/meminfo, DEST/proc/sys/kernel/random/boot_id,
    DEST/sys/fs/cgroup/...      the cgroup files of this process's own cgroup and of the
                                hierarchy roots (v1: memory/ and cpu/; v2: the unified tree;
                                hybrid: also unified/)

and writes DEST/RECORDED.txt listing every file copied and every one that was absent.

Run it on the box itself, either from a checkout::

    python3 scripts/record_box_tree.py tests/fixtures/cgroup_v2_mybox

or over SSH with no checkout there, as a tar on stdout::

    ssh box 'python3 - --tar' < scripts/record_box_tree.py | (mkdir -p D && tar -x -C D)

It must run on the boxes' own old python3 (3.6+): stdlib only, no 3.7+ syntax.
"""

# ruff: noqa: UP021, UP022

import argparse
import io
import os
import socket
import sys
import tarfile
import time

PROC_FILES = (
    "self/cgroup",
    "self/mountinfo",
    "uptime",
    "loadavg",
    "meminfo",
    "sys/kernel/random/boot_id",
)
# What the agent reads in each cgroup directory, per hierarchy.
V1_MEMORY = ("memory.usage_in_bytes", "memory.limit_in_bytes", "memory.oom_control")
V1_CPU = ("cpu.cfs_quota_us", "cpu.cfs_period_us")
V2_FILES = (
    "cgroup.controllers",
    "memory.current",
    "memory.max",
    "memory.events",
    "memory.pressure",
    "cpu.max",
    "cpu.pressure",
)
UNIFIED_FILES = ("cgroup.controllers", "memory.pressure", "cpu.pressure")


def read_cgroup_lines(proc_root):
    """Return (hierarchy-id, controllers, path) triples from <proc>/self/cgroup."""
    out = []
    try:
        with open(os.path.join(proc_root, "self/cgroup")) as f:
            for line in f:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3:
                    out.append((parts[0], parts[1].split(","), parts[2]))
    except OSError:
        pass
    return out


def wanted_sys_files(proc_root, sys_root):
    """List the cgroup files (relative to the sys root) that the agent would read here."""
    lines = read_cgroup_lines(proc_root)
    base = "fs/cgroup"
    wanted = []

    def add(directory, names):
        """Queue each file name under directory, once."""
        for name in names:
            rel = os.path.normpath(os.path.join(directory, name))
            if rel not in wanted:
                wanted.append(rel)

    v2_path = None
    for hier, controllers, path in lines:
        if hier == "0" and controllers == [""]:
            v2_path = path
    if v2_path is not None and os.path.exists(os.path.join(sys_root, base, "cgroup.controllers")):
        add(base, V2_FILES)
        add(os.path.join(base, v2_path.lstrip("/")), V2_FILES)
        return wanted
    for _hier, controllers, path in lines:
        rel = path.lstrip("/")
        if "memory" in controllers:
            add(os.path.join(base, "memory"), V1_MEMORY)
            add(os.path.join(base, "memory", rel), V1_MEMORY)
        if "cpu" in controllers:
            add(os.path.join(base, "cpu"), V1_CPU)
            add(os.path.join(base, "cpu", rel), V1_CPU)
    if v2_path is not None:
        # Hybrid: v1 controllers plus a (usually empty) v2 tree at unified/.
        add(os.path.join(base, "unified"), UNIFIED_FILES)
        add(os.path.join(base, "unified", v2_path.lstrip("/")), UNIFIED_FILES)
    return wanted


def read_bytes(path):
    """Read a pseudo-file by read(), not by size: /proc and /sys report size 0 or 4096."""
    with open(path, "rb") as f:
        return f.read()


def collect(proc_root, sys_root):
    """Return ({relative dest path: bytes}, [absent relative paths])."""
    files, absent = {}, []
    for rel in PROC_FILES:
        try:
            files[os.path.join("proc", rel)] = read_bytes(os.path.join(proc_root, rel))
        except OSError:
            absent.append(os.path.join("proc", rel))
    for rel in wanted_sys_files(proc_root, sys_root):
        try:
            files[os.path.join("sys", rel)] = read_bytes(os.path.join(sys_root, rel))
        except OSError:
            absent.append(os.path.join("sys", rel))
    return files, absent


def manifest(files, absent, proc_root, sys_root):
    """The RECORDED.txt text: where and when, what was copied, what was missing."""
    lines = [
        "Recorded by scripts/record_box_tree.py",
        "host: " + socket.gethostname(),
        "time_utc: " + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "proc_root: " + proc_root,
        "sys_root: " + sys_root,
        "python: " + sys.version.split()[0],
        "",
        "copied (verbatim):",
    ]
    lines += ["  " + rel for rel in sorted(files)]
    lines += ["", "absent on the box (not an error; the agent reports null for these):"]
    lines += ["  " + rel for rel in sorted(absent)] or ["  (none)"]
    return "\n".join(lines) + "\n"


def write_dir(dest, files, text):
    """Write the tree under dest."""
    for rel, data in files.items():
        path = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    with open(os.path.join(dest, "RECORDED.txt"), "w") as f:
        f.write(text)


def write_tar(stream, files, text):
    """Write the tree as an uncompressed tar on stream (for ssh ... > tree.tar)."""
    items = dict(files)
    items["RECORDED.txt"] = text.encode()
    with tarfile.open(fileobj=stream, mode="w|") as tar:
        for rel in sorted(items):
            info = tarfile.TarInfo(rel)
            info.size = len(items[rel])
            info.mtime = int(time.time())
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(items[rel]))


def main(argv=None):
    """Parse arguments and record the tree."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dest", nargs="?", help="fixture directory to create")
    p.add_argument("--tar", action="store_true", help="write a tar to stdout instead")
    p.add_argument("--proc-root", default="/proc")
    p.add_argument("--sys-root", default="/sys")
    args = p.parse_args(argv)
    if not args.tar and not args.dest:
        p.error("give DEST or --tar")
    files, absent = collect(args.proc_root, args.sys_root)
    text = manifest(files, absent, args.proc_root, args.sys_root)
    if args.tar:
        write_tar(sys.stdout.buffer, files, text)
    else:
        write_dir(args.dest, files, text)
        sys.stderr.write(f"recorded {len(files)} files into {args.dest}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
