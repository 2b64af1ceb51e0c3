"""The Overview lists what was wrong with the host's last sample once each, under one
``agent:`` (ux-i 10: the agent's own errors read ``agent: agent: disk …``)."""

from __future__ import annotations

from pathlib import Path

from support.pilot import SIZE, make_app, screen_text, wait_for
from support.samples import agent_sample, make_update

from rgt_tui.messages import HostUpdated

HOST = "a100-train"


async def test_the_agents_errors_and_bad_fields_read_agent_once(tmp_path: Path) -> None:
    data = agent_sample(HOST, errors=["disk /work: No such file or directory"])
    data["host_cpus"] = "many"  # a field of the wrong type: the parser's own problem
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(HostUpdated(make_update(HOST, data)))
        await wait_for(lambda: HOST in app.latest, pilot=pilot)
        app.open_host(HOST, tab="overview")
        text = await wait_for(
            lambda: "No such file" in screen_text(app) and screen_text(app),
            pilot=pilot,
            what="the agent's error on the Overview",
        )
        assert "agent: disk /work: No such file or directory" in text, text
        assert "agent: sample.host_cpus: expected a number, got 'many'" in text, text
        assert "agent: agent:" not in text, text
