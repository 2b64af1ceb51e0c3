"""What of a fleet file with mistakes is sound (hour s22b #10): its other entries, when
every mistake lies inside some [[hosts]] / [[groups]] entries; nothing otherwise."""

from __future__ import annotations

from pathlib import Path

from support.fleet_files import load_error

GOOD = '[[hosts]]\nname = "box1"\nssh = "local"\n\n'


def test_a_broken_entry_is_left_out_and_the_rest_kept(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        GOOD + '[[hosts]]\nname = "box2"\nssh = "local"\ncost_per_hr = 1\n\n'
        '[[hosts]]\nssh = "local"\n\n'
        '[[groups]]\nname = "pair"\nhosts = ["box1", "box2"]\n',
    )
    assert error.partial is not None
    assert [h.name for h in error.partial.fleet.hosts] == ["box1"]
    assert error.partial.fleet.path == tmp_path / "hosts.toml"
    # Each left out by its name, else its place; the group too, since box2 is not sound.
    assert error.partial.left_out == (
        ("box2", 5),
        ("the [[hosts]] entry at line 10", 10),
        ("pair", 13),
    )


def test_a_name_used_twice_leaves_out_both_entries(tmp_path: Path) -> None:
    twice = (
        GOOD
        + '[[hosts]]\nname = "box2"\nssh = "local"\n\n[[hosts]]\nname = "box1"\nssh = "local"\n'
    )
    error = load_error(tmp_path, twice)
    assert error.partial is not None
    assert [h.name for h in error.partial.fleet.hosts] == ["box2"]
    assert [name for name, _ in error.partial.left_out] == ["box1"]


def test_a_mistake_of_the_whole_file_keeps_nothing(tmp_path: Path) -> None:
    for text in (
        "[fleet]\npoll_second = 2\n\n" + GOOD,  # [fleet]
        "colour = 1\n" + GOOD,  # the top level
        GOOD.replace('ssh = "local"\n', 'ssh = "local"\nspare = ["nosuch"]\n'),  # across hosts
        '[[hosts]]\nname = "box1"\nssh = 3\n',  # no entry sound
    ):
        assert load_error(tmp_path, text).partial is None, text
