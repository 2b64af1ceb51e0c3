"""LaunchKeysForm: the add screen's fields for what a first launch needs (issue 43):
``workdir``, ``code``, ``queue``, ``run``, ``durable_dir`` and ``pull``.

Each field is prefilled with the profile's default (``services.fleet.add_keys.launch_defaults``)
and follows the profile and the name until the user types into it; ``pull`` follows
``durable_dir`` the same way, as that field holds it (typed or offered): a name or
profile change never takes it back to the profile's folder. Emptied, ``code``, ``queue`` and ``run`` are left out of
the block, and ``pull`` is ``[durable_dir]``. Focusing a field leaves its value
unselected, the cursor at its end. Enter in one of these fields moves to the next one,
as in the screen's name and cost fields (``AddHostScreen`` moves it, for every field
alike): it never checks or adds anything (the buttons do; Enter in the SSH command field
checks the host key).
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Input, Static

from rgt_tui.screens.type_ahead import CommandInput, InOrderInput
from rgt_tui.services.fleet.add_keys import LAUNCH_KEYS, LaunchKeys

MUTED = "$foreground-muted"
# key -> (label, what it is for: the field's tooltip, and its placeholder when empty)
FIELDS = {
    "workdir": ("workdir", "on the box: the code is synced here, cells run here"),
    "code": (
        "code",
        "this machine's code tree `sync` sends (empty: the [fleet] code, if set; none: no sync)",
    ),
    "queue": ("queue", "this machine's queue file, created empty if missing (empty: none)"),
    "run": ("run", "one cell's command: {cfg} {task} {epochs} {name} {out}, bare"),
    "durable_dir": ("durable_dir", "on the box: results, {out} = <durable_dir>/<cell>"),
    "pull": ("pull", "folders on the box to pull, comma-separated (empty: durable_dir)"),
}


def field_id(key: str) -> str:
    """The Input's id for launch key ``key`` (``add-durable_dir``)."""
    return f"add-{key}"


def _text(value: str | tuple[str, ...] | None) -> str:
    if value is None:
        return ""
    return ", ".join(value) if isinstance(value, tuple) else value


class LaunchKeysForm(Vertical):
    """The six launch keys, one compact row each (fits 80x24 with the rest of the screen)."""

    DEFAULT_CSS = """
    LaunchKeysForm { height: auto; margin: 1 0 0 0; }
    LaunchKeysForm > .launch-row { height: 1; }
    LaunchKeysForm .launch-label { width: 13; color: $foreground-muted; }
    LaunchKeysForm Input { width: 1fr; }
    /* Compact rows have no border: the row with the cursor is marked, or typing after
       Shift+Tab edited a field that looked like text (hour s33 TUI #2). */
    LaunchKeysForm > .-current .launch-label { color: $accent; text-style: bold; }
    LaunchKeysForm Input:focus { background: $boost; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._offered: dict[str, str] = {}  # what each field was last prefilled with

    def compose(self) -> ComposeResult:
        yield Static(
            Content.styled(
                "What a first launch needs (the profile's defaults; Enter: next field)", MUTED
            )
        )
        for key in LAUNCH_KEYS:
            label, tip = FIELDS[key]
            with Horizontal(classes="launch-row"):
                yield Static(label, classes="launch-label")
                # Focus leaves the default unselected, the cursor at its end: a key typed
                # after Tab edits the default, never wipes it.
                # The run template is a command: a paste over lines (`… \`) is one,
                # as the SSH command's box takes it (h619 #1: its first line alone).
                kind = CommandInput if key == "run" else InOrderInput
                yield kind(
                    id=field_id(key),
                    compact=True,
                    placeholder=tip,
                    tooltip=tip,
                    select_on_focus=False,
                )

    def offer(self, defaults: LaunchKeys) -> None:
        """Prefill every field the user has not typed into with ``defaults``; ``pull``
        is offered ``durable_dir`` as its field holds it now, typed or offered."""
        for key in LAUNCH_KEYS:
            if key != "pull":
                self._offer(key, _text(getattr(defaults, key)))
        # The profile's pull is its own durable_dir: offered here, it would undo a pull
        # that follows a durable_dir the user typed (a name or profile change re-offers).
        durable = self.query_one(f"#{field_id('durable_dir')}", Input).value
        self._offer("pull", durable.strip())

    def _offer(self, key: str, value: str) -> None:
        field = self.query_one(f"#{field_id(key)}", Input)
        if field.value == self._offered.get(key, ""):  # not typed by the user: follow
            field.value = value
            self._offered[key] = value
            # Textual moves the cursor to the end on the first value only: a second offer
            # (the name or profile typed) left it where "~/code" ended, and Ctrl+U and a
            # path typed there kept the offer's tail ("/tmp/b2/codepace/code": h604 #1).
            field.cursor_position = len(value)

    def values(self) -> dict[str, str]:
        """What each field holds now, by key."""
        return {key: self.query_one(f"#{field_id(key)}", Input).value for key in LAUNCH_KEYS}

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._mark_current()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self._mark_current()

    def _mark_current(self) -> None:
        """Mark the row whose field has the focus now. A class, not :focus-within: a
        sibling label of the focused field was not restyled by it (the row's label stayed
        muted). Read from the screen, not the event: the old field's blur and the new
        one's focus reach this form through different widgets' queues, in either order,
        and a blur read last unmarked the row just focused (CI, on a loaded machine)."""
        focused = self.screen.focused
        for row in self.query(".launch-row"):
            row.set_class(focused is not None and focused in row.children, "-current")

    @on(Input.Changed, "#add-durable_dir")
    def _durable_changed(self, event: Input.Changed) -> None:
        self._offer("pull", event.value.strip())
