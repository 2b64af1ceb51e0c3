"""GPUs through NVML (``pynvml``, package nvidia-ml-py): used when it imports and the
driver answers; optional, never required (the box's python3 may have no packages)."""

import os

from .common import describe_error, read_optional
from .gpu_smi import decode_clock_event_reasons


def _nv(nvml, fn, *args):
    """Call one NVML function; NVMLError (not supported, GPU lost, ...) gives None."""
    if fn is None:
        return None
    try:
        return fn(*args)
    except nvml.NVMLError:
        return None


# NVML_ERROR_RESET_REQUIRED and NVML_ERROR_GPU_IS_LOST (nvml.h): the card is gone until
# the box is rebooted (U22); every other error is "not known" for that one figure.
NVML_LOST_ERRORS = (14, 15)


def _lost(nvml, fn, *args):
    """The NVML error text when ``fn`` says the GPU is lost or needs a reset, else None."""
    try:
        fn(*args)
    except nvml.NVMLError as exc:
        if getattr(exc, "value", None) in NVML_LOST_ERRORS:
            return str(exc)
    except Exception:
        return None
    return None


def _text(value):
    """NVML strings are bytes in old pynvml releases and str in new ones."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


class NvmlSource:
    """NVML's handles once started; ``reason`` says why it is not used, when it is not."""

    def __init__(self, proc_root):
        self.proc_root = proc_root
        self.nvml = None
        self.handles = []
        self.reason = None
        self.lost = []  # lost-GPU lines of the last gpus() call (U22)

    def start(self):
        """Try NVML once; on a missing library or driver fall through to nvidia-smi."""
        try:
            import pynvml  # optional: package nvidia-ml-py
        except Exception:
            return
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            # LibraryNotFound / DriverNotLoaded / NoPermission: nvidia-smi may still work.
            self.reason = f"NVML: {exc}"
            return
        except Exception as exc:
            self.reason = f"NVML: {describe_error(exc)}"
            return
        count = _nv(pynvml, pynvml.nvmlDeviceGetCount)
        if count is None:
            self.reason = "NVML: device count unavailable"
            return
        handles = [_nv(pynvml, pynvml.nvmlDeviceGetHandleByIndex, i) for i in range(count)]
        self.nvml = pynvml
        self.handles = handles
        self.lost = []

    def gpus(self):
        nv = self.nvml
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        gpus = []
        lost = []
        for index, h in enumerate(self.handles):
            # One cheap call tells a lost card from a figure it does not support.
            if h is None:
                why = _lost(nv, nv.nvmlDeviceGetHandleByIndex, index)
            else:
                why = _lost(nv, nv.nvmlDeviceGetUtilizationRates, h)
            if why is not None:
                lost.append(f"NVML: GPU {index}: {why}")
            if h is None:
                gpus.append(
                    {
                        "index": index,
                        "name": f"GPU {index}",
                        "throttle_reasons": [],
                        "lost": why is not None,
                    }
                )
                continue
            util = _nv(nv, nv.nvmlDeviceGetUtilizationRates, h)
            mem = _nv(nv, nv.nvmlDeviceGetMemoryInfo, h)
            power = _nv(nv, nv.nvmlDeviceGetPowerUsage, h)
            limit = _nv(nv, nv.nvmlDeviceGetEnforcedPowerLimit, h)
            gpus.append(
                {
                    "index": index,
                    "name": _text(_nv(nv, nv.nvmlDeviceGetName, h)) or f"GPU {index}",
                    "uuid": _text(_nv(nv, nv.nvmlDeviceGetUUID, h)),
                    "util_pct": None if util is None else float(util.gpu),
                    "mem_util_pct": None if util is None else float(util.memory),
                    "sm_clock_mhz": _nv(nv, nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
                    "sm_clock_max_mhz": _nv(nv, nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
                    "mem_used": None if mem is None else int(mem.used),
                    "mem_total": None if mem is None else int(mem.total),
                    "power_w": None if power is None else power / 1000.0,  # NVML gives mW
                    "power_limit_w": None if limit is None else limit / 1000.0,
                    "temp_c": _nv(nv, nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
                    "throttle_reasons": decode_clock_event_reasons(_nv(nv, reasons_fn, h)),
                    "ecc_volatile": _nv(
                        nv,
                        nv.nvmlDeviceGetTotalEccErrors,
                        h,
                        nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                        nv.NVML_VOLATILE_ECC,
                    ),
                    "lost": why is not None,
                }
            )
        self.lost = lost
        return gpus

    def procs(self):
        nv = self.nvml
        procs = []
        for index, h in enumerate(self.handles):
            if h is None:
                continue
            for p in _nv(nv, nv.nvmlDeviceGetComputeRunningProcesses, h) or []:
                used = getattr(p, "usedGpuMemory", None)
                name = _text(_nv(nv, nv.nvmlSystemGetProcessName, p.pid))
                if not name:
                    comm = read_optional(os.path.join(self.proc_root, str(p.pid), "comm"))
                    name = comm.strip() if comm else "?"
                procs.append(
                    {
                        "gpu_index": index,
                        "pid": int(p.pid),
                        "name": name,
                        "used_mem": None if used is None else int(used),
                        "threads": None,
                        "omp_threads": None,
                    }
                )
        return procs
