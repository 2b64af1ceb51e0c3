"""Preflight's smoke step (GEN5/U10) and the cells' environment file (generic-ssh §3).

``smoke_check`` runs the host's ``smoke`` command (or, with ``smoke_seconds`` alone, the
queue's first cell to run, as the launch rendered it) on the box before the queue,
through ``rgt_tui/scripts/smoke.sh``: the queue's own ``run_one.sh`` (deployed by content
hash, as a launch deploys it), so it runs in the cells' environment, measured every
second (peak VRAM, peak host memory), stopped at its bound. A CUDA OOM in it fails the
``smoke`` check (``domain.preflight_smoke``). The host's credentials are sent first, as a
launch sends them (U34), so the smoke sees what the cells will.

``send_cell_env`` writes ``~/.rgt/cell.env`` (the mirrors every cell exports:
``PIP_INDEX_URL``, ``HF_ENDPOINT``), or removes it when the host has none; a launch calls
it before its runner starts. The values come from the fleet file, never a secret.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.preflight import Check
from rgt_tui.domain.preflight_smoke import SMOKE_DEFAULT_S, check_smoke, parse_smoke
from rgt_tui.services.box_ctl import deployed_name
from rgt_tui.services.box_script import box_path, run_box_script, script_text
from rgt_tui.services.credentials import CredentialError, masked, resolve, send_credentials
from rgt_tui.transport import Transport

CELL_ENV_FILE = "~/.rgt/cell.env"
# Written whole to a temporary name, then renamed: a cell starting meanwhile sources the
# old file or the new one, never half of one.
_WRITE_ENV = (
    'umask 077 && mkdir -p "$HOME/.rgt" && cat >"$HOME/.rgt/.cell.env.$$" && '
    'mv -f "$HOME/.rgt/.cell.env.$$" "$HOME/.rgt/cell.env"'
)
_REMOVE_ENV = 'rm -f "$HOME/.rgt/cell.env"'


def cell_env_text(env: Iterable[tuple[str, str]]) -> str:
    """The cell environment file: ``export NAME='value'`` a line (run_one.sh sources it)."""
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env)


async def send_cell_env(host: str, env: Iterable[tuple[str, str]], transport: Transport) -> None:
    """Write the box's ``~/.rgt/cell.env`` with ``env`` (none: remove an earlier one).
    TransportError when the box cannot be reached or refuses."""
    text = cell_env_text(env)
    command = _WRITE_ENV if text else _REMOVE_ENV
    result = await transport.run(command, input=text or None, timeout=60)
    if result.exit_status != 0:
        said = result.stderr.strip().splitlines()
        raise TransportError(
            host,
            f"cannot write {CELL_ENV_FILE}: {said[-1][:200] if said else 'no message'}",
            "see that ~/.rgt on the box is writable (df -h ~)",
        )


def smoke_target(host: HostConfig, first_cell: str | None) -> tuple[str, int, str] | None:
    """What the smoke runs: (command, seconds, how the check names it), or None when the
    host has no smoke (neither key). ``first_cell``: the queue's first cell to run, as
    rendered (None: not known here)."""
    ready = host.ready
    if ready.smoke is None and ready.smoke_seconds is None:
        return None
    seconds = max(1, int(ready.smoke_seconds or SMOKE_DEFAULT_S))
    if ready.smoke is not None:
        return ready.smoke, seconds, f"`{ready.smoke}`"
    if first_cell is None:
        return None
    return first_cell, seconds, "the queue's first cell"


async def smoke_check(
    host: HostConfig,
    transport: Transport,
    first_cell: str | None,
    env: Iterable[tuple[str, str]],
    *,
    cells_running: bool = False,
) -> Check | None:
    """The ``smoke`` check (None: the host has no smoke). Not run while a cell of the
    queue runs (it would share the GPU and the memory)."""
    ready = host.ready
    target = smoke_target(host, first_cell)
    if target is None:
        if ready.smoke is None and ready.smoke_seconds is not None:
            return Check(
                "smoke",
                True,
                "not run: smoke_seconds runs the queue's first cell, which only a launch "
                'knows (rgt-tui launch runs it); smoke = "…" names a command preflight runs',
                ran=False,
            )
        return None
    command, seconds, what = target
    if cells_running:
        return Check(
            "smoke",
            True,
            f"{what} not run: a cell of the queue is running on the box now",
            ran=False,
        )
    secrets: list[str] = []
    if ready.credentials:
        try:
            await send_credentials(host.name, ready.credentials, transport)
            secrets = [resolve(host.name, c) for c in ready.credentials]
        except CredentialError as exc:
            return Check("smoke", False, f"not run: {exc.message}", "fix the credential first")
    runner, env_text = script_text("run_one.sh"), cell_env_text(env)
    result = await run_box_script(
        transport,
        script_text("smoke.sh"),
        "smoke",
        deployed_name("run_one.sh"),
        len(runner.encode("utf-8")),
        len(env_text.encode("utf-8")),
        box_path(host.workdir),
        seconds,
        command,
        input=runner + env_text,
        timeout=seconds + 90,
    )
    # The smoke's last lines are shown: a value it printed (`set -x`, a curl with its
    # header) shows as [hidden], as the box's echo of the file does (h543 #3).
    return check_smoke(parse_smoke(masked(result.stdout, secrets)), what, host.name)
