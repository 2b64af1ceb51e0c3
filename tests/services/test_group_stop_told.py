"""A group's own stop (a rank failed, the others stopped by rgt-tui) is told as the
group's, naming the rank, by watch and the TUI alike: it read "queue finished" in watch
and nothing at all in the TUI's notices (a groups hour, s39 #2). Records as the boxes
write them, through the real parsers and the group view."""

from __future__ import annotations

from support.group_views import stopped_group_view

from rgt_tui.domain.queue_state import GROUP_STOPPED
from rgt_tui.services.watch.events import HostState
from rgt_tui.services.watch.tracker import HostMemory, derive


def test_a_groups_own_stop_is_told_as_the_groups_not_as_finished() -> None:
    view = stopped_group_view()
    assert view.state == GROUP_STOPPED and view.launch is not None and view.launch.done
    state = HostState(None, (), "connected", None, view, None, None, 200.0, group=True)
    _, events = derive("pair", HostMemory(), state, reminder_s=0)
    (event,) = [e for e in events if e.kind == "queue_done"]
    assert event.title == "pair: queue stopped: a rank failed: 0/2 done, 1 failed, 1 not run", (
        event.title
    )
    assert "rank 1 (b2) failed first in cell 0 (fit)" in event.body
