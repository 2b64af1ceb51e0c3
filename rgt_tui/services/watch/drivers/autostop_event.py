"""The ``stopped`` event of the autostop: what was stopped, why (each condition of that
moment with its figures), and what still bills after the stop (the profile's facts).

The stop command's arguments are not repeated (an instance id, perhaps a token): the
program's name says which provider's stop ran.
"""

from __future__ import annotations

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.health import Thresholds
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.queue_state import DONE, FAILED, INTERRUPTED, KILLED, SKIPPED, QueueView
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_duration, local_time
from rgt_tui.services.teardown.command import LocalRun
from rgt_tui.services.teardown.gate import GateReport
from rgt_tui.services.watch.events import WatchEvent

GATE_KEYS = ("pulled", "local", "rescan", "verified")  # the gate's figures named in the event


def _last_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    return printable(lines[-1], 300) if lines else "(no output)"


def _bills(profile: Profile) -> str:
    return (
        f"Still bills after a stop ({profile.title}): {'; '.join(profile.keeps_billing)}. "
        f"What a stop keeps: {profile.stop_survives}."
    )


def cells_tally(view: QueueView) -> str:
    """``3 done, 0 failed, 1 moved/skipped of 4``: every cell counted, the ones that did
    not end done or failed too (a killed cell moved on read "3 done, 0 failed of 4": s43
    spot hour #7)."""
    parts = [f"{view.count(DONE)} done", f"{view.count(FAILED)} failed"]
    for status, word in (
        (KILLED, "killed"),
        (INTERRUPTED, "interrupted"),
        (SKIPPED, "moved/skipped"),
    ):
        if view.count(status):
            parts.append(f"{view.count(status)} {word}")
    return f"{', '.join(parts)} of {view.total}"


def stopped_event(
    host: HostConfig,
    report: GateReport,
    view: QueueView,
    idle_for: float,
    run: LocalRun,
    timeout_s: float,
    thresholds: Thresholds,
) -> WatchEvent:
    """What was stopped, why (each condition with its figures), and what still bills."""
    assert view.launch is not None and view.launch.done is not None
    profile = report.profile
    box = report.box.describe() if report.box else "the box"
    program = (host.watch.stop or "").split()[0] if host.watch.stop else "?"
    ok = run.status == 0 and not run.timed_out
    evidence = {c.key: c.evidence for c in report.conditions}
    # A cell accepted unfinished at the gate is why a queue with a failure may stop: said
    # (hour s23a #11: the message listed "1 failed" and not that it was accepted).
    accepted = [
        c.evidence
        for c in report.conditions
        if c.key == "unfinished" and c.ok and c.evidence.endswith("; acknowledged")
    ]
    why = [
        f"the queue launched at {local_time(view.launch.ts)} finished at "
        f"{local_time(view.launch.done.ts)}: {cells_tally(view)}",
        *(f"accepted unfinished at the gate: {text}" for text in accepted),
        *(f"{key}: {evidence[key]}" for key in GATE_KEYS if key in evidence),
        f"GPUs under {thresholds.idle_util_pct:g} % for {fmt_duration(idle_for)} "
        f"(autostop_minutes = {host.watch.autostop_minutes:g})",
        # The gate's notes (a run started by hand, another account on the machine): not
        # its locks, but what the user must hear of a stop made unattended (review h516 #2).
        *(f"note: {problem}" for problem in report.problems),
    ]
    if ok:
        title = f"{host.name} stopped: queue done, results pulled and verified, GPUs idle"
        head = f"Stopped {host.name} ({box}) with its stop command ({program} …): exit 0."
        after = (
            "A stop is not a teardown: start the box from the provider to use it again; "
            f"`rgt-tui teardown {host.name}` destroys it once its gate agrees."
        )
    else:
        title = f"{host.name}: the stop command FAILED — the box still bills in full"
        if run.timed_out:
            failed = f"ran past {timeout_s:g} s and was stopped with every process it started"
        else:
            failed = f"exited {run.status}: {_last_line(run.output)}"
        head = f"The stop command of {host.name} ({box}; {program} …) {failed}."
        after = (
            "watch does not run it again for this queue: check the provider's console and "
            "stop the box by hand."
        )
    body = "\n".join([head, "Why:", *(f"• {line}" for line in why), _bills(profile), after])
    return WatchEvent(
        kind="stopped",
        host=host.name,
        key=f"stopped:{host.name}:{view.launch.ts}",
        title=title,
        body=body,
        severity="info" if ok else "critical",
    )


def answers_after_stop_event(host: HostConfig, stopped_at: float, now: float) -> WatchEvent:
    """The box watch stopped (its command exited 0) still answers past the providers'
    settle time: its stop may have stopped nothing (a stale instance id), and it bills as
    a live box while the ``stopped`` message said its compute no longer did (hour s18a #1).
    Told once per stop: its key is the stop's time."""
    return WatchEvent(
        "still_answers",
        host.name,
        f"stop_still_answers:{host.name}:{stopped_at:.0f}",
        f"{host.name}: STILL ANSWERS {fmt_duration(now - stopped_at)} after watch's stop — "
        "it may still be billing",
        f"watch ran {host.name}'s stop at {local_time(stopped_at)} and the command exited 0, "
        "yet the same box answers: the stop may have stopped nothing (a wrong or stale "
        "instance id in `stop`?). Check the provider's console and stop it there, then fix "
        f"`stop` for {host.name} in the fleet file. If you started it again yourself, this "
        "is expected: nothing more is said of this stop.",
        "critical",
    )


def stop_outcome_unknown_event(
    host: HostConfig, claimed_at: float, *, answers: bool = False
) -> WatchEvent:
    """A stop watch claimed and started whose outcome was never recorded: the watch that
    ran it ended while it ran (killed, a reboot, its terminal closed). Whether the box
    stopped is unknown, and no later pass runs it again (the queue's stop is claimed):
    told once, critical, so a box that bills on is not left unsaid (hour s23a #1).
    ``answers``: the box answers now, so it is known not to be stopped (h602 #9: "not
    known" of a box answering every sample)."""
    if answers:
        return WatchEvent(
            "stop_unknown",
            host.name,
            f"stop_unknown:{host.name}:{claimed_at:.0f}",
            f"{host.name}: a stop watch started at {local_time(claimed_at)} has no recorded "
            "outcome, and the box still answers — it is billing",
            f"watch started {host.name}'s stop at {local_time(claimed_at)} and ended before "
            "the command did; the box answers now, so it did not stop (or was started "
            "again), and watch does not run the same queue's stop twice. Stop it at the "
            "provider's console if it should not run.",
            "critical",
        )
    return WatchEvent(
        "stop_unknown",
        host.name,
        f"stop_unknown:{host.name}:{claimed_at:.0f}",
        f"{host.name}: a stop watch started at {local_time(claimed_at)} has no recorded "
        "outcome — it may still be billing",
        f"watch started {host.name}'s stop at {local_time(claimed_at)} and ended before the "
        "command did, so whether the box stopped is not known, and watch does not run the "
        "same queue's stop twice. Check the provider's console: stop the box there if it "
        "still runs.",
        "critical",
    )


def waits_event(host: HostConfig, launch: int, why: str, title: str) -> WatchEvent:
    """The autostop of ``host``'s queue (launched at ``launch``) waits for something only
    the user can settle (a process outside the queue on its GPUs, a fleet file that is
    not applied): told once per queue and cause, as a warning, so that a box billing all
    night for it is not said on watch's console alone, which nobody reads under systemd
    (h532 #1, #2)."""
    return WatchEvent(
        "autostop_waits",
        host.name,
        f"autostop_waits:{host.name}:{launch}:{title}",
        f"{host.name}: autostop waits — {title}",
        f"{printable(why, 1500)}. The box goes on billing until this is settled or you stop "
        "it yourself.",
        "warning",
    )
