"""Node-local storage on a Slurm cluster (SLURM5): a durable dir there is wiped when the
job ends and unseen by a task on another node, so a requeued or resumed cell would find no
checkpoint. One rule, read by the launch (``services.queue.slurm.launch``) and by
preflight's durable check (``domain.preflight_checks``), so preflight never says ready for
a durable dir the launch refuses. Pure."""

from __future__ import annotations

from collections.abc import Sequence

# Storage that belongs to one node (or one job) and is gone when the job ends or the
# next task lands elsewhere: a checkpoint there cannot be resumed by a requeued task or
# by the next cell on another node (SLURM5). "$TMPDIR" is the login node's value, and
# the text itself in a durable_dir that names it.
NODE_LOCAL = ("$TMPDIR", "/tmp", "/scratch/local", "/local", "/dev/shm")
NODE_LOCAL_FIX = (
    "set durable_dir on the shared filesystem ($HOME or /scratch/$USER) in hosts.toml; stage "
    "data to $TMPDIR from the cell instead"
)


def node_local_reason(
    host: str,
    durable: str,
    durable_real: str,
    tmpdir: str,
    extra: Sequence[str] = (),
    home: str = "",
) -> str | None:
    """Why ``durable`` (as configured, HOME expanded; and its real path on the login
    node) is node-local storage a cell must never checkpoint to (SLURM5), or None; its
    fix is ``NODE_LOCAL_FIX`` (the launch says it after " — ", preflight on its own line).

    ``tmpdir``: the login node's ``$TMPDIR``; ``extra``: the profile's
    ``durable_not_under``; both always refuse. The fixed roots (/tmp, /local, …) do not
    refuse a path inside ``home``, the login node's $HOME: a cluster's home is the
    shared filesystem every node mounts, wherever it is mounted.
    """
    if "$TMPDIR" in durable or "${TMPDIR}" in durable or "SLURM_TMPDIR" in durable:
        root, rule = durable, "$TMPDIR"
    else:
        root, rule = "", ""
        paths = [p for p in (durable, durable_real) if p]
        in_home = bool(home) and all(_under(p, home) for p in paths)
        for candidate in dict.fromkeys(("$TMPDIR", *extra, *NODE_LOCAL)):
            fixed = candidate in NODE_LOCAL and candidate != "$TMPDIR"
            path = tmpdir if candidate == "$TMPDIR" else candidate
            if fixed and in_home:
                continue
            if path and any(_under(p, path) for p in paths):
                root, rule = path, candidate
                break
    if not rule:
        return None
    where = rule if root in (rule, durable) else f"{rule} ({root})"
    return (
        f"durable_dir {durable} on {host} is under {where}: node-local storage, wiped when "
        "the job ends and not seen by a task on another node, so a requeued or resumed cell "
        "would find no checkpoint (SLURM5)"
    )


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/")
