"""The keys of ``rgt-tui watch`` (issue 31) in ``[fleet]`` and ``[[hosts]]``.

``[fleet]``: ``notify`` (Apprise URLs for every host), ``notify_reminder_minutes``,
``tui_notify``, ``pull_rate_mbit``. ``[[hosts]]``: ``notify`` (added after the fleet's),
``pull_every`` (a duration: ``"15m"``, ``"1h30m"``, ``"90s"``), ``stop`` (the provider's
reversible stop command), ``autostop_minutes`` (needs ``stop``), ``interruptible``.
Both: ``on_preempt`` ("off", "move", "relaunch") and ``spare`` (host names), the host's
over the fleet's (issue 40; each spare is checked to be a host of the file by
``config_parse``).

A notification URL holds no secret in the file: write ``${VAR}`` where one goes
(``tgram://${TG_TOKEN}/12345``); it is expanded from the environment when a message is
sent, and never written back.
"""

from __future__ import annotations

import re

from rgt_tui.domain.config import ON_PREEMPT, FleetWatch, HostWatch
from rgt_tui.domain.config_toml import Table

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")


def parse_duration(text: str) -> float | None:
    """``"1h30m"`` → 5400.0 seconds; None for text that is not such a duration (or 0)."""
    match = _DURATION.fullmatch(text.strip().replace(" ", ""))
    if match is None or not any(match.groups()):
        return None
    h, m, s = (float(g) if g else 0.0 for g in match.groups())
    seconds = h * 3600 + m * 60 + s
    return seconds if seconds > 0 else None


def fleet_watch(t: Table) -> FleetWatch:
    """The ``[fleet]`` watch keys; mistakes recorded in ``t.problems``."""
    c = t.checked
    d = FleetWatch()
    return FleetWatch(
        notify=c(lambda: _urls(t), ()),
        reminder_minutes=c(
            lambda: t.number("notify_reminder_minutes", d.reminder_minutes), d.reminder_minutes
        )
        or d.reminder_minutes,
        tui_notify=c(lambda: _flag(t, "tui_notify", d.tui_notify), d.tui_notify),
        pull_rate_mbit=c(lambda: _pull_rate(t), None),
        on_preempt=c(lambda: _on_preempt(t, d.on_preempt), d.on_preempt),
        spare=c(lambda: _spare(t), ()),
    )


# The slowest pull budget taken: below it one 32 KiB piece takes seconds, and a typo
# (1e-9, 0.0001) would leave a pull at "eta ?" for good.
MIN_PULL_RATE_MBIT = 0.1


def _pull_rate(t: Table) -> float | None:
    rate = t.number("pull_rate_mbit", None)
    if rate is not None and rate < MIN_PULL_RATE_MBIT:
        raise t.error(
            "pull_rate_mbit", f"expected at least {MIN_PULL_RATE_MBIT} (Mbit/s), got {rate:g}"
        )
    return rate


def host_watch(t: Table, fleet: FleetWatch) -> HostWatch:
    """A ``[[hosts]]`` entry's watch keys over the fleet's; mistakes in ``t.problems``."""
    c = t.checked
    stop = c(lambda: t.maybe("stop", example="vastai stop instance 1234567"), None)
    autostop = c(lambda: t.number("autostop_minutes", None), None)
    if autostop is not None and stop is None:
        t.problems.append(
            t.error(
                "autostop_minutes",
                # Both platforms' shapes: vast.ai's alone was offered to RunPod hosts.
                "autostop_minutes needs the provider's reversible stop command: add "
                'stop = "<it>", e.g. "vastai stop instance 1234567" on vast.ai, '
                '"runpodctl stop pod abc123xyz" on RunPod (never a destroy command)',
            )
        )
        autostop = None
    return HostWatch(
        notify=tuple(dict.fromkeys(fleet.notify + c(lambda: _urls(t), ()))),
        pull_every_s=c(lambda: _duration(t, "pull_every"), None),
        stop=stop,
        autostop_minutes=autostop,
        interruptible=c(lambda: _flag(t, "interruptible", False), False),
        on_preempt=c(lambda: _on_preempt(t, fleet.on_preempt), fleet.on_preempt),
        spare=c(lambda: _spare(t), ()) if "spare" in t.data else fleet.spare,
    )


def _on_preempt(t: Table, default: str) -> str:
    """``on_preempt``: what is done when an interruptible box is preempted."""
    value = t.data.get("on_preempt", default)
    if value not in ON_PREEMPT:
        raise t.error(
            "on_preempt",
            f"expected one of {', '.join(repr(v) for v in ON_PREEMPT)}, got {value!r} — "
            '"move" moves each interrupted cell with a verified checkpoint to a spare, '
            '"relaunch" restarts the queue on the same box once it answers',
        )
    return value


def _spare(t: Table) -> tuple[str, ...]:
    """``spare``: the hosts (of this file) a preempted box's cells may move to, in order."""
    if t.data.get("spare", []) == []:
        return ()
    return t.text_list("spare", [], example='["box4", "box5"]', what="host names")


def _urls(t: Table) -> tuple[str, ...]:
    """``notify``: Apprise URLs, each with a scheme (``ntfy://``, ``json://``, …)."""
    if t.data.get("notify", []) == []:  # absent, or written empty: no targets of its own
        return ()
    urls = t.text_list(
        "notify", [], example='["ntfy://ntfy.sh/my-fleet"]', what="notification URLs"
    )
    for url in urls:
        if "://" not in url:
            raise t.error(
                "notify",
                f"{url!r} is not a notification URL — write one Apprise URL per target, "
                'e.g. notify = ["ntfy://ntfy.sh/my-fleet", "json://localhost:8080/hook"]',
            )
    return urls


def _duration(t: Table, key: str) -> float | None:
    """A duration such as ``"15m"``, in seconds; None when absent."""
    value = t.data.get(key)
    if value is None:
        return None
    seconds = parse_duration(value) if isinstance(value, str) else None
    if seconds is None:
        meant = _meant_duration(value)
        said = " or ".join(f'"{m}"' for m in meant)  # as TOML strings are written
        fix = f" — did you mean {key} = {said}?" if meant else ""
        raise t.error(
            key, f'expected a duration such as {key} = "15m" (h, m, s), got {value!r}{fix}'
        )
    return seconds


# The unit words people type for h, m and s ("1min", "2 hours", "90sec").
_UNIT_WORDS = re.compile(
    r"(\d+(?:\.\d+)?)\s*(hours?|hrs?|minutes?|mins?|seconds?|secs?)", re.IGNORECASE
)


def _meant_duration(value: object) -> tuple[str, ...]:
    """What a duration typed otherwise may have meant, each one that reads as a duration:
    ``60`` → ``60s`` or ``60m`` (a bare number names no unit), ``"1min"`` → ``1m``,
    ``"2 hours"`` → ``2h``; () when there is no guess."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        guesses = [f"{value:g}s", f"{value:g}m"]
    elif isinstance(value, str):
        words = _UNIT_WORDS.sub(lambda m: m.group(1) + m.group(2)[0].lower(), value)
        guesses = [words.replace(" ", "")]
    else:
        return ()
    return tuple(g for g in guesses if g != value and parse_duration(g) is not None)


def _flag(t: Table, key: str, default: bool) -> bool:
    """A true/false key."""
    value = t.data.get(key, default)
    if not isinstance(value, bool):
        raise t.error(key, f"expected true or false, got {value!r}")
    return value
