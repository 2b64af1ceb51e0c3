"""Ask the box whether its TensorBoard reads where the runs write events (U39, path half).

One bounded shell command: the processes whose ``/proc/PID/cmdline`` names TensorBoard
(at most 20, 4 KiB of command line each, with their cwd), and the directories of the
``events.out.tfevents.*`` files under the host's durable dir (the cells' ``{out}``
folders: depth 6, at most 200). ``domain.tensorboard`` reads the answer and words the
advice.
"""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.tensorboard import (
    MAX_EVENT_DIRS,
    MAX_PROCESSES,
    BoxTensorBoard,
    parse_report,
    tensorboard_advice,
)
from rgt_tui.services.box_script import box_path
from rgt_tui.transport import Transport

CHECK_TIMEOUT_S = 30.0
EVENT_DEPTH = 6  # <durable_dir>/<cell>/<logger dirs…>/events.out.tfevents.*

# [t]ensorboard: the pattern matches the processes' command lines but not grep's own, nor
# this script's. Newlines and tabs in a cwd or argv become spaces (a line per process);
# NULs between arguments become \x1f. Each file name is NUL-ended, then turned into one line.
_SCRIPT = """
root={root}
printf 'root\\t%s\\n' "$root"
for f in $(grep -l -a '[t]ensorboard' /proc/[0-9]*/cmdline 2>/dev/null | head -n {procs}); do
  pid=${{f#/proc/}}; pid=${{pid%/cmdline}}
  [ "$pid" = "$$" ] && continue
  cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null); cwd=$(printf '%s' "$cwd" | tr '\\n\\t' '  ')
  printf 'tb\\t%s\\t%s\\t' "$pid" "$cwd"
  head -c 4096 "$f" 2>/dev/null | tr '\\000\\n\\t' '\\037  '
  echo
done
find "$root" -maxdepth {depth} -type f -name 'events.out.tfevents.*' \
  -exec printf 'ev\\t%s\\000' {{}} + 2>/dev/null | tr '\\n\\000' ' \\n' | head -n {events}
exit 0
"""


def tensorboard_command(host: HostConfig) -> str:
    """The box command for ``host`` (its durable dir, ``~`` expanded by the box's shell)."""
    return _SCRIPT.format(
        root=box_path(host.durable_dir),
        procs=MAX_PROCESSES,
        depth=EVENT_DEPTH,
        events=MAX_EVENT_DIRS,
    )


async def read_tensorboard(host: HostConfig, transport: Transport) -> BoxTensorBoard:
    """What the box runs and writes (TransportError when it cannot be asked)."""
    result = await transport.run(
        tensorboard_command(host), timeout=CHECK_TIMEOUT_S, max_output=1 << 20
    )
    return parse_report(result.stdout)


async def check_tensorboard(host: HostConfig, transport: Transport, port: int) -> str | None:
    """The advice for TensorBoard on ``host``:``port`` (``tensorboard_advice``), or None."""
    return tensorboard_advice(host.name, port, await read_tensorboard(host, transport))
