"""The App under the Pilot: building it, reading its screen, feeding it samples.

``wait_for(..., pilot=pilot)`` (from ``support.waiting``, re-exported here) lets the App
run between polls and shows the screen when it times out.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

from rgt_tui.app import RgtApp, RgtCommands
from rgt_tui.domain.config import Fleet
from rgt_tui.messages import HostUpdated
from rgt_tui.screens.job_keys import JobsChanged
from support.samples import clock, three_updates, write_fleet
from support.waiting import wait_for

__all__ = [
    "SIZE",
    "SNAPSHOT_SIZE",
    "click",
    "make_app",
    "notes",
    "palette_titles",
    "post_three",
    "publish_jobs",
    "screen_text",
    "snapshot_app",
    "text_of",
    "wait_for",
]

SIZE = (160, 50)  # room for every tab of the detail screen
SNAPSHOT_SIZE = (140, 34)  # the SVG snapshots' terminal


def make_app(
    tmp_path: Path,
    monitors: dict[str, Any] | None = None,
    fleet: Fleet | None = None,
    **kwargs: Any,
) -> RgtApp:
    """The App on ``fleet`` (default: the three-host fleet file) at the frozen clock, its
    settings under ``tmp_path``; monitors run only when given."""
    options: dict[str, Any] = {
        "monitors": monitors,
        "start_monitors": monitors is not None,
        "clock": clock,
        "config_dir": tmp_path / "config",
    }
    return RgtApp(fleet or write_fleet(tmp_path), **(options | kwargs))


def snapshot_app(tmp_path: Path, theme: str) -> RgtApp:
    """An app with no monitors; the test posts the updates. Nothing blinks."""
    app = make_app(tmp_path, theme=theme)
    app.fleet_screen.filter_input.cursor_blink = False
    return app


async def post_three(pilot: Any) -> None:
    """Feed the three hosts and let the screen settle."""
    for update in three_updates():
        pilot.app.post_message(HostUpdated(update))
    await pilot.pause()
    await pilot.pause()
    # First connections raise the danger-clock toasts (tested in test_app_teardown);
    # these snapshots are about the panes, which the toasts would cover.
    pilot.app.clear_notifications()
    await pilot.pause()


# The two private Textual attributes the tests read, here only: Textual has no public
# plain-text export of the screen (export_screenshot gives SVG) and no public list of the
# notifications on screen now (App.notify posts a Notify message, but what has since
# expired or been cleared is only in App._notifications).


def screen_text(app: RgtApp) -> str:
    """The current screen as plain text, one line per row."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def shown_notifications(app: RgtApp) -> list[Any]:
    """The notifications on screen now (Textual's Notification objects)."""
    return list(app._notifications)


def text_of(widget: Static) -> str:
    """The plain text a Static shows."""
    return str(getattr(widget.visual, "plain", widget.visual))


def notes(app: RgtApp) -> list[str]:
    """Every notification shown so far, as "title: message" (Textual keeps no public list)."""
    return [f"{n.title}: {n.message}" for n in shown_notifications(app)]


async def click(pilot: Any, target: Widget | str) -> None:
    """Click ``target`` (a widget, or a selector on the screen) as a person would: once it
    is shown, enabled, out of its own click animation (Textual's Button ignores a click
    then) and laid out where it stays. ``pilot.click`` reads the widget's region before
    it lets the App run, so a click just after a change that moves it (a plan shown in a
    dialog, a button displayed) lands where the widget was: loaded CI runs lost a retry
    and an acknowledgement so. Fails, naming it, when the click did not land on it."""
    widget = pilot.app.screen.query_one(target) if isinstance(target, str) else target
    last: list[Region] = []

    def settled() -> bool:
        ready = widget.display and not widget.disabled and not widget.has_class("-active")
        region = widget.region
        steady = bool(last) and last[-1] == region and region.area > 0
        last.append(region)
        return ready and steady

    name = target if isinstance(target, str) else repr(widget)
    await wait_for(settled, what=f"{name} to settle where it is clicked", pilot=pilot)
    assert await pilot.click(widget), f"the click missed {name}"


async def palette_titles(app: RgtApp) -> list[str]:
    """What the command palette offers before anything is typed (its discovery hits)."""
    return [str(hit.text or hit.display) async for hit in RgtCommands(app.screen).discover()]


def publish_jobs(app: RgtApp, host: str, **changes: Any) -> None:
    """Stand in for the job runner: ``host``'s jobs state becomes ``changes`` (a pull in
    flight, a finished teardown...) and is published as the runner publishes it."""
    state = replace(app.jobs.state(host), **changes)
    app.jobs.states[host] = state
    app.post_message(JobsChanged(state))


async def open_logs_tab(app: RgtApp, pilot: Any) -> Any:
    """``f`` on the selected host: its detail screen on the Logs tab, once it is there;
    returns the tab (a ``LogsTab``)."""
    from rgt_tui.screens.host_detail import HostDetailScreen

    await pilot.press("f")
    detail: Any = await wait_for(
        lambda: (
            isinstance(app.screen, HostDetailScreen)
            and app.screen.active_tab == "logs"
            and app.screen
        ),
        what="the logs tab",
        pilot=pilot,
    )
    return detail.tabs["logs"]


async def open_queue_body(app: RgtApp, pilot: Any, host: str = "box1") -> Any:
    """Open ``host``'s Queue tab; a function that reads its body's text as it is now."""
    from rgt_tui.screens.host_detail import HostDetailScreen

    app.open_host(host, "queue")
    screen = await wait_for(
        lambda: app.screen if isinstance(app.screen, HostDetailScreen) else None, pilot=pilot
    )

    def body() -> str:
        found = screen.query(".queue-body").results(Static)
        return "\n".join(str(getattr(b.visual, "plain", b.visual)) for b in found)

    return body
