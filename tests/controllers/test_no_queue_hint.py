"""L or a on a host with no queue file: the hint names the file, the entry and the two
keys with an example of each (it read 'add queue = "PATH" and run to its [[hosts]] entry',
which a user's hour could not parse)."""

from __future__ import annotations

from pathlib import Path

from rgt_tui.controllers.queue_actions import no_queue_hint
from rgt_tui.services.fleet.file import load_fleet


def test_the_hint_names_the_file_the_entry_and_both_keys(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "gpu1"\nssh = "root@10.0.0.5:22"\n')
    said = no_queue_hint("gpu1", load_fleet(hosts))
    assert said.startswith(f"gpu1 has no queue file: in its [[hosts]] entry in {hosts}, add ")
    assert 'queue = "queues/gpu1.txt" (one cell per line)' in said
    assert 'run = "python3 train.py --config {cfg} [--epochs {epochs}] --out {out}"' in said


def test_an_entry_whose_run_is_set_is_told_only_the_queue_key(tmp_path: Path) -> None:
    """Its run set, the hint named run too, as if it were missing (hour s20c #10)."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "gpu1"\nssh = "root@10.0.0.5:22"\nrun = "python t.py {cfg} {out}"\n'
    )
    said = no_queue_hint("gpu1", load_fleet(hosts))
    assert 'queue = "queues/gpu1.txt" (one cell per line; its run is set)' in said
    assert "run =" not in said
