"""Platform profiles: every shipped file parses, and hosts are validated against them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.domain.config import ConfigError
from rgt_tui.domain.profiles import DEFAULT_PROFILE, danger_clock_note
from rgt_tui.profiles import (
    KNOWN_PROFILES,
    ProfileError,
    load_profiles,
    parse_profile,
    read_profiles,
)
from rgt_tui.services.fleet.file import load_fleet


def test_every_platform_of_the_reference_has_a_profile_file():
    assert KNOWN_PROFILES == (
        "autodl", "china", "generic-ssh", "kubernetes", "lambda", "paperspace", "runpod",
        "slurm", "vastai",
    )  # fmt: skip
    assert DEFAULT_PROFILE in KNOWN_PROFILES
    profiles = load_profiles()
    assert set(profiles) == set(KNOWN_PROFILES)
    assert profiles["autodl"].release_after_off_days == 15 and not profiles["autodl"].irreversible
    assert profiles["vastai"].teardown_verb == "destroy" and profiles["vastai"].irreversible
    assert any("bandwidth" in k for k in profiles["vastai"].keeps_billing)
    assert profiles["china"].release_after_off_days == 10
    for p in profiles.values():
        assert p.danger_clocks and p.teardown_verb and p.spot_grace


def test_malformed_profile_names_the_file_and_key():
    data = dict(load_profiles()["runpod"].__dict__)
    data["keeps_billing"] = "volume"
    data["danger_clocks"] = list(data["danger_clocks"])
    with pytest.raises(ProfileError, match=r"bad\.toml: keeps_billing must be a list"):
        parse_profile(data, "bad.toml")
    with pytest.raises(ProfileError, match="missing keys"):
        parse_profile({"name": "x"}, "bad.toml")


def test_host_profile_is_validated(tmp_path):
    f = tmp_path / "hosts.toml"
    f.write_text('[[hosts]]\nname = "a"\nssh = "local"\nprofile = "vast"\n')
    with pytest.raises(ConfigError) as err:
        load_fleet(f)
    assert (
        err.value.line == 4
        and err.value.key == "profile"
        and "did you mean 'vastai'" in str(err.value)
    )
    f.write_text('[[hosts]]\nname = "a"\nssh = "local"\nprofile = "runpod"\n')
    assert load_fleet(f).hosts[0].profile == "runpod"


def test_every_profile_shows_its_spot_grace_with_its_danger_clocks():
    for p in load_profiles().values():
        assert p.clock_lines == (*p.danger_clocks, f"spot grace: {p.spot_grace}")
        note = danger_clock_note(p)
        assert note.splitlines()[-1] == f"• spot grace: {p.spot_grace}"
        assert all(f"• {clock}" in note for clock in p.danger_clocks)
    assert "spot grace: ~5 s SIGTERM then SIGKILL" in danger_clock_note(load_profiles()["runpod"])


def test_what_a_teardown_destroys_reads_after_the_word_destroys():
    """Shown as "destroys {destroys}": a noun phrase, never "destroys destroy deletes..."."""
    for profile in load_profiles().values():
        said = f"destroys {profile.destroys}"
        first = profile.destroys.split()[0]
        assert first not in {"destroy", "destroys", "release", "releasing", "deletes"}, said
        assert "deletes" not in profile.destroys, said


def test_the_known_names_are_the_files_present_and_each_file_is_named_so(tmp_path):
    """One loader, one list: a profile file added is a known name, and a file whose
    ``name`` is not its file name is refused naming the file (hosts use the file name)."""
    shipped = load_profiles()["runpod"]
    text = (Path(__file__).parents[2] / "rgt_tui/profiles/runpod.toml").read_text()
    (tmp_path / "newcloud.toml").write_text(text.replace('name = "runpod"', 'name = "newcloud"'))
    assert set(read_profiles(tmp_path)) == {"newcloud"}
    assert read_profiles(tmp_path)["newcloud"].teardown_verb == shipped.teardown_verb
    (tmp_path / "other.toml").write_text(text)
    with pytest.raises(ProfileError, match=r"other\.toml: name = 'runpod' .* 'other'"):
        read_profiles(tmp_path)
