"""What /proc says of one process: its threads (U40) and whether it still runs."""

import os

from .common import read_optional


def read_proc_threads(proc_root, pid):
    """(Threads, OMP_NUM_THREADS) of a process from /proc (U40); None where not visible.

    GPU tools report host PIDs, so inside a container the PID may be absent here.
    """
    threads = omp = None
    status = read_optional(os.path.join(proc_root, str(pid), "status"))
    if status is not None:
        for line in status.splitlines():
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
                break
    try:
        with open(os.path.join(proc_root, str(pid), "environ"), "rb") as f:
            environ = f.read()
    except OSError:
        environ = b""  # another user's process: unreadable, so not known
    for item in environ.split(b"\0"):
        if item.startswith(b"OMP_NUM_THREADS="):
            try:
                omp = int(item.split(b"=", 1)[1].strip())
            except ValueError:
                omp = None
    return threads, omp


def pid_alive(proc_root, pid):
    """Running and not a zombie (a reaped-never orphan still answers kill 0)."""
    if pid <= 0:
        return False
    if not os.path.isdir(proc_root):  # no procfs: the signal check is all there is
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    text = read_optional(os.path.join(proc_root, str(pid), "stat"))
    if text is None:
        return False
    fields = text.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] not in ("Z", "X")
