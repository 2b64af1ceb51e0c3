"""What a fleet file that TOML itself refuses is told: a key or table given twice in
TOML's words with the first one's line, a byte that is not UTF-8 by its line, a folder
as a folder; the quotes-and-brackets fix only for the syntax slips it fits."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import rgt
from support.fleet_files import load_error, write_hosts

from rgt_tui.domain.config import ConfigError
from rgt_tui.services.fleet.file import load_fleet

HOST = '[[hosts]]\nname = "box1"\nssh = "u@h:22"\n'
QUOTES = "quotes, brackets and commas"


def test_a_key_set_twice_says_so_with_the_first_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, HOST + "cost_per_hour = 1.29\ncost_per_hour = 2\n")
    assert (err.line, err.key) == (5, "cost_per_hour")
    assert err.message == "cost_per_hour is set twice (line 4): keep one"


def test_a_key_set_twice_in_another_table_is_not_blamed_on_the_first_table(tmp_path: Path) -> None:
    err = load_error(tmp_path, HOST + HOST.replace("box1", "box2") + 'name = "b"\n')
    assert err.line == 7 and err.message == "name is set twice (line 5): keep one"


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        (
            HOST + '\n[hosts]\nname = "box2"\n',
            5,
            "[hosts] declares a table named hosts, but [[hosts]] at line 1 already made hosts "
            "an array of tables (a list of entries) — write [[hosts]], with double brackets, "
            "to add an entry",
        ),
        (
            "[fleet]\npoll_seconds = 2\n" + HOST + "[fleet]\nmax_parallel = 2\n",
            6,
            "the table [fleet] is declared twice (first at line 1) — keep one [fleet] header "
            "and put all its keys under it",
        ),
        (
            "[fleet.thresholds]\ninode_pct = 90\n[fleet.thresholds]\n",
            3,
            "the table [fleet.thresholds] is declared twice (first at line 1)",
        ),
        (
            '[hosts]\nname = "box1"\n[[hosts]]\nname = "box2"\n',
            3,
            "[[hosts]] adds an entry to an array of tables named hosts, but hosts is already "
            "a table at line 1 ([hosts], single brackets) — write every hosts header as [[hosts]]",
        ),
    ],
)
def test_a_table_declared_twice_is_said_in_toml_words(
    tmp_path: Path, text: str, line: int, says: str
) -> None:
    err = load_error(tmp_path, text)
    assert err.line == line and says in err.message, err.message
    assert QUOTES not in err.message and "('" not in err.message  # no tuple, no wrong fix


def test_a_syntax_slip_keeps_the_quotes_fix(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[[hosts]]\nname = "a\n')
    assert err.line == 2 and "TOML syntax error" in err.message and QUOTES in err.message


def test_an_unclosed_array_is_named_by_the_line_that_opened_it(tmp_path: Path) -> None:
    """h472 #7: tomllib names where it gave up (the next header), line 6 here."""
    err = load_error(tmp_path, HOST + 'pull = ["/w"\n\n' + HOST.replace("box1", "box2"))
    assert (err.line, err.key) == (4, "pull"), err
    assert "opened here with [ and never closed with ] (tomllib stopped at line 6)" in err.message
    assert QUOTES in err.message
    # A bracket inside a string between them is text (review h473 #7).
    err = load_error(
        tmp_path, HOST + 'pull = ["/w"\nrun = "echo [ # x"\n\n' + HOST.replace("box1", "box2")
    )
    assert (err.line, err.key) == (4, "pull"), err


def test_a_byte_that_is_not_utf8_is_named_by_its_line(tmp_path: Path) -> None:
    path = tmp_path / "hosts.toml"
    path.write_bytes(HOST.encode() + 'label = "é'.encode() + b'\xff"\n')  # é: 2 bytes, 1 column
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    assert info.value.line == 4
    assert "byte 0xff at column 11 is not UTF-8" in info.value.message
    assert "codec" not in str(info.value)


def test_a_folder_given_as_the_fleet_file_is_called_a_folder(tmp_path: Path) -> None:
    write_hosts(tmp_path, HOST)
    ran = rgt("status", "--hosts", tmp_path)
    assert ran.returncode == 2, ran.stderr
    assert "is a folder, not a fleet file" in ran.stderr and "not found" not in ran.stderr
    assert f"the one in it is {tmp_path / 'hosts.toml'}" in ran.stderr
