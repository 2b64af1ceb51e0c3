"""The autostop's rules without a box: which hosts may ever have a stop run (the profile's
reversible stop, the destroy-word guard, the teardown command), said at start from the
real fleet file; the idle clock; a teardown under way or done; the profile field."""

from __future__ import annotations

import sys

import pytest
from support.fleet_files import write_hosts
from support.gate import BOX, IDENTITY, happy_events

from rgt_tui.domain.autostop import MAX_SAMPLE_GAP_S, IdleClock, destroy_word
from rgt_tui.domain.teardown_gate import ConfirmationTyped, Rescanned
from rgt_tui.profiles import PROFILE_DIR, load_profiles, parse_profile
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal, TeardownRecord
from rgt_tui.services.runtime.locks import HostLocks
from rgt_tui.services.watch.drivers.autostop import AutoStop, teardown_underway

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 fallback named in pyproject's dependencies
    import tomli as tomllib

FLEET = """
[[hosts]]
name = "vast-ok"
ssh = "root@10.0.0.5"
profile = "vastai"
teardown = "vastai destroy instance 42"
stop = "vastai stop instance 42"
autostop_minutes = 30

[[hosts]]
name = "runpod-ok"
ssh = "root@10.0.0.6"
profile = "runpod"
stop = "runpodctl stop pod abc"
autostop_minutes = 20

[[hosts]]
name = "lambda"
ssh = "ubuntu@10.0.0.7"
profile = "lambda"
stop = "lambda-cli stop i-1"
autostop_minutes = 30

[[hosts]]
name = "bare"
ssh = "root@10.0.0.8"
stop = "ssh root@10.0.0.8 poweroff"
autostop_minutes = 30

[[hosts]]
name = "vast-destroy"
ssh = "root@10.0.0.9"
profile = "vastai"
stop = "vastai destroy instance 43"
autostop_minutes = 30

[[hosts]]
name = "vast-teardown"
ssh = "root@10.0.0.10"
profile = "vastai"
teardown = "vastai stop instance 44 && vastai label instance 44 gone"
stop = "vastai  stop instance 44 &&  vastai label instance 44 gone"
autostop_minutes = 30

[[hosts]]
name = "vast-rm"
ssh = "root@10.0.0.11"
profile = "vastai"
stop = "vastai stop instance 45; rm -rf /data/old"
autostop_minutes = 30

[[hosts]]
name = "autodl-cn"
ssh = "root@10.0.0.12"
profile = "autodl"
stop = "autodl-cli 释放 inst-9"
autostop_minutes = 30

[[hosts]]
name = "stop-only"
ssh = "root@10.0.0.13"
profile = "lambda"
stop = "lambda-cli stop i-2"

[[hosts]]
name = "pod-rm"
ssh = "root@10.0.0.14"
profile = "runpod"
stop = "runpodctl remove pod abc"
autostop_minutes = 30
"""


def test_refusals_are_said_at_start_for_each_host_that_can_never_stop(tmp_path):
    fleet = load_fleet(write_hosts(tmp_path, FLEET))
    auto = AutoStop(
        fleet,
        FleetConnections(fleet.hosts),
        emit=lambda e: None,
        locks=HostLocks(),
        journal=Journal(tmp_path),
    )
    said = auto.refusals
    # Allowed: a reversible stop on a platform that has one. No autostop_minutes: no
    # autostop at all, so nothing to refuse (a stop kept for later use).
    assert set(said) == {
        "lambda", "bare", "vast-destroy", "vast-teardown", "vast-rm", "autodl-cn", "pod-rm"
    }  # fmt: skip
    # The example is the platform's own stop (h602 #7 was offered vast.ai's on RunPod).
    assert 'e.g. stop = "runpodctl stop pod abc123xyz"' in said["pod-rm"], said
    assert 'e.g. stop = "vastai stop instance 1234567"' in said["vast-rm"], said
    assert "e.g. stop" not in said["autodl-cn"], said  # no command line to offer there
    assert (
        "profile lambda (Lambda Cloud) has no reversible stop: terminate (there is no stop)"
        in (said["lambda"])
    )
    assert "sudo shutdown leaves it billing" in said["lambda"]
    assert ": - " not in said["lambda"], said["lambda"]  # an empty value printed as is (s18a #11)
    assert "profile generic-ssh (Bare SSH box)" in said["bare"]
    assert "autodl, paperspace, runpod, vastai" in said["bare"]  # where a stop exists
    assert "stop contains 'destroy'" in said["vast-destroy"]
    assert "stop is the host's teardown command" in said["vast-teardown"]  # spaces aside
    assert "stop contains 'rm'" in said["vast-rm"]
    assert "'释放'" in said["autodl-cn"]
    for name, why in said.items():
        assert why.startswith(f"{name}: autostop refused — ")
    assert (
        "instance 43" not in said["vast-destroy"]
    )  # the command is not repeated (it may hold a token)
    # Where the fix goes: the host's block in the fleet file (hour s23a #9).
    for name, why in said.items():
        assert why.endswith(f"(the [[hosts]] block at line {fleet.host(name).line})"), why


@pytest.mark.parametrize(
    ("command", "word"),
    [
        ("vastai stop instance 1", None),
        ("sudo shutdown -h now", None),  # "shutdown" is not "down"
        ("gcloud compute instances stop vm-1", None),
        ("runpodctl remove pod x", "remove"),
        ("runpodctl pod delete x", "delete"),
        ("sky down mycluster", "down"),
        ("aws ec2 terminate-instances --instance-ids i-1", "terminate"),
        (
            "curl -X POST https://cloud.lambdalabs.com/api/v1/instance-operations/terminate",
            "terminate",
        ),
        ("VASTAI DESTROY INSTANCE 1", "destroy"),
        ("featurize instance 归还", "归还"),
    ],
)
def test_destroy_words_are_whole_words_of_the_command(command, word):
    assert destroy_word(command) == word


def test_the_idle_clock_runs_only_through_unbroken_idle_samples():
    clock = IdleClock()
    assert clock.observe(True, 100.0) and clock.idle_for(400.0) == 300.0
    assert not clock.observe(True, 300.0)  # the same stretch: nothing new to keep
    assert clock.observe(False, 350.0) and clock.idle_for(400.0) == 0.0  # a busy sample
    clock.observe(True, 400.0)
    clock.observe(True, 400.0 + MAX_SAMPLE_GAP_S + 1)  # watch was away: not seen idle
    assert clock.since == 400.0 + MAX_SAMPLE_GAP_S + 1


def test_a_teardown_under_way_or_done_forbids_the_stop(tmp_path):
    journal = Journal(tmp_path)
    journal.observe_box("h1", IDENTITY, 1.0)
    assert teardown_underway(journal.load("h1"), 10.0) is None
    journal.record("h1", 100.0, ConfirmationTyped("h1", "a1"))
    assert "may be running" in (teardown_underway(journal.load("h1"), 200.0) or "")
    assert teardown_underway(journal.load("h1"), 100.0 + 3600) is None  # it opened nothing
    journal.record("h1", 5000.0, ConfirmationTyped("h2", "a2"))  # a wrong name: no teardown
    assert teardown_underway(journal.load("h1"), 5010.0) is None
    # The right name while the gate is locked (a cell runs): its re-scan is recorded and
    # the gate stays shut, so nothing tears the box down — no wait of a teardown's time
    # (s43 spot hour #1: the stop of a box the gate was ready for waited 11 minutes).
    journal.record("h1", 5100.0, ConfirmationTyped("h1", "a3"))
    assert "may be running" in (teardown_underway(journal.load("h1"), 5105.0) or "")
    journal.record("h1", 5106.0, Rescanned((), at=5106.0, attempt="a3", box_id=BOX))
    assert teardown_underway(journal.load("h1"), 5110.0) is None
    # A confirmation that opened the gate: the user destroys the box (by hand, maybe).
    journal.record("h1", 6000.0, *happy_events())
    assert "opened the teardown gate" in (teardown_underway(journal.load("h1"), 9e9) or "")
    # ... unless it no longer holds (a launch since, say): it held a box whose queue ran
    # again idle for 20 minutes (s44 spot hour #4).
    assert teardown_underway(journal.load("h1"), 9e9, lambda opened: "a launch at 06:10") is None
    journal.add_teardown("h1", TeardownRecord(7000.0, "x", 1, "", False, box_id=BOX))
    assert "attempted" in (teardown_underway(journal.load("h1"), 9e9) or "")
    journal.add_teardown("h1", TeardownRecord(7100.0, "x", 0, "", True, box_id=BOX))
    assert "torn down" in (teardown_underway(journal.load("h1"), 9e9) or "")


def test_the_stop_notice_counts_every_cell_of_the_queue():
    """s43 spot hour #7: "3 done, 0 failed of 4" — the fourth, killed and moved on, was
    not said anywhere in the notice."""
    from rgt_tui.domain.queue_state import DONE, SKIPPED, CellView, QueueView
    from rgt_tui.services.watch.drivers.autostop_event import cells_tally

    cells = (*(CellView(i, f"c{i}", DONE, 0) for i in range(3)), CellView(3, "c3", SKIPPED))
    view = QueueView("h1", "finished", cells, None, "boot", 1000, None)
    assert cells_tally(view) == "3 done, 0 failed, 1 moved/skipped of 4"


def test_every_profile_says_whether_its_stop_can_be_undone():
    profiles = load_profiles()
    reversible = {name for name, p in profiles.items() if p.reversible_stop}
    assert reversible == {"autodl", "paperspace", "runpod", "vastai"}
    for path in sorted(PROFILE_DIR.glob("*.toml")):
        assert "\nreversible_stop = " in path.read_text(), path  # stated, not defaulted
    data = tomllib.loads((PROFILE_DIR / "vastai.toml").read_text(encoding="utf-8"))
    data["reversible_stop"] = "yes"
    with pytest.raises(ValueError, match=r"bad\.toml: reversible_stop must be true or false"):
        parse_profile(data, "bad.toml")
    del data["reversible_stop"]
    assert not parse_profile(data, "x.toml").reversible_stop  # unsaid: no stop is run


def test_a_box_with_no_gpu_readings_is_said_unknown_and_a_cpu_box_counts_as_idle() -> None:
    """nvidia-smi gone or broken: "GPUs not idle: the box reports no GPU" kept a box
    billing with nothing said of why (hour s20b #4). A box whose driver lists no GPU
    has none to idle; one whose tools are missing cannot be told idle, and says so."""
    from rgt_tui.domain.autostop import UNKNOWN_GPUS, idle_refusal
    from rgt_tui.domain.snapshot import HostSnapshot

    cpu_box = HostSnapshot("cpu", 1.0, gpu_unavailable_reason="no NVIDIA device")
    assert idle_refusal(cpu_box, "connected", 5.0) is None
    broken = HostSnapshot(
        "gpu1", 1.0, gpu_unavailable_reason="no NVIDIA driver tools (nvidia-smi not found)"
    )
    said = idle_refusal(broken, "connected", 5.0)
    assert said is not None and said.startswith(f"{UNKNOWN_GPUS}: no NVIDIA driver tools")
    assert "stop the box yourself" in said
    running = HostSnapshot("cpu", 1.0, gpu_unavailable_reason="no NVIDIA device", cell="r1")
    assert idle_refusal(running, "connected", 5.0) == "cell r1 runs"


def test_a_queue_stopped_by_the_user_says_how_autostop_can_go_on() -> None:
    """s37 money hour #6: GEN1 told "queue finished … still bills" while autostop waited
    on "the queue is stopped by the user, not finished", with no way on."""
    from rgt_tui.domain.autostop import queue_refusal
    from rgt_tui.domain.queue_records import RunnerLaunch
    from rgt_tui.domain.queue_state import USER_STOPPED, QueueView

    launch = RunnerLaunch(1000, "boot", "tmux", 0, "run.sh", 42)
    why = queue_refusal(QueueView("h", USER_STOPPED, (), launch, "boot", 2000, 1))
    assert why is not None and why.startswith("the queue is stopped by the user, not finished")
    assert "relaunch the rest (L, rgt-tui launch)" in why, why


def test_a_groups_pull_of_the_boxs_rank_is_looked_at_at_once(tmp_path):
    """Review h504 #6: a rank box's refusal waits for its group line, which a `pull GROUP`
    and `verify GROUP` settle; the refusal was looked at again only 5 minutes on, because
    its stamp read the box's own records alone."""
    from rgt_tui.services.records import manifest_path, verification_path

    text = (
        '[[hosts]]\nname = "a"\nssh = "root@10.0.0.5"\n\n'
        '[[hosts]]\nname = "b"\nssh = "root@10.0.0.6"\nstop = "lambda-cli stop i-1"\n'
        'profile = "lambda"\nautostop_minutes = 30\n\n'
        '[[groups]]\nname = "pair"\nhosts = ["a", "b"]\nrun = "torchrun x.py"\n'
        'master_addr = "10.0.0.5"\npull_ranks = "all"\n'
    )
    fleet = load_fleet(write_hosts(tmp_path, text))
    auto = AutoStop(
        fleet, FleetConnections(fleet.hosts), emit=lambda e: None, locks=HostLocks(),
        journal=Journal(tmp_path / "journal"),
    )  # fmt: skip
    box = fleet.host("b")
    before = auto._records_stamp(box)
    rank1 = fleet.results_dir / "pair.rank1"  # where the group's pull keeps rank 1's files
    manifest_path(rank1).parent.mkdir(parents=True)
    manifest_path(rank1).write_text("{}")
    after_pull = auto._records_stamp(box)
    assert after_pull != before
    verification_path(rank1).write_text("{}")
    assert auto._records_stamp(box) != after_pull
