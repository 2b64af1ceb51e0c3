"""The GPU source: NVML, else nvidia-smi, else none with the reason (U21, U23)."""

import os
import shutil

from .gpu_nvml import NvmlSource
from .gpu_smi import NO_DEVICE, SMI_NOT_FOUND, SmiSource


class GpuProbe:
    """Chooses the GPU source (NVML, nvidia-smi, none) and samples it at its own cadence."""

    def __init__(self, args):
        self.args = args
        self.nvml = NvmlSource(args.proc_root)
        self.nvml_tried = False
        self.smi = SmiSource(args.nvidia_smi if args.nvidia_smi else shutil.which("nvidia-smi"))
        self.smi_seq = None
        self.smi_result = None  # (gpus, reason, errors) of the last query, reused in between

    def sample(self, seq, poll_procs, errors):
        """Return (source, unavailable reason, gpus, processes or None if not polled)."""
        if self.args.no_gpu:
            return "none", "GPU probing disabled (--no-gpu)", [], None
        if not self.nvml_tried:
            self.nvml_tried = True
            self.nvml.start()
        if self.nvml.nvml is not None:
            if not self.nvml.handles:
                return "none", NO_DEVICE, [], None
            procs = self.nvml.procs() if poll_procs else None
            return "nvml", None, self.nvml.gpus(), procs
        if not self.smi.path or not os.path.exists(self.smi.path):
            reason = SMI_NOT_FOUND
            if self.nvml.reason:
                reason += "; " + self.nvml.reason
            return "none", reason, [], None
        # Spawning nvidia-smi costs a process per poll: query every --smi-every samples and
        # reuse the rows in between (processes have their own, slower cadence).
        if self.smi_result is None or seq - self.smi_seq >= self.args.smi_every:
            self.smi_result = self.smi.gpus()
            self.smi_seq = seq
            errors.extend(self.smi_result[2])
        gpus, reason, _ = self.smi_result
        if not gpus:
            return "none", reason, [], None
        procs = self.smi.procs(gpus, errors) if poll_procs else None
        return "nvidia-smi", None, gpus, procs
