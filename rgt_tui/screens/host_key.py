"""Refused host keys: the ``trust this key?`` prompt, and what the App keeps of refusals.

A monitor's connection refused with ``HostKeyError`` stops there (retrying would repeat
the refusal). ``K`` on that host opens ``HostKeyScreen``:

- an unknown key: the host, its SHA-256 fingerprint, the exact known_hosts line and the
  file it goes to; only the Trust button or ``t`` appends it
  (``services.fleet.trust``), then the host reconnects. Cancel (focused: Enter,
  and Escape) writes nothing; the line under the buttons says so in words, and the
  focused button is marked in its text (``screens/dialog.py``);
- an unknown key of a ProxyJump hop (``HostKeyError.jump_host``): the prompt names the
  jump host, says to compare with the jump host's own fingerprint (not the provider's
  for the box), and Trust stays disabled until the jump host's name is typed: a jump
  host is shared and long-lived, so its key takes more than one click;
- a changed or revoked key: no way to trust it here. The old and new fingerprints and
  the exact fix (``ssh-keygen -R`` for the resolved name and port) are shown instead.

What the App keeps of refusals, and trusting one after this prompt says yes, is
``controllers.host_keys.HostKeys``; this module is Textual's side (the key, the message,
the screen).
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static

from rgt_tui.domain.errors import HostKeyError
from rgt_tui.screens.dialog import BodyScreen, DialogBody, DialogButton, KeyHint, enter_does
from rgt_tui.screens.type_ahead import InOrderInput, drop_typed, typed_into

MUTED = "$foreground-muted"

# On the fleet (the selected pane) and on the host's detail screen; enabled (and so
# shown in the footer) only while that host's key is refused.
HOST_KEY_BINDING = Binding(
    "K",
    "host_key",
    "Host key",
    tooltip="Show the host's refused host key (trust it if it is new)",
)


class HostKeyReviewRequested(Message):
    """The user asked to see a host's refused key (``K``)."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host


def _row(label: str, value: str, style: str = "") -> Content:
    return Content.assemble((f"{label:<14}", MUTED), (value, style))


def _row_if(label: str, value: str | None) -> list[Content]:
    """The row, or none at all when there is nothing to say (never a bare heading)."""
    return [_row(label, value)] if value else []


class HostKeyScreen(BodyScreen[bool]):
    """One refused host key; dismisses with True only when the user trusts it."""

    DEFAULT_CSS = """
    HostKeyScreen > #key-box { width: 110; }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", tooltip="Close; nothing is written"),
        Binding("t", "trust", "Trust", tooltip="Trust the box's own new key"),
    ]

    def __init__(self, error: HostKeyError) -> None:
        super().__init__()
        self.error = error

    @property
    def can_trust(self) -> bool:
        """Only an unknown key, with its line and file, can be trusted from here."""
        e = self.error
        return e.kind == "unknown" and bool(e.trust_line) and e.known_hosts_file is not None

    @property
    def needs_name(self) -> str | None:
        """The name to type before Trust works: the jump host's, for a hop's key."""
        return self.error.jump_host if self.can_trust else None

    def compose(self) -> ComposeResult:
        with Vertical(id="key-box", classes="dialog-box -warning"):
            # Scrolls between the buttons and the top at 80x24: a changed key's text ran
            # past the screen's edge and took the Close button with it (hour s19b #10).
            with DialogBody(id="key-scroll"):
                yield Static(self._text(), id="key-body")
            if self.needs_name:
                yield InOrderInput(
                    placeholder=f"type {self.needs_name} to trust the jump host's key",
                    id="key-name",
                )
            with Horizontal(id="key-buttons", classes="dialog-buttons"):
                if self.can_trust:
                    label = "Trust the jump host's key" if self.needs_name else "Trust this key"
                    yield DialogButton(
                        label,
                        does=label.lower(),
                        id="key-trust",
                        variant="warning",
                        disabled=bool(self.needs_name),
                    )
                    yield DialogButton("Cancel", does="cancel", id="key-cancel", variant="primary")
                else:
                    yield DialogButton("Close", does="close", id="key-cancel", variant="primary")
            yield KeyHint(id="key-hint")

    def on_mount(self) -> None:
        # Enter on the default button leaves known_hosts alone: trusting takes a deliberate
        # move to the Trust button (for a jump host, its name typed first).
        focus = "#key-name" if self.needs_name else "#key-cancel"
        self.set_focus(self.query_one(focus))
        if self.needs_name:  # keys typed with K in one burst: the jump host's name
            typed_into(self, self.query_one("#key-name", Input))
        else:
            drop_typed(self, "while the host key's review opened")
        self.show_hint()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.show_hint()

    def show_hint(self) -> None:
        """Say what Enter does with the focus where it is, and the other keys (the scroll
        keys while the text holds more than it shows); then fit the text to the room."""
        self.call_after_refresh(self.fit_body)
        hint = self.query_one("#key-hint", KeyHint)
        if not self.can_trust:
            hint.show_keys(enter_does(self.focused), *self.scroll_keys(), ("Esc", "close"))
            return
        jump = self.needs_name
        if jump is None:
            hint.show_keys(
                enter_does(self.focused),
                ("t", "trust this key"),
                *self.scroll_keys(),
                ("Esc", "cancel"),
            )
            return
        named = self._named()
        enter = enter_does(self.focused, {"key-name": "trust the jump host's key"})
        hint.show_keys(
            enter if named else None,
            *self.scroll_keys(),
            ("Esc", "cancel"),
            lead="" if named else f"type {jump} to trust the jump host's key",
        )

    def _named(self) -> bool:
        """Whether trusting may go ahead: the jump host's name typed, where one is needed."""
        name = self.needs_name
        return name is None or self.query_one("#key-name", Input).value.strip() == name

    def _text(self) -> Content:
        e = self.error
        lines: list[Content]
        jump = e.jump_host
        if self.can_trust and jump:
            lines = [
                Content.assemble(
                    ("trust the JUMP HOST's key? ", "bold $warning"), (jump, "bold $accent")
                ),
                Content.styled(
                    f"{jump} is the jump host (ProxyJump in your ssh_config) that {e.host} is "
                    "reached through, and it showed a host key no known_hosts file has. A jump "
                    "host is shared and long-lived: trust this key only if the fingerprint is "
                    f"the one whoever runs {jump} gives you — not the provider's fingerprint "
                    f"for {e.host}.",
                    MUTED,
                ),
                Content(""),
                _row("key of", f"jump host {jump}", "bold"),
                _row("reaches", e.host),
                _row("fingerprint", e.presented, "bold"),
                _row("file", str(e.known_hosts_file)),
                Content.styled("Trust appends this line to the file:", MUTED),
                Content(e.trust_line or ""),  # a row of its own: copied whole, not wrapped
                Content(""),
                Content.assemble(
                    ("Type ", MUTED),
                    (jump, "bold"),
                    (" below to trust the jump host's key.", MUTED),
                ),
            ]
        elif self.can_trust:
            lines = [
                Content.assemble(("trust this key? ", "bold $warning"), (e.host, "bold $accent")),
                Content.styled(
                    "The box showed a host key no known_hosts file has. Trust it only if this "
                    "fingerprint is the one your provider shows for the box.",
                    MUTED,
                ),
                Content(""),
                _row("host", e.host, "bold"),
                _row("fingerprint", e.presented, "bold"),
                _row("file", str(e.known_hosts_file)),
                Content.styled("Trust appends this line to the file:", MUTED),
                Content(e.trust_line or ""),  # a row of its own: copied whole, not wrapped
            ]
        else:
            owner = f"jump host {jump}" if jump else e.host
            lines = [
                Content.assemble(
                    (f"host key {e.kind.upper()}: ", "bold $error"), (owner, "bold $accent")
                ),
                Content.styled(e.message, "$error"),
                Content(""),
                _row("key of", owner, "bold"),
                *([_row("reaches", e.host)] if jump else []),
                _row("old", ", ".join(e.known) or "(none recorded)"),
                _row("new", e.presented, "bold"),
                *_row_if("fix", e.fix),
                Content(""),
                Content.styled("rgt-tui does not trust a changed or revoked key.", MUTED),
            ]
        return Content("\n").join(lines)

    @on(Input.Changed, "#key-name")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_one("#key-trust", Button).disabled = not self._named()
        self.show_hint()

    @on(Input.Submitted, "#key-name")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._named():
            self.dismiss(True)

    @on(Button.Pressed, "#key-trust")
    def _trust(self, event: Button.Pressed) -> None:
        event.stop()
        if self._named():  # the button is disabled until then; checked again all the same
            self.dismiss(True)

    @on(Button.Pressed, "#key-cancel")
    def _cancel(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(False)

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_trust(self) -> None:
        """``t``: trust a box's own new key. A jump host's key still takes its name typed
        (``t`` then only moves the cursor to the name box)."""
        if not self.can_trust:
            return
        if self._named():
            self.dismiss(True)
        else:
            self.set_focus(self.query_one("#key-name", Input))
