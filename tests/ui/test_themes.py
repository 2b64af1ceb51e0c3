"""Theme files: loading, validation, user overrides, the saved choice, and every theme in use."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import ANY

import pytest
from support import ROOT
from support.pilot import SNAPSHOT_SIZE, screen_text, shown_notifications, wait_for
from support.samples import clock, three_updates, write_fleet
from textual.color import Color

from rgt_tui import themes
from rgt_tui.app import RgtApp
from rgt_tui.messages import HostUpdated
from rgt_tui.widgets.host_pane import HostPane

BUNDLED = ("dark", "light", "high-contrast")


def test_bundled_themes_load_cleanly_with_gauge_variables() -> None:
    folder = themes.bundled_themes_dir()
    assert folder == ROOT / "themes"
    loaded, errors = themes.load_themes([folder])
    assert errors == []
    by_name = {t.name: t for t in loaded}
    assert set(BUNDLED) <= set(by_name)
    assert by_name["dark"].dark and not by_name["light"].dark
    for theme in by_name.values():
        for variable in themes.THEME_VARIABLES:
            Color.parse(theme.variables[variable])  # present and a colour


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name = 'x'\nprimary = [unclosed\n", "not valid TOML"),
        ("primary = '#112233'\nprimry = '#000000'\n", "unknown key 'primry'"),
        ("primary = 'blurple'\n", "'blurple' is not a colour"),
        ("background = '#000000'\n", "'primary' is required"),
        ("primary = '#112233'\ndark = 'yes'\n", "'dark' must be true or false"),
        ("primary = '#112233'\n[variables]\ngauge-ok = 'nope'\n", "variables.gauge-ok"),
        ("primary = '#112233'\nvariables = 3\n", "[variables] must be a table"),
    ],
)
def test_a_broken_theme_file_is_reported_and_skipped(
    tmp_path: Path, text: str, reason: str
) -> None:
    (tmp_path / "bad.toml").write_text(text)
    (tmp_path / "good.toml").write_text("primary = '#336699'\n")
    loaded, errors = themes.load_themes([tmp_path])
    assert [t.name for t in loaded] == ["good"]  # the name defaults to the file's stem
    assert len(errors) == 1 and errors[0].startswith(str(tmp_path / "bad.toml"))
    assert reason in errors[0]


def test_user_themes_add_to_and_override_the_bundled_ones(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user_dir = themes.user_themes_dir()
    assert user_dir == tmp_path / "xdg" / "rgt-tui" / "themes"
    user_dir.mkdir(parents=True)
    (user_dir / "mine.toml").write_text("primary = '#ff00ff'\n")
    (user_dir / "light.toml").write_text("name = 'light'\nprimary = '#010203'\ndark = false\n")
    loaded, errors = themes.load_themes([themes.bundled_themes_dir(), user_dir])
    by_name = {t.name: t for t in loaded}
    assert errors == [] and "mine" in by_name
    assert by_name["light"].primary == "#010203"


def test_the_theme_choice_is_saved_atomically_and_read_back(tmp_path: Path) -> None:
    assert themes.saved_theme(tmp_path) is None
    path = themes.save_theme("light", tmp_path)
    assert json.loads(path.read_text()) == {"theme": "light"}
    assert themes.saved_theme(tmp_path) == "light"
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]  # no temp file left
    path.write_text("{not json")
    assert themes.saved_theme(tmp_path) is None  # corrupt settings: as if none


async def test_user_theme_from_xdg_is_usable_by_name(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user_dir = tmp_path / "xdg" / "rgt-tui" / "themes"
    user_dir.mkdir(parents=True)
    (user_dir / "solar.toml").write_text("primary = '#b58900'\nbackground = '#002b36'\n")
    app = RgtApp(write_fleet(tmp_path), start_monitors=False, theme="solar", clock=clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.theme == "solar"
        assert app.screen.styles.background == Color.parse("#002b36")
        # No gauge variables in the file: the app derives them from the theme's colours.
        assert "gauge-crit" in app.get_css_variables()


@pytest.mark.parametrize("theme", [*BUNDLED, "textual-light", "nord"])
async def test_every_theme_draws_the_fleet(tmp_path: Path, theme: str) -> None:
    app = RgtApp(
        write_fleet(tmp_path), start_monitors=False, theme=theme, clock=clock,
        config_dir=tmp_path / "config",
    )  # fmt: skip
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        for update in three_updates():
            app.post_message(HostUpdated(update))
        await pilot.pause()
        # Drawn before the screenshot: one pause was not always enough on a loaded machine.
        await wait_for(
            lambda: "a100-train" in screen_text(app) and "inodes" in screen_text(app),
            pilot=pilot,
        )
        # No theme error (the first connections' danger-clock notes are expected).
        errors = [n for n in shown_notifications(app) if not n.title.endswith("danger clocks")]
        assert app.theme == theme and not errors
        variables = app.get_css_variables()
        for name in themes.THEME_VARIABLES:
            Color.parse(variables[name])
        pane = app.screen.query_one(HostPane)
        # Pane text and pane background differ: readable in this theme.
        assert pane.styles.background != pane.styles.color
        screenshot = app.export_screenshot()
        assert "a100-train" in screenshot and "inodes" in screenshot


def test_unknown_theme_lists_our_themes_apart_and_names_a_broken_file(tmp_path: Path) -> None:
    user_dir = themes.user_themes_dir(tmp_path)
    user_dir.mkdir(parents=True)
    (user_dir / "mine.toml").write_text("primary = '#ff00ff'\n")
    (user_dir / "nord.toml").write_text("primary = '#88c0d0'\n")  # replaces Textual's nord
    (user_dir / "solar.toml").write_text("primary = 'not-a-colour'\n")
    assert themes.unknown_theme("dark", tmp_path) is None
    assert themes.unknown_theme("mine", tmp_path) is None
    assert themes.unknown_theme("dracula", tmp_path) is None  # Textual's own
    problem = themes.unknown_theme("solar", tmp_path)
    assert problem is not None
    message, fix = problem
    lines = message.splitlines()
    assert lines[0] == "--theme solar: no such theme"
    assert lines[1].startswith(f"  {user_dir / 'solar.toml'}: ") and "is not a colour" in lines[1]
    assert lines[2] == "  rgt-tui's own: dark, high-contrast, light"
    assert lines[3] == f"  yours, from {user_dir}: mine, nord"
    builtin = lines[4].removeprefix("  Textual's built-in: ").split(", ")
    assert "dracula" in builtin and "nord" not in builtin and "dark" not in builtin
    assert fix == "correct the theme file named above, or pick a theme listed"
    assert themes.unknown_theme("drakula", tmp_path) == (ANY, "did you mean --theme dracula?")


def test_an_app_given_an_unknown_theme_lists_our_themes_apart(tmp_path: Path) -> None:
    app = RgtApp(
        write_fleet(tmp_path), start_monitors=False, theme="zzz", clock=clock,
        config_dir=tmp_path / "config",
    )  # fmt: skip
    assert app.theme == "dark"
    (note,) = app.theme_errors
    lines = note.splitlines()
    assert lines[0] == "--theme zzz: no such theme"
    assert lines[1] == "  rgt-tui's own (bundled and yours): dark, high-contrast, light"
    builtin = lines[2].removeprefix("  Textual's built-in: ").split(", ")
    assert "textual-dark" in builtin and not {"dark", "light", "high-contrast"} & set(builtin)
