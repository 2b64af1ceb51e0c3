"""The watch keys of the fleet file: notification URLs (secrets as ${VAR}, never
values), durations, the opt-in stop and its idle time."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.domain.config import ConfigError
from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.domain.config_watch import parse_duration

HOST = '[[hosts]]\nname = "a"\nssh = "root@x:22"\npull = ["/w"]\n'


def load(text: str):
    return parse_fleet(Path("/f/hosts.toml"), text, ["generic-ssh"])


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15m", 900.0), ("1h30m", 5400.0), ("90s", 90.0), ("2h", 7200.0), ("0.5m", 30.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "15", "0m", "m", "1d", "-5m"])
def test_not_durations(text: str) -> None:
    assert parse_duration(text) is None


def test_fleet_targets_come_first_and_hosts_add_theirs() -> None:
    fleet = load(
        '[fleet]\nnotify = ["json://localhost:9/a"]\nnotify_reminder_minutes = 5\n'
        "tui_notify = true\npull_rate_mbit = 80\n"
        + HOST
        + 'notify = ["ntfy://ntfy.sh/${TOPIC}", "json://localhost:9/a"]\n'
        'pull_every = "15m"\nstop = "vastai stop instance 1"\nautostop_minutes = 30\n'
    )
    assert fleet.watch.reminder_minutes == 5 and fleet.watch.tui_notify
    assert fleet.watch.pull_rate_mbit == 80
    watch = fleet.hosts[0].watch
    # The ${VAR} stays as written: it is expanded when a message is sent, never here.
    assert watch.notify == ("json://localhost:9/a", "ntfy://ntfy.sh/${TOPIC}")
    assert watch.pull_every_s == 900 and watch.autostop_minutes == 30
    assert watch.stop == "vastai stop instance 1"


def test_mistakes_name_the_line_and_the_fix() -> None:
    with pytest.raises(ConfigError) as caught:
        load(HOST + 'pull_every = "soon"\nautostop_minutes = 3\nnotify = ["hook"]\n')
    text = str(caught.value)
    assert ':5: pull_every: expected a duration such as pull_every = "15m"' in text
    assert ":6: autostop_minutes: autostop_minutes needs the provider's reversible stop" in text
    assert ":7: notify: 'hook' is not a notification URL" in text
    with pytest.raises(ConfigError, match="tui_notify: expected true or false"):
        load('[fleet]\ntui_notify = "yes"\n' + HOST)


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ('"1min"', '"1m"'),
        ('"2 hours"', '"2h"'),
        ('"1h 30mins"', '"1h30m"'),
        ("60", '"60s" or "60m"'),  # a bare number names no unit: both, said
    ],
)
def test_a_duration_written_otherwise_is_answered_with_what_it_meant(written, meant) -> None:
    """s37 fleet hour #13: "1min" and 60 were refused with the format alone."""
    with pytest.raises(ConfigError) as caught:
        load(HOST + f"pull_every = {written}\n")
    assert f"did you mean pull_every = {meant}?" in str(caught.value)


def test_no_guess_that_would_not_read_as_a_duration() -> None:
    with pytest.raises(ConfigError) as caught:
        load(HOST + "pull_every = 1e-9\n")
    assert "did you mean" not in str(caught.value)  # "1e-09s" would be refused too


def test_an_empty_notify_is_no_targets_and_a_wrong_one_says_urls() -> None:
    assert load("[fleet]\nnotify = []\n" + HOST).hosts[0].watch.notify == ()
    with pytest.raises(ConfigError, match="expected a non-empty list of notification URLs"):
        load('[fleet]\nnotify = "ntfy://ntfy.sh/x"\n' + HOST)
    # The wrong item named ("got a list" said nothing: a user's hour).
    with pytest.raises(ConfigError, match="item 2 of notify is 5, not one of the notification"):
        load('[fleet]\nnotify = ["json://a", 5]\n' + HOST)


@pytest.mark.parametrize("rate", ["1e-9", "0.0001", "0.05"])
def test_a_pull_budget_too_small_to_move_is_refused_by_line(rate: str) -> None:
    """1e-9 Mbit/s left every pull at "eta ?" for good (a user's hour, on --bwlimit)."""
    with pytest.raises(ConfigError) as caught:
        load(f"[fleet]\npull_rate_mbit = {rate}\n" + HOST)
    assert ":2: pull_rate_mbit: expected at least 0.1 (Mbit/s)" in str(caught.value)
    assert load("[fleet]\npull_rate_mbit = 0.1\n" + HOST).watch.pull_rate_mbit == 0.1
