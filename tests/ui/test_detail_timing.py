"""The detail screen survives its own timing: samples, job states and queue views arrive
while it is pushed, composed, switched to another tab, popped, and while the app closes,
on an event loop kept busy.

A handler that assumes a screen's children exist raises ``NoMatches`` only when a message
lands in a short window: between a screen entering the stack and its tabs being mounted,
after a pop (a callback queued before it runs after it), or while the app closing removes
the widgets of a screen still in the stack. A quiet loop rarely opens those windows; these
tests hold the loop in short busy stretches, as a loaded machine does, and burst messages
into them. ``run_test`` re-raises any exception a handler raised, so finishing it is the
check that the app stayed up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from support.pilot import make_app, publish_jobs, screen_text, wait_for
from support.samples import FROZEN, HOSTS, agent_sample, healthy_update, make_update

from rgt_tui.domain.queue_state import QueueView
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.screens.queue_keys import QueueViewed
from rgt_tui.screens.tabs import DETAIL_TABS

HOST = HOSTS[0]


@asynccontextmanager
async def busy_loop() -> AsyncIterator[None]:
    """Hold the event loop for a few milliseconds at a time while the body runs."""
    stop = asyncio.Event()

    async def hog() -> None:
        while not stop.is_set():
            # Blocking on purpose: the loop can do nothing else meanwhile.
            time.sleep(0.003)  # noqa: ASYNC251
            await asyncio.sleep(0)

    task = asyncio.create_task(hog())
    try:
        yield
    finally:
        stop.set()
        await task


def queue_view(n: int) -> QueueView:
    """An empty queue as the poller would hand it on (enough for the Queue tab)."""
    return QueueView(HOST, "idle", (), None, "boot", int(FROZEN) + n, None)


def burst(app, n: int) -> None:  # type: ignore[no-untyped-def]
    """Five samples, a job state and a queue view, all posted at once."""
    for k in range(5):
        app.post_message(HostUpdated(healthy_update(seq=n * 10 + k, t=FROZEN + n + k / 10)))
    publish_jobs(app, HOST, running=None)
    app.post_message(QueueViewed(HOST, queue_view(n)))


async def test_messages_while_detail_screens_are_pushed_and_popped_keep_the_app_up(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path)
    tabs = [cls.TAB_ID for cls in DETAIL_TABS if cls.TAB_ID not in ("logs", "teardown")]
    async with app.run_test(size=(120, 40)) as pilot:
        async with busy_loop():
            for n in range(24):
                app.open_host(HOST, tab=tabs[n % len(tabs)])  # no wait: it composes now
                burst(app, n)
                await asyncio.sleep(0)
                if n % 3 == 0:
                    await pilot.pause()  # sometimes the screen is up before the pop
                if isinstance(app.screen, HostDetailScreen):
                    app.pop_screen()
                burst(app, n)
        # Still up and still drawing: the last sample reaches a detail screen opened now.
        app.open_host(HOST)
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen), pilot=pilot)
        last = agent_sample(HOST, seq=999, t=FROZEN + 999, hostname="the-last-sample")
        app.post_message(HostUpdated(make_update(HOST, last)))
        await wait_for(
            lambda: not app.is_running or "hostname the-last-sample" in screen_text(app),
            pilot=pilot,
        )
        assert app.is_running


async def test_app_closing_with_a_detail_screen_under_a_stream_of_samples(
    tmp_path: Path,
) -> None:
    # The app closes while samples stream in and the screen's clock ticks: closing removes
    # the screen's widgets while it is still in the stack.
    for round_ in range(4):
        app = make_app(tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            app.open_host(HOST)
            screen = app.screen
            assert isinstance(screen, HostDetailScreen)
            # Up and drawn first: a screen still composing when the app closes is another
            # matter (Textual's own Select, in the Logs tab, then fails its own mount).
            await wait_for(lambda s=screen: s.active_tab == "overview", pilot=pilot)
            async with busy_loop():
                for n in range(round_ * 3):
                    burst(app, n)
                    await asyncio.sleep(0)
                app.exit()
                burst(app, 99)
        assert app.return_code in (0, None)


async def test_a_job_tab_asked_for_before_the_screen_is_composed_is_shown(
    tmp_path: Path,
) -> None:
    # A job key's tab (p: Pulls) asked for in the same turn as the push, before compose:
    # kept and shown once the screen is up, with the state the job published meanwhile.
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = HostDetailScreen(app.fleet.host(HOST))
        app.push_screen(screen)
        screen.show_job_tab("pulls")
        screen.jobs_changed(app.jobs.state(HOST))
        assert screen.active_tab == ""  # nothing to show it on yet
        await wait_for(lambda: screen.active_tab == "pulls", pilot=pilot)
        assert screen.jobs is not None
