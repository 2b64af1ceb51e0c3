"""What a host's figures say, as lines of styled text: shared by its pane and its tabs.

Pure functions of a ``HostUpdate`` (and the clock); no widget state. Host-wide figures
are labelled as such (U41); a lost connection never reads as a dead run (GEN8).

A little over 450 lines on purpose: the pane and the Overview tab read the same words
from here (status, cost, preemption, cadence lines), and a split would put one host's
wording in two places to keep in step.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime

from rich.cells import cell_len
from textual.content import Content

from rgt_tui.content.box_text import shown
from rgt_tui.domain import cost
from rgt_tui.domain.at_risk import ages_line, cadence_seen
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.group_run import RankView
from rgt_tui.domain.health import queue_finished
from rgt_tui.domain.preemption import (
    SUSPECTED,
    Checkpoint,
    Preemption,
    mtbf_s,
    preemption_line,
    suspected_line,
)
from rgt_tui.domain.snapshot import CgroupSample, DiskSample, HostSnapshot
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.domain.young_daly import cadence_line
from rgt_tui.profiles import profile as load_profile
from rgt_tui.services.telemetry import ConnectionState, HostUpdate

ALIVE_NOTE = "the run may still be alive"
GAP_SHOWN_S = 600.0  # how long a connected pane says it came back after a gap
FINISHED_NOTE = "its queue had finished at its last sample: no queue cell was running"


def clock_hhmm(t: float) -> str:
    """``14:05`` in local time."""
    return time.strftime("%H:%M", time.localtime(t))


def connection_lines(
    conn: ConnectionState,
    snap: HostSnapshot | None,
    now: float,
    preempted: Preemption | None = None,
    *,
    first_seen: float | None = None,
    last_seen: float | None = None,
) -> list[Content]:
    """The status line(s): state, retry countdown, the error and its fix (GEN8: not dead).
    ``preempted``: the runtime's word on an interruptible box (issue 40): "preempted?"
    with the time since while it is silent, or the preemption it names. ``first_seen`` /
    ``last_seen``: when rgt-tui first / last saw the box answer (``HostUpdate``'s, from
    the journal): a box that answered before this run and not yet in it is known, not
    never reached (ux-g #1): it reads not answering since this TUI started, with its
    first sighting and its last sample on record."""
    lines: list[Content] = []
    # No sample this run, but the journal saw the box answer before (the TUI restarted
    # while it was down): its run may well go on there (GEN8, below).
    before_run = (
        snap is None
        and conn.status in ("reconnecting", "lost", "unreached")
        and (first_seen is not None or last_seen is not None)
    )
    if preempted is not None:
        lines.append(_preempted_line(preempted, now))
    if conn.status == "connected":
        parts: list[str | tuple[str, str]] = [("● connected", "$success")]
        if snap is not None and snap.uptime_s is not None:
            parts.append(
                (
                    f" · up {fmt_duration(snap.uptime_s + max(0.0, now - snap.t))}",
                    "$foreground-muted",
                )
            )
        if conn.gap_s and now - conn.since < GAP_SHOWN_S:
            # News, not a state: said with when, for a while (hour s24b #14: "back after
            # a 8s gap" stood unchanged for the rest of the run). The n list keeps it.
            back = clock_hhmm(conn.since)
            parts.append((f" · back {back} after a {fmt_duration(conn.gap_s)} gap", "$warning"))
        lines.append(Content.assemble(*parts))
        return lines
    ago = "" if snap is None else f" · sample {fmt_duration(now - snap.t)} ago"
    if conn.status == "connecting":
        lines.append(Content.styled("◌ connecting…", "$foreground-muted"))
    elif conn.status == "ended":
        # A box recorded as torn down that no longer answers: gone, as it should be; no
        # "the run may still be alive" (services.box_watch.as_torn_down).
        lines.append(
            Content.assemble(
                ("■ torn down · no longer answers", "bold"), (ago, "$foreground-muted")
            )
        )
    elif conn.status == "stopped":
        # watch's autostop stopped it and it has not answered since (services.runtime
        # .stopped): done on purpose, not lost, and nothing runs there.
        lines.append(
            Content.assemble(
                (f"■ stopped by watch at {clock_hhmm(conn.since)}", "bold"),
                (ago, "$foreground-muted"),
            )
        )
    elif before_run:
        lines.append(
            Content.assemble(
                (f"✖ not answering since this TUI started ({clock_hhmm(conn.since)})",
                 "bold $error"),
                (_next_try(conn, now), "$foreground-muted"),
            )
        )  # fmt: skip
        # The journal's last sighting is written every few minutes while samples flow:
        # "on record", as the last sample may have come a little later.
        known = [
            seen_label(t, now, words)
            for t, words in ((first_seen, "first seen"), (last_seen, "last sample on record"))
            if t is not None
        ]
        lines.append(Content.styled(" · ".join(known), "$foreground-muted"))
    elif conn.status == "unreached":
        # Never reached, in this run or before: say so plainly, and nothing about a run
        # being alive.
        lines.append(
            Content.assemble(
                ("✖ never connected", "bold $error"), (_next_try(conn, now), "$foreground-muted")
            )
        )
    elif conn.status == "reconnecting":
        retry = ""
        if conn.attempt:
            wait = (
                ""
                if conn.next_try_at is None
                else f", next try in {max(0.0, conn.next_try_at - now):.0f}s"
            )
            retry = f" (attempt {conn.attempt}{wait})"
        lines.append(
            Content.assemble(
                (f"◐ reconnecting{retry}", "bold $warning"), (ago, "$foreground-muted")
            )
        )
    else:
        lines.append(
            Content.assemble(
                (f"✖ lost since {clock_hhmm(conn.since)}", "bold $error"),
                (ago, "$foreground-muted"),
            )
        )
    # A sample came once (this run, or before it for a box not reached yet): GEN8.
    answered = conn.status in ("reconnecting", "lost") or before_run
    if answered and preempted is None and queue_finished(snap):
        lines.append(Content.styled(FINISHED_NOTE, "$foreground-muted"))
    elif answered and preempted is None:
        lines.append(Content.styled(ALIVE_NOTE, "$warning"))
    if conn.error:
        lines.append(Content.styled(shown(conn.error, lines=True), "$foreground-muted"))
    # A box named preempted is gone, not mistyped: "check the port in the provider's SSH
    # command" under its ⚡ line sent a user to the wrong place (s35 resume hour #8);
    # its line and alert say what to do. A suspected one may still be either.
    named = preempted is not None and preempted.kind != SUSPECTED
    if conn.fix and not named:
        # Suspected: either may be so. The command line's fix named the move first and
        # the pane only the port (s38 spot hour #8); the pane says both, in its keys.
        cell = preempted.cell if preempted is not None and preempted.cell else "its cell"
        fix = (
            f"if it was preempted: m moves {cell} (it resumes elsewhere from its last "
            f"verified checkpoint, if one is pulled); else: {conn.fix}"
            if preempted is not None
            else conn.fix
        )
        lines.append(Content.assemble(("fix: ", "bold $accent"), shown(fix, lines=True)))
    return lines


def _next_try(conn: ConnectionState, now: float) -> str:
    """`` · next try in 3s`` while a retry is scheduled, else ''."""
    if conn.next_try_at is None:
        return ""
    return f" · next try in {max(0.0, conn.next_try_at - now):.0f}s"


def _preempted_line(p: Preemption, now: float) -> Content:
    if p.kind == SUSPECTED:
        return Content.styled(f"⚡ {suspected_line(p.at, now)}", "bold $warning")
    return Content.styled(f"⚡ {shown(preemption_line(p))}", "bold $error")


def torn_down_line(
    host: HostConfig,
    at: float,
    now: float,
    first_seen: float | None = None,
    unbilled: Iterable[cost.Span] = (),
) -> Content:
    """``■ torn down 14:05 · cost $14.40``: a torn-down host is done. Its status line
    says when and what it cost (its meter stopped then), never "connected" or an uptime
    that ticks on: its telemetry and connection are closed."""
    same_day = time.localtime(at)[:3] == time.localtime(now)[:3]
    when = time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", time.localtime(at))
    parts: list[str | tuple[str, str]] = [(f"■ torn down {when}", "bold")]
    spent = host_cost(host, now, at, first_seen=first_seen, unbilled=unbilled)
    if spent is not None:
        parts.append((f" · cost ${spent:.2f}", "$foreground-muted"))
    return Content.assemble(*parts)


def periodic_failure_line(at: float, why: str, width: int = 0) -> Content:
    """``periodic pull failed 14:02: <why> — p to retry``: a host's failing periodic pull
    as one line of its pane, ``why`` cut so the line fits ``width`` (0: not cut) with the
    key still on it (the whole notice, fix and all, is in the ``n`` list)."""
    head = Content.styled(f"periodic pull failed {clock_hhmm(at)}: ", "bold $warning")
    tail = Content.styled(" — p to retry", "$foreground-muted")
    reason = Content(shown(why, lines=True).split("\n", 1)[0])
    if width:
        room = max(1, width - head.cell_length - tail.cell_length)
        reason = reason.truncate(room, ellipsis=True)
    return Content.assemble(head, reason, tail)


def billing_start(host: HostConfig, first_seen: float | None = None) -> float | None:
    """When the meter started: ``started_at`` if configured, else when rgt-tui first saw
    the box (``HostUpdate.first_seen``, kept in the journal); never the box's uptime."""
    started = host.started_at.timestamp() if host.started_at is not None else None
    return cost.billing_start(started, first_seen)


def host_cost(
    host: HostConfig,
    now: float,
    end: float | None = None,
    *,
    first_seen: float | None = None,
    unbilled: Iterable[cost.Span] = (),
) -> float | None:
    """Money spent on ``host`` so far (until ``end``, its teardown), less the spans it
    billed nothing (``HostUpdate.unbilled``); None when unknown."""
    start = billing_start(host, first_seen)
    return cost.cost_so_far(host.cost_per_hour, start, now, end, unbilled=unbilled)


def first_seen_label(t: float, now: float) -> str:
    """``since first seen 14:02`` (a date when it was not today)."""
    return seen_label(t, now, "since first seen")


def seen_label(t: float, now: float, words: str) -> str:
    """``<words> 14:02`` (a date when it was not today)."""
    same_day = time.localtime(t)[:3] == time.localtime(now)[:3]
    return f"{words} " + time.strftime("%H:%M" if same_day else "%b %d %H:%M", time.localtime(t))


def cost_text(
    host: HostConfig,
    now: float,
    end: float | None = None,
    *,
    first_seen: float | None = None,
    unbilled: Iterable[cost.Span] = (),
) -> str:
    """``$1.20/h · $14.40 so far`` (after teardown ``$14.40 total``), or '' with no price.

    Without ``started_at`` the spend counts from when rgt-tui first saw the box, and says
    so: ``$1.20/h · $0.02 since first seen 14:02``.
    """
    return " · ".join(cost_parts(host, now, end, first_seen=first_seen, unbilled=unbilled))


def cost_parts(
    host: HostConfig,
    now: float,
    end: float | None = None,
    *,
    first_seen: float | None = None,
    unbilled: Iterable[cost.Span] = (),
) -> list[str]:
    """``cost_text``'s parts: ``["$1.20/h", "$14.40 so far"]``, ``["$14.40 total"]``, []."""
    if host.cost_per_hour is None:
        return []
    spent = host_cost(host, now, end, first_seen=first_seen, unbilled=unbilled)
    if end is not None:
        return [] if spent is None else [f"${spent:.2f} total"]
    parts = [f"${host.cost_per_hour:.2f}/h"]
    if spent is not None:
        told = host.started_at is not None or first_seen is None  # the user said when
        since = "so far" if told else first_seen_label(first_seen, now)
        parts.append(f"${spent:.2f} {since}")
    return parts


Part = str | tuple[str, str]  # a part's text, or (its text, a short form for a tight border)


def border_subtitle(parts: list[Part], room: int) -> str:
    """``parts`` (most important last) joined by `` · ``, the first dropped one by one
    while the text is wider than ``room`` cells and more than one is left: a pane's
    border cuts what does not fit at its end, where the idle spend is. The parts that
    have a short form (the spend, the idle time: last) are never dropped for want of
    room while their short forms fit (a user's hour saw "idle paid 1m42s" alone, the
    spend gone, on a narrow pane): ``$0.28 · idle 1m42s``."""
    items = [(p, p) if isinstance(p, str) else p for p in parts if p and p[0]]
    shortenable = sum(1 for long, short in items if long != short)
    texts: list[str] = []
    for short in (False, True):
        texts = [s if short else long for long, s in items]
        while len(texts) > 1 and cell_len(" · ".join(texts)) > room:
            if not short and len(texts) <= shortenable:
                break  # only the parts with short forms are left: try those
            texts = texts[1:]
        if cell_len(" · ".join(texts)) <= room:
            break
    return " · ".join(texts)


def cgroup_line(cg: CgroupSample | None, oom_baseline: int | None) -> Content:
    """``oom_kill 0 · vCPU 4 · cgroup v2``; a risen oom_kill is highlighted (U9)."""
    if cg is None:
        return Content.styled("cgroup not readable", "$foreground-muted")
    parts: list[str | tuple[str, str]] = [("oom_kill ", "$foreground-muted")]
    if cg.oom_kill is None:
        parts.append("?")
    elif oom_baseline is not None and cg.oom_kill > oom_baseline:
        parts.append((f"{cg.oom_kill} (+{cg.oom_kill - oom_baseline})", "bold reverse $gauge-crit"))
    else:
        parts.append(str(cg.oom_kill))
    parts.append((" · vCPU ", "$foreground-muted"))
    if cg.cpu_unlimited:
        parts.append("unlimited")
    else:
        parts.append("?" if cg.cpu_quota_vcpus is None else f"{cg.cpu_quota_vcpus:g}")
    if cg.version:
        parts.append((f" · cgroup v{cg.version}", "$foreground-muted"))
    return Content.assemble(*parts)


def cgroup_memory(cg: CgroupSample | None) -> tuple[float | None, str]:
    """Fill and figure for the cgroup memory bar; an unlimited cgroup says so."""
    if cg is None:
        return None, "?"
    current = fmt_bytes(cg.memory_current)
    if cg.memory_unlimited:
        return None, f"{current} of unlimited"
    return cg.memory_fraction, f"{current}/{fmt_bytes(cg.memory_max)}"


def unique_mounts(disks: tuple[DiskSample, ...]) -> list[DiskSample]:
    """One sample per mount: several watched paths often share a file system."""
    seen: dict[str, DiskSample] = {}
    for d in disks:
        seen.setdefault(d.mount, d)
    return list(seen.values())


def started_label(host: HostConfig) -> str:
    """``started 2024-05-01 12:00 UTC`` for the detail screen, '' when not configured."""
    if host.started_at is None:
        return ""
    return "started " + datetime.strftime(host.started_at, "%Y-%m-%d %H:%M UTC")


def at_risk_lines(
    host: HostConfig,
    snap: HostSnapshot | None,
    verified: Checkpoint | None,
    *,
    answering: bool = True,
) -> list[Content]:
    """What a preemption would cost the running cell now (issue 40): ``ckpt 3m ago on box
    · 41m ago verified here``, and for an interruptible host the Young/Daly line
    (``checkpoints every 41 min; for this box W ≈ 13 min (write 30 s, MTBF 3 h)``).
    ``verified``: the cell's newest pulled-and-verified checkpoint. Box clock throughout.
    ``answering`` False: the box is silent and ``snap`` its last sample, so the ages are
    as of then, and say so (ux-e #4: "4s ago" three minutes later read as live)."""
    if snap is None or snap.cell is None:
        return []
    seen = snap.checkpoints
    box = seen.mtime if seen is not None else None
    here = verified.mtime if verified is not None else None
    from_host = verified.from_host if verified is not None else ""
    if here is not None and not from_host and (box is None or here > box):
        # The copy here was pulled from this box, so the box had one at least that new:
        # the agent finds a checkpoint of a new name only at its next walk of the folder
        # (every --scan-every s), and "ckpt 32s ago on box · 12s ago verified here"
        # overstated the work at risk and contradicted itself (ux-g #8).
        box = here
    ages = ages_line(box, here, snap.t, from_host)
    if not answering:
        ages += f" (as of {clock_hhmm(snap.t)}: the box does not answer)"
    lines = [Content.styled(ages, "$foreground-muted" if answering else "$warning")]
    found = cadence_seen(seen, mtbf_s(host, load_profile(host.profile)))
    if found is not None:
        line = cadence_line(found, host.watch.pull_every_s)
        lines.append(Content.styled(line, "$warning" if found.too_slow else "$foreground-muted"))
    return lines


def member_line(rank: int, box: str, update: HostUpdate | None) -> Content:
    """A group's box in one line of its pane (issue 41), side by side with the others:
    ``r1 box2  GPU 87% · VRAM 40.0 GiB/80.0 GiB · disk 62%``, or why there is no figure.
    ``update``: the box's own latest sample (None before its first)."""
    head = (f"r{rank} ", "$foreground-muted"), (f"{shown(box)}  ", "bold")
    if update is None:
        return Content.assemble(*head, ("no sample yet", "$foreground-muted"))
    conn = update.connection
    snap = update.snapshot
    if conn.status != "connected" or snap is None:
        why = f"{conn.status}: {conn.error}" if conn.error else conn.status
        return Content.assemble(*head, (shown(why), "$error"))
    parts: list[str] = []
    utils = [g.util_pct for g in snap.gpus if g.util_pct is not None]
    if snap.gpus:
        parts.append(f"GPU {sum(utils) / len(utils):.0f}%" if utils else "GPU ?")
        used = sum(g.mem_used or 0 for g in snap.gpus)
        total = sum(g.mem_total or 0 for g in snap.gpus)
        if total:
            parts.append(f"VRAM {fmt_bytes(used)}/{fmt_bytes(total)}")
    else:
        parts.append("no GPU")
    if snap.disks:
        parts.append(f"disk {max(d.bytes_fraction for d in snap.disks):.0%}")
    critical = any(a.severity == "critical" for a in update.alerts)
    return Content.assemble(*head, (" · ".join(parts), "$error" if critical else ""))


RANK_LINE_CHARS = 200  # a rank's line is cut to the pane's width anyway; bound it first


def rank_line(rank: RankView) -> Content:
    """Under a group box's line (issue 41): what that rank's own records last say of the
    group's cell — the running cell (rgt-tui's note on it, the last line it printed so
    far), or the latest cell that ended with its last printed line (a failed cell's), or
    why the box was not read.
    Read by the group's queue poll, so it costs no round trip of its own."""
    lead = ("   └ ", "$foreground-muted")
    view = rank.view
    if view is None:
        return Content.assemble(lead, (shown(rank.error[:RANK_LINE_CHARS]), "$error"))
    running = [c for c in view.cells if c.status == "running"]
    ended = [c for c in view.cells if c.ended_at is not None]
    cell = running[0] if running else max(ended, key=lambda c: c.ended_at or 0, default=None)
    if cell is None:
        return Content.assemble(lead, ("no cell ran yet", "$foreground-muted"))
    style = "$error" if cell.status == "failed" else ""
    head = f"{cell.label} {shown(cell.name[:60])}"
    # A running cell: rgt-tui's note on it (if any), then the last line it printed so far.
    said = " · ".join(t for t in (cell.note, cell.last_line) if t)
    if not said:
        return Content.assemble(lead, (head, style))
    return Content.assemble(
        lead, (head, style), (f": {shown(said[:RANK_LINE_CHARS])}", "$foreground-muted")
    )
