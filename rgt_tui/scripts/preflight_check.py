# rgt-tui preflight: run on the box by the RUN's own interpreter (`<interpreter> -`, this
# program on stdin, in the host's workdir), so what it reports is what a cell will see.
# Standard library only, Python 3.6+ (a rented box's Python can be old), and it never
# raises: every failure becomes text in its answer. It prints three lines, each
# "RGT-PREFLIGHT <kind> <json>": the interpreter first (after, when preflight.sh ran it
# through a console script's shebang, where that script was found), then the data and checkpoint paths'
# storage (U8) and, when asked, the routes to the pip index, Hugging Face and GitHub
# (generic-ssh §3), all before torch's import (a torch import that kills the process still
# leaves them), then torch with each GPU's architecture against the build's (U28).
# rgt_tui/services/preflight.py reads them.
import json
import os
import platform
import sys
import warnings

MAX_TEXT = 600  # a box's exception text can be any size; the report shows one line of it


def clip(text):
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def emit(kind, data):
    sys.stdout.write("RGT-PREFLIGHT " + kind + " " + json.dumps(data) + "\n")
    sys.stdout.flush()


def described(exc):
    return clip(type(exc).__name__ + ": " + str(exc))


def torch_facts():
    facts = {"importable": False}
    try:
        import torch
    except Exception as exc:  # ImportError, and an OSError from a broken CUDA library
        facts["error"] = described(exc)
        return facts
    facts["importable"] = True
    facts["version"] = clip(getattr(torch, "__version__", "?"))
    try:
        cuda = torch.version.cuda
        facts["cuda"] = None if cuda is None else clip(cuda)
    except Exception as exc:
        facts["cuda"] = None
        facts["cuda_error"] = described(exc)
    # torch says why CUDA is unusable only in a warning ("The NVIDIA driver on your system
    # is too old (found version 11040)"): keep the first few.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            facts["available"] = bool(torch.cuda.is_available())
        except Exception as exc:
            facts["available"] = False
            facts["available_error"] = described(exc)
        try:
            facts["device_count"] = int(torch.cuda.device_count())
        except Exception as exc:
            facts["device_count"] = 0
            facts["count_error"] = described(exc)
        # Inside the same catch: torch warns "sm_120 is not compatible" here too. With
        # no usable GPU only the build's list is read (a CPU build's is empty).
        facts["arch"] = arch_facts(TorchCuda(torch), devices=facts["available"])
        facts["warnings"] = [clip(w.message) for w in caught[:3]]
    return facts


class TorchCuda:
    """What arch_facts asks of torch.cuda, from the real torch (a test feeds a recording
    in its place: no GPU exists where the tests run)."""

    def __init__(self, torch):
        self.torch = torch

    def arch_list(self):
        return list(self.torch.cuda.get_arch_list())

    def device_count(self):
        return int(self.torch.cuda.device_count())

    def capability(self, i):
        major, minor = self.torch.cuda.get_device_capability(i)
        return [int(major), int(minor)]

    def name(self, i):
        return str(self.torch.cuda.get_device_name(i))

    def tiny_op(self, i):
        # One kernel on the card: "no kernel image is available" is raised here, at the
        # first op, not at import (U28). .item() waits for the kernel to finish.
        return float((self.torch.ones(1, device="cuda:" + str(i)) + 1).sum().item())


MAX_GPUS = 64  # a box lists at most this many; the answer stays bounded


def arch_facts(cuda, devices=True):
    """torch's compiled architectures and, per GPU (``devices``: CUDA is usable), its
    name, compute capability and whether one tiny CUDA op ran on it (the op's error
    when not). Never raises."""
    out = {"arch_list": [], "devices": []}
    try:
        out["arch_list"] = [clip(a) for a in cuda.arch_list()[:64]]
    except Exception as exc:
        out["arch_error"] = described(exc)
    count = 0
    try:
        count = min(cuda.device_count(), MAX_GPUS) if devices else 0
    except Exception as exc:
        out["count_error"] = described(exc)
    for i in range(count):
        device = {"index": i}
        try:
            device["name"] = clip(cuda.name(i))
        except Exception as exc:
            device["name"] = "?"
            device["name_error"] = described(exc)
        try:
            device["capability"] = cuda.capability(i)
        except Exception as exc:
            device["capability_error"] = described(exc)
        try:
            cuda.tiny_op(i)
            device["op"] = "ok"
        except Exception as exc:  # RuntimeError: CUDA error: no kernel image is available ...
            device["op"] = described(exc)
        out["devices"].append(device)
    return out


# -- where the data and checkpoints are (U8): each path's mount, file system type and
# whether its block device spins. Read from /proc/self/mountinfo and /sys (roots passed
# in, so a test reads a recorded tree); the verdict is made on rgt-tui's side.


def unescape(field):
    """A mountinfo field: a space, tab, newline or backslash is written \\ooo (octal)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def read_mounts(mountinfo):
    """Each mount as (mount point, MAJ:MIN, fstype, source), in the file's order."""
    mounts = []
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError:
        return mounts
    for line in text.splitlines()[:5000]:
        head, sep, tail = line.partition(" - ")
        left, right = head.split(), tail.split()
        if not sep or len(left) < 5 or len(right) < 2:
            continue
        mounts.append((unescape(left[4]), left[2], right[0], unescape(right[1])))
    return mounts


def mount_of(path, mounts):
    """The mount ``path`` is on: the longest mount point above it (the last mounted of
    equal ones: a later mount hides an earlier one)."""
    best = None
    for mount in mounts:
        point = mount[0].rstrip("/") or "/"
        inside = path == point or path.startswith(point if point == "/" else point + "/")
        if inside and (best is None or len(point) >= len(best[0].rstrip("/") or "/")):
            best = mount
    return best


def block_device(devno, sys_root):
    """The whole disk behind MAJ:MIN (a partition's parent), whether it rotates ("1",
    "0" or None) and its sysfs path (which names the bus: virtio, xen, nvme, ...)."""
    link = os.path.join(sys_root, "dev", "block", devno)
    if not os.path.exists(link):
        return None, None, None
    real = os.path.realpath(link)
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    rotational = None
    try:
        with open(os.path.join(real, "queue", "rotational")) as f:
            rotational = f.read(8).strip() or None
    except OSError:
        pass
    sys_path = os.path.relpath(real, os.path.realpath(sys_root))
    return clip(os.path.basename(real)), rotational, clip(sys_path)


def path_there(real):
    """(exists, readable, its parent folder exists) of a path on this box."""
    return (
        os.path.exists(real),
        os.access(real, os.R_OK | (os.X_OK if os.path.isdir(real) else 0)),
        os.path.isdir(os.path.dirname(real)),
    )


def storage_facts(paths, mountinfo="/proc/self/mountinfo", sys_root="/sys", there=path_there):
    """Per (label, path): the path's real location, whether it exists and can be read,
    its mount, file system type, source, and its disk with whether it rotates."""
    mounts = read_mounts(mountinfo)
    out = {"paths": [], "mounts": len(mounts)}
    for label, path in paths[:8]:
        real = os.path.realpath(os.path.expanduser(path)) if path else ""
        item = {"label": clip(label), "path": clip(path), "real": clip(real)}
        if real:  # a data_dir that is not there, or not readable, fails at the first batch
            item["exists"], item["readable"], item["parent"] = there(real)
        found = mount_of(real, mounts) if real else None
        if found is not None:
            point, devno, fstype, source = found
            item.update(
                mount=clip(point), devno=clip(devno), fstype=clip(fstype), source=clip(source)
            )
            if not devno.startswith("0:"):  # major 0: no block device (nfs, overlay, fuse)
                item["disk"], item["rotational"], item["sys"] = block_device(devno, sys_root)
        out["paths"].append(item)
    return out


def asked_paths():
    """The paths preflight.sh names in RGT_PREFLIGHT_PATHS, one "label<TAB>path" a line."""
    found = []
    for line in os.environ.get("RGT_PREFLIGHT_PATHS", "").splitlines():
        label, sep, path = line.partition("\t")
        if sep and path:
            found.append((label, path))
    return found


# -- the routes the run will use (generic-ssh §3): each asked URL fetched once, from here
# (so the run's proxies apply), with a hard deadline; the verdict is made on rgt-tui's side.

ROUTE_TIMEOUT_S = 10.0  # domain.routes.ROUTE_TIMEOUT_S
ROUTE_MAX_BYTES = 1 << 20


def fetch_timed(url, timeout=ROUTE_TIMEOUT_S, limit=ROUTE_MAX_BYTES, clock=None):
    """Time to first byte, bytes read (at most ``limit``) and seconds; ``cut`` when the
    deadline ``timeout`` ended the read (each read can block one socket timeout, so a
    stalled answer takes at most twice it). Never raises."""
    import time
    import urllib.error
    import urllib.request

    clock = clock or time.monotonic
    start = clock()
    out = {"url": clip(url), "bytes": 0}
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "rgt-tui-preflight"})
        answer = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        out["status"] = exc.code
        out["ttfb"] = round(clock() - start, 3)
        out["seconds"] = out["ttfb"]
        return out
    except Exception as exc:  # refused, DNS, timeout before any answer
        out["error"] = described(exc)
        out["seconds"] = round(clock() - start, 3)
        return out
    try:
        out["status"] = answer.getcode()
        while out["bytes"] < limit:
            left = timeout - (clock() - start)
            if left <= 0:
                out["cut"] = True
                break
            try:
                chunk = (
                    answer.read1(min(65536, limit - out["bytes"]))
                    if hasattr(answer, "read1")
                    else answer.read(min(65536, limit - out["bytes"]))
                )
            except Exception as exc:  # the deadline hit mid-read, or the peer reset
                if "ttfb" not in out:
                    out["error"] = described(exc)
                out["cut"] = True
                break
            if not chunk:
                break
            if "ttfb" not in out:
                out["ttfb"] = round(clock() - start, 3)
            out["bytes"] += len(chunk)
        if "ttfb" not in out and "error" not in out and not out.get("cut"):
            out["ttfb"] = round(clock() - start, 3)  # an empty body: the answer was the byte
    finally:
        answer.close()
    out["seconds"] = round(clock() - start, 3)
    return out


def route_facts(asked):
    """Each (label, url) fetched at once, one thread each (so the whole takes at most
    about ROUTE_TIMEOUT_S)."""
    import threading

    found = [None] * len(asked)

    def one(i, label, url):
        item = fetch_timed(url)
        item["label"] = clip(label)
        found[i] = item

    threads = [
        threading.Thread(target=one, args=(i, lab, url)) for i, (lab, url) in enumerate(asked)
    ]
    for t in threads:
        t.daemon = True
        t.start()
    for t in threads:
        t.join(2 * ROUTE_TIMEOUT_S + 5)  # a stalled read blocks one socket timeout more
    return {"routes": [f for f in found if f is not None]}


def asked_routes():
    """The routes preflight.sh names in RGT_PREFLIGHT_ROUTES, one "label<TAB>url" a line."""
    found = []
    for line in os.environ.get("RGT_PREFLIGHT_ROUTES", "").splitlines()[:8]:
        label, sep, url = line.partition("\t")
        if sep and url.startswith(("http://", "https://")):
            found.append((label, url))
    return found


def main():
    script = os.environ.get("RGT_PREFLIGHT_SCRIPT")
    if script is not None:  # run through a console script's shebang (preflight.sh)
        shebang = os.environ.get("RGT_PREFLIGHT_SHEBANG", "")
        emit("script", {"found": True, "ran": True, "path": clip(script), "shebang": clip(shebang)})
    emit(
        "python",
        {
            "version": platform.python_version(),
            "executable": clip(sys.executable),
            "prefix": clip(sys.prefix),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        },
    )
    try:
        emit("storage", storage_facts(asked_paths()))
    except Exception as exc:
        emit("storage", {"error": described(exc)})
    routes = asked_routes()
    if routes:
        try:
            emit("routes", route_facts(routes))
        except Exception as exc:
            emit("routes", {"error": described(exc)})
    try:
        facts = torch_facts()
    except BaseException as exc:  # whatever torch does on import, the answer still comes
        facts = {"importable": False, "error": described(exc)}
    emit("torch", facts)


if __name__ == "__main__":  # `python -` runs it so; a test imports its functions
    main()
