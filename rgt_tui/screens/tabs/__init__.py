"""The host-detail tabs, in display order.

To add a tab (queue, logs, pulls, teardown): write one module here with a ``DetailTab``
subclass (``TAB_ID``, ``TITLE``, ``compose``, ``show``) and append it to ``DETAIL_TABS``.
The detail screen builds its tabs, its number keys and its help entries from this list.
"""

from __future__ import annotations

from rgt_tui.screens.tabs.alerts import AlertsTab
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.screens.tabs.disks import DisksTab
from rgt_tui.screens.tabs.gpus import GpusTab
from rgt_tui.screens.tabs.logs import LogsTab
from rgt_tui.screens.tabs.overview import OverviewTab
from rgt_tui.screens.tabs.pulls import PullsTab
from rgt_tui.screens.tabs.queue import QueueTab
from rgt_tui.screens.tabs.teardown import TeardownTab

DETAIL_TABS: list[type[DetailTab]] = [OverviewTab, GpusTab, DisksTab, AlertsTab]
DETAIL_TABS += [PullsTab, TeardownTab]
DETAIL_TABS += [QueueTab, LogsTab]

__all__ = ["DETAIL_TABS", "DetailTab", "HostView"]
