"""KeyFooter: Textual's Footer that fits its width and is redrawn only when it must.

The stock Footer lays every key out in one row and lets the screen's edge cut the rest
(at 80 columns ``d Diagno▏``, and never ``? Help`` or ``q Quit``). This one keeps the
keys that matter most while they fit whole, and when some are left out the help key
reads ``? more``: the help screen lists every key.

The stock Footer also rebuilds itself on every focus change. Moving between host panes
does not change the keys (every pane has the same ones), but the rebuild re-lays out the
whole screen — with 64 panes that is most of the cost of a keypress.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

# Kept first when the row is short: what a user comes for, then the way to every other
# key (help) and the way out. Actions not named rank after these, in their own order.
PRIORITY = (
    "help",
    "quit_key",
    "open",
    "back",
    # A tab's own keys before the keys every tab has: they are listed on their tab only,
    # where they are what the user came for (hour s45a #10: at 80 columns the Queue tab
    # drew p v t and a refused L, and no S X R).
    "kill_vram_holder",  # shown on the GPU tab only
    "pick_cell",  # c: the Logs tab only (listed, it was drawn at no width: hour s45a #3)
    "queue_control('kill')",  # S X R: the Queue tab only; stopping paid work comes first
    "queue_control('stop')",
    "queue_control('retry')",
    "host_job('pull', 'pulls')",
    "host_job('verify', 'pulls')",
    "host_job('gate', 'teardown')",
    "host_key",
    "reconnect",
    "queue('launch')",
    "shell",  # after launch: its key moved (l to L), so L is shown first where it fits
    "queue('append')",
    "queue('logs')",
    "queue('diagnose')",
    "filter",
    "add_host",
)
HELP_ACTION = "help"
MORE = "more"  # the help key's label when some keys are left out


def key_width(key_display: str, description: str) -> int:
    """Cells a (non-compact) FooterKey takes: `` key `` then ``description ``."""
    if not description:
        return cell_len(key_display)
    return 1 + cell_len(key_display) + 1 + cell_len(description) + 1


def fit_keys(
    keys: list[tuple[str, str, str]], width: int
) -> tuple[list[tuple[str, str, str]], bool]:
    """The (action, key display, description) entries that fit in ``width`` cells, the
    most important first (``PRIORITY``), back in their original order; and whether
    any were left out (then the help entry's description is ``more``)."""

    def rank(item: tuple[int, tuple[str, str, str]]) -> tuple[int, int]:
        index, (action, _, _) = item
        return (PRIORITY.index(action) if action in PRIORITY else len(PRIORITY), index)

    if sum(key_width(shown, text) for _, shown, text in keys) <= width:
        return keys, False
    kept: list[tuple[int, tuple[str, str, str]]] = []
    used = 0
    for index, (action, shown, text) in sorted(enumerate(keys), key=rank):
        need = key_width(shown, MORE if action == HELP_ACTION else text)
        if used + need <= width:
            kept.append((index, (action, shown, text)))
            used += need
    kept.sort()
    return [
        (action, shown, MORE if action == HELP_ACTION else text)
        for _, (action, shown, text) in kept
    ], True


class KeyFooter(Footer):
    """A Footer that shows the most important keys that fit, whole, and ``? more`` when
    some do not; it skips rebuilds when neither the keys nor its width changed."""

    _shown: tuple[tuple[str, str, bool], ...] | None = None
    _width = 0

    def _signature(self, screen: Screen[object]) -> tuple[tuple[str, str, bool], ...]:
        return tuple(
            (binding.key, binding.description, enabled)
            for _, binding, enabled, _ in screen.active_bindings.values()
            if binding.show
        )

    def bindings_changed(self, screen: Screen[object]) -> None:
        """Rebuild only when the keys to show changed."""
        signature = self._signature(screen)
        if signature == self._shown and self._bindings_ready:
            return
        # ``_shown`` is set by the build itself (compose): Textual skips the rebuild while
        # the terminal has no focus, and the same keys told again on its return must
        # still rebuild (review s45 #4).
        super().bindings_changed(screen)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width and self._bindings_ready:
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        # Textual's own keys (its styling, clicks and tooltips), then only those that fit.
        children = list(super().compose())
        # What this build shows: a resize's build under another screen (a text box there
        # hides ? q +) differs from the last bindings_changed's, and the same keys told
        # again on the way back must rebuild it (hour s45a #4: ? and q gone for good).
        self._shown = self._signature(self.screen)
        self._width = self.size.width or self.app.size.width
        room = self._width
        keys: list[Widget] = []
        for child in children:
            if child.has_class("-command-palette"):
                # Docked right, after a one-cell rule, with one cell of padding.
                room -= key_width(getattr(child, "key_display", ""), _text(child)) + 2
            else:
                keys.append(child)
        entries = [
            (getattr(key, "action", ""), getattr(key, "key_display", ""), _text(key))
            for key in keys
        ]
        kept, _ = fit_keys(entries, room)
        labels = dict((action, text) for action, _, text in kept)
        for key in keys:
            action = getattr(key, "action", "")
            if action in labels:
                key.description = labels[action]  # type: ignore[attr-defined]
                yield key
        yield from (child for child in children if child.has_class("-command-palette"))


def _text(key: Widget) -> str:
    return str(getattr(key, "description", ""))
