"""The telemetry agent, one small stdlib-only module per source.

Never imported on a box: ``rgt_tui.agent.bundle`` joins these modules (``loop`` last) into
the one source the transport writes to ``python3 -u -``'s stdin. Locally they import as an
ordinary package, so tests call the pure parsers on recorded output: ``host`` (load,
memory), ``disks``, ``cgroup``, ``processes``, ``gpu_smi`` / ``gpu_nvml`` / ``gpu`` (the
GPU sources), ``kmsg`` (Xid lines), ``artifacts`` and ``queue_watch`` (queue liveness),
``sample`` (one sample) and ``loop`` (the command line and the sample loop).
"""
