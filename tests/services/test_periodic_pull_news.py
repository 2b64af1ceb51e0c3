"""A periodic pull's news while the queue runs (ux-b #10): a running cell's files still
change on the box and a pending cell has none yet, so neither is listed as a problem in
the notification; a corrupt file and a failed cell still are, and `verify` itself (its
report, the teardown gate) still counts them all."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rgt_tui.domain.artifacts import CORRUPT, VERIFIED
from rgt_tui.domain.manifest import Manifest, ManifestEntry, PullRoot
from rgt_tui.domain.roster import reconcile
from rgt_tui.services.verify.run import news_problems, problem_lines
from rgt_tui.services.verify.types import ArtifactCheck, Flag, VerificationReport

DIGEST = "ab" * 32


def report_of_a_running_queue() -> VerificationReport:
    entries = (
        ManifestEntry(0, "train/checkpoint.pt", 10, 1.0, DIGEST),
        ManifestEntry(0, "broke/metrics.json", 10, 1.0, DIGEST),
    )
    root = PullRoot(0, "/runs", "/runs", "")
    manifest = Manifest("box1", (root,), entries, taken_at=2.0, finished_at=3.0)
    checks = (
        ArtifactCheck("train/checkpoint.pt", "/runs/train/checkpoint.pt", "torch", VERIFIED,
                      "loaded", 10, DIGEST),
        ArtifactCheck("broke/metrics.json", "/runs/broke/metrics.json", "json", CORRUPT,
                      "line 1: not JSON", 10, DIGEST),
    )  # fmt: skip
    flags = (
        Flag("remote-changed", "train/checkpoint.pt", "changed on the box since the manifest"),
        Flag("leftover", "train/checkpoint.pt.tmp", "an interrupted save"),
    )
    statuses = {c.path: c.status for c in checks}
    open_work = {"train": "running", "later": "pending", "broke": "failed (exit 1)"}
    roster = reconcile(["train", "later", "broke"], manifest, "/runs", statuses, open_work)
    problems = tuple(problem_lines(manifest, checks, flags, roster))
    return VerificationReport(
        "box1", Path("/nowhere"), 4.0, manifest, checks, flags, roster, True, problems
    )


def test_a_running_queue_s_news_lists_only_what_is_wrong() -> None:
    report = report_of_a_running_queue()
    every = "\n".join(report.problems)  # verify itself still says all of it
    assert "remote-changed" in every and "cell train missing" in every
    assert "cell later missing: pending: counted once it has run and is done" in every

    news = "\n".join(news_problems(report))
    assert "remote-changed" not in news
    assert "cell train missing" not in news and "cell later missing" not in news
    assert "broke/metrics.json: corrupt" in news  # a damaged file is news
    assert "cell broke missing: failed (exit 1)" in news  # so is a failed cell
    assert "checkpoint.pt.tmp: leftover" in news


def test_once_nothing_runs_the_news_is_every_problem() -> None:
    report = report_of_a_running_queue()
    roster = report.roster
    assert roster is not None
    ended = replace(roster, unfinished=tuple(u for u in roster.unfinished if u[1] != "running"))
    done = replace(report, roster=ended)
    assert news_problems(done) == list(done.problems)
