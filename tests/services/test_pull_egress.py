"""U14 / U15: the pull plan's bytes and egress cost (profile, host override), shown by
`rgt-tui pull` before the copy and totalled by `pull --all`; and the rule that decides
when the small files' tar stream is compressed (pure)."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
from pathlib import Path

import pytest
from support.pulls import box_results, random_file

from rgt_tui.domain.config import ConfigError
from rgt_tui.domain.egress import EgressPrice, egress_price, plan_line
from rgt_tui.profiles import load_profiles, profile
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.pull.tar_squeeze import choose, tar_command

CKPT = [("ckpt/step1.pt", 900 << 10), ("ckpt/step2.safetensors", 900 << 10)]
TEXT = [(f"logs/cell{i}.log", 60 << 10) for i in range(40)] + [("m.jsonl", 400 << 10)]


def _fleet(tmp_path: Path, host_lines: str, profile_name: str) -> Path:
    path = tmp_path / "hosts.toml"
    path.write_text(
        f'[[hosts]]\nname = "b1"\nssh = "root@example.com:22"\npull = ["/workspace/runs"]\n'
        f'profile = "{profile_name}"\n{host_lines}'
    )
    return path


def test_the_plan_line_takes_the_profiles_price_and_a_host_overrides_it(tmp_path):
    runpod = load_fleet(_fleet(tmp_path, "", "runpod")).host("b1")
    assert egress_price(runpod, profile("runpod")) == EgressPrice(0.0, "runpod profile")
    assert plan_line(12_400_000_000, egress_price(runpod, profile("runpod"))) == (
        "pull: 12G to move"  # free: the bytes only (the progress line's units)
    )
    vast = load_fleet(_fleet(tmp_path, "egress_usd_per_gb = 0.09\n", "vastai")).host("b1")
    price = egress_price(vast, profile("vastai"))
    assert price == EgressPrice(0.09, "host b1")
    assert plan_line(12_400_000_000, price) == (
        "pull: 12G to move · egress ≈ $1.12 for 12.4 GB at $0.09/GB (host b1)"
    )
    # vast.ai publishes no one price: without the host key, the line says to set it.
    bare = load_fleet(_fleet(tmp_path, "", "vastai")).host("b1")
    assert "egress price not set (vastai profile: set egress_usd_per_gb" in plan_line(
        5_000_000, egress_price(bare, profile("vastai"))
    )
    assert plan_line(1_000, price).endswith("≈ < $0.01 for 1.0 kB at $0.09/GB (host b1)")


def test_every_profile_states_its_egress_price_or_says_to_set_it():
    for p in load_profiles().values():
        assert p.egress_usd_per_gb is None or p.egress_usd_per_gb >= 0
    assert {n: p.egress_usd_per_gb for n, p in load_profiles().items() if n in (
        "runpod", "lambda", "paperspace", "vastai", "generic-ssh",
    )} == {"runpod": 0, "lambda": 0, "paperspace": 0, "vastai": None, "generic-ssh": None}  # fmt: skip


def test_compression_is_chosen_by_the_files_and_the_link():
    near = choose(TEXT, rtt_s=0.004, limit_bps=None, zstd_here=True)
    assert near.codecs == () and "outruns" in near.reason  # never slower on a near link
    far = choose(TEXT, rtt_s=0.2, limit_bps=None, zstd_here=True)
    assert far.codecs == ("zstd",) and "slower than zstd" in far.reason
    mid = choose(TEXT, rtt_s=0.1, limit_bps=None, zstd_here=True)
    assert mid.codecs == ()  # measured: zstd lost at 100 ms / 400 Mbit/s
    assert choose(TEXT, rtt_s=0.2, limit_bps=None, zstd_here=False).codecs == ()
    slow = choose(TEXT, rtt_s=0.004, limit_bps=5e6, zstd_here=True)
    assert slow.codecs == ("zstd", "gzip") and "bandwidth limit" in slow.reason
    assert choose(TEXT, rtt_s=0.004, limit_bps=5e6, zstd_here=False).codecs == ("gzip",)
    ckpt = choose(CKPT + TEXT[:2], rtt_s=0.2, limit_bps=None, zstd_here=True)
    assert ckpt.codecs == () and "not text-heavy" in ckpt.reason
    assert choose(TEXT, rtt_s=None, limit_bps=None, zstd_here=True).codecs == ()  # this machine
    assert choose(CKPT, mode="on", rtt_s=None, limit_bps=None, zstd_here=True).codecs
    assert choose(TEXT, mode="off", rtt_s=0.2, limit_bps=None, zstd_here=True).codecs == ()
    gz = choose([("run.log.gz", 5 << 20)], rtt_s=0.2, limit_bps=None, zstd_here=True)
    assert gz.codecs == ()  # already compressed: the last suffix decides


def test_the_box_command_falls_back_when_zstd_is_missing(tmp_path):
    root = tmp_path / "root dir"
    root.mkdir()
    (root / "a.log").write_text("x" * 10_000)
    command = tar_command(str(root), ("zstd", "gzip"))
    no_zstd = tmp_path / "bin"
    no_zstd.mkdir()
    for tool in ("tar", "gzip"):
        (no_zstd / tool).symlink_to(
            subprocess.check_output(["sh", "-c", f"command -v {tool}"]).decode().strip()
        )
    out = subprocess.run(
        ["/bin/sh", "-c", command], input=b"./a.log\0", capture_output=True,
        env={"PATH": str(no_zstd)}, check=True,
    ).stdout  # fmt: skip
    assert out[:2] == b"\x1f\x8b"  # gzip
    plain = subprocess.run(
        ["/bin/sh", "-c", tar_command(str(root), ())], input=b"./a.log\0", capture_output=True,
        check=True,
    ).stdout  # fmt: skip
    assert plain[:7] == b"./a.log" and shlex.quote(str(root)) in command


async def test_cli_pull_shows_the_plan_line_before_the_copy_and_all_totals_it(
    make_loopback_fleet, tmp_path, capsys
):
    from rgt_tui.cli import main

    fleet = await make_loopback_fleet(2)
    random_file(box_results(fleet, "box1") / "w.pt", 3 << 20)
    random_file(box_results(fleet, "box2") / "w.pt", 2 << 20)
    hosts = Path(fleet.hosts_file)
    text = fleet.hosts_file.read_text()  # noqa: ASYNC240
    text = text.replace('name = "box1"\n', 'name = "box1"\negress_usd_per_gb = 0.09\n')
    text = text.replace('name = "box2"\n', 'name = "box2"\negress_usd_per_gb = 120\n')
    hosts.write_text(f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n\n' + text)  # noqa: ASYNC240

    code = await asyncio.to_thread(main, ["pull", "box1", "--hosts", str(hosts)])
    out, err = capsys.readouterr()
    assert code == 0, err
    line = "box1: pull: 3.0M to move · egress ≈ < $0.01 for 3.1 MB at $0.09/GB (host box1)"
    assert line in err
    assert err.index(line) < err.index("box1: pulling")  # before the copy is under way
    assert "transferred: 3.0M · egress" in out  # and in the summary, as done

    code = await asyncio.to_thread(main, ["pull", "--all", "--hosts", str(hosts)])
    out, err = capsys.readouterr()
    assert code == 0, err
    # box1 is here already: only box2's 2 MiB move, at its own price.
    assert "box2: pull: 2.0M to move · egress ≈ $0.25 for 2.1 MB at $120/GB (host box2)" in err
    # Done: "transferred", before the verdict that ends the output (it came after it).
    assert "all hosts: 2.0M transferred · egress ≈ $0.25" in out
    assert out.rstrip().splitlines()[-1].startswith("all hosts: 2/2 complete"), out


def test_a_host_price_must_be_a_number(tmp_path):
    path = _fleet(tmp_path, 'egress_usd_per_gb = "0.09"\n', "vastai")
    with pytest.raises(ConfigError, match="egress_usd_per_gb.*drop the quotes"):
        load_fleet(path)


async def test_cli_pull_says_what_it_moves_once_with_the_plans_figure(
    make_loopback_fleet, tmp_path, capsys
):
    """A pull that starts new files early and waits for the hash of a changed one prints
    one "to move" line (not the early files' part, then the whole), and one small-files
    line for its tar streams (issue ux-e 16)."""
    from rgt_tui.cli import main

    fleet = await make_loopback_fleet(1)
    res = box_results(fleet, "box1")
    for i in range(2):
        (res / f"m{i}.json").write_text(json.dumps({"v": 1, "pad": "x" * 60_000}))
    (res / "same.json").write_text("{}")
    hosts = Path(fleet.hosts_file)
    text = fleet.hosts_file.read_text().replace(
        'name = "box1"\n', 'name = "box1"\negress_usd_per_gb = 0.09\n'
    )  # noqa: ASYNC240
    hosts.write_text(f'[fleet]\nresults_dir = "{tmp_path / "res"}"\n\n' + text)  # noqa: ASYNC240
    assert await asyncio.to_thread(main, ["pull", "box1", "--hosts", str(hosts)]) == 0
    capsys.readouterr()

    for i in range(2):  # changed on the box: each waits for its hash (a copy is here)
        (res / f"m{i}.json").write_text(json.dumps({"v": 2, "pad": "y" * 60_000}))
    for i in range(2):  # new: each starts at once, before the box's hashes
        (res / f"n{i}.json").write_text(json.dumps({"new": i, "pad": "z" * 60_000}))
    code = await asyncio.to_thread(main, ["pull", "box1", "--hosts", str(hosts)])
    out, err = capsys.readouterr()
    assert code == 0, err
    moving = [line for line in err.splitlines() if "to move" in line]
    assert len(moving) == 1, err
    figure = moving[0].removeprefix("box1: pull: ").split(" to move")[0]
    assert f"transferred: {figure} · " in out  # the summary's exact figure: the same
    assert sum("small files:" in line for line in out.splitlines()) <= 1, out


def test_nothing_to_move_names_no_price(tmp_path):
    """`pull --all` on a host with nothing new said "egress ≈ $0.00 for 0 B" (a user's hour)."""
    vast = load_fleet(_fleet(tmp_path, "egress_usd_per_gb = 0.09\n", "vastai")).host("b1")
    assert plan_line(0, egress_price(vast, profile("vastai"))) == "pull: 0B to move"


async def test_a_pull_cut_short_counts_only_what_came_as_transferred(make_loopback_fleet, tmp_path):  # type: ignore[no-untyped-def]
    """h563 #3: a file truncated on the box mid-copy: '1 failed — 31M' but 'transferred:
    61M' (the plan), and the resume counted the rest again: egress over-reported. (The
    cut itself races the copy: the result of a real pull is given a failure instead.)"""
    from dataclasses import replace

    from support.pulls import fast, host_of, pull

    fleet = await make_loopback_fleet(1)
    random_file(box_results(fleet) / "ckpt" / "best.pt", 6 << 20)
    result = await pull(host_of(fleet), tmp_path / "r", options=fast())
    assert result.ok and result.moved == result.to_move == 6 << 20
    cut = replace(result, failed=(("ckpt/best.pt", "changed on the box"),), bytes_received=2 << 20)
    assert cut.moved == 2 << 20
