"""Records belong to a fleet and a box: two fleet files that both list a ``box1`` keep
two journals, through the real command line, and never flip one another's box; the
old flat journal is never read as any fleet's."""

from __future__ import annotations

import os
from pathlib import Path

from support.cli import arun

from rgt_tui.domain.box_identity import BoxIdentity
from rgt_tui.paths import LOCAL_FLEET_KEY, fleet_key, journal_dir, journal_root
from rgt_tui.services.journal import HostJournal, Journal, TeardownRecord


def test_a_fleets_key_is_its_files_real_location(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "hosts.toml", tmp_path / "b" / "hosts.toml"
    for f in (a, b):
        f.parent.mkdir()
        f.write_text("")
    assert fleet_key(a) != fleet_key(b)  # the same name, two fleets
    assert fleet_key(a).startswith("hosts-") and fleet_key(b).startswith("hosts-")
    # One file reached by another path (relative, through a symlink) is one fleet.
    link = tmp_path / "link.toml"
    link.symlink_to(a)
    assert fleet_key(link) == fleet_key(a)
    cwd = Path.cwd()
    try:
        os.chdir(tmp_path / "a")
        assert fleet_key(Path("hosts.toml")) == fleet_key(a)
    finally:
        os.chdir(cwd)
    # No fleet file (this machine alone): a folder of its own, never a file's.
    assert fleet_key(None) == LOCAL_FLEET_KEY and fleet_key(tmp_path / "local") != "local"
    # A name that is no file name's stuff is kept out of the folder's name.
    odd = tmp_path / "my fleet;$(rm -rf).toml"
    assert "/" not in fleet_key(odd) and " " not in fleet_key(odd) and "$" not in fleet_key(odd)
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    assert journal_dir(a, env) == tmp_path / "state" / "rgt-tui" / "journal" / fleet_key(a)
    assert journal_dir(a, env).parent == journal_root(env)


def test_two_fleets_with_the_same_host_name_keep_their_own_records(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    fleets = [tmp_path / "one" / "hosts.toml", tmp_path / "two" / "hosts.toml"]
    boxes = [BoxIdentity("a" * 32, "SHA256:one"), BoxIdentity("b" * 32, "SHA256:two")]
    journals = [Journal(journal_dir(f, env)) for f in fleets]
    for turn in range(3):  # each fleet's gpu1 answers in turn, as two open TUIs would see
        for journal, box in zip(journals, boxes, strict=True):
            journal.observe_box("gpu1", box, float(turn))
    journals[1].add_teardown("gpu1", TeardownRecord(9.0, "true", 0, "", True, boxes[1].box_id))
    one, two = (j.load("gpu1") for j in journals)
    assert (one.box, two.box) == (boxes[0], boxes[1])
    assert one.history == [] and two.history == []  # nobody flipped anybody's box
    assert one.torn_down_at is None and two.torn_down_at == 9.0


async def test_the_command_line_keeps_two_fleets_box1_apart(
    tmp_path: Path, make_loopback_fleet
) -> None:  # type: ignore[no-untyped-def]
    """``teardown --check`` on fleet one's box1, fleet two's, then one's again: before
    journals were kept per fleet the third said "a new box answers as box1"."""
    first, second = await make_loopback_fleet(1), await make_loopback_fleet(1)
    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state)}
    outputs = []
    for fleet in (first, second, first):
        run = await arun(
            "teardown", "box1", "--check", env={**env, "RGT_HOSTS": str(fleet.hosts_file)}
        )
        assert run.returncode == 1, run.stdout + run.stderr  # nothing pulled yet: locked
        outputs.append(run.stdout + run.stderr)
    assert not any("a new box answers" in out for out in outputs), outputs
    one = Journal(journal_dir(first.hosts_file, env)).load("box1")
    two = Journal(journal_dir(second.hosts_file, env)).load("box1")
    assert one.box is not None and two.box is not None and one.box.box_id != two.box.box_id
    assert one.history == [] and two.history == []
    assert not (journal_root(env) / "box1.json").exists()  # nothing at the old flat place


def test_an_old_flat_journal_is_read_as_no_fleets(tmp_path: Path) -> None:
    """Records kept before journals were per fleet do not say which fleet they were of:
    none of them is read, so none opens (or closes) another fleet's gate."""
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    flat = Journal(journal_root(env))
    torn = TeardownRecord(5.0, "true", 0, "", True, "c" * 32)
    flat.save(HostJournal("box1", teardowns=[torn], box=BoxIdentity("c" * 32)))
    fleet = tmp_path / "hosts.toml"
    jh = Journal(journal_dir(fleet, env)).load("box1")
    assert jh.box is None and jh.teardowns == [] and jh.torn_down_at is None
    assert flat.load("box1").torn_down_at == 5.0  # left where it was, untouched
