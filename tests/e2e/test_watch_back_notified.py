"""A box ``watch`` told as silent is told again when it answers (ux-g 10): a real loopback
box stopped and started again, a real Watcher with the real Notifier posting through
Apprise's ``json://`` target to a local HTTP catcher. One "silent" post, one "answering
again" post, and a new watch on the same journal repeats neither."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from support.waiting import wait_for
from support.webhook import Webhook, webhook

from rgt_tui.domain.config import Fleet
from rgt_tui.paths import journal_dir
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.watch.sinks.notify import Notifier
from rgt_tui.services.watch.store import sent_log_path
from rgt_tui.services.watch.watcher import Watcher
from rgt_tui.transport.backoff import Backoff

HOOK = "/phone"


class Clock:
    """This machine's clock, moved on only by the test."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


@contextlib.asynccontextmanager
async def watching(fleet: Fleet, clock: Clock) -> AsyncIterator[Watcher]:
    """``rgt-tui watch``'s Watcher and Notifier over ``fleet``; stopped after."""
    notifier = Notifier(fleet, sent_log_path(journal_dir(fleet.path)), clock=clock)
    watcher = Watcher(
        fleet, sinks=[notifier], drivers=False, clock=clock, backoff=Backoff(base=0.05, cap=0.2)
    )
    task = asyncio.create_task(watcher.run())
    try:
        yield watcher
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await notifier.aclose(grace=30)


def titles(hook: Webhook) -> list[str]:
    return [body["title"] for body in hook.at(HOOK)]


async def test_a_box_told_silent_is_told_back_once(make_loopback_fleet) -> None:
    loopback = await make_loopback_fleet(1)
    box = loopback.box("box1")
    clock = Clock()
    with webhook() as hook:
        hosts = loopback.hosts_file
        head = f'[fleet]\npoll_seconds = 0.2\nnotify = ["{hook.url(HOOK)}"]\n\n'
        hosts.write_text(head + hosts.read_text())
        fleet = load_fleet(hosts)
        async with watching(fleet, clock) as watcher:
            await wait_for(lambda: (u := watcher.latest.get("box1")) and u.snapshot, 60)
            await box.stop()
            await wait_for(
                lambda: watcher.latest["box1"].connection.status == "reconnecting", 60, "the drop"
            )
            clock.t += 301  # past the 5-minute grace
            await watcher.check_now()
            await wait_for(lambda: titles(hook), 30, "the silent post")
            assert titles(hook) == ["[rgt-tui] box1: silent for 5m01s"]

            await box.start()
            await wait_for(
                lambda: len(titles(hook)) == 2, 60, "the back post", show=lambda: str(titles(hook))
            )
            back = hook.at(HOOK)[1]
            assert back["title"] == "[rgt-tui] box1: answering again after 5m01s silent"
            # No queue on box1: not sent to a `queue show` that says "not deployed" (h582 #8).
            assert "It did not answer from" in back["message"]
            assert "queue show" not in back["message"], back["message"]
            assert back["type"] == "info", back
            await watcher.check_now()

        # A new watch, the box answering: neither is told again.
        async with watching(fleet, clock) as watcher:
            await wait_for(lambda: (u := watcher.latest.get("box1")) and u.snapshot, 60)
            await watcher.check_now()
        assert len(titles(hook)) == 2
