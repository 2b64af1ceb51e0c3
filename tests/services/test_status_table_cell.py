"""`rgt-tui status`'s table says which cell runs, as its --json does (hour s17b #13a): a
user asking "is my run going?" saw disk and memory only. A snapshot read from a full
agent line, as the box sends it."""

from __future__ import annotations

from support.samples import agent_sample

from rgt_tui.cli.status import format_status_table
from rgt_tui.domain.snapshot import snapshot_from_agent
from rgt_tui.services.box.status import HostReport
from rgt_tui.services.fleet.file import load_fleet


def test_the_table_names_the_running_cell_and_says_nothing_when_none_runs(tmp_path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "gpu1"\nssh = "me@127.0.0.1:22"\n')
    host = load_fleet(hosts).host("gpu1")
    running = snapshot_from_agent("gpu1", agent_sample("gpu1", cell="baseline"))
    idle = snapshot_from_agent("gpu1", agent_sample("gpu1", cell=None))
    shown = format_status_table([HostReport(host, running, ())])
    assert "running: cell baseline" in shown, shown
    assert "running:" not in format_status_table([HostReport(host, idle, ())])
