"""`rgt-tui disk HOST --delete PATH` with no terminal (ux-d D11), over a loopback box: the
path is checked against the audit first, so a path it would refuse (not listed, or
listed NOT OFFERED) exits 1 with the refusal and never a `--confirm` suggestion; only a
path the checks accept is told to pass `--confirm` with its full path (exit 2)."""

from __future__ import annotations

from support.cli import arun


async def test_no_terminal_refuses_a_refused_path_and_suggests_confirm_only_for_one_accepted(
    make_loopback_fleet,
) -> None:
    fleet = await make_loopback_fleet(1)
    root = fleet.box("box1").root
    (root / "results" / "old_cell").mkdir(parents=True)
    hosts = ("--hosts", fleet.hosts_file)

    for path, why in (
        ("/etc", "/etc is not in the disk audit"),
        (str(root), f"refused: {root} is not offered: holds the pull folder {root}/results"),
    ):
        got = await arun("disk", "box1", "--delete", path, "--top", "500", *hosts)
        assert got.returncode == 1, got.stdout + got.stderr
        assert why in got.stderr and "--confirm" not in got.stderr, got.stderr

    old = str(root / "results" / "old_cell")  # empty: nothing to lose, so it is accepted
    got = await arun("disk", "box1", "--delete", old, "--top", "500", *hosts)
    assert got.returncode == 2, got.stdout + got.stderr
    assert f"pass --confirm {old} (the full path) to delete it" in got.stderr
    assert (root / "results" / "old_cell").is_dir()
