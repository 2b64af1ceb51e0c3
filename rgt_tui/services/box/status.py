"""`rgt-tui status`: one sample from every host at once, as reports a table or JSON can show.

Its alerts are the TUI's: ``telemetry.connection_alerts`` (health and cost rules, one
place), so a forgotten box or a platform's release clock shows here as it does on the
pane. With a ``LastSeen`` store (the journal), an unreachable box's release clock counts
from the last time any rgt-tui saw it, and a reachable one is recorded as seen now.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rgt_tui.agent import agent_command, agent_source
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.cost import IdleMeter, billing_start, cost_so_far
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.health import Alert, HealthState
from rgt_tui.domain.snapshot import UNLIMITED, HostSnapshot
from rgt_tui.domain.text import printable
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.journal import journal_for
from rgt_tui.services.runtime.stopped import StoppedHosts
from rgt_tui.services.telemetry import (
    ConnectionState,
    LastSeen,
    connection_alerts,
    parse_agent_line,
    tracker_patterns,
)
from rgt_tui.timeouts import within
from rgt_tui.transport import Transport, transport_for


@dataclass(frozen=True)
class HostReport:
    """One host's answer: a snapshot and its alerts, or why it could not be reached."""

    host: HostConfig
    snapshot: HostSnapshot | None
    alerts: tuple[Alert, ...]
    error: str | None = None
    fix: str | None = None
    # Idle paid time (the pane's meter, ``domain.cost.IdleMeter``) over what status saw:
    # one sample, so no interval is measured yet (idle_s 0) and ``last_idle`` says
    # whether this sample is idle. None: not billed (no cost_per_hour) or unreachable.
    idle: IdleMeter | None = None
    # What the box has billed: from its started_at, else from when rgt-tui first saw it
    # answer (the journal's, as the TUI's panes and watch's rgt_cost_so_far count it);
    # None without a cost_per_hour or either time. ``counted_from_first_seen`` says which.
    cost_so_far: float | None = None
    counted_from_first_seen: bool = False

    @property
    def reachable(self) -> bool:
        return self.snapshot is not None


async def _report(
    host: HostConfig,
    make_transport: Callable[[HostConfig], Transport],
    fleet: Fleet,
    timeout: float,
    last_seen: LastSeen | None,
    clock: Callable[[], float],
    torn_down_at: float | None,
) -> HostReport:
    transport: Transport | None = None
    error: tuple[str, str | None] | None = None
    try:
        transport = make_transport(host)
        snap = await within(sample_once(host, transport, timeout=timeout), timeout)
    except TransportError as exc:
        error = (exc.message, exc.fix)
    except asyncio.TimeoutError:
        # The same hung box reads alike whichever clock ran out first (the connect's or
        # --timeout): one that never finished its handshake is not "overloaded".
        connected = transport is not None and transport.connected
        error = (
            (f"no sample within {timeout:g} s", "is the box overloaded?")
            if connected
            else (f"no answer within {timeout:g} s", "is the box running?")
        )
    except Exception as exc:  # noqa: BLE001 - one host's surprise must not fail the others
        error = (
            f"unexpected {type(exc).__name__}: {exc}",
            "this is a bug in rgt-tui: please report it with this message",
        )
    finally:
        if transport is not None:
            with contextlib.suppress(Exception):
                await transport.close()
    now = clock()
    profile = load_profile(host.profile)
    if error is not None:
        # The message may quote the box (the agent's stderr, an exception's text): made
        # printable here, as the snapshot's strings are where the agent's line is parsed.
        error = (printable(error[0], None), printable(error[1], None) if error[1] else error[1])
        seen = await asyncio.to_thread(last_seen.last_seen, host.name) if last_seen else None
        # No sample now. A box the journal saw answer before is lost: its run may still be
        # alive (GEN8), as the TUI and `watch` say of it; one never seen is unreached.
        state = "lost" if seen is not None else "unreached"
        lost = ConnectionState(state, now, attempt=1, error=error[0], fix=error[1])
        alerts = connection_alerts(
            host, profile, None, HealthState(), lost,
            thresholds=fleet.thresholds, now=now, last_seen=seen,
        )  # fmt: skip
        # A box recorded as torn down that does not answer billed until its teardown, as
        # the TUI's pane says (one that answers bills on: the forgotten-box leak, GEN1).
        end = now if torn_down_at is None else min(now, torn_down_at)
        spent, from_seen = await _spent(host, fleet, last_seen, end, answered=False)
        return HostReport(
            host, None, alerts, *error, cost_so_far=spent, counted_from_first_seen=from_seen
        )
    if last_seen is not None:
        await asyncio.to_thread(last_seen.saw, host.name, now)
    health = HealthState().observe(snap, fleet.thresholds)
    alerts = connection_alerts(
        host, profile, snap, health, ConnectionState("connected", now),
        thresholds=fleet.thresholds, now=now, last_seen=now, received_at=now,
    )  # fmt: skip
    idle = IdleMeter().observe_sample(snap, snap.cell is not None) if host.cost_per_hour else None
    spent, from_seen = await _spent(host, fleet, last_seen, now, answered=True)
    return HostReport(
        host, snap, alerts, idle=idle, cost_so_far=spent, counted_from_first_seen=from_seen
    )


async def _spent(
    host: HostConfig, fleet: Fleet, last_seen: LastSeen | None, now: float, *, answered: bool
) -> tuple[float | None, bool]:
    """(what ``host`` has billed by ``now``, whether it counts from first seen)."""
    if host.cost_per_hour is None:
        return None, False
    started = host.started_at.timestamp() if host.started_at is not None else None
    first = None
    if started is None and last_seen is not None:
        first = await asyncio.to_thread(last_seen.first_seen, host.name)
    stops = StoppedHosts(None if fleet.is_default else journal_for(fleet))
    stopped_at, unbilled = await asyncio.to_thread(stops.state, host.name)
    if not answered and stopped_at is not None:
        now = min(now, stopped_at)  # stopped by watch's autostop: billed nothing since
    # Nor while stopped before it answered again (as the panes and watch's metric count).
    spent = cost_so_far(host.cost_per_hour, billing_start(started, first), now, unbilled=unbilled)
    return spent, started is None and spent is not None


async def collect_status(
    fleet: Fleet,
    *,
    timeout: float = 30.0,
    make_transport: Callable[[HostConfig], Transport] = transport_for,
    last_seen: LastSeen | None = None,
    clock: Callable[[], float] = time.time,
    torn_down_at: Mapping[str, float] | None = None,
) -> list[HostReport]:
    """Sample every host concurrently; an unreachable host, or any error of one host,
    never delays or fails the others. ``last_seen``: where the last time each box
    answered is kept (``telemetry.JournalLastSeen``), for the platforms' release clocks;
    ``torn_down_at``: when each host the journal records as torn down was."""
    torn = torn_down_at or {}
    return list(
        await asyncio.gather(
            *(
                _report(h, make_transport, fleet, timeout, last_seen, clock, torn.get(h.name))
                for h in fleet.hosts
            )
        )
    )


def _limit(value: float | None, unlimited: bool) -> Any:
    return UNLIMITED if unlimited else value


def report_to_json(report: HostReport) -> dict[str, Any]:
    """The `status --json` object for one host (keys documented in the README)."""
    snap = report.snapshot
    cg = snap.cgroup if snap else None
    return {
        "name": report.host.name,
        "reachable": report.reachable,
        "error": report.error,
        "fix": report.fix,
        "profile": report.host.profile,
        "hostname": snap.hostname if snap else None,
        "boot_id": snap.boot_id if snap else None,
        "uptime_s": snap.uptime_s if snap else None,
        "loadavg_host_wide": list(snap.loadavg) if snap and snap.loadavg else None,
        "disks": [asdict(d) for d in snap.disks] if snap else [],
        "cgroup": {
            "version": cg.version,
            "memory_current": cg.memory_current,
            "memory_max": _limit(cg.memory_max, cg.memory_unlimited),
            "oom_kill": cg.oom_kill,
            "cpu_quota_vcpus": _limit(cg.cpu_quota_vcpus, cg.cpu_unlimited),
        }
        if cg
        else None,
        "gpu_source": snap.gpu_source if snap else "none",
        "gpu_unavailable_reason": snap.gpu_unavailable_reason if snap else None,
        "gpus": [{**asdict(g), "throttle_reasons": list(g.throttle_reasons)} for g in snap.gpus]
        if snap
        else [],
        "gpu_processes": [asdict(p) for p in snap.gpu_processes or ()] if snap else [],
        "alerts": [
            {
                "id": a.id,
                "severity": a.severity,
                "message": a.message,
                "gotcha": a.gotcha,
                "subject": a.subject,
            }
            for a in report.alerts
        ],
        "running_cell": snap.cell if snap else None,
        # One sample measures no interval: idle_paid_s is what this run saw (0.0), and
        # idle_now whether the sample is idle (every GPU under 5 %, no cell running).
        # Both null when the box is not billed (no cost_per_hour) or not reached.
        # What it has billed (its cost_per_hour's currency): from started_at, else from
        # when rgt-tui first saw it answer (cost_from "first_seen"); null when unknown.
        "cost_per_hour": report.host.cost_per_hour,
        "cost_so_far": report.cost_so_far,
        "cost_from": (
            None
            if report.cost_so_far is None
            else "first_seen"
            if report.counted_from_first_seen
            else "started_at"
        ),
        "idle_paid_s": report.idle.idle_s if report.idle else None,
        "idle_now": report.idle.last_idle if report.idle else None,
        "problems": list(snap.problems) if snap else [],
    }


async def sample_once(
    host: HostConfig, transport: Transport, *, timeout: float = 30.0
) -> HostSnapshot:
    """Connect, take one agent sample and return it (for `rgt-tui status`)."""
    await transport.connect()
    result = await transport.run(
        agent_command(
            host.mounts,
            0.0,
            count=1,
            out_root=host.durable_dir,
            tracker_patterns=tracker_patterns(host),
        ),
        input=agent_source(),
        timeout=timeout,
    )
    flood = result.overflow("the telemetry agent's one sample")
    if flood is not None:  # cut short: no line of it is trusted
        raise TransportError(
            host.name, flood, "see what on the box writes into a python3 run (its startup files)"
        )
    snaps = [s for s in (parse_agent_line(host.name, ln) for ln in result.stdout.splitlines()) if s]
    if not snaps:
        # The box's words, made printable where they enter (the error is shown everywhere).
        why = (result.stderr.strip().splitlines() or [f"exit status {result.exit_status}"])[-1]
        why = printable(why, 200)
        said = result.stderr.strip().lower()
        if result.exit_status == 127 and (not said or "not found" in said):
            why = "python3 not found on the box (the telemetry agent needs it)"
        elif result.exit_status not in (0, None):
            # The box answered over SSH; its python3 is what fails (a broken install),
            # not the link (hour s20a #8: "python3 not found" of a missing library).
            why = f"python3 on the box failed (exit {result.exit_status}): {why}"
        raise TransportError(
            host.name,
            f"telemetry agent gave no sample: {why}",
            f"the box answers over SSH: repair its python3 (`rgt-tui shell {host.name}`)"
            if "failed (exit" in why
            else None,
        )
    return snaps[-1]
