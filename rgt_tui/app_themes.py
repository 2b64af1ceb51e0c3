"""The App's themes (posting's pattern): rgt-tui's bundled themes and the user's, loaded
from TOML files and registered at start, every load failure told in one notification;
the choice remembered between runs, and theme variables for Textual's own themes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual import work
from textual.app import App

from rgt_tui import themes


class ThemedApp(App[int]):
    """An App whose themes are rgt-tui's (the RgtApp's base)."""

    config_dir: Path | None = None

    def load_themes(self, theme: str | None, theme_dirs: Iterable[Path] | None) -> None:
        """Register the theme files of ``theme_dirs`` (default: bundled, then the user's)
        and pick ``theme``, else the saved choice, else the default."""
        config_dir = self.config_dir
        dirs = (
            list(theme_dirs)
            if theme_dirs is not None
            else [
                themes.bundled_themes_dir(),
                themes.user_themes_dir(config_dir),
            ]
        )
        loaded, self.theme_errors = themes.load_themes(dirs)
        self.own_theme_names = [t.name for t in loaded]
        for t in loaded:
            self.register_theme(t)
        self.theme = self._initial_theme(theme)

    def _initial_theme(self, requested: str | None) -> str:
        if requested:
            if requested in self.available_themes:
                return requested
            # The command line refuses this before the app starts; an app built directly
            # says the same, rgt-tui's themes apart from Textual's.
            own = [("rgt-tui's own (bundled and yours)", self.own_theme_names)]
            builtin = themes.builtin_theme_names(self.own_theme_names)
            message, fix = themes.unknown_theme_message(requested, own, builtin)
            self.theme_errors.append(f"{message}\n  {fix}")
        saved = themes.saved_theme(self.config_dir)
        for name in (saved, themes.DEFAULT_THEME, "textual-dark"):
            if name and name in self.available_themes:
                return name
        return self.theme

    def theme_names(self) -> list[str]:
        """rgt-tui's themes (bundled and the user's) first, then Textual's built-in ones."""
        rest = sorted(n for n in self.available_themes if n not in self.own_theme_names)
        return [*self.own_theme_names, *rest]

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # A theme without rgt-tui's variables (Textual's own, a user's) still gets gauges,
        # drawn in its own status colours.
        theme = self.current_theme
        colors = theme.to_color_system().generate()
        shade = "panel-lighten-2" if theme.dark else "panel-darken-2"
        fallback = colors.get("foreground", "ansi_default")
        return {
            "gauge-ok": colors.get("success", fallback),
            "gauge-warn": colors.get("warning", fallback),
            "gauge-crit": colors.get("error", fallback),
            "gauge-empty": colors.get(shade, colors.get("panel", fallback)),
        }

    def show_theme_errors(self) -> None:
        """Every theme file skipped (and an unknown theme asked for), in one notification."""
        if self.theme_errors:
            self.notify(
                "\n".join(self.theme_errors),
                title="Theme files skipped",
                severity="warning",
                timeout=15,
            )

    def switch_theme(self, name: str) -> None:
        """Apply theme ``name`` and remember it for the next start."""
        if name not in self.available_themes:
            self.notify(f"No theme named {name!r}", severity="error")
            return
        self.theme = name
        self._save_theme(name)

    @work(thread=True, exclusive=True, group="settings", exit_on_error=False)
    def _save_theme(self, name: str) -> None:
        # A thread: the event loop never waits on the disk.
        try:
            themes.save_theme(name, self.config_dir)
        except OSError as exc:
            self.call_from_thread(
                self.notify, f"Could not save the theme choice: {exc}", severity="warning"
            )
