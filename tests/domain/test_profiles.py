"""Platform profiles: every shipped file parses, and hosts are validated against them."""

from __future__ import annotations

import pytest

from rgt_tui.domain.config import ConfigError, load_fleet
from rgt_tui.domain.profiles import KNOWN_PROFILES, ProfileError, danger_clock_note, parse_profile
from rgt_tui.profiles import load_profiles, profile_names


def test_every_platform_of_the_reference_has_a_profile_file():
    assert profile_names() == KNOWN_PROFILES
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
