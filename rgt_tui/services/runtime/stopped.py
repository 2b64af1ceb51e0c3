"""A box that ``watch``'s autostop stopped is stopped, everywhere, until it answers again.

The autostop (``services.watch.drivers.autostop``) records every stop it runs in
``<fleet journal>/autostop/<host>.json`` (``autostop_path``). A host whose last recorded
stop ran with success, and whose box has not answered since (the journal's ``last_seen``,
written by every monitor when samples start, is not ``STOP_SETTLE_S`` past the stop: a
provider takes a moment to stop a box), is stopped. Its updates are then shown through
``as_stopped``: status ``stopped``, no GEN8 "the run may still be alive", never silent,
never preempted, never pulled, and its compute no longer counted in the cost figures
(``watch``'s ``host_state``). Once the box answers again it is live as any other.

``StoppedHosts`` reads the two files only when one of them changed (two ``stat`` calls
otherwise), so the runtime may ask it for each update of a host that does not answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rgt_tui.domain.cost import Span
from rgt_tui.domain.health import IDLE_ALERT
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.services.journal import Journal, JournalError
from rgt_tui.services.records import atomic_write_json, read_json
from rgt_tui.services.records_watch import file_stamp
from rgt_tui.services.runtime.monitors import GEN8_ALERT, not_forgotten
from rgt_tui.services.telemetry import HostUpdate

STOPPED = "stopped"  # ConnectionState.status of a box watch's autostop stopped
STOP_SETTLE_S = 300.0  # answers this soon after the stop are the box still going down
# Not answering this long after a stop: the box went down (a blip of a reconnect is not).
DOWN_AFTER_STOP_S = 60.0
MAX_STATE_BYTES = 1 << 20


def autostop_path(journal: Path, host: str) -> Path:
    """Where the autostop keeps ``host``'s stops (beside the fleet's journal)."""
    return journal / "autostop" / f"{host}.json"


def last_good_stop(data: Any) -> float | None:
    """When the last stop of an autostop state ended with success (None: none did, or
    the last one failed or has not ended)."""
    stops = data.get("stops") if isinstance(data, dict) else None
    if not isinstance(stops, list) or not stops:
        return None
    last = max(
        (s for s in stops if isinstance(s, dict)),
        key=lambda s: _num(s.get("claimed_at")) or 0.0,
        default=None,
    )
    if last is None or last.get("ok") is not True:
        return None
    return _num(last.get("ended_at"))


def unbilled_spans(data: Any) -> tuple[Span, ...]:
    """The times a box billed no compute: each stop that ended with success, until the
    box answered again after it (its ``back_at``, written by ``record_back``). A stop
    whose box has not answered since is left out: the cost's own end says that one."""
    stops = data.get("stops") if isinstance(data, dict) else None
    spans = []
    for s in stops if isinstance(stops, list) else ():
        if isinstance(s, dict) and s.get("ok") is True:
            a, b = _num(s.get("ended_at")), _num(s.get("back_at"))
            if a is not None and b is not None and b > a:
                spans.append((a, b))
    return tuple(sorted(spans))


def box_started(snap: HostSnapshot) -> float | None:
    """When the box last started, on its own clock: its PID 1 (a container started
    again keeps its host's boot), else its boot; None when it says neither."""
    if snap.container_start is not None:
        return snap.container_start
    return snap.t - snap.uptime_s if snap.uptime_s is not None else None


def record_back(journal: Journal, host: str, at: float, t: float) -> tuple[Span, ...]:
    """Record that ``host``'s box, stopped by the stop that ended at ``at``, started
    again at ``t`` (its own start, read on this machine's clock; kept once: the first
    process to see it writes it); the spans it billed nothing since. Blocking: call it in a thread. OSError when it cannot write."""
    path = autostop_path(journal.directory, host)
    with journal.locked(host):
        data = read_json(path)
        if not isinstance(data, dict) or data.get("host") != host:
            return ()  # unreadable or another's: the autostop says so, and stops nothing
        for stop in data.get("stops") or ():
            ours = isinstance(stop, dict) and _num(stop.get("ended_at")) == at and t > at
            if ours and stop.get("ok") is True and _num(stop.get("back_at")) is None:
                stop["back_at"] = t
                atomic_write_json(path, data)
        return unbilled_spans(data)


def _num(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None


def hhmm(t: float) -> str:
    """``21:55`` in local time."""
    return time.strftime("%H:%M", time.localtime(t))


def stopped_line(at: float) -> str:
    """``stopped by watch at 21:55``: how a stopped box is named."""
    return f"stopped by watch at {hhmm(at)}"


def as_stopped(update: HostUpdate, at: float) -> HostUpdate:
    """``update`` of a box watch stopped at ``at`` that does not answer, as shown: status
    ``stopped`` since the stop, the GEN8 alert dropped (nothing runs there: the queue was
    done, its results pulled and verified), the connection's error replaced by what
    happened and its fix by how to use it again. A box that answers is shown as it is."""
    if update.connection.status in ("connected", "connecting", STOPPED):
        return update
    return replace(
        update,
        connection=replace(
            update.connection,
            status=STOPPED,
            since=at,
            error="autostop: the queue was done, its results pulled and verified",
            fix="start it from the provider to use it again; shown live once it answers",
        ),
        # Nor GEN1's "queue finished and the box still bills": watch stopped it, so its
        # rate bills no more (the header's $/h and the metrics say 0), and the alert paged
        # every time autostop did its job (s36 watch hour #2). Nor its last sample's
        # "GPUs idle while billed" (h513 #4: beside "stopped by watch", and in /metrics).
        alerts=tuple(
            a for a in not_forgotten(update).alerts if a.id not in (GEN8_ALERT, IDLE_ALERT)
        ),
    )


class StoppedHosts:
    """Which hosts watch's autostop stopped and that have not answered since (see the
    module docstring); over ``journal`` (None: nothing is ever stopped)."""

    def __init__(self, journal: Journal | Callable[[], Journal] | None) -> None:
        self._journal = journal
        # host → (stamps, when stopped, the spans it billed nothing)
        self._seen: dict[str, tuple[object, float | None, tuple[Span, ...]]] = {}

    def journal(self) -> Journal | None:
        """The journal read (the callable's, when one was given)."""
        j = self._journal
        return j() if callable(j) else j

    def stopped_at(self, host: str) -> float | None:
        """When watch stopped ``host``'s box, while it has not answered since; None
        otherwise (blocking, but two ``stat`` calls unless a file changed)."""
        return self.state(host)[0]

    def unbilled(self, host: str) -> tuple[Span, ...]:
        """The spans ``host``'s box billed no compute (``unbilled_spans``; blocking, as
        ``stopped_at``)."""
        return self.state(host)[1]

    def state(self, host: str) -> tuple[float | None, tuple[Span, ...]]:
        """(``stopped_at``, ``unbilled``) of ``host``, with one look at the files."""
        journal = self.journal()
        if journal is None:
            return None, ()
        state = autostop_path(journal.directory, host)
        stamps = (file_stamp(state), file_stamp(journal.path(host)))
        seen = self._seen.get(host)
        if seen is None or seen[0] != stamps:
            read = (None, ()) if stamps[0] is None else self._read(journal, state, host)
            seen = self._seen[host] = (stamps, *read)
        return seen[1], seen[2]

    @staticmethod
    def _read(journal: Journal, state: Path, host: str) -> tuple[float | None, tuple[Span, ...]]:
        try:
            with state.open("rb") as f:
                data = json.loads(f.read(MAX_STATE_BYTES))
        except (OSError, ValueError, RecursionError):
            return None, ()  # unreadable: the autostop says so itself, and stops nothing
        if not isinstance(data, dict) or data.get("host") != host:
            return None, ()
        at, spans = last_good_stop(data), unbilled_spans(data)
        if at is None or any(a == at for a, _ in spans):
            return None, spans  # none stopped it, or it answered again since
        try:
            seen = journal.load(host).last_seen
        except JournalError:
            seen = None
        if seen is not None and seen >= at + STOP_SETTLE_S:
            return None, spans  # it answered again since
        return at, spans
