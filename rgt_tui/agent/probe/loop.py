"""rgt-tui telemetry agent: prints one JSON sample of this box per line, for as long as it lives.

Sent to a box over an SSH exec channel and run as ``python3 -u - ARGS...`` (this source on
stdin, then stdin closed). Every ``--interval`` seconds it prints one object, on one line,
whose keys are fixed by its only consumer, ``rgt_tui.domain.snapshot.snapshot_from_agent``
(protocol version ``v: 1``): host identity (boot id, uptime, and ``box_id``: the id this
box keeps in ``~/.rgt/box-id``, created once when missing, so a box re-created under
the same host name is told apart from the old one), host-wide load and memory
(labelled host-wide there, U41), statvfs bytes AND inodes of each watched path (U7), the
process's own cgroup memory/CPU budget and oom_kill counter (v1 and v2; U9, U41), GPUs
(NVML, else ``nvidia-smi``, else none with the reason; U21, U23), GPU processes with their
thread counts (U11, U40), new NVIDIA Xid kernel lines (U22) and the queue's liveness: the
running cell (found afresh from the runner's records under ``--queue-dir``, so a long-lived
agent follows the queue from cell to cell), its log's mtime and the newest mtime under its
output directory ``<--out-root>/<cell>`` (U43), when the last launch finished (GEN1), and
whether the cell's log printed a ``--tracker-pattern`` line (U35, ``tracker_scan``).

Rules the agent lives by:

- It must run on the box's own python3, which can be as old as 3.6: standard library only
  (``pynvml`` is used when importable, never required), no 3.7+ syntax or APIs.
- A failing sub-probe adds one string to ``errors`` and the sample still prints; a missing
  file or tool is "not known" (null), not a crash.
- It spawns no process per sample except ``nvidia-smi`` when NVML is absent, and then only
  every ``--smi-every`` samples (the GPU rows are reused in between).
- It exits quietly (status 0, nothing on stderr) when its stdout closes or on SIGTERM/SIGHUP.

The agent is this package (``rgt_tui/agent/probe/``), one small module per source;
``rgt_tui.agent.bundle`` joins them into the one source sent on stdin, with this module
last (its ``__main__`` block starts the agent). The parsers are pure, so tests import
their modules (``gpu_smi``, ``kmsg``, ``cgroup``) and call them on recorded output.
"""

import argparse
import json
import os
import signal
import sys
import time

from .artifacts import ARTIFACT_SCAN_EVERY_S
from .sample import Agent


class _Stop(BaseException):
    """Raised from the SIGTERM/SIGHUP handler to leave the loop quietly.

    A BaseException, so the per-probe ``except Exception`` guards cannot swallow it.
    """


def _on_signal(signum, frame):
    raise _Stop()


def parse_args(argv=None):
    """The agent's command line (see the module docstring)."""
    p = argparse.ArgumentParser(prog="probe.py", description="rgt-tui telemetry agent")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between samples")
    p.add_argument("--count", type=int, default=0, help="stop after N samples (0: forever)")
    p.add_argument("--mount", action="append", default=None, help="watched path (repeatable)")
    p.add_argument("--sys-root", default="/sys")
    p.add_argument("--proc-root", default="/proc")
    p.add_argument("--dev-root", default="/dev")
    p.add_argument("--no-gpu", action="store_true", help="skip GPU probing")
    p.add_argument("--nvidia-smi", default=None, help="path of nvidia-smi (default: PATH)")
    p.add_argument("--proc-every", type=int, default=5, help="GPU processes every N samples")
    p.add_argument("--smi-every", type=int, default=3, help="nvidia-smi query every N samples")
    p.add_argument("--log", default=None, help="queue log whose mtime is reported")
    p.add_argument("--artifacts", default=None, help="directory whose newest mtime is reported")
    p.add_argument(
        "--queue-dir",
        default="~/.rgt/queue",
        help="the queue runner's records: its running cell's log is watched ('' for none)",
    )
    p.add_argument(
        "--out-root", default=None, help="where cells write (durable_dir): <out-root>/<cell>"
    )
    p.add_argument(
        "--scan-every",
        type=float,
        default=ARTIFACT_SCAN_EVERY_S,
        help="seconds between walks of the output directory for its newest file",
    )
    p.add_argument(
        "--tracker-pattern",
        action="append",
        default=None,
        help="a regex the running cell's log must print a line of (U35; repeatable)",
    )
    p.add_argument(
        "--box-id-file", default=None, help="where this box keeps its id (default ~/.rgt/box-id)"
    )
    p.add_argument("--no-box-id", action="store_true", help="do not report (or create) the id")
    args = p.parse_args(argv)
    # Fleet files say "~" for the box's home (the default workdir); only the box knows it.
    args.mount_given = list(args.mount or ["/"])  # as the fleet file writes them
    args.mount = [os.path.expanduser(m) for m in args.mount_given]
    args.log = os.path.expanduser(args.log) if args.log else None
    args.artifacts = os.path.expanduser(args.artifacts) if args.artifacts else None
    args.queue_dir = os.path.expanduser(args.queue_dir) if args.queue_dir else None
    args.out_root = os.path.expanduser(args.out_root) if args.out_root else None
    args.interval = max(0.0, args.interval)
    args.proc_every = max(1, args.proc_every)
    args.smi_every = max(1, args.smi_every)
    return args


def _silence_stdout():
    """Point fd 1 at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv=None):
    """Print samples until --count is reached, stdout closes, or SIGTERM/SIGHUP arrives."""
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _on_signal)  # the SSH channel hung up
    agent = Agent(args)
    seq = 0
    deadline = time.monotonic()
    try:
        while True:
            line = json.dumps(agent.sample(seq), separators=(",", ":"))
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            seq += 1
            if args.count and seq >= args.count:
                break
            # Keep a steady cadence; after an overrun start counting afresh (no burst).
            deadline += args.interval
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                deadline = time.monotonic()
    except BrokenPipeError:
        _silence_stdout()
    except (_Stop, KeyboardInterrupt):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
