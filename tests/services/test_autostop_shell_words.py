"""The autostop's destroy-word guard reads the user's ``stop`` command as the shell will
(issue 39): quoting undone (``dest''roy``, ``des\\troy``, ``"destroy"``), ``;``/``&&``
split off, a line continuation joined, ANSI-C ``$'…'`` quoting refused. A command the
shell rules cannot read (a quote left open) is refused naming the host and the key.
Real fleet file, real profiles, the refusals AutoStop says at start."""

from __future__ import annotations

import re

import pytest
from support.fleet_files import write_hosts

from rgt_tui.domain.autostop import DESTROY_WORDS, DESTROY_WORDS_CJK, destroy_word
from rgt_tui.profiles import load_profiles
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.journal import Journal
from rgt_tui.services.runtime.locks import HostLocks
from rgt_tui.services.watch.drivers.autostop import AutoStop

# TOML literal strings ('''…'''): each command reaches the guard exactly as written here.
BYPASSES = {
    "split-quote": "vastai dest''roy instance 43",
    "backslash": "vastai des\\troy instance 43",
    "double-quoted": 'vastai "destroy" instance 43',
    "ansi-c": "vastai $'destroy' instance 43",
    "ansi-c-escape": "vastai $'\\x64estroy' instance 43",
    "joined": "vastai stop instance 43;dest''roy",
    "and-joined": 'vastai stop instance 43&&"ter"minate',
    "continued": "vastai stop instance 43 && vastai d\\\nestroy instance 43",
    "runpod": "runpodctl re''move pod abc",
    "cjk": "autodl-cli 释''放 inst-9",
}
HONEST = {
    "vast-stop": "vastai stop instance 123",
    "runpod-stop": "runpodctl stop pod abc",
    "quoted-id": "vastai stop instance '123'",
}


def fleet_text(commands: dict[str, str]) -> str:
    return "".join(
        f'[[hosts]]\nname = "{name}"\nssh = "root@10.0.0.5"\nprofile = "vastai"\n'
        f"stop = '''{command}'''\nautostop_minutes = 30\n\n"
        for name, command in commands.items()
    )


def refusals(tmp_path, commands: dict[str, str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    fleet = load_fleet(write_hosts(tmp_path, fleet_text(commands)))
    auto = AutoStop(
        fleet,
        FleetConnections(fleet.hosts),
        emit=lambda e: None,
        locks=HostLocks(),
        journal=Journal(tmp_path),
    )
    return auto.refusals


def test_quoting_does_not_hide_a_destroy_word(tmp_path) -> None:  # type: ignore[no-untyped-def]
    said = refusals(tmp_path, BYPASSES)
    assert set(said) == set(BYPASSES)
    for name, why in said.items():
        assert why.startswith(f"{name}: autostop refused — "), why
        # The command is not repeated (its block's line number may hold "43").
        assert "instance 43" not in why and "abc" not in why
    assert "stop contains 'destroy'" in said["split-quote"]
    assert "stop contains 'terminate'" in said["and-joined"]
    assert "stop contains 'remove'" in said["runpod"]
    assert "'释放'" in said["cjk"]
    assert "$'…' quoting" in said["ansi-c-escape"]


def test_honest_stop_commands_are_accepted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert refusals(tmp_path, HONEST) == {}


def test_a_command_the_shell_rules_cannot_read_is_refused_naming_host_and_key(tmp_path) -> None:  # type: ignore[no-untyped-def]
    said = refusals(tmp_path, {"open-quote": "vastai stop instance 'abc"})
    why = said["open-quote"]
    assert why.startswith("open-quote: autostop refused — ")
    assert "stop = … cannot be read as a shell command (the [[hosts]] block at line 1)" in why
    assert "no closing quotation" in why
    assert "abc" not in why


@pytest.mark.parametrize("command", sorted(BYPASSES.values()))
def test_destroy_word_sees_through_quoting(command: str) -> None:
    if "\\x64" in command:  # no word to find: refused for its quoting instead
        return
    assert destroy_word(command) is not None


def test_every_profiles_destroying_verb_is_a_destroy_word() -> None:
    """One list of destroy words (domain/autostop.py), kept true to the profiles: each
    platform's ``teardown_verb`` names its destroying verb, and that verb is in the list.
    (The profiles carry the verb as prose, not as a list to read words from.)"""
    words = set(DESTROY_WORDS)
    no_verb = {"generic-ssh", "slurm"}  # "manual (provider console or API)", "none (...)"
    for profile in load_profiles().values():
        if profile.name in no_verb:
            continue
        verb = profile.teardown_verb.lower()
        found = set(re.findall(r"[a-z]+", verb)) & words or {w for w in DESTROY_WORDS_CJK if w in verb}  # fmt: skip
        assert found, (profile.name, profile.teardown_verb)
