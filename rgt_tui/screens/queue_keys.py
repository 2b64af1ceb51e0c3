"""The queue keys (L launch, a append, f follow logs, d diagnose) and their messages.

Launch is ``L``, not ``l``: ``l`` is "right" to a vim user (hjkl move the selection), and
a launch starts paid work, so it takes a deliberate shifted key, as preflight's ``P`` does.

Screens bind ``QUEUE_BINDINGS`` and post ``QueueActionRequested`` (messages up); the App
hands it to its ``controllers.queue_actions.QueueController``. ``QueueViewed`` carries
the poller's views (``controllers.queue_poller``) to the screens. Textual's side of the
queue keys (bindings and messages), so it is UI, not a controller.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message

from rgt_tui.domain.queue_state import QueueView

QUEUE_BINDINGS = [
    Binding(
        "L",
        "queue('launch')",
        "Launch",
        key_display="L",
        tooltip="Launch the host's queue (shows the plan)",
    ),
    Binding("a", "queue('append')", "Append", tooltip="Send new queue-file lines to the box"),
    Binding("f", "queue('logs')", "Logs", tooltip="Follow the host's queue and cell logs"),
    Binding("d", "queue('diagnose')", "Diagnose", tooltip="Why did the last cell vanish?"),
    Binding(
        "m",
        "queue('move')",
        "Move",
        tooltip="Move cells to another host; an unfinished one with its verified checkpoint",
    ),
]

# The queue keys whose action opens a dialog: keys typed with them in one burst are held
# for it (``type_ahead``), not run on the screen beneath while it comes.
DIALOG_ACTIONS = frozenset({"launch", "diagnose", "move"})


class QueueActionRequested(Message):
    """The user pressed a queue key on a host."""

    def __init__(self, host: str, action: str) -> None:
        super().__init__()
        self.host = host
        self.action = action


class QueueViewed(Message):
    """The poller read a host's queue view from the box."""

    def __init__(self, host: str, view: QueueView) -> None:
        super().__init__()
        self.host = host
        self.view = view

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, QueueViewed) and message.host == self.host
