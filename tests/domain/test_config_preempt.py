"""Issue 40's fleet-file keys: ``interruptible``, ``on_preempt`` and ``spare`` (the host's
over the fleet's), and the profiles' grace in seconds."""

from __future__ import annotations

from pathlib import Path

from support.fleet_files import load_error, write_hosts

from rgt_tui.profiles import load_profiles
from rgt_tui.services.fleet.file import load_fleet

FLEET = """
[fleet]
on_preempt = "move"
spare = ["box4", "box5"]

[[hosts]]
name = "box1"
ssh = "root@10.0.0.1"
pull = ["~/runs"]
interruptible = true

[[hosts]]
name = "box2"
ssh = "root@10.0.0.2"
pull = ["~/runs"]
on_preempt = "relaunch"
spare = ["box5"]

[[hosts]]
name = "box4"
ssh = "root@10.0.0.4"
pull = ["~/runs"]

[[hosts]]
name = "box5"
ssh = "root@10.0.0.5"
pull = ["~/runs"]
"""


def test_keys_fill_in_from_the_fleet(tmp_path: Path) -> None:
    fleet = load_fleet(write_hosts(tmp_path, FLEET))
    box1, box2 = fleet.host("box1").watch, fleet.host("box2").watch
    assert (box1.interruptible, box1.on_preempt, box1.spare) == (True, "move", ("box4", "box5"))
    assert (box2.interruptible, box2.on_preempt, box2.spare) == (False, "relaunch", ("box5",))


def test_a_spare_outside_the_file_is_refused_by_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, FLEET.replace('spare = ["box5"]', 'spare = ["box9", "box2"]'))
    text = str(error)
    assert "spare" in text and "box9, box2" in text and "another host of this file" in text
    assert error.line == 16  # box2's spare line


def test_on_preempt_takes_only_its_words(tmp_path: Path) -> None:
    error = load_error(tmp_path, FLEET.replace('on_preempt = "relaunch"', 'on_preempt = "destroy"'))
    assert "on_preempt" in str(error) and "'destroy'" in str(error) and "'move'" in str(error)


def test_profiles_give_their_grace_in_seconds() -> None:
    profiles = load_profiles()
    grace = {n: (p.interruptible_possible, p.spot_grace_s) for n, p in profiles.items()}
    assert grace["vastai"] == (True, 0.0)
    assert grace["runpod"] == (True, 5.0)
    assert grace["slurm"] == (True, 30.0)
    assert grace["lambda"] == (False, None)
