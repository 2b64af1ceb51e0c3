"""What every dialog shares: buttons that show their focus in text, and a line that says
in words what Enter (and each other key) does right now.

A focused button's colour is lost in a plain-text capture (``tmux capture-pane -p``, a
screen reader) and is faint in some themes, so the focused button also wears a marker
in its text: ``▶ Cancel ◀``. The hint line follows the focus: a user who reads the
fingerprint and presses Enter knows beforehand that Enter cancels.

``DialogScreen`` is the one look of a modal (its centred box and button row, once);
``ConfirmScreen`` is the one yes/no question (quit while jobs run; stop or kill a queue
cell): the safe answer has the focus first, and Escape gives it too.

A dialog that re-makes its plan in a worker (``ReplanScreen``: launch, retry) holds
Enter while it does: the plan on screen is the old one, and its focused button (Cancel
of a refused plan) is not what the user chose after pressing Acknowledge.

A dialog's plan scrolls in its ``DialogBody``: no Tab stop of its own (a focused
scroll area shows no focus, and Enter there does nothing: a user read it as a button),
scrolled by the dialog's keys (↑↓, PgUp/PgDn) wherever the focus is, and as tall as the
screen leaves room for, so a taller terminal shows more of the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.scalar import Scalar
from textual.dom import NoScreen
from textual.geometry import Size
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Static

from rgt_tui.content.box_text import shown

MARK_LEFT, MARK_RIGHT = "▶ ", " ◀"
REPLANNING = "re-planning…"
PLANNING = "planning…"
BOX_SHARE = 0.9  # of the screen's height a dialog's box may take (max-height: 90%)
SCROLL_KEYS = ("↑↓ PgUp PgDn", "scroll")  # the hint line's words for DialogBody's keys
ResultType = TypeVar("ResultType")


class DialogButton(Button):
    """A Button whose text shows its focus (``▶ Cancel ◀``); ``does`` says, in a few
    words, what Enter on it does ("cancel", "trust this key")."""

    def __init__(self, caption: str, *, does: str, **kwargs: object) -> None:
        self.caption = caption
        self.does = does
        super().__init__(self._text(focused=False), **kwargs)  # type: ignore[arg-type]

    def _text(self, *, focused: bool) -> Content:
        # The same width either way, so the row of buttons does not shift as focus moves.
        # Content, not a str: a caption can name a box's cell or check, and a Button reads
        # a str label as markup.
        text = f"{MARK_LEFT}{self.caption}{MARK_RIGHT}" if focused else f"  {self.caption}  "
        return Content(text)

    def set_caption(self, caption: str, *, does: str | None = None) -> None:
        """Change the text (and what Enter on it does), keeping the focus marker."""
        self.caption = caption
        if does is not None:
            self.does = does
        self.label = self._text(focused=self.has_focus)
        # A Button's label is no layout reactive: without this its width stays the old
        # caption's, and a longer one is cut ("▶ Move (box1").
        self.refresh(layout=True)

    def action_press(self) -> None:
        """Enter: nothing while the dialog re-plans (a click still presses: it is aimed)."""
        if _replanning(self):
            return
        super().action_press()

    def on_focus(self, event: events.Focus) -> None:
        self.label = self._text(focused=True)

    def on_blur(self, event: events.Blur) -> None:
        self.label = self._text(focused=False)


class KeyHint(Static):
    """One line: ``Enter: cancel · t: trust · Esc: cancel`` for the dialog as it is now."""

    DEFAULT_CSS = """
    KeyHint { height: auto; color: $foreground-muted; margin: 1 0 0 0; }
    """

    def show_keys(self, enter: str | None, *others: tuple[str, str], lead: str = "") -> None:
        """Say ``lead``, what Enter does (None: nothing), then each ``(key, what)``."""
        keys = ([("Enter", enter)] if enter else []) + list(others)
        parts = [Content.assemble((key, "bold $accent"), f": {what}") for key, what in keys]
        self.update(Content(" · ").join([*([Content(lead)] if lead else []), *parts]))


def enter_does(focused: Widget | None, inputs: dict[str, str] | None = None) -> str | None:
    """What Enter does with ``focused``: a DialogButton's ``does``, an Input's entry in
    ``inputs`` (by id), else nothing."""
    if isinstance(focused, DialogButton):
        return focused.does if not (focused.disabled or _replanning(focused)) else None
    if focused is not None and focused.id and inputs:
        return inputs.get(focused.id)
    return None


class DialogScreen(ModalScreen[ResultType]):
    """The one look of a modal: its box (``classes="dialog-box"``, ``-warning`` too for a
    question that stops or deletes something) centred on the screen, its row of buttons
    (``dialog-buttons``) on the right. Each dialog sets only its box's width, and what
    else is its own, in its DEFAULT_CSS."""

    DEFAULT_CSS = """
    DialogScreen { align: center middle; }
    DialogScreen > .dialog-box {
        max-width: 96%; height: auto; max-height: 90%;  /* BOX_SHARE */
        border: round $accent; background: $surface; padding: 0 1;
    }
    DialogScreen > .dialog-box.-warning { border: round $warning; }
    DialogScreen .dialog-buttons { height: auto; align-horizontal: right; }
    /* A button is its caption's width (Textual's min-width 16 made four of them, the
       retry's, overflow 80 columns and cut Cancel, the default: hour s19b #10). */
    DialogScreen .dialog-buttons Button { min-width: 0; }
    /* Over a dialog only the newest toast shows (every one is listed under n), at the
       screen's top and at most 7 rows high: the box is centred, so its buttons and key
       line stay in sight whatever its height. */
    DialogScreen ToastRack { dock: top; align: right top; margin-bottom: 0; }
    DialogScreen ToastHolder { display: none; }
    DialogScreen ToastHolder:last-of-type { display: block; }
    DialogScreen Toast { max-height: 7; }
    """


Choice = tuple[str, str, str, str]  # (id, caption, what Enter on it does, button variant)
CANCEL: Choice = ("cancel", "Cancel", "cancel", "primary")


class DialogBody(VerticalScroll, can_focus=False):
    """A dialog's scrolling plan: never a Tab stop (``ReplanScreen``'s keys scroll it);
    the dialog's key line names those keys while there is more than fits."""

    DEFAULT_CSS = """
    DialogBody { height: auto; max-height: 45vh; }  /* then BodyScreen.fit_body */
    """

    class Scrollable(Message):
        """The body's scrollbar came or went: it now holds more than it shows, or not."""

    def watch_show_vertical_scrollbar(self) -> None:
        self.post_message(self.Scrollable())


class BodyScreen(DialogScreen[ResultType]):
    """A dialog whose middle scrolls in a ``DialogBody`` between its title and its
    buttons and key line, which stay on screen at 80x24: ↑↓ and PgUp/PgDn scroll it,
    whatever has the focus (no button or text box of theirs uses those keys), and
    ``fit_body`` makes it as tall as the screen leaves room for (on a resize, and when
    what is around it changed)."""

    BINDINGS = [
        Binding("down", "scroll_body('down')", "Scroll down", show=False),
        Binding("up", "scroll_body('up')", "Scroll up", show=False),
        Binding("pagedown", "scroll_body('page_down')", "Page down", show=False),
        Binding("pageup", "scroll_body('page_up')", "Page up", show=False),
    ]

    def _body(self) -> DialogBody | None:
        return next(iter(self.query(DialogBody)), None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The scroll keys only where there is a body to scroll (else they go on)."""
        if action == "scroll_body":
            return self._body() is not None
        return super().check_action(action, parameters)

    def action_scroll_body(self, how: str) -> None:
        """Scroll the body ``how``: down, up, page_down, page_up."""
        body = self._body()
        if body is None:
            return
        scroll = {
            "down": body.scroll_down, "up": body.scroll_up,
            "page_down": body.scroll_page_down, "page_up": body.scroll_page_up,
        }.get(how)  # fmt: skip
        if scroll is not None:
            scroll(animate=False)

    def scroll_keys(self) -> list[tuple[str, str]]:
        """The key line's entry for the scroll keys while the body holds more than it
        shows; [] otherwise (they would do nothing)."""
        body = self._body()
        return [SCROLL_KEYS] if body is not None and body.show_vertical_scrollbar else []

    def on_dialog_body_scrollable(self, message: DialogBody.Scrollable) -> None:
        self.show_hint()

    def show_hint(self) -> None:
        """Write the key line again (the dialog's own); then fit the body."""

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.fit_body)

    def fit_body(self) -> None:
        """The body as tall as the screen leaves room for beside the rest of the box
        (its title, status, buttons and key line as they are now drawn)."""
        body = self._body()
        box = body.parent if body is not None else None
        if body is None or not isinstance(box, Widget):
            return
        rest = box.styles.gutter.height + sum(
            _wanted(child, self.size)
            for child in box.children
            if child is not body and child.display
        )
        room = max(3, int(self.size.height * BOX_SHARE) - rest)
        if body.styles.max_height != Scalar.from_number(room):
            body.styles.max_height = room


def _wanted(child: Widget, viewport: Size) -> int:
    """The rows ``child`` takes beside the body: a text line's as many as its text wraps
    to (a box already full clips it: its drawn height would never ask for more), any
    other's as drawn; margins included."""
    if isinstance(child, Static) and child.content_size.width:
        lines = child.get_content_height(child.size, viewport, child.content_size.width)
        return lines + child.styles.gutter.height + child.styles.margin.height
    return child.outer_size.height + child.styles.margin.height


class ConfirmScreen(BodyScreen[str | None]):
    """A question, one button per choice and the safe one (``safe``), which has the focus
    first: Enter alone never does what the user did not choose, and Escape answers the
    safe one too. Dismisses with the chosen id, or None for the safe answer.

    A subclass may add ``Binding(key, "answer('ID')", …)``: the key answers that choice
    and the hint line names it (instead of Tab). Its text scrolls as a ``BodyScreen``'s
    body does, so a long one (quitting while 30 boxes pull) keeps the buttons in sight.
    """

    DEFAULT_CSS = """
    ConfirmScreen > #confirm-box { width: 90; }
    """

    BINDINGS = [Binding("escape", "answer_safe", "Cancel", tooltip="Close; nothing is done")]

    def __init__(
        self,
        text: Content,
        choices: Sequence[Choice],
        *,
        safe: Choice = CANCEL,
        safe_first: bool = False,
    ) -> None:
        super().__init__()
        self.text = text  # Content: it names a box's cell or host, never markup
        self.choices = list(choices)
        self.safe = safe
        self.safe_first = safe_first

    def compose(self) -> ComposeResult:
        buttons = [*self.choices, self.safe] if not self.safe_first else [self.safe, *self.choices]
        with Vertical(id="confirm-box", classes="dialog-box -warning"):
            with DialogBody(id="confirm-scroll"):
                yield Static(self.text, id="confirm-body")
            with Horizontal(id="confirm-buttons", classes="dialog-buttons"):
                for ident, caption, does, variant in buttons:
                    yield DialogButton(caption, does=does, id=f"confirm-{ident}", variant=variant)
            yield KeyHint(id="confirm-hint")

    def on_mount(self) -> None:
        self.set_focus(self.query_one(f"#confirm-{self.safe[0]}", Button))
        self.show_hint()

    def on_descendant_focus(self) -> None:
        self.show_hint()

    def show_hint(self) -> None:
        does = {ident: what for ident, _, what, _ in self.choices}
        keys = [
            (b.key_display or b.key, does[b.action[len("answer('") : -2]])
            for b in self._bindings_of_choices()
        ]
        self.query_one("#confirm-hint", KeyHint).show_keys(
            enter_does(self.focused),
            *(keys or [("Tab", "next button")]),
            *self.scroll_keys(),
            ("Esc", self.safe[2]),
        )
        self.call_after_refresh(self.fit_body)

    def _bindings_of_choices(self) -> list[Binding]:
        return [
            b for b in self.BINDINGS if isinstance(b, Binding) and b.action.startswith("answer('")
        ]

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer((event.button.id or "").removeprefix("confirm-"))

    def action_answer(self, ident: str) -> None:
        """Dismiss with ``ident`` (None when it is the safe answer)."""
        self.dismiss(None if ident == self.safe[0] else ident)

    def action_answer_safe(self) -> None:
        """Escape: the safe answer."""
        self.dismiss(None)


class ReplanScreen(BodyScreen[ResultType]):
    """A dialog whose plan is made (and re-made) in a worker: launch, retry.

    ``begin_replan`` when a new plan is asked for (an Acknowledge, another start index,
    a revoked acknowledgement): until ``end_replan`` and the paint of its plan, Enter on a button does nothing, no
    button keeps the focus (so none shows ``▶ ◀`` as Enter's target: Textual would
    otherwise hand a disabled button's focus to the next one, Cancel) and ``hint_lead``
    says "re-planning…". ``end_replan`` focuses the button the dialog names for the new
    plan (launch: Launch when nothing failed, else Cancel; retry: Cancel), unless the
    user is typing.

    Its plan scrolls as a ``BodyScreen``'s body does; it calls ``fit_body`` when what
    is around the body changed (its status, its buttons, its key line).
    """

    # No widget takes the focus as the dialog opens (Textual's default, the app's "*",
    # gives it to the first that can; "" is none): ``end_replan`` gives it to the plan's
    # button, and would leave it in a start box that got it so (as if the user typed).
    AUTO_FOCUS = ""

    replanning = False
    planned = False  # a plan was shown once: the next is a re-plan
    # The plan is in its widgets but not yet on the terminal: that waits for the next
    # refresh, up to a second under load (h571 #6), and an Enter pressed before the plan
    # showed would confirm what the user never read. Enter is held until it is painted.
    unpainted = False
    _shown = 0  # which plan's paint ``_painted`` waits for

    # The result of an act (launch, retry, move) that ended while another screen was over
    # this one — the quit question, asked while it ran (``cut_by_quit``) —, kept until
    # this one is on top again: dismissed from under it, Textual popped the screen above
    # and left this one with its callback, and the next Escape crashed the app (h595 #1).
    _held_result: tuple[object] | None = None

    def cut_by_quit(self) -> str | None:
        """What quitting now cuts short, a line for the app's quit question (the dialog's
        act under way: launch, retry, move); None when nothing runs."""
        return None

    def close_with(self, result: ResultType) -> None:
        """Dismiss with ``result`` now, or once this dialog is on top again."""
        if self.app.screen is self:  # (is_current is true under a modal screen too)
            self.dismiss(result)
        else:
            self._held_result = (result,)

    @on(events.ScreenResume)
    def _dismiss_held(self) -> None:
        held, self._held_result = self._held_result, None
        if held is not None:
            self.dismiss(held[0])  # type: ignore[arg-type]

    def begin_replan(self) -> None:
        """A new plan is being made: hold Enter, take the focus off the buttons."""
        self.replanning = True
        if isinstance(self.focused, Button):
            self.set_focus(None)

    def end_replan(self, target: Widget | None) -> None:
        """The new plan is shown: focus ``target`` (None: leave the focus) unless an
        Input has it (the user is typing there)."""
        self.replanning = False
        self.planned = True
        self.unpainted = True
        self._shown += 1
        self.call_after_refresh(self._painted, self._shown)
        if target is not None and not isinstance(self.focused, Input):
            self.set_focus(target)

    def _painted(self, shown: int) -> None:
        """The plan ``end_replan`` put in place is on the terminal: Enter answers it now
        (not a plan shown since: its own paint releases Enter)."""
        if shown == self._shown:
            self.unpainted = False
            self.show_hint()

    def hint_lead(self) -> str:
        """The hint line's lead while a plan is being made: "planning…" for the first
        (h461 #8: "re-planning…" before anything was planned), "re-planning…" after;
        else ""."""
        if not self.replanning:
            return ""
        return REPLANNING if self.planned else PLANNING


def _replanning(widget: Widget) -> bool:
    """Whether ``widget``'s dialog is re-making its plan, or has not yet painted the new
    one (Enter is held)."""
    try:
        screen = widget.screen
    except NoScreen:  # not mounted (yet, or any more): no dialog to hold Enter for
        return False
    return isinstance(screen, ReplanScreen) and (screen.replanning or screen.unpainted)


def noted(note: str, said: Content) -> Content:
    """A plan's status ``said`` under ``note`` (why it was planned again), if any: the
    launch and retry dialogs' status line after a stale plan is made again."""
    if not note:
        return said
    return Content.assemble(Content.styled(shown(note, lines=True), "bold $warning"), "\n", said)
