"""``rgt-tui watch``: the fleet watched while the app is closed (issue 31).

``events``: what the watch hands its sinks (``HostState``, ``WatchEvent``); ``state``: a
host's ``HostState`` from its monitor's update and queue view; ``tracker``: which events
a host's new state owes, pure; ``store``: that memory in the fleet's journal, so a
restart repeats nothing and misses nothing; ``watcher``: the engine; ``install``: the
systemd / launchd / nohup texts of ``watch --install``.
"""
