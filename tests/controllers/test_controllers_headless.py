"""The controllers decide without Textual (issue 28): their host is anything with
``run_worker`` and ``notify`` (``ControllerHost``), here a plain asyncio one, so the
queue keys' decisions and the trusting of a refused host key run with no App at all.

Trusting goes through ``services.fleet.trust`` and writes the real known_hosts file.
"""

from __future__ import annotations

from pathlib import Path

from support.controller_host import LoopHost
from support.fleet_files import write_hosts
from support.waiting import wait_for

from rgt_tui.controllers.host_keys import HostKeys
from rgt_tui.controllers.queue_actions import QueueController, no_queue_hint
from rgt_tui.domain.errors import HostKeyError
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet

LINE = "[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMDi1ZsJqG3s8o0tWmhzLxqYw6pE9pLzJ1d1Jx0Vn9Rk"


FLEET = """
[[hosts]]
name = "queued"
ssh = "local"
queue = "q.txt"
run = "python train.py {cfg}"

[[hosts]]
name = "bare"
ssh = "local"
"""


async def test_the_queue_keys_decide_without_textual(tmp_path: Path) -> None:
    fleet = load_fleet(write_hosts(tmp_path, FLEET))
    host, opened = LoopHost(), []
    queues = QueueController(
        host,
        FleetConnections(fleet.hosts),
        fleet=lambda: fleet,
        open_screen=lambda action, h: opened.append((action, h.name)),
    )
    queues.request("queued", "launch")
    queues.request("queued", "diagnose")
    queues.request("bare", "logs")  # the Logs tab needs no queue file
    queues.request("bare", "diagnose")  # nor does a diagnosis
    queues.request("bare", "launch")  # ... a launch does: the hint, no screen
    queues.request("nowhere", "launch")
    assert opened == [
        ("launch", "queued"),
        ("diagnose", "queued"),
        ("logs", "bare"),
        ("diagnose", "bare"),
    ]
    assert host.notices == [
        (no_queue_hint("bare", fleet), "bare", "warning"),
        ("No host named nowhere", "", "error"),
    ]
    assert "queue =" in host.notices[0][0] and str(fleet.path) in host.notices[0][0]


def refused_key(known_hosts: Path, kind: str = "unknown") -> HostKeyError:
    return HostKeyError(
        "box1",
        f"{kind} host key",
        "compare the fingerprint, then trust it",
        kind=kind,
        presented="ssh-ed25519 SHA256:abcdefghijklmnop",
        trust_line=LINE if kind == "unknown" else None,
        known_hosts_file=known_hosts,
    )


async def test_a_refused_key_is_trusted_only_on_yes_through_the_service(tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    host, shown, asked, reconnected = LoopHost(), [], [], []
    keys = HostKeys(
        host,
        reconnected.append,
        show=lambda name, error: shown.append((name, error)),
        ask=lambda error, answered: asked.append((error, answered)),
    )
    error = refused_key(known_hosts)
    keys.refused("box1", error)
    keys.review("box1")
    ((asked_error, answered),) = asked
    assert asked_error is error and shown == [("box1", error)]
    answered(False)  # Cancel: nothing written, nothing started
    assert not host.workers and known_hosts.read_text() == ""
    answered(True)
    await wait_for(lambda: reconnected == ["box1"], what="the reconnect after trusting")
    assert known_hosts.read_text().splitlines() == [LINE]
    assert shown[-1] == ("box1", None) and "box1" not in keys.refusals
    ((message, title, _),) = host.notices
    assert title == "box1" and f"added to {known_hosts}" in message


async def test_a_changed_key_is_never_trusted(tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    host, reconnected = LoopHost(), []
    keys = HostKeys(
        host,
        reconnected.append,
        show=lambda name, error: None,
        ask=lambda error, answered: answered(True),  # even if the user said yes
    )
    keys.refused("box1", refused_key(known_hosts, kind="changed"))
    keys.review("box1")
    await wait_for(lambda: host.notices, what="the refusal notice")
    ((message, _, severity),) = host.notices
    assert severity == "error" and "only an unknown host key can be trusted" in message
    assert known_hosts.read_text() == "" and reconnected == []
    assert "box1" in keys.refusals
