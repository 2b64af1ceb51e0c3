"""Textual-free controllers: turn user intent and service results into UI state.

The job runner (``jobs``), the box watch, the queue poller, the queue keys' decisions
(``queue_actions``), refused host keys (``host_keys``), notices, type-ahead and the one
worker helper (``workers``). They take their host (the App) through ``ControllerHost``,
call the services, and hand state to callbacks; they never import Textual or a screen
(pyproject's import contracts).
"""
