"""``x`` on the GPU tab: kill one process holding VRAM, its PID typed (U11, GEN7).

The dialog shows the evidence the box just gave (services/box/vram.py) and a box for the
PID. Kill stays disabled until the typed PID is a holder of that evidence that may be
killed here; anything else (a PID not in the list, a running queue cell's, one only
nvidia-smi names from another PID namespace) is refused in words under the box, the
queue cell's with the queue's own kill to use instead. It dismisses with the PID, or
None; the GPU tab runs the kill (SIGTERM, then SIGKILL after 10 s) and looks again.
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Input, Static

from rgt_tui.content.vram_text import evidence_content
from rgt_tui.domain.text import is_digits
from rgt_tui.screens.dialog import BodyScreen, DialogBody, DialogButton, KeyHint, enter_does
from rgt_tui.screens.type_ahead import InOrderInput
from rgt_tui.services.box.vram import VramError, VramEvidence, check_kill

MUTED = "$foreground-muted"

# On the host's detail screen; enabled (and so shown in the footer) only while the GPU
# tab is on screen: x means nothing on the other tabs.
VRAM_BINDING = Binding(
    "x",
    "kill_vram_holder",
    "Kill VRAM holder",
    tooltip="GPU tab: kill a process holding VRAM, its PID typed (U11)",
)


class VramKillScreen(BodyScreen[int | None]):
    """The evidence, a PID box, Kill (disabled until the PID may be killed) and Cancel."""

    DEFAULT_CSS = """
    VramKillScreen > #vram-box { width: 110; }
    VramKillScreen #vram-why { height: auto; }
    VramKillScreen #vram-evidence { height: auto; max-height: 45vh; }  /* then fit_body */
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Close; nothing is killed")]

    def __init__(self, evidence: VramEvidence) -> None:
        super().__init__()
        self.evidence = evidence

    def compose(self) -> ComposeResult:
        host = self.evidence.host
        with Vertical(id="vram-box", classes="dialog-box -warning"):
            yield Static(
                Content.assemble(
                    ("kill a VRAM holder on ", "bold $warning"), (host, "bold $accent")
                )
            )
            # The evidence scrolls (↑↓ PgUp PgDn) so the PID box, the buttons and the key
            # line stay on an 80x24 screen (a user's hour found them cut off there).
            with DialogBody(id="vram-evidence"):
                yield Static(
                    Content("\n").join(
                        [
                            Content.styled(
                                "SIGTERM, then SIGKILL after 10 s. Only a process listed below "
                                "with a /dev/nvidia* file open, and no running queue cell's.",
                                MUTED,
                            ),
                            Content(""),
                            evidence_content(self.evidence),
                        ]
                    ),
                    id="vram-body",
                )
            yield InOrderInput(placeholder="type the PID to kill", id="vram-pid")
            yield Static(id="vram-why")
            with Horizontal(id="vram-buttons", classes="dialog-buttons"):
                yield DialogButton(
                    "Kill", does="kill it", id="vram-kill", variant="error", disabled=True
                )
                yield DialogButton("Cancel", does="cancel", id="vram-cancel", variant="primary")
            yield KeyHint(id="vram-hint")

    def on_mount(self) -> None:
        self.set_focus(self.query_one("#vram-pid", Input))
        self._hint()
        self.call_after_refresh(self.fit_body)

    def show_hint(self) -> None:
        self._hint()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._hint()

    def allowed(self) -> int | None:
        """The typed PID when it may be killed, else None."""
        return self._check()[0]

    def _check(self) -> tuple[int | None, str]:
        typed = self.query_one("#vram-pid", Input).value.strip()
        if not typed:
            return None, ""
        if not is_digits(typed):
            return None, f"{typed[:20]!r} is not a process id"
        try:
            process = check_kill(self.evidence, int(typed))
        except VramError as exc:
            return None, exc.message
        what = process.cmdline or process.comm or "?"
        return process.pid, f"pid {process.pid}: {what[:70]}"

    def _typed_refused(self) -> int | None:
        """The typed PID when the evidence lists it but refuses it here, else None."""
        typed = self.query_one("#vram-pid", Input).value.strip()
        process = self.evidence.find(int(typed)) if is_digits(typed) else None
        if process is None or process.refusal(self.evidence.host) is None:
            return None
        return process.pid

    def _hint(self) -> None:
        pid, why = self._check()
        self.query_one("#vram-why", Static).update(
            Content.styled(why, "$error" if pid is None else "$warning") if why else Content("")
        )
        self.query_one("#vram-kill", Button).disabled = pid is None
        enter = enter_does(self.focused, {"vram-pid": "kill it"})
        if pid is None and (enter is None or self.focused is self.query_one("#vram-pid")):
            enter = "nothing until a listed holder's PID is typed"
            refused = self._typed_refused()
            if refused is not None:  # listed, yet refused: the line under the box says why
                enter = f"nothing: pid {refused} is listed but cannot be killed here"
        self.query_one("#vram-hint", KeyHint).show_keys(
            enter, ("Tab", "next"), *self.scroll_keys(), ("Esc", "cancel, nothing killed")
        )
        # A longer key line and reason (a refused PID's) take room from the evidence, not
        # the box's edge (it was cut at "· Tab:" at 80x24): fitted once they are laid out.
        self.call_after_refresh(self.fit_body)

    @on(Input.Changed, "#vram-pid")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        self._hint()

    @on(Input.Submitted, "#vram-pid")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        pid = self.allowed()
        if pid is not None:
            self.dismiss(pid)

    @on(Button.Pressed, "#vram-kill")
    def _kill(self, event: Button.Pressed) -> None:
        event.stop()
        pid = self.allowed()  # disabled until then; checked again all the same
        if pid is not None:
            self.dismiss(pid)

    @on(Button.Pressed, "#vram-cancel")
    def _cancel(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
