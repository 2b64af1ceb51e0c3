"""A box without python3 where an ssh command looks (hour s33 TUI #8): the agent's command
is not found (127), and the pane read "connection lost … the run may still be alive"
with no word of python3. Over a real loopback box whose PATH holds no python3."""

from __future__ import annotations

from support.pulls import host_of
from support.telemetry import Watch

from rgt_tui.services.telemetry import HostMonitor
from rgt_tui.transport import transport_for
from rgt_tui.transport.backoff import Backoff


async def test_no_python3_on_the_box_is_said_with_its_fix(loopback_fleet, tmp_path) -> None:
    box = loopback_fleet.box("box1")
    empty = tmp_path / "no-python"
    empty.mkdir()
    box.extra_env["PATH"] = str(empty)  # the shell is found by its path; python3 is not
    host = host_of(loopback_fleet)
    monitor = HostMonitor(host, transport_for(host), interval=0.2, backoff=Backoff(base=5, cap=5))
    watch = Watch(monitor)
    try:
        failed = await watch.until(lambda u: bool(u.connection.error), 30, "the agent's failure")
        conn = failed.connection
        assert conn.error.startswith("the telemetry agent did not start: remote command exited "
                                     "with status 127"), conn.error  # fmt: skip
        assert "python3" in conn.error and conn.fix and "python3 on the PATH" in conn.fix
    finally:
        await watch.stop()
