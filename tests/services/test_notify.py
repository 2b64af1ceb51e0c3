"""Notifications through Apprise's real ``json://`` target to a local HTTP server: one
message per event key per target, ever (across a restart too), a failing target retried
with backoff and reported without delaying the working one, secrets as ``${VAR}``."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.waiting import wait_for
from support.webhook import Webhook, webhook

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.sinks.notify import RESUME_WINDOW_S, Notifier

SECRET = "s3cr3t-Token-4f9a"
OOM = WatchEvent(
    "alert", "box1", "alert:box1:oom_kill:1700000000", "OOM kill", "cgroup oom_kill rose 0 → 1",
    "critical",
)  # fmt: skip
DONE = WatchEvent("queue_done", "box1", "queue_done:box1:1700000100", "queue finished", "12 ok")


class Backoff:
    """The Notifier's sleep: records each wait and holds it until the test releases."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.gate = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await self.gate.wait()


def fleet_of(fleet_urls: list[str], host_urls: list[str]) -> Fleet:
    """A fleet file, read by the real parser, whose box1 has these targets."""
    text = f"[fleet]\nnotify = {json.dumps(fleet_urls)}\n" if fleet_urls else ""
    text += '[[hosts]]\nname = "box1"\nssh = "root@x:22"\npull = ["/w"]\n'
    text += f"notify = {json.dumps(host_urls)}\n" if host_urls else ""
    return parse_fleet(Path("/f/hosts.toml"), text, ["generic-ssh"])


@pytest.fixture
def hook() -> Iterator[Webhook]:
    with webhook() as server:
        yield server


async def test_one_message_per_key_and_a_failing_target_does_not_delay_the_other(
    hook: Webhook, tmp_path: Path
) -> None:
    hook.failing.add("/bad")
    fleet = fleet_of([hook.url("/ok")], [hook.url("/bad")])
    backoff = Backoff()
    said: list[str] = []  # watch's console, as each problem happens (hour s18a #3)
    notifier = Notifier(fleet, tmp_path / "sent.jsonl", sleep=backoff, report=said.append)

    await notifier.on_event(OOM)
    # The failing target sits in its first backoff while the working one is told.
    await wait_for(lambda: hook.at("/ok") and backoff.waits, what="one sent, one backing off")
    (body,) = hook.at("/ok")
    assert body["title"] == "[rgt-tui] box1: OOM kill"
    assert body["message"] == "cgroup oom_kill rose 0 → 1\n\nopen: rgt-tui (or rgt-tui status box1)"
    assert body["type"] == "failure"  # critical → Apprise's failure
    assert hook.tries("/bad") == 1 and backoff.waits == [1.0]

    await notifier.on_event(OOM)  # the same key again: nothing new, no second retry loop
    await notifier.on_event(DONE)
    await wait_for(lambda: len(hook.at("/ok")) == 2, what="the second event")
    assert hook.at("/ok")[1]["type"] == "info"

    backoff.gate.set()
    await notifier.drain()
    assert hook.tries("/bad") == 8  # two events, four tries each
    # Each event's retries wait 1, 4, 16 s; the two loops run side by side, so how their
    # waits interleave is the scheduler's (seen 1, 1, 4, 16, 4, 16 under load in CI).
    assert sorted(backoff.waits) == [1.0, 1.0, 4.0, 4.0, 16.0, 16.0]
    assert len(hook.at("/ok")) == 2
    problems = "\n".join(notifier.failures)
    assert "json target 2 of box1: 'OOM kill' not delivered after 4 tries" in problems
    assert "json target 2 of box1: 'queue finished' not delivered after 4 tries" in problems
    assert said == notifier.failures  # each said once, when it happened
    # A target that gave up is not hammered again by the same process.
    await notifier.on_event(OOM)
    await notifier.drain()
    assert hook.tries("/bad") == 8


async def test_a_restart_repeats_nothing_and_retries_what_failed(
    hook: Webhook, tmp_path: Path
) -> None:
    hook.failing.add("/bad")
    fleet = fleet_of([hook.url("/ok")], [hook.url("/bad")])
    log = tmp_path / "journal" / "sent.jsonl"
    first = Notifier(fleet, log, retry_delays=(), clock=lambda: 1000.0)
    await first.on_event(OOM)
    await first.drain()
    assert len(hook.at("/ok")) == 1 and hook.tries("/bad") == 1
    assert first.failures

    hook.failing.clear()  # the failing target comes back
    second = Notifier(fleet, log, retry_delays=(), clock=lambda: 2000.0)
    assert await second.resume() == 1  # only the target that never got it
    await second.on_event(OOM)
    await second.drain()
    assert len(hook.at("/ok")) == 1 and len(hook.at("/bad")) == 1
    assert not second.failures
    # Sent late, it says from when (hour s34 CLI #6: a burst at start read as news).
    at = time.strftime("%Y-%m-%d %H:%M", time.localtime(1000.0))
    (late,) = hook.at("/bad")
    assert late["message"].startswith(f"(delayed: this is from {at}, not delivered then)\n")
    assert not hook.at("/ok")[0]["message"].startswith("(delayed")

    third = Notifier(fleet, log, retry_delays=(), clock=lambda: 3000.0)
    await third.on_event(OOM)
    assert await third.resume() == 0
    await third.drain()
    assert len(hook.at("/ok")) == 1 and len(hook.at("/bad")) == 1


async def test_a_restart_lets_a_day_old_undelivered_event_go(hook: Webhook, tmp_path: Path) -> None:
    hook.failing.add("/bad")
    fleet = fleet_of([], [hook.url("/bad")])
    log = tmp_path / "sent.jsonl"
    first = Notifier(fleet, log, retry_delays=(), clock=lambda: 1000.0)
    await first.on_event(OOM)
    await first.drain()
    hook.failing.clear()
    later = Notifier(fleet, log, retry_delays=(), clock=lambda: 1001.0 + RESUME_WINDOW_S)
    assert await later.resume() == 0
    assert hook.at("/bad") == []


async def test_secrets_come_from_the_environment_and_go_nowhere_else(
    hook: Webhook,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("RGT_HOOK_TOKEN", SECRET)
    monkeypatch.delenv("RGT_NOT_SET", raising=False)
    hook.failing.add(f"/bad/{SECRET}")
    fleet = fleet_of(
        [hook.url("/ok/${RGT_HOOK_TOKEN}")],
        [hook.url("/bad/${RGT_HOOK_TOKEN}"), hook.url("/blank/${RGT_NOT_SET}"), "bogus://x"],
    )
    # Whatever a user's logging setup would show: Apprise logs URLs at DEBUG.
    caplog.set_level(logging.DEBUG)
    log = tmp_path / "sent.jsonl"
    notifier = Notifier(fleet, log, retry_delays=(0.0,))
    await notifier.on_event(OOM)
    await notifier.drain()

    assert len(hook.at(f"/ok/{SECRET}")) == 1  # the server saw the expanded path
    assert hook.tries(f"/bad/{SECRET}") == 2
    assert not [p for p, _ in hook.received + hook.refused if p.startswith("/blank")]
    problems = "\n".join(notifier.failures)
    assert "notify target 3 of box1 needs $RGT_NOT_SET (not set)" in problems
    assert "json target 2 of box1: 'OOM kill' not delivered after 2 tries" in problems
    assert "bogus target 4 of box1: Apprise cannot use this URL" in problems
    out, err = capsys.readouterr()
    for text in (log.read_text(), problems, caplog.text, out, err):
        assert SECRET not in text
    # The sent log names the target it recorded, never its URL.
    assert "json target 1 of box1" in log.read_text() and "/ok/" not in log.read_text()


async def test_a_torn_last_line_and_an_unknown_host_are_survived(
    hook: Webhook, tmp_path: Path
) -> None:
    fleet = fleet_of([hook.url("/ok")], [])
    log = tmp_path / "sent.jsonl"
    first = Notifier(fleet, log, retry_delays=())
    await first.on_event(OOM)
    await first.drain()
    with log.open("a") as f:
        f.write('{"key": "half')  # a crash mid-write
    second = Notifier(fleet, log, retry_delays=())
    await second.on_event(OOM)
    await second.on_event(WatchEvent("reboot", "gone", "reboot:gone:b2", "rebooted", ""))
    await second.on_event(DONE)
    await second.drain()
    # A host no longer in the file (its removal told by watch) goes to the fleet's
    # targets (a41c206); before, it raised KeyError and was dropped with a console line.
    assert sorted(b["title"] for b in hook.at("/ok")) == [
        "[rgt-tui] box1: OOM kill",
        "[rgt-tui] box1: queue finished",
        "[rgt-tui] gone: rebooted",
    ]
    assert second.failures == []


async def test_two_senders_on_one_log_tell_a_target_once(hook: Webhook, tmp_path: Path) -> None:
    """The TUI and ``watch`` open at once (tui_notify on): the second sees the first's
    line in the shared log before it sends."""
    fleet = fleet_of([hook.url("/ok")], [])
    log = tmp_path / "sent.jsonl"
    tui, watch = Notifier(fleet, log, retry_delays=()), Notifier(fleet, log, retry_delays=())
    await watch.on_event(OOM)
    await watch.drain()
    await tui.on_event(OOM)
    await tui.drain()
    assert len(hook.at("/ok")) == 1


async def test_a_title_names_its_host_once_and_its_severity_nowhere(
    hook: Webhook, tmp_path: Path
) -> None:
    """ux-b #14: not "box1: box1 stopped: …", not "gpu.throttle GPU 1 (warning)" (the
    notification's type says warning)."""
    from rgt_tui.domain.health import Alert
    from rgt_tui.services.watch.events import HostState
    from rgt_tui.services.watch.tracker import HostMemory, derive

    throttle = Alert("gpu.throttle", "warning", "GPU 1 throttles: HW slowdown", "U23", "GPU 1")
    state = HostState(None, (throttle,), "connected", None, None, None, None, 1700000000.0)
    (alert,) = derive("box1", HostMemory(), state, reminder_s=0)[1]
    stopped = WatchEvent("stopped", "box1", "stopped:box1:1", "box1 stopped: queue done", "b")
    notifier = Notifier(fleet_of([hook.url("/ok")], []), tmp_path / "sent.jsonl")
    await notifier.on_event(alert)
    await notifier.on_event(stopped)
    await notifier.drain()
    titles = sorted(b["title"] for b in hook.at("/ok"))
    assert titles == ["[rgt-tui] box1 stopped: queue done", "[rgt-tui] box1: gpu.throttle GPU 1"]
    assert [b["type"] for b in hook.at("/ok") if "throttle" in b["title"]] == ["warning"]


async def test_a_target_that_cannot_be_sent_to_is_said_at_start_and_on_change(
    hook: Webhook, tmp_path: Path
) -> None:
    """Hour s23a #9: a mistyped scheme and an unset ${VAR} surfaced only when an event was
    sent, possibly at 3 am; they are said when watch starts and when the file changes,
    never with the URL (a token may be in it)."""
    bad = ["jsn://127.0.0.1:1/box3", f"json://${{NOPE_TOKEN_X}}@127.0.0.1:1/{SECRET}"]
    said: list[str] = []
    notifier = Notifier(
        fleet_of([hook.url("/ok")], bad), tmp_path / "sent.jsonl", environ={}, report=said.append
    )
    assert said == [
        "/f/hosts.toml: box1's jsn target 2: Apprise cannot use this URL — a mistyped URL, or a "
        "service whose package is missing; check it with: apprise --dry-run -vv 'URL'",
        "/f/hosts.toml: box1's json target 3 needs $NOPE_TOKEN_X, which is not set in watch's "
        "environment — export it before starting watch",
    ], said
    assert SECRET not in " ".join(said)
    said.clear()
    notifier.on_fleet(fleet_of([hook.url("/ok")], []))
    assert said == []  # fixed: nothing to say
    await notifier.aclose()


async def test_a_removed_hosts_event_goes_to_the_fleets_targets(
    hook: Webhook, tmp_path: Path
) -> None:
    """watch tells a host removed while at work (hour s23a #8): that host is no longer in
    the file, and its event went nowhere (a KeyError) instead of to the fleet's targets."""
    notifier = Notifier(fleet_of([hook.url("/ok")], []), tmp_path / "sent.jsonl")
    removed = WatchEvent(
        "removed", "gone", "removed:gone:1700000200", "gone removed from the fleet file while at work",
        "nothing watches or pulls it now", "warning",
    )  # fmt: skip
    await notifier.on_event(removed)
    await notifier.drain()
    (body,) = hook.at("/ok")
    assert body["title"] == "[rgt-tui] gone removed from the fleet file while at work"
    assert notifier.failures == []


async def test_a_fleet_target_that_cannot_be_used_is_said_once_not_per_host_or_event(
    hook: Webhook, tmp_path: Path
) -> None:
    """Hour s34 CLI #8: one mistyped [fleet] notify URL was said once per host at start,
    then again at every event for every host."""
    text = f'[fleet]\nnotify = ["{hook.url("/ok")}", "jsn://127.0.0.1:1/x"]\n'
    for name in ("box1", "box2", "box3"):
        text += f'[[hosts]]\nname = "{name}"\nssh = "root@x:22"\npull = ["/w"]\n'
    fleet = parse_fleet(Path("/f/hosts.toml"), text, ["generic-ssh"])
    said: list[str] = []
    notifier = Notifier(fleet, tmp_path / "sent.jsonl", environ={}, report=said.append)
    assert said == [
        "/f/hosts.toml: [fleet] notify's jsn target 2: Apprise cannot use this URL — a "
        "mistyped URL, or a service whose package is missing; check it with: apprise "
        "--dry-run -vv 'URL'"
    ], said
    for n, host in enumerate(("box1", "box2", "box1"), 1):
        await notifier.on_event(WatchEvent("alert", host, f"k{n}", f"{host}: t", "b"))
    await notifier.drain()
    assert len(hook.at("/ok")) == 3  # the sound target got every event
    assert len(said) == 1, said  # and the unusable one was not said again
    notifier.on_fleet(fleet)  # the file applied again: said again, once
    assert len(said) == 2 and said[1] == said[0]
    await notifier.aclose()


async def test_a_host_removed_from_the_file_is_told_to_its_own_targets(
    hook: Webhook, tmp_path: Path
) -> None:
    """s37 fleet hour #4: box1 had targets of its own and none in [fleet]; its block
    deleted, "box1 was removed … still bills" went to the new file's targets: no one."""
    notifier = Notifier(fleet_of([], [hook.url("/box1only")]), tmp_path / "sent.jsonl")
    others = '[[hosts]]\nname = "box2"\nssh = "root@y:22"\npull = ["/w"]\n'
    notifier.on_fleet(parse_fleet(Path("/f/hosts.toml"), others, ["generic-ssh"]))
    removed = WatchEvent("removed", "box1", "removed:box1:1", "box1 removed", "still bills")
    await notifier.on_event(removed)
    await notifier.drain()
    (body,) = hook.at("/box1only")
    assert body["title"] == "[rgt-tui] box1 removed"


async def test_a_send_cut_short_by_the_end_of_watch_is_said_and_counts_as_a_failure(
    hook: Webhook, tmp_path: Path
) -> None:
    """h562 #5: a target down at the end of `watch --once`: its retries outlast the
    shutdown's grace, which cancelled them unsaid; --once exited 0 and cron saw success."""
    hook.failing.add("/bad")
    backoff = Backoff()  # held: the retries are still waiting when watch ends
    said: list[str] = []
    notifier = Notifier(
        fleet_of([], [hook.url("/bad")]), tmp_path / "sent.jsonl", sleep=backoff,
        report=said.append,
    )  # fmt: skip
    await notifier.on_event(OOM)
    await wait_for(lambda: backoff.waits, what="the first retry's wait")
    await notifier.aclose(0.01)
    assert said == [
        "json target 1 of box1: 'OOM kill' not delivered before watch ended (the target was "
        "slow or down); it is retried when watch next starts"
    ]
    assert notifier.failures == said  # what --once's exit status reads
