"""A checkpoint damaged on the box after a good one was pulled (issue ux-e 12), and what
`verify` lists (ux-e 11). Real loopback boxes, real torch files, the real loader."""

from __future__ import annotations

import os

import torch
from support.pulls import box_results, fast, host_of, pull

from rgt_tui.cli.pull import format_pull_result
from rgt_tui.content.pull_view import pull_result_lines
from rgt_tui.domain.units import fmt_bytes
from rgt_tui.services.verify.report import format_report
from rgt_tui.services.verify.run import verify_host


async def test_a_checkpoint_damaged_on_the_box_is_replaced_out_loud_and_verify_names_the_good_copy(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    ckpt = box_results(fleet) / "golf" / "checkpoint.pt"
    ckpt.parent.mkdir(parents=True)
    torch.save({"w": torch.randn(256, 64)}, ckpt)
    assert (await pull(host_of(fleet), tmp_path, options=fast())).ok
    good = await verify_host(host_of(fleet), tmp_path, roster=[])
    assert good.ok

    os.truncate(ckpt, ckpt.stat().st_size // 2)  # an interrupted save on the box: cut short
    again = await pull(host_of(fleet), tmp_path, options=fast())
    ((pulled,),) = [again.pulled]
    assert pulled.replaced is not None and pulled.replaced.startswith(".rgt/replaced/golf/")
    kept = tmp_path / "box1" / pulled.replaced
    assert kept.is_file() and torch.load(kept, weights_only=True)["w"].shape == (256, 64)
    summary = format_pull_result(again)
    assert (
        f"REPLACED  golf/checkpoint.pt: changed on the box; your earlier copy is kept in "
        f"{pulled.replaced}" in summary
    )
    # The Pulls tab says it too, in the same words (a TUI user's copy set aside unseen).
    tab = "\n".join(line.plain for line in pull_result_lines(again))
    assert (
        f"golf/checkpoint.pt: changed on the box; your earlier copy is kept in {pulled.replaced}"
        in tab
    )
    assert tab.count("REPLACED") == 1
    # How much the kept copies weigh in all, so a checkpoint pulled again and again does
    # not fill the disk unseen (a user's hour).
    first = kept.stat().st_size
    kept_line = f".rgt/replaced/ holds 1 earlier copy ({fmt_bytes(first)}) in all"
    assert kept_line in summary and kept_line in tab, summary

    report = await verify_host(host_of(fleet), tmp_path, roster=[])
    (check,) = report.checks
    assert check.status == "corrupt"
    assert check.detail.startswith("truncated or damaged on the box: it does not load")
    assert f"your earlier copy, which loads, is kept in {pulled.replaced}" in check.detail
    assert "pull again once it is saved" in check.detail

    os.truncate(ckpt, ckpt.stat().st_size // 2)  # damaged again: a second copy set aside
    third = format_pull_result(await pull(host_of(fleet), tmp_path, options=fast()))
    both = fmt_bytes(first + ckpt.stat().st_size * 2)
    assert f".rgt/replaced/ holds 2 earlier copies ({both}) in all" in third, third
    unchanged = format_pull_result(await pull(host_of(fleet), tmp_path, options=fast()))
    assert "holds" not in unchanged  # nothing set aside by this pull: not said again


async def test_verify_lists_only_what_needs_a_look_and_counts_the_rest(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet) / "many"
    res.mkdir(parents=True)
    for i in range(300):
        (res / f"sample_{i}.txt").write_text(f"sample {i}\n")
    (res / "broken.json").write_text("{not json")
    (res / "ok.json").write_text("{}")
    await pull(host_of(fleet), tmp_path, options=fast())
    report = await verify_host(host_of(fleet), tmp_path, roster=[])

    lines = format_report(report).splitlines()
    assert len(lines) < 10, lines  # not a line per hash-only file
    assert any("corrupt" in line and "many/broken.json" in line for line in lines)
    assert (
        "  not listed: 300 hash-only, 1 verified (nothing to look at; --all lists every file)"
        in lines
    )
    every = format_report(report, verbose=True).splitlines()
    assert sum(line.startswith("  hash-only") for line in every) == 300
    # The TUI's Pulls tab too: the problem named, the 300 counted, not listed.
    from rgt_tui.content.pull_view import verify_lines

    tui = [line.plain for line in verify_lines(report)]
    assert len(tui) < 12, tui
    assert any("corrupt" in line and "many/broken.json" in line for line in tui)
    assert (
        "  300 hash-only files not listed (nothing loads them; rgt-tui verify box1 --all "
        "lists every file)" in tui
    ), tui


async def test_a_file_installed_but_never_recorded_is_still_known_as_the_boxs(
    make_loopback_fleet, tmp_path
):
    """A pull killed outright between a file's rename into place and its record's line
    (a CI run on a loaded machine): the next pull took the file for someone else's, a
    CONFLICT for good, while the box's file moved on. Byte for byte the box's file as the
    last manifest listed it, it is rgt-tui's own copy: set aside, and the new one pulled.
    A file of other bytes is still a conflict."""
    import json

    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    (res / "checkpoint.json").write_text('{"step": 1}\n')
    (res / "other.json").write_text('{"a": 1}\n')
    assert (await pull(host_of(fleet), tmp_path, options=fast())).ok
    rgt = tmp_path / "box1" / ".rgt"
    record = json.loads((rgt / "pulled.json").read_text())
    del record["files"]["checkpoint.json"]  # its line never written: killed between
    del record["files"]["other.json"]
    (rgt / "pulled.json").write_text(json.dumps(record))
    (tmp_path / "box1" / "other.json").write_text('{"mine": true}\n')  # the user's own
    (res / "checkpoint.json").write_text('{"step": 2}\n')  # the run saved again
    (res / "other.json").write_text('{"a": 2}\n')
    result = await pull(host_of(fleet), tmp_path, options=fast())
    assert (tmp_path / "box1" / "checkpoint.json").read_text() == '{"step": 2}\n'
    kept = list((rgt / "replaced").rglob("checkpoint.json.*"))
    assert [p.read_text() for p in kept] == ['{"step": 1}\n']
    assert [c[0] for c in result.conflicts] == ["other.json"], result.conflicts
    assert (tmp_path / "box1" / "other.json").read_text() == '{"mine": true}\n'
