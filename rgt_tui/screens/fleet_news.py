"""The fleet file's news on screen: the App's side of a live ``hosts.toml``.

The runtime (``services.runtime``) reads the file again when it changes and runs what it
says (monitors, polls and connections started, stopped or restarted); here the screens
follow: panes added and removed, a host's new settings handed to its pane and detail
screen, and a mistake shown once, with its file and line, on the fleet header's notice
line and in the notices list (``n``) until a reading without it is applied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rgt_tui.controllers.notices import record
from rgt_tui.screens.host_detail import HostDetailScreen
from rgt_tui.services.runtime.events import FleetFileRejected, FleetReloaded
from rgt_tui.services.runtime.monitors import health_thresholds

NOTICE_KEY = "fleet file"  # the notices list keeps one latest per key: never twice in a row


def show_fleet_news(app: Any, event: FleetReloaded | FleetFileRejected) -> None:
    """Follow ``event`` on ``app``'s screens (``app`` is the ``RgtApp``)."""
    screen = app.fleet_screen
    if isinstance(event, FleetFileRejected):
        line = f"{event.error} — not applied; the fleet runs on its last good settings"
        # What happened first, then where (the file's name: its folder would push the
        # line and the mistake past an 80-column header); the line is cut at its end, so
        # that the whole is under n is said before the mistake (a user's hour read a cut
        # "TOML syntax error: Ex…" with no way to the rest).
        where = str(event.error).replace(event.error.file, Path(event.error.file).name)
        problem = f"fleet file not applied (n: all): {where} (the last good settings run)"
        screen.show_problem(problem)
        record(app, NOTICE_KEY, "fleet file", line, "error")
        _show_on_details(app, problem)  # y and P there run on the last good settings too
        return
    fleet, changes = event.fleet, event.changes
    if app.fleet.is_default and not fleet.is_default:
        screen.fleet_file_named()  # "No fleet file: showing this machine" no longer holds
    app.fleet = fleet
    app.jobs.fleet_changed(fleet)
    if app.tui_notify is not None:
        app.tui_notify.fleet_changed(fleet)
    if event.fixed:
        screen.show_problem("")
        _show_on_details(app, "")
        record(app, NOTICE_KEY, "fleet file", f"fixed: {fleet.path} applied")
    if changes.empty:
        return
    _tell_left(app, changes.left)
    app.thresholds = thresholds = health_thresholds(fleet)
    left = {name for name, _ in changes.left}
    for name in changes.removed:
        # A screen of a host that is no more (its detail, a dialog), anywhere in the
        # stack: a detail under the help screen stayed, frozen (h542 #1).
        if any(_of_host(s) == name for s in app.screen_stack):
            app.back_to_fleet()
            if name not in left:  # its own toast says it already
                app.notify(
                    f"{name} was removed from the fleet file: its screens closed",
                    title=f"{name} removed",
                )
        screen.remove_host(fleet, name)
    for host in changes.added:
        screen.add_host(fleet, host)
        # A host back under a name it had: the verified checkpoint the spot controller
        # found for it still holds (the records are per name), and it is handed again
        # only when they change. (A preemption is not: the runtime forgot the host.)
        if (found := app.spot.found.get(host.name)) is not None:
            screen.checkpoint_verified(host.name, *found)
    edited = {h.name for h in changes.edited}
    for host in fleet.hosts:
        if host.name in edited or changes.settings:
            screen.replace_host(fleet, host, thresholds)
            for detail in app.screen_stack:
                if isinstance(detail, HostDetailScreen) and detail.host.name == host.name:
                    detail.host = host  # its tabs draw with the new settings
    record(app, NOTICE_KEY, "fleet file", f"{fleet.path}: {changes.summary()}")


MAX_LEFT_TOASTS = 2  # more removed hosts still at work: one toast names them all


def _tell_left(app: Any, left: tuple[tuple[str, str], ...]) -> None:
    """A removed host still at work (or not torn down) is a warning toast, listed under
    n too; many removed at once are one toast, each still listed under n with its own
    words (h542 #2: twenty removals stacked twenty 30-second toasts)."""
    if len(left) <= MAX_LEFT_TOASTS:
        for name, words in left:
            # Listed under n by the toast itself: recorded as well, twice (s23a #8).
            app.notify(words, title=f"{name} removed", severity="warning", timeout=30)
        return
    for name, words in left:
        record(app, name, f"{name} removed", words, "warning")
    names = ", ".join(name for name, _ in left[:5]) + (", …" if len(left) > 5 else "")
    app.notify(
        f"{len(left)} hosts were removed from the fleet file while a cell runs there or "
        f"their box is not recorded as torn down ({names}): nothing watches or pulls them "
        "now, and a box that still runs still bills — n lists each",
        title="hosts removed",
        severity="warning",
        timeout=30,
    )


def _of_host(screen: Any) -> str | None:
    return getattr(getattr(screen, "host", None), "name", None)


def _show_on_details(app: Any, problem: str) -> None:
    """Every open detail screen says the fleet file is not applied (``""``: it is again)."""
    for screen in app.screen_stack:
        if isinstance(screen, HostDetailScreen):
            screen.show_fleet_problem(problem)
