"""KeyFooter: Textual's Footer, redrawn only when the keys it shows change.

The stock Footer rebuilds itself on every focus change. Moving between host panes does
not change the keys (every pane has the same ones), but the rebuild re-lays out the
whole screen — with 64 panes that is most of the cost of a keypress.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """A Footer that skips rebuilds when the shown bindings are the same as before."""

    _shown: tuple[tuple[str, str, bool], ...] | None = None

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
        self._shown = signature
        super().bindings_changed(screen)
