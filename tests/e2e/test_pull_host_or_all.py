"""`rgt-tui pull` takes one HOST or --all: its help says so (it said "default: every
host", and a bare `pull` is refused), and naming both is told as both (a user's hour)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.cli import exit_codes, main


def test_help_says_host_or_all(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["pull", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "host name from the fleet file (or --all for every host)" in text, text
    assert "default: every host" not in text, text


def test_neither_and_both_are_refused_with_their_own_words(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a").mkdir()
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[[hosts]]\nname = "one"\nssh = "local"\npull = ["{tmp_path / "a"}"]\n')
    assert main(["pull", "--hosts", str(hosts)]) == exit_codes.EXIT_BAD_INPUT
    assert "name one HOST, or --all for every host" in capsys.readouterr().err
    assert main(["pull", "one", "--all", "--hosts", str(hosts)]) == exit_codes.EXIT_BAD_INPUT
    assert "name one HOST or --all, not both (one and --all)" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["inf", "1e-9", "0", "nan"])
def test_a_bandwidth_limit_that_cannot_move_a_pull_is_refused(
    value: str, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--bwlimit inf` was taken as a budget of inf and 1e-9 left the pull at "eta ?"."""
    (tmp_path / "a").mkdir()
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[[hosts]]\nname = "one"\nssh = "local"\npull = ["{tmp_path / "a"}"]\n')
    code = main(["pull", "one", "--bwlimit", value, "--hosts", str(hosts)])
    assert code == exit_codes.EXIT_BAD_INPUT
    assert "--bwlimit must be at least 0.1 Mbit/s and finite" in capsys.readouterr().err


def test_pull_all_says_a_failed_host_once_in_a_log(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Off a terminal each host's phase is a line: a host that could not be reached was
    printed twice (its "failed" phase, then again as the view was told it failed)."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n'
        '[[hosts]]\nname = "gone"\nssh = "root@127.0.0.1:1"\npull = ["/x"]\n'
    )
    assert main(["pull", "--all", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    out, err = capsys.readouterr()
    assert err.count("gone: failed") == 1, err
    assert "gone: FAILED: cannot reach gone" in out, out


def test_pull_of_one_host_says_why_it_failed_once(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """h491 #11: the failed phase's line carried the reason, then the command's own line
    said it again with its fix."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n'
        '[[hosts]]\nname = "gone"\nssh = "root@127.0.0.1:1"\npull = ["/x"]\n'
    )
    assert main(["pull", "gone", "--hosts", str(hosts)]) == exit_codes.EXIT_PROBLEMS
    err = capsys.readouterr().err
    assert err.count("cannot reach gone") == 1, err
    assert "gone: failed\n" in err and "rgt-tui pull: gone: cannot reach gone" in err, err


def test_teardown_help_says_check_records_the_acks_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Hour s30 #2: "--check: re-scan" read as read-only, yet `--check --ack-missing a`
    records the acknowledgement (as docs/teardown.md says); the help says so too."""
    with pytest.raises(SystemExit):
        main(["teardown", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "any --ack-* given is recorded for this box first, and counts" in text, text
    assert "accept a cell with no results, recorded for this box" in text, text


def test_bwlimit_none_lifts_the_fleets_rate_and_a_word_is_told(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The help said "none: unlimited" and argparse refused `none` as not a float, so a
    fleet's pull_rate_mbit could not be lifted from the command line (hour s34 CLI #11)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.txt").write_text("x")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[fleet]\npull_rate_mbit = 8\nresults_dir = "{tmp_path / "r"}"\n'
        f'[[hosts]]\nname = "one"\nssh = "local"\npull = ["{tmp_path / "a"}"]\n'
    )
    base = ["pull", "--all", "--hosts", str(hosts)]
    assert main(base) == exit_codes.EXIT_OK
    assert "budget 8 Mbit/s" in capsys.readouterr().out
    assert main([*base, "--bwlimit", "None"]) == exit_codes.EXIT_OK
    out = capsys.readouterr().out
    assert "all hosts: 1/1 complete" in out and "budget" not in out, out
    with pytest.raises(SystemExit):
        main([*base, "--bwlimit", "fast"])
    assert "'fast' is not a number of Mbit/s or none" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "33", "100000"])
def test_a_number_of_jobs_out_of_range_is_refused(
    value: str, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hour s45b #5: `--jobs 100000` (a typo) sat 85 s opening SFTP sessions with nothing
    to copy."""
    (tmp_path / "a").mkdir()
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[[hosts]]\nname = "one"\nssh = "local"\npull = ["{tmp_path / "a"}"]\n')
    code = main(["pull", "one", "--jobs", value, "--hosts", str(hosts)])
    assert code == exit_codes.EXIT_BAD_INPUT
    assert f"--jobs must be 1 to 32 (got {value})" in capsys.readouterr().err
