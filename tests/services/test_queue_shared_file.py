"""Two hosts naming one queue file (a copied [[hosts]] block) are told so, once, at the
second host's block: not "cell name 'a' is used 2 times: q.txt:1 and q.txt:1 — rename
one config" for every cell of it (hour s17b, finding 10)."""

from __future__ import annotations

from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.queue.check import check_fleet_queues, host_problems

FLEET = """\
[[hosts]]
name = "y"
ssh = "ssh root@10.0.0.1"
queue = "q.txt"
run = "python train.py --config {cfg}"

[[hosts]]
name = "z"
ssh = "ssh root@10.0.0.2"
queue = "q.txt"
run = "python train.py --config {cfg}"
"""


def test_two_hosts_naming_one_queue_file_are_told_once_at_the_second(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # messages show paths relative to the working folder
    (tmp_path / "hosts.toml").write_text(FLEET)
    (tmp_path / "q.txt").write_text("configs/a.yaml t\nconfigs/b.yaml t\n")
    fleet = load_fleet(tmp_path / "hosts.toml")
    checked = check_fleet_queues(fleet)
    shared = (
        f"{tmp_path / 'hosts.toml'}:7: queue: hosts y and z both name q.txt — give each host "
        "its own queue file"
    )
    assert not checked.ok
    assert checked.messages() == [shared]
    for name in ("y", "z"):  # a launch of either is stopped, with the same words
        assert host_problems(fleet, fleet.host(name), checked) == [shared]


def test_a_name_used_twice_in_a_shared_file_is_still_named_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts.toml").write_text(FLEET)
    (tmp_path / "q.txt").write_text("configs/a.yaml t\nother/a.yaml t\n")
    fleet = load_fleet(tmp_path / "hosts.toml")
    messages = check_fleet_queues(fleet).messages()
    assert len(messages) == 2, messages
    assert "both name q.txt" in messages[0]
    assert messages[1].startswith("cell name 'a' is used 2 times: q.txt:1 and q.txt:2 — ")
