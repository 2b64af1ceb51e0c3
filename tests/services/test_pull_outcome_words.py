"""The words a pull ends with say what happened (ux-i 7, 8)."""

from __future__ import annotations

from support.pulls import box_results, fast, host_of, pull, random_file

from rgt_tui.cli.pull_text import format_pull_result
from rgt_tui.services.pull.tar_squeeze import choose


async def test_a_pull_with_only_refused_names_ends_incomplete_not_failed(
    make_loopback_fleet, tmp_path
):
    """Every file copied, one name refused on the box: nothing failed, so the last phase
    says ``incomplete`` (it said ``failed 2/2``), and the summary NOT COMPLETE."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    random_file(res / "good.bin", 3000)
    random_file(res / "more.json", 100)
    (res / "bad\x07name.txt").write_text("x")  # a control character: refused by name
    phases: list[str] = []
    result = await pull(
        host_of(fleet),
        tmp_path,
        options=fast(progress_interval_s=0),
        on_progress=lambda p: phases.append(p.phase),
    )
    assert not result.ok and not result.failed and len(result.pulled) == 2
    assert phases[-1] == "incomplete" and "failed" not in phases
    text = format_pull_result(result)
    # Nothing stopped part-way: nothing to resume (it said "re-run … (it resumes)").
    assert text.endswith("NOT COMPLETE: fix the above and re-run the same pull"), text
    # A box without queue logs: one line saying why, not "0 files (none new)" as well.
    logs = [line for line in text.splitlines() if line.startswith("  box logs:")]
    assert len(logs) == 1 and "0 files" not in logs[0], logs
    from rgt_tui.content.pull_view import pull_result_lines  # the Pulls tab says the same

    tab = [line.plain for line in pull_result_lines(result)]
    assert "✖ NOT COMPLETE: fix the above and press p again" in tab, tab


def test_too_little_text_is_not_called_not_text_heavy():
    """990K of JSON: all text, under the 1 MiB a codec needs to pay; the reason said
    "not text-heavy (99 % text)"."""
    squeeze = choose([("metrics.json", 990 << 10)], rtt_s=0.2, limit_bps=None, zstd_here=True)
    assert squeeze.codecs == () and "not text-heavy" not in squeeze.reason
    assert "too little" in squeeze.reason and "990K" in squeeze.reason
    ckpt = choose([("a.pt", 990 << 10)], rtt_s=0.2, limit_bps=None, zstd_here=True)
    assert ckpt.reason == "not text-heavy (0 % text)"
