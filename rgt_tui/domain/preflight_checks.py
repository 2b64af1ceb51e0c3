"""The preflight checks, each from what the box said (``BoxFacts``): the run's python and
torch, torch's GPUs against the driver's (U31), torch's CUDA build against the driver's
CUDA version (U28), other processes on the GPUs (GEN7), free bytes and inodes against a
budget (principle 5), the durable dir on a mount that survives the teardown verb
(principle 4), tmux. Each failed check says what to do. Which of them a host gets is
``preflight_scope``'s to say, by the host's kind. Pure.

One module past 450 lines on purpose: each check is a short function over the same
``BoxFacts`` and ``CheckContext``; split by check, they would share every helper.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from rgt_tui.domain.config import PREFLIGHT_CHECKS, HostConfig
from rgt_tui.domain.cuda_versions import CUDA_MIN_DRIVER, driver_cuda, torch_index, version, vs
from rgt_tui.domain.node_local import NODE_LOCAL_FIX, node_local_reason
from rgt_tui.domain.preflight import TORCH_FIRST, BoxFacts, Check, CheckContext, clip
from rgt_tui.domain.preflight_arch import check_arch
from rgt_tui.domain.preflight_storage import MEMORY_FS, OVERLAY_FS, PSEUDO_FS, check_storage
from rgt_tui.domain.queue_file import expand_home
from rgt_tui.domain.text import is_digits
from rgt_tui.domain.units import fmt_bytes, fmt_count, plural

GIB = 1 << 30
MIN_FREE_BYTES = GIB  # free space asked for when no checkpoint size is known
MIN_FREE_INODES = 10_000  # a run writes logs, checkpoints, eval files: inodes die first
# The preflight checks that mean something on a Slurm login node: its disk and the
# durable dir live on the shared filesystem the compute nodes see, and the code is the
# tree the tasks run. The GPU, driver, torch and tmux checks would test the login node,
# which runs no cell (the tasks run on compute nodes that preflight cannot reach).
# crlf reads this machine's files; signal-lead is the job's own (SLURM2).
LOGIN_NODE_CHECKS = ("disk", "durable", "code", "crlf", "syntax", "signal-lead", "partition")
# Checks only a scheduler's job has.
SCHEDULER_CHECKS = ("signal-lead", "partition")
# The checks that need the run's interpreter, the GPUs or tmux on the box: the box
# script asks about those only when one of them is run (a login node is not asked to
# import torch).
# The storage check (U8) reads the mounts the run's interpreter sees; on a login node
# those are not the compute nodes' (their local disks cannot be seen from there).
RUNTIME_CHECKS = ("python", "torch", "gpu", "driver", "arch", "gpu-busy", "storage", "tmux")
# The smoke (GEN5/U10) runs a cell's command, which a login node must not (it would need
# an allocation); the routes (generic-ssh §3) are the compute nodes', measured by the
# run's interpreter like the rest.
RUNTIME_CHECKS += ("smoke", "route")


@dataclass(frozen=True)
class PreflightScope:
    """Which checks preflight runs on a host (``checks``, in PREFLIGHT_CHECKS order),
    what its durable dir must outlive (``outlives``: "" for the profile's teardown verb),
    and ``note``: why checks are left out, said with the report."""

    checks: tuple[str, ...]
    outlives: str = ""
    note: str = ""

    @property
    def asks_runtime(self) -> bool:
        """Whether the box is asked about its interpreter, GPUs and tmux."""
        return any(name in RUNTIME_CHECKS for name in self.checks)


def preflight_scope(host: HostConfig) -> PreflightScope:
    """The one place that decides, by the host's kind, which checks preflight runs:
    ``rgt-tui preflight``, the TUI's ``P`` and a launch's plan all run these. A Slurm
    login node runs no cell, so only LOGIN_NODE_CHECKS, and its results must outlive the
    job (the shared filesystem, never the node's $TMPDIR); a box runs every check."""
    if host.is_login_node:
        return PreflightScope(
            LOGIN_NODE_CHECKS,
            outlives="the job",
            note=(
                f"a Slurm login node: {', '.join(LOGIN_NODE_CHECKS)} only (it runs no cell: "
                "GPU, driver, arch, torch, storage and tmux are the compute nodes'; the "
                "smoke would need an allocation, and the routes are the compute nodes')"
            ),
        )
    return PreflightScope(tuple(c for c in PREFLIGHT_CHECKS if c not in SCHEDULER_CHECKS))


def gpu_names(facts: BoxFacts) -> list[str]:
    """The GPUs nvidia-smi listed (``index, driver, name`` rows; anything else skipped)."""
    if facts.gpu_rc not in (0, None):
        return []
    names = []
    for line in facts.gpu_lines:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) >= 3 and is_digits(cells[0]) and version(cells[1]):
            names.append(clip(cells[2], 60))
    return names


def install_fix(ctx: CheckContext, cuda: tuple[int, int] | None) -> str:
    """The command that installs a torch the box's driver can run, in the run's env."""
    index = torch_index(cuda)
    if index:
        return f"{ctx.interpreter.command} -m pip install torch --index-url {index}"
    if cuda is None:
        return f"{ctx.interpreter.command} -m pip install torch (a build for the box's CUDA)"
    return (
        f"a torch release built for CUDA ≤ {vs(cuda)} (pytorch.org's previous versions), "
        f"installed with {ctx.interpreter.command} -m pip"
    )


def check_python(facts: BoxFacts, ctx: CheckContext) -> Check:
    """The run's interpreter starts in the workdir and answers."""
    if not facts.workdir_ok:
        return Check(
            "python",
            False,
            f"the workdir {ctx.workdir} does not exist on the box, so nothing can run there",
            f"create it, or sync the code (rgt-tui sync {ctx.host}), or fix workdir for {ctx.host}",
        )
    py = facts.python
    script = facts.script or {}
    said = facts.py_tail[-1] if facts.py_tail else "no output"
    word = ctx.interpreter.script
    if py is None and word and script.get("found") is False:
        return Check(
            "python",
            False,
            f"{word} is not found on the box after the run template's set-up "
            f"(`{ctx.interpreter.shown}`), so the run cannot start",
            "install it in the run's environment"
            + (" (torch's pip package brings torchrun)" if word.endswith("torchrun") else "")
            + f", or fix {ctx.host}'s run template",
        )
    if py is None and word and script.get("ran") is False:
        return Check(
            "python",
            False,
            f"the Python that {word}'s shebang names does not start (exit {facts.py_rc}): "
            f"{said}, so the run cannot start either",
            f"reinstall {word} in the run's environment (its shebang names a Python that is "
            f'not there), or set python = "/path/to/python" for {ctx.host}',
        )
    if py is None and facts.py_rc == 124:
        # coreutils' timeout (preflight.sh: 120 s): it ran and never answered (h503 #8:
        # "did not run (exit 124)" of one that hung).
        return Check(
            "python",
            False,
            f"`{ctx.interpreter.shown} -` started but did not answer within 120 s (a hung "
            f"import, a network filesystem, a licence server?): {said}",
            f"run it on {ctx.host} by hand to see where it hangs, or set python = "
            '"/path/to/python" for it in the fleet file',
        )
    if py is None and facts.py_rc == 141:
        # SIGPIPE: preflight.sh reads its first 64 KiB and closes the pipe, so the exit
        # status is the cut's, not the interpreter's (h512 #4: "did not run (exit 141)").
        return Check(
            "python",
            False,
            f"`{ctx.interpreter.shown} -` printed more than the 64 KiB the check reads, and "
            f"was cut off there (exit 141, a closed pipe): {said}",
            f"run `{ctx.interpreter.shown} -c pass` on {ctx.host} by hand to see what prints "
            "that much (a sitecustomize, a wrapper script), or set python = "
            '"/path/to/python" for it in the fleet file',
        )
    if py is None:
        return Check(
            "python",
            False,
            f"`{ctx.interpreter.shown} -` did not run (exit {facts.py_rc}): {said}",
            f'set python = "/path/to/python" for {ctx.host} in the fleet file, or fix the '
            "interpreter in its run template",
        )
    where = clip(py.get("executable", ""), 120)
    if ctx.interpreter.overridden:
        # The key's Python answered, but the cells start the template's: torch and the
        # GPUs were checked in the wrong one, and every cell failed on its import.
        key, own = ctx.interpreter.command, ctx.interpreter.overridden
        return Check(
            "python",
            False,
            f"the python key names {key}"
            + (f" ({where})" if where != key else "")
            + f", but the run template starts {own}: the cells run that one, and preflight "
            "checked the key's",
            f"make {ctx.host}'s run template start {key} (`{key} train.py …`), or remove its "
            f"python key so preflight checks {own}",
        )
    return Check(
        "python",
        True,
        f"Python {clip(py.get('version', '?'), 40)} ({where}), from {ctx.interpreter.describe()}",
    )


def check_torch(facts: BoxFacts, ctx: CheckContext) -> Check:
    """torch imports in the run's interpreter."""
    torch = facts.torch
    if facts.python is None or torch is None:
        return Check(
            "torch", False, "not checked: the run's python did not answer", "fix python first"
        )
    if not torch.get("importable"):
        cuda, _ = driver_cuda(facts)
        return Check(
            "torch",
            False,
            f"torch does not import in {clip(facts.python.get('executable', '?'), 120)}: "
            f"{clip(torch.get('error', '?'))}",
            f"install it in the run's environment: {install_fix(ctx, cuda)} — or point "
            f"{ctx.host}'s run template (and its python key, if set) at the environment "
            "that has it",
        )
    build = torch.get("cuda")
    kind = f"CUDA {clip(build, 20)} build" if build else "CPU-only build"
    return Check("torch", True, f"torch {clip(torch.get('version', '?'), 40)} ({kind})")


def check_gpu(facts: BoxFacts, ctx: CheckContext) -> Check:
    """torch sees the GPUs the driver lists (U31)."""
    names = gpu_names(facts)
    torch = facts.torch or {}
    seen = int(torch.get("device_count") or 0) if torch.get("available") else 0
    listed = f"nvidia-smi lists {len(names)} ({', '.join(sorted(set(names)))})" if names else ""
    why = "; ".join(clip(w, 160) for w in torch.get("warnings", [])[:2] if isinstance(w, str))
    if not facts.smi:
        return Check(
            "gpu",
            False,
            "no GPU: nvidia-smi is not on the box's PATH"
            + (f" and torch sees {seen}" if torch.get("importable") else ""),
            "pick a box with a GPU (a container: started with --gpus all and the NVIDIA "
            f'Container Toolkit); for a CPU-only run, preflight_ack = ["gpu"] for {ctx.host}',
        )
    if not names:
        said = clip(" ".join(facts.gpu_lines[:2]) or "no output", 200)
        return Check(
            "gpu",
            False,
            f"nvidia-smi lists no GPU (exit {facts.gpu_rc}): {said}",
            "the driver is not loaded or the GPU is gone: pick another box (U31)",
        )
    if not torch.get("importable"):
        return Check(
            "gpu",
            False,
            f"{listed}; torch did not import, so cannot tell",
            TORCH_FIRST.format("gpu"),
        )
    if seen == 0:
        cpu = "" if torch.get("cuda") else " (a CPU-only torch build)"
        return Check(
            "gpu",
            False,
            f"torch sees no GPU{cpu} but {listed} (U31)" + (f" — torch: {why}" if why else ""),
            f"install a CUDA build of torch: {install_fix(ctx, driver_cuda(facts)[0])}"
            if cpu
            else "check CUDA_VISIBLE_DEVICES and the container's GPU access (--gpus all), "
            "and that torch's CUDA build fits the driver (see driver)",
        )
    visible = (facts.python or {}).get("cuda_visible_devices")
    if seen < len(names) and not isinstance(visible, str):
        return Check(
            "gpu",
            False,
            f"torch sees {plural(seen, 'GPU')} but {listed}",
            "a GPU torch cannot use is paid for and idle: check the driver and container",
        )
    limited = f" (CUDA_VISIBLE_DEVICES={clip(visible, 40)})" if isinstance(visible, str) else ""
    return Check("gpu", True, f"torch sees {seen}{limited}; {listed}")


def check_driver(facts: BoxFacts, ctx: CheckContext) -> Check:
    """torch's CUDA build is not newer than the CUDA version the driver supports (U28)."""
    torch = facts.torch or {}
    cuda, driver = driver_cuda(facts)
    shown = f"driver {driver}, CUDA {vs(cuda)}" if cuda else f"driver {driver or 'unknown'}"
    if not torch.get("importable"):
        return Check(
            "driver",
            False,
            f"{shown}; torch did not import, so cannot compare",
            TORCH_FIRST.format("driver"),
        )
    build = version(str(torch.get("cuda") or ""))
    if build is None:
        if not facts.smi:
            return Check(  # not run: nothing was compared (h523 #4)
                "driver",
                True,
                "no NVIDIA driver and a CPU-only torch: nothing to compare",
                ran=False,
            )
        return Check(
            "driver",
            False,
            f"torch {clip(torch.get('version', '?'), 40)} is a CPU-only build on a box with an NVIDIA {shown}",
            f"install a CUDA build: {install_fix(ctx, cuda)}",
        )
    if cuda is None:
        return Check(
            "driver",
            False,
            f"torch is built for CUDA {vs(build)} but the driver's CUDA version is unknown ({shown})",
            "run nvidia-smi on the box to see the driver; pick a box whose driver supports "
            f"CUDA {vs(build)}",
        )
    if build[:2] > cuda:
        need = next((d for c, d in reversed(CUDA_MIN_DRIVER) if c >= build[:2]), None)
        newer = f" (≥ {vs(need)} for CUDA {vs(build[:2])})" if need else ""
        return Check(
            "driver",
            False,
            f"torch {clip(torch.get('version', '?'), 40)} is built for CUDA {vs(build)}, newer "
            f"than the {shown} supports (U28): CUDA will not initialise",
            f"install a torch build for CUDA ≤ {vs(cuda)}: {install_fix(ctx, cuda)} — or pick "
            f"a box with a newer driver{newer}",
        )
    return Check("driver", True, f"torch's CUDA {vs(build)} ≤ the {shown}")


def check_gpu_busy(facts: BoxFacts, ctx: CheckContext) -> Check:
    """No process but this host's queue cells holds a GPU (GEN7)."""
    if not facts.smi:
        return Check("gpu-busy", True, "no nvidia-smi on the box: no GPU to share (see gpu)")
    if facts.apps_rc not in (0, None):
        said = clip(" ".join(facts.app_lines[:2]) or "no output", 200)
        return Check(
            "gpu-busy",
            False,
            f"nvidia-smi could not list the GPUs' processes (exit {facts.apps_rc}): {said}",
            "run nvidia-smi on the box and see what holds the GPUs",
        )
    others = [h for h in facts.holders if not (set(h.chain) & facts.cell_pids)]
    ours = len(facts.holders) - len(others)
    if not others:
        mine = f"; {ours} of this queue's cells" if ours else ""
        return Check("gpu-busy", True, f"no other process holds a GPU{mine}")
    shown = ", ".join(
        f"pid {h.pid} {h.comm or '(not visible here: another container?)'}"
        + (f" {h.used_mib:g} MiB" if h.used_mib is not None else "")
        for h in others[:5]
    )
    more = f" and {len(others) - 5} more" if len(others) > 5 else ""
    return Check(
        "gpu-busy",
        False,
        f"{len(others)} process(es) not of this queue hold GPU memory: {shown}{more} (GEN7: "
        "a run beside them gets a share of the GPU, or runs out of its memory)",
        f"stop them if they are yours (x on the GPU tab, or rgt-tui vram {ctx.host} --kill "
        "PID: asks you to type the PID; preflight itself never kills), or give the run "
        "another GPU with CUDA_VISIBLE_DEVICES in the run template",
    )


def df_row(line: str) -> list[str] | None:
    """A ``df -P`` data row: source, total, used, available, capacity, mount point."""
    cells = line.split(None, 5)
    return cells if len(cells) == 6 and is_digits(cells[3]) else None


def disk_budget(facts: BoxFacts, ctx: CheckContext) -> tuple[int, str]:
    """The bytes the whole queue needs (U6) and the arithmetic, said: each cell still to
    run keeps ``keep_checkpoints`` checkpoints, and one more is being written (torch.save
    writes ``*.tmp`` beside the latest before the rename). The checkpoint's size is
    ``checkpoint_gb``, else the newest checkpoint found under the durable dir."""
    keep = ctx.ready.keep_checkpoints
    if ctx.ready.checkpoint_gb is not None:
        size = int(ctx.ready.checkpoint_gb * GIB)
        source = f"checkpoint_gb {ctx.ready.checkpoint_gb:g}"
    elif facts.checkpoint is not None:
        size = facts.checkpoint[1]
        source = f"the newest checkpoint, {facts.checkpoint[2]}"
    else:
        return 0, "no checkpoint size known (no checkpoint_gb, none found under the durable dir)"
    cells = 1 if ctx.cells is None else ctx.cells
    counted = (
        "1 cell (the queue's cells still to run are counted at launch)"
        if ctx.cells is None
        else f"{cells} {'cell' if cells == 1 else 'cells'} still to run"
    )
    budget = cells * keep * size + size
    return budget, (
        f"{counted} × keep_checkpoints {keep} × {fmt_bytes(size)} + 1 being written "
        f"({fmt_bytes(size)}) = {fmt_bytes(budget)}; size from {source}"
    )


def check_disk(facts: BoxFacts, ctx: CheckContext) -> Check:
    """Free bytes and inodes where the durable dir is, against the whole queue's
    checkpoint budget (``disk_budget``, U6)."""
    if facts.fstype in PSEUDO_FS:  # df says 0 free there; "free space on /proc" is no fix
        return Check(
            "disk",
            False,
            f"not checked: {facts.durable_at or ctx.durable_dir} is on {facts.fstype}, a "
            "pseudo file system with no disk to measure (see durable)",
            "fix durable_dir first (see durable)",
        )
    row, scale = df_row(facts.df_bytes), 1
    if row is None:
        row, scale = df_row(facts.df_kib), 1024
    if row is None:
        said = clip(facts.df_bytes or "no output", 160)
        return Check(
            "disk",
            False,
            f"df could not measure {facts.durable_at or ctx.durable_dir}: {said}",
            "see that df works on the box and the durable_dir's disk is mounted",
        )
    free = int(row[3]) * scale
    mount = clip(row[5], 120)
    budget, basis = disk_budget(facts, ctx)
    need = max(budget, MIN_FREE_BYTES)
    basis += f"; at least {fmt_bytes(MIN_FREE_BYTES)}" if budget < MIN_FREE_BYTES else ""
    irow = df_row(facts.df_inodes)
    ifree = int(irow[3]) if irow is not None and is_digits(irow[1]) and int(irow[1]) > 0 else None
    inodes = (
        f"{plural(ifree, 'inode', shown=fmt_count(ifree))} free"
        if ifree is not None
        else "inodes not counted by this filesystem"
    )
    detail = f"{fmt_bytes(free)} and {inodes} on {mount}; needs {fmt_bytes(need)} ({basis})"
    problems = []
    if free < need:
        problems.append(f"{fmt_bytes(free)} free, {fmt_bytes(need)} needed")
    if ifree is not None and ifree < MIN_FREE_INODES:
        free = plural(ifree, "inode", shown=fmt_count(ifree))
        problems.append(f"{free} free, {fmt_count(MIN_FREE_INODES)} needed")
    if problems:
        # Below the floor, a smaller checkpoint budget frees nothing: not offered (s38
        # spot hour #6 lowered checkpoint_gb to 0.0001 and was told to lower it again).
        lower = "lower keep_checkpoints / checkpoint_gb, " if budget >= MIN_FREE_BYTES else ""
        return Check(
            "disk",
            False,
            f"not enough room on {mount}: {'; '.join(problems)} ({basis})",
            f"free space on {mount} (old checkpoints, caches: du -xh --max-depth=1 "
            f"{shlex.quote(mount)}), {lower}or pick a bigger disk",
        )
    return Check("disk", True, detail)


def durable_unusable(facts: BoxFacts, ctx: CheckContext, where: str) -> Check | None:
    """The durable dir can hold nothing whatever the profile: on a pseudo file system,
    under something that is not a folder, or not writable by this login (ux-d #7)."""
    p = ctx.profile
    disk = (
        f"a path under {' or '.join(p.durable_under)}"
        if p.durable_under
        else "a folder on the box's disk"
    )
    fix = f"set durable_dir for {ctx.host} to {disk} that this login can write"
    real = facts.durable_real or ctx.durable_dir
    if facts.fstype in PSEUDO_FS:
        return Check(
            "durable",
            False,
            f"{where} is on {facts.fstype}, a kernel pseudo file system, not storage: no "
            "checkpoint can be kept there",
            fix,
        )
    if facts.durable_blocked:
        return Check(
            "durable",
            False,
            f"{real} can never be created: {facts.durable_blocked} is there and is not a folder",
            f"{fix}, or move {facts.durable_blocked} aside on the box",
        )
    if not facts.durable_writable:
        what = (
            "is not writable by this login"
            if facts.durable_exists
            else f"does not exist, and this login cannot create it in {facts.durable_at or '?'}"
        )
        return Check(
            "durable",
            False,
            f"{where} {what} (a read-only mount, or another user's folder): checkpoints "
            "written there fail",
            f"{fix}, or make it writable on the box (chown / chmod)",
        )
    return None


def check_durable(facts: BoxFacts, ctx: CheckContext) -> Check:
    """The durable dir (its real path, links resolved on the box) can be written and is
    on a mount that survives the profile's teardown verb (principle 4)."""
    p = ctx.profile
    real = facts.durable_real or ctx.durable_dir
    mount = df_row(facts.df_bytes) or df_row(facts.df_kib)
    on = f"mount {clip(mount[5], 120) if mount else '?'}, {facts.fstype or '?'}"
    where = f"{real} ({on})"
    if ctx.outlives:
        # The launch's own rule (SLURM5), read the same way, so preflight never says
        # ready for a durable dir the launch refuses ("$TMPDIR/x" included, which the
        # login shell reads as a folder of that name under the home).
        configured = expand_home(ctx.durable_dir, facts.home) if facts.home else ctx.durable_dir
        local = node_local_reason(
            ctx.host, configured, facts.durable_real, facts.tmpdir, p.durable_not_under, facts.home
        )
        if local:
            return Check("durable", False, local, NODE_LOCAL_FIX)
    unusable = durable_unusable(facts, ctx, where)
    if unusable is not None:
        return unusable
    # In memory (tmpfs, /dev/shm): a reboot, a container restart or a preemption empties
    # it. Passed on profiles with no path rule, where a pull keeps the results; on a box
    # that may be preempted the resume needs what is written there (s36 acts hour #2).
    in_memory = facts.fstype in MEMORY_FS and not ctx.outlives
    if in_memory and ctx.interruptible:
        return Check(
            "durable",
            False,
            f"{where} is in memory: the preemption this interruptible box may get empties "
            "it, with every checkpoint not yet pulled, so the cell cannot resume from it",
            f"set durable_dir for {ctx.host} to a folder on the box's disk",
        )
    memory = "; in memory: a reboot empties it, so pull often" if in_memory else ""
    if ctx.outlives:  # a scheduler's job, not a box: nothing is torn down
        survives = f"results must outlive {ctx.outlives}; kept by {p.title}: {p.stop_survives}"
    else:
        survives = (
            f"what outlives {p.title}'s teardown ({ctx.teardown_words}): {p.meter_stop_survives}"
        )
    fix_path = f"set durable_dir for {ctx.host} to a path under {' or '.join(p.durable_under)}"

    def under(root: str) -> bool:
        root = root.rstrip("/") or "/"
        return real == root or real.startswith(root + "/")

    if p.durable_under and not any(under(r) for r in p.durable_under):
        return Check("durable", False, f"{where} is lost at teardown: {survives}", fix_path)
    for rule in p.durable_not_under:
        root = facts.tmpdir if rule == "$TMPDIR" else rule
        if root and under(root):
            wiped = f"wiped when {ctx.outlives} ends" if ctx.outlives else "wiped"
            return Check(
                "durable",
                False,
                f"{where} is under {rule} ({root}), which is {wiped}: {survives}",
                f"set durable_dir for {ctx.host} on the shared filesystem ($HOME, /scratch)",
            )
    if p.durable_own_mount and mount is None:
        # df gave nothing (a stale network volume: "Transport endpoint is not
        # connected"): which mount holds it is not known, so neither is the cause
        # (review h524 #7: it read "on the container disk").
        return Check(
            "durable",
            False,
            f"{where}: which mount holds it could not be read from df, so whether it "
            f"outlives {p.title}'s teardown ({ctx.teardown_words}) is not known",
            f"run df on that folder, or the nearest one that exists, on the box (rgt-tui "
            f"shell {ctx.host}) to see why",
        )
    if p.durable_own_mount and (mount[5] == "/" or facts.fstype in OVERLAY_FS):
        return Check(
            "durable",
            False,
            f"{where} is {p.durable_mount_lost}: {survives}",
            p.durable_mount_fix.replace("{host}", ctx.host),
        )
    ruled = p.durable_under or p.durable_not_under or p.durable_own_mount
    exists = "" if facts.durable_exists else " (not created yet; it can be)"
    if ctx.outlives:
        rules = [
            f"{r} ({facts.tmpdir})" if r == "$TMPDIR" and facts.tmpdir else r
            for r in p.durable_not_under
        ]
        avoid = f"; not under {', '.join(rules)}" if rules else ""
        return Check(
            "durable",
            True,
            f"results under {real} outlive {ctx.outlives}{exists} ({on}); kept by "
            f"{p.title}: {p.stop_survives}{avoid}",
        )
    if not ruled:
        # No rule says which mount outlives this provider's teardown: the folder is
        # usable, and what keeps its results is a pull (said so, not read as a pass for
        # "nothing on the box" surviving: ux-d #17).
        return Check(
            "durable",
            True,
            f"{where}{exists}; {p.title} ({p.name}) has no path rule to check: its teardown "
            f"({ctx.teardown_words}) keeps {p.meter_stop_survives}, so results are safe once "
            f"pulled (the teardown gate waits for that){memory}",
        )
    return Check("durable", True, f"{where}{exists}, {p.name}: {survives}{memory}")


def check_tmux(facts: BoxFacts, ctx: CheckContext) -> Check:
    """tmux, which the queue runner runs in, is on the box's PATH; without it a launch
    falls back to ``setsid nohup`` (queue_ctl.sh), and the check says so."""
    if not facts.tmux:
        return Check(
            "tmux",
            False,
            "tmux is missing: the queue will run under setsid nohup — it survives a logout, "
            f"but you cannot attach to it (its log: rgt-tui logs {ctx.host} -f)",
            "install tmux on the box: apt-get install -y tmux (no root: conda install -c "
            "conda-forge tmux)",
        )
    return Check("tmux", True, f"{facts.tmux_version or 'tmux'} ({facts.tmux})")


BOX_CHECKS = {
    "python": check_python, "torch": check_torch, "gpu": check_gpu, "driver": check_driver,
    "arch": check_arch, "gpu-busy": check_gpu_busy, "disk": check_disk,
    "storage": check_storage, "durable": check_durable, "tmux": check_tmux,
}  # fmt: skip


def box_checks(
    facts: BoxFacts, ctx: CheckContext, names: tuple[str, ...] = PREFLIGHT_CHECKS
) -> tuple[Check, ...]:
    """The checks in ``names`` made from the box's facts (``preflight_scope``'s), in
    PREFLIGHT_CHECKS order (code aside: sync's to tell)."""
    return tuple(check(facts, ctx) for name, check in BOX_CHECKS.items() if name in names)
