"""The readiness jobs of ``JobRunner``: ``y`` syncs the host's code, ``P`` runs preflight.

Each runs its service over the host's shared connection and reports through ``state``
(``JobRunner._set`` for the host): progress while it runs, then the outcome or the error
with its fix. No Textual here: the App turns each state into a message for the screens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.services.connect import Transport

State = Callable[..., Any]  # JobRunner._set, bound to the host: keyword changes of HostJobs


async def sync_job(fleet: Fleet, host: HostConfig, transport: Transport, state: State) -> None:
    """Push the host's code (``sync_code``) with progress; the box's tree is then checked
    by hash. A preflight shown from before the sync is dropped: it spoke of the old tree."""
    from rgt_tui.services.code_sync import SyncError, fleet_files, sync_code
    from rgt_tui.services.journal import torn_down_refusal

    state(sync_progress=None, sync_result=None, sync_error=None)
    if host.ready.code is None:
        where = fleet.path or "hosts.toml"
        state(
            sync_error_at=time.time(),
            sync_error=(
                f"{host.name} has no code to sync",
                f'set code = "<local dir>" in its [[hosts]] entry (or in [fleet]) of {where}',
            ),
        )
        return
    if host.group is not None:  # the same tree to every box of the group (docs/groups.md)
        await _sync_group_job(host, transport, state, fleet_files(fleet))
        return
    torn_down = await asyncio.to_thread(torn_down_refusal, fleet, host.name)
    if torn_down is not None:  # code sent there runs nowhere rgt-tui looks (s43 hour)
        state(sync_error_at=time.time(), sync_error=(torn_down, ""))
        return
    try:
        result = await sync_code(
            host,
            transport,
            on_progress=lambda done, total, path: state(sync_progress=(done, total, path)),
            withhold=fleet_files(fleet),
        )
    except SyncError as exc:
        state(sync_error_at=time.time(), sync_error=(exc.message, exc.fix or ""))
        return
    except (TransportError, OSError) as exc:
        state(
            sync_error_at=time.time(),
            sync_error=(str(exc), "check the connection and press y again"),
        )
        return
    state(sync_result=result, preflight=None)


async def _sync_group_job(
    group: HostConfig, transport: Transport, state: State, withhold: tuple[Path, ...]
) -> None:
    """``y`` on a group: every rank's box in turn; a box that failed is named (with the
    boxes that did sync), else one result adding up what went to every box."""
    from rgt_tui.services.queue.group.ranks import who
    from rgt_tui.services.queue.group.sync import sync_group

    got = await sync_group(
        group,
        transport,
        on_progress=lambda rank, done, total, path: state(
            sync_progress=(done, total, f"{who(group, rank)}: {path}")
        ),
        withhold=withhold,
    )
    failed = [r for r in got if not r.ok]
    if failed:
        synced = [r.who for r in got if r.ok]
        message = "; ".join(f"{r.who}: {r.error}" for r in failed)
        if synced:
            message += f" ({', '.join(synced)} synced)"
        state(sync_error_at=time.time(), sync_error=(message, failed[0].fix))
        return
    results = [r.result for r in got if r.result is not None]
    lead = results[0]
    state(
        sync_result=replace(
            lead,
            method=f"{lead.method} (to every box: {', '.join(r.who for r in got)})",
            files_sent=sum(r.files_sent for r in results),
            bytes_sent=sum(r.bytes_sent for r in results),
        ),
        preflight=None,
    )


async def preflight_job(fleet: Fleet, host: HostConfig, transport: Transport, state: State) -> None:
    """Run preflight on the box and keep its report (each failed check names its fix)."""
    from rgt_tui.services.preflight import preflight

    state(preflight=None, preflight_error=None)
    try:
        if host.group is not None:  # every box's and the checks across them (issue 41)
            from rgt_tui.services.queue.group.preflight import group_preflight

            report = await group_preflight(fleet, host, transport)
        else:
            report = await preflight(fleet, host, transport)
    except (TransportError, OSError) as exc:
        state(
            preflight_error_at=time.time(),
            preflight_error=(str(exc), "check the connection and press P again"),
        )
        return
    # A box that passes every check is still not ready for a queue file or a credential
    # a launch refuses.
    from rgt_tui.services.queue.launch_checks import refused_here

    state(preflight=replace(report, queue_problems=tuple(await refused_here(fleet, host))))
