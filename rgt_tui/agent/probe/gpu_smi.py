"""GPUs through nvidia-smi: the field lists, the pure CSV parsers (tests call them on
recorded output) and ``SmiSource``, which runs the tool.

nvidia-smi is a process per query: ``gpu.GpuProbe`` runs it only when NVML is absent, and
then only every ``--smi-every`` samples.
"""

# Python 3.6 has no subprocess.run(capture_output=, text=); ruff (targeting 3.10) would
# rewrite those calls into syntax the boxes cannot run.
# ruff: noqa: UP021, UP022

import math
import re
import subprocess

from .common import MIB, describe_error

# nvml.h clock event ("throttle") reason bits that mean the clocks are being held down.
# Left out on purpose: 0x1 GpuIdle (nothing to run), 0x2 ApplicationsClocksSetting and
# 0x100 DisplayClockSetting (limits the user or the display set, not a fault).
CLOCK_EVENT_REASON_BITS = (
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake"),
)

SMI_GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "utilization.gpu",
    "utilization.memory",
    "clocks.sm",
    "clocks.max.sm",
    "memory.used",
    "memory.total",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "clocks_event_reasons.active",
    "ecc.errors.uncorrected.volatile.total",
)
SMI_REASONS_INDEX = SMI_GPU_FIELDS.index("clocks_event_reasons.active")
# Drivers before the 535 rename only know the old name of the same bitmask.
SMI_OLD_REASONS_FIELD = "clocks_throttle_reasons.active"
SMI_APP_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")
SMI_TIMEOUT_S = 15.0
SMI_NOT_FOUND = "no NVIDIA driver tools (nvidia-smi not found)"
NO_DEVICE = "no NVIDIA device"
# A whole cell: a plain decimal and at most a unit ("250.00 W", "45 %", "1024 MiB"). Read
# by prefix, "1e308 %" was 1 % and "99garbage" 99 (hour s20a #9): the box's bytes.
_NUMBER_RE = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:[A-Za-z%]{1,4})?\s*")
# What nvidia-smi prints for a GPU the driver lost (U22): seen where /dev/kmsg and its Xid
# lines are not (containers). Recorded texts: tests/fixtures/gpu/SOURCES.txt.
LOST_MARKERS = (
    "GPU is lost",
    "Unable to determine the device handle",
    "fallen off the bus",
    "GPU requires reset",
)
# "ERR!" in a field, except as the power draw ("ERR! / 250W"), which the driver prints
# transiently on healthy cards (Azure/azhpc-diagnostics#77).
_ERR_FIELD_RE = re.compile(r"ERR!(?!\s*/)")
MAX_LOST_LINES = 8


def _smi_text(raw):
    """nvidia-smi's output bytes as text; a byte that is not UTF-8 becomes U+FFFD."""
    return raw.decode("utf-8", "replace")


def _smi_rows(text):
    """nvidia-smi's rows: split on newlines only. ``str.splitlines`` also breaks at \r,
    \v, \f, \x1c-\x1e, \x85, U+2028 and U+2029, so one such character in a GPU or process
    name broke its row apart and the GPU (or process) vanished from the listing."""
    return text.split("\n")


def smi_value(cell):
    """One nvidia-smi CSV cell, stripped; None for "N/A", "[N/A]", "[Not Supported]" etc."""
    value = cell.strip()
    if not value or value in ("N/A", "Not Supported") or (value[0] == "[" and value[-1] == "]"):
        return None
    return value


def smi_number(cell):
    """A numeric nvidia-smi cell as float (a trailing unit such as "MiB" is tolerated)."""
    value = smi_value(cell)
    if value is None:
        return None
    match = _NUMBER_RE.fullmatch(value)
    if not match:
        return None
    number = float(match.group(1))
    # A 400-digit cell reads as inf, and int() of it failed the whole probe: every GPU
    # of the box gone (h602 #4). Not a number, for that cell alone.
    return number if math.isfinite(number) else None


def _mib_to_bytes(cell):
    return _mib(smi_number(cell))


def _mib(value):
    if value is None:
        return None
    value *= MIB  # 305 nines is a float, and inf once in bytes (review h605 #6)
    return int(round(value)) if math.isfinite(value) else None


def _int_or_none(value):
    return None if value is None else int(value)


def decode_clock_event_reasons(mask):
    """Names of the throttling bits set in a clocks-event-reasons mask (int or "0x..." text).

    Idle and user-set clock limits are not throttling and are left out; N/A decodes to [].
    """
    if mask is None:
        return []
    if not isinstance(mask, int):
        text = smi_value(str(mask))
        if text is None:
            return []
        try:
            mask = int(text, 16) if text.lower().startswith("0x") else int(text)
        except ValueError:
            return []
    return [name for bit, name in CLOCK_EVENT_REASON_BITS if mask & bit]


def parse_smi_gpus(csv_text, problems=None):
    """GPU dicts (agent JSON shape) from ``nvidia-smi --query-gpu=<SMI_GPU_FIELDS>``
    ``--format=csv,noheader,nounits`` output. Rows that do not parse are skipped and, when
    a ``problems`` list is given, named there."""
    gpus = []
    n = len(SMI_GPU_FIELDS)
    for line in _smi_rows(csv_text):
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) > n:
            # A comma inside the product name: give the extra cells back to the name.
            extra = len(cells) - n
            cells = [cells[0], ",".join(cells[1 : 2 + extra])] + cells[2 + extra :]
        index = smi_number(cells[0]) if len(cells) == n else None
        if index is None:
            if problems is not None:
                problems.append(f"nvidia-smi: unparsed GPU row: {line[:200]!r}")
            continue

        def number(cell, field, gpu=int(index)):
            """The cell's number; one that is neither a number nor N/A is named."""
            value = smi_number(cell)
            if value is None and smi_value(cell) is not None and problems is not None:
                problems.append(
                    f"nvidia-smi: {field} of GPU {gpu} is not a number: {smi_value(cell)[:40]!r}"
                )
            return value

        (
            _,
            name,
            uuid,
            util,
            mem_util,
            sm,
            sm_max,
            used,
            total,
            power,
            limit,
            temp,
            reasons,
            ecc,
        ) = cells
        gpus.append(
            {
                "index": int(index),
                "name": smi_value(name) or f"GPU {int(index)}",
                "uuid": smi_value(uuid),
                "util_pct": number(util, "utilization.gpu"),
                "mem_util_pct": number(mem_util, "utilization.memory"),
                "sm_clock_mhz": number(sm, "clocks.sm"),
                "sm_clock_max_mhz": number(sm_max, "clocks.max.sm"),
                "mem_used": _mib(number(used, "memory.used")),
                "mem_total": _mib(number(total, "memory.total")),
                "power_w": number(power, "power.draw"),
                "power_limit_w": number(limit, "power.limit"),
                "temp_c": number(temp, "temperature.gpu"),
                "throttle_reasons": decode_clock_event_reasons(reasons),
                "ecc_volatile": _int_or_none(smi_number(ecc)),
                "lost": bool(lost_gpu_lines(line)),
            }
        )
    return gpus


def parse_smi_apps(csv_text, uuid_to_index, problems=None):
    """GPU process dicts from ``nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,``
    ``used_memory --format=csv,noheader,nounits``; the GPU is named by index via its uuid."""
    procs = []
    for line in _smi_rows(csv_text):
        cells = line.split(",")
        if len(cells) < 4:
            continue  # blank, or an old driver's "No running processes found"
        uuid, pid = cells[0].strip(), smi_number(cells[1])
        # A process name may itself hold commas: it is everything between pid and memory.
        name = ",".join(cells[2:-1]).strip()
        if pid is None or uuid not in uuid_to_index:
            if problems is not None:
                problems.append(f"nvidia-smi: unmatched process row: {line[:200]!r}")
            continue
        procs.append(
            {
                "gpu_index": uuid_to_index[uuid],
                "pid": int(pid),
                "name": name or "?",
                "used_mem": _mib_to_bytes(cells[-1]),
                "threads": None,
                "omp_threads": None,
            }
        )
    return procs


def lost_gpu_lines(*texts):
    """The lines of nvidia-smi output that say a GPU is lost or failing (U22), stripped and
    cut to 300 characters, at most ``MAX_LOST_LINES``: "GPU is lost", "Unable to
    determine the device handle ...", "fallen off the bus", "GPU requires reset", "ERR!"."""
    lines = []
    for text in texts:
        for line in _smi_rows(text or ""):
            if any(m in line for m in LOST_MARKERS) or _ERR_FIELD_RE.search(line):
                lines.append(line.strip()[:300])
    return lines[:MAX_LOST_LINES]


def first_line(*texts):
    """The first non-blank line among texts (a failing tool's own explanation)."""
    for text in texts:
        for line in _smi_rows(text or ""):
            if line.strip():
                return line.strip()
    return None


class SmiSource:
    """Runs ``nvidia-smi --query-*`` and parses it; remembers which name of the reasons
    field this driver accepts."""

    def __init__(self, path):
        self.path = path
        self.reasons_field = SMI_GPU_FIELDS[SMI_REASONS_INDEX]
        self.lost = []  # lost_gpu_lines of the last --query-gpu run

    def _run(self, query):
        p = subprocess.run(
            [self.path, query, "--format=csv,noheader,nounits"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=SMI_TIMEOUT_S,
        )
        # Bytes, decoded here: text mode would turn a \r inside a field into a row break
        # (and fail on a non-UTF-8 name under a C locale); rows split on \n only.
        return p.returncode, _smi_text(p.stdout), _smi_text(p.stderr)

    def gpus(self):
        """Return (gpus, reason-if-none, errors) from one nvidia-smi --query-gpu run."""
        errors = []

        def query():
            """Run --query-gpu with the reasons field name this driver accepts."""
            fields = list(SMI_GPU_FIELDS)
            fields[SMI_REASONS_INDEX] = self.reasons_field
            return self._run("--query-gpu=" + ",".join(fields))

        try:
            rc, out, err = query()
            if (
                rc != 0
                and "is not a valid field" in out + err
                and self.reasons_field != SMI_OLD_REASONS_FIELD
            ):
                # Drivers before the clocks_event_reasons rename: retry once, remember it.
                self.reasons_field = SMI_OLD_REASONS_FIELD
                rc, out, err = query()
        except subprocess.TimeoutExpired:
            self.lost = []
            return [], f"nvidia-smi timed out after {SMI_TIMEOUT_S:.0f} s", errors
        except OSError as exc:
            self.lost = []
            return [], f"nvidia-smi could not run: {describe_error(exc)}", errors
        self.lost = lost_gpu_lines(out, err)
        if rc != 0:
            # On failure stdout is usually the explanation, not rows: parse without noise.
            gpus = parse_smi_gpus(out)
            why = first_line(err, out) or f"exit status {rc}"
            if gpus:  # some rows came back (a lost GPU elsewhere): keep them, say why
                errors.append(f"nvidia-smi exit status {rc}: {why}")
            elif "No devices were found" in out + err:
                return [], NO_DEVICE, errors
            else:
                return [], why, errors
        else:
            gpus = parse_smi_gpus(out, errors)
        if not gpus and errors:
            # Rows came back but none could be read: that is no "no device".
            return [], f"nvidia-smi's GPU rows could not be read ({errors[0]})", errors
        if not gpus:
            return [], NO_DEVICE, errors
        return gpus, None, errors

    def procs(self, gpus, errors):
        uuid_to_index = {g["uuid"]: g["index"] for g in gpus if g.get("uuid")}
        try:
            rc, out, err = self._run("--query-compute-apps=" + ",".join(SMI_APP_FIELDS))
        except (subprocess.TimeoutExpired, OSError) as exc:
            errors.append(f"nvidia-smi processes: {describe_error(exc)}")
            return None
        if rc != 0:
            errors.append(f"nvidia-smi processes: {first_line(err, out) or rc}")
            return None
        return parse_smi_apps(out, uuid_to_index, errors)
