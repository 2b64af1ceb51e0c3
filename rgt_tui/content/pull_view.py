"""What the Pulls and Teardown tabs say, as styled text: pure functions of job outcomes.

Shared wording with the CLI twins (``cli/pull.py``, ``cli/teardown.py``) so a screen and its
command say the same thing.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from textual.content import Content

from rgt_tui.agent.secret_paths import skipped_by_rule
from rgt_tui.content.box_text import shown
from rgt_tui.content.gauge import usage_line
from rgt_tui.domain.egress import plan_line
from rgt_tui.domain.gate_fixes import fix
from rgt_tui.domain.roster import roster_line
from rgt_tui.domain.units import fmt_bytes, fmt_duration, plural
from rgt_tui.services.pull.progress import PullProgress
from rgt_tui.services.result_code import result_code_lines
from rgt_tui.services.verify.report import code_lines, loader_line, offline, unlisted_problems

if TYPE_CHECKING:
    from rgt_tui.services.pull.types import PullResult
    from rgt_tui.services.teardown import GateReport, TeardownOutcome
    from rgt_tui.services.verify.types import VerificationReport

MUTED = "$foreground-muted"
MAX_FILES = 8

CONDITION_TITLES = {
    "box": "the box that answers is the one recorded",
    "manifest": "manifest taken after the last write",
    "rescan": "fresh re-scan matches",
    "pulled": "every file pulled, SHA-256 matches",
    "local": "local copy re-hashed now, unchanged",
    "loaded": "every loadable artifact loaded",
    "verified": "verify found no problem",
    "roster": "roster reconciled",
    "idle": "no cell running",
    "unfinished": "unfinished work moved or accepted",
    "moved": "moved to another host",
    "jobs": "every Slurm job of the queue ended",
    "confirmed": "host name typed",
    "journal": "journal readable",
}


def progress_lines(p: PullProgress, width: int) -> list[Content]:
    """A total bar (bytes, rate, ETA), then one bar per file in flight."""
    lines = [Content.assemble((f"{p.phase}", "bold"), (f"  {shown(p.message)}", MUTED))]
    if p.plan_line:  # the bytes to move and their egress cost (U14)
        lines.append(Content.styled(shown(p.plan_line), MUTED))
    if p.files_total or p.bytes_total:  # the figures: the command line's text too
        figures = p.figures()
        lines.append(usage_line("total", p.fraction, figures, width, warn_at=2.0, crit_at=2.0))
    for f in p.active[:MAX_FILES]:
        frac = f.done / f.size if f.size else 1.0
        lines.append(
            Content.assemble((shown(f.path), "bold"), (f"  {f.state} {shown(f.note)}", MUTED))
        )
        lines.append(usage_line("file", frac, f.figures(), width, warn_at=2.0, crit_at=2.0))
    if len(p.active) > MAX_FILES:
        lines.append(Content.styled(f"… and {len(p.active) - MAX_FILES} more in flight", MUTED))
    if p.files_failed:
        lines.append(Content.styled(f"{p.files_failed} failed so far", "bold $error"))
    return lines


def pull_result_lines(result: PullResult) -> list[Content]:
    """The pull's outcome: counts, every failure and conflict by name, and the verdict."""
    resumed = sum(1 for f in result.pulled if f.resumed_from)
    lines = [
        Content(
            f"{len(result.pulled)} pulled ({resumed} resumed), {len(result.skipped)} already "
            f"here, {len(result.failed)} failed — {fmt_bytes(result.bytes_received)} in "
            f"{fmt_duration(result.elapsed_s)} into {shown(result.dest)}"
        )
    ]
    if result.egress is not None and result.to_move:  # U14: what the plan moved, its cost
        lines.append(Content.styled(plan_line(result.to_move, result.egress), MUTED))
    lines += [
        Content.assemble(("FAILED    ", "bold $error"), shown(f"{p}: {why}"))
        for p, why in result.failed
    ]
    lines += [
        Content.assemble(("CONFLICT  ", "bold $warning"), shown(f"{p}: {why}"))
        for p, why in result.conflicts
    ]
    m = result.manifest
    lines += [  # skipped by rule (a secret, rgt-tui's records): on purpose, not a shortfall
        Content.assemble(
            ("SKIPPED   ", MUTED) if skipped_by_rule(r.reason) else ("REFUSED   ", "bold $warning"),
            shown(f"{m.display(r.root, r.path)}: {r.reason}"),
        )
        for r in m.refused
    ]
    if result.code is not None:  # the code that made the results (U42)
        lines += [Content.styled(shown(line), MUTED) for line in result_code_lines(result.code)]
    if result.ok:
        lines.append(
            Content.styled(
                f"✓ pull complete: every file of the manifest ({len(m.entries)}) is here with a "
                "matching SHA-256 — next: v to verify",
                "bold $success",
            )
        )
    else:
        lines += [
            Content.assemble(("MISSING   ", "bold $error"), shown(why)) for why in result.shortfalls
        ]
        lines.append(
            Content.styled(
                "✖ NOT COMPLETE: fix the above and press p again (it resumes)", "bold $error"
            )
        )
    return lines


def pull_error_lines(message: str, fix: str) -> list[Content]:
    """A pull that stopped: the message and its fix."""
    lines = [Content.assemble(("✖ pull failed: ", "bold $error"), shown(message, lines=True))]
    if fix:
        lines.append(Content.assemble(("fix: ", "bold $accent"), shown(fix, lines=True)))
    return lines


def verify_lines(report: VerificationReport) -> list[Content]:
    """The verification: counts per status, flagged files by name, missing cells."""
    counts = Counter(c.status for c in report.checks)
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no files"
    lines = [Content.assemble(("files: ", MUTED), summary)]
    for c in report.checks:
        if not c.ok or c.status == "hash-only":
            style = "$foreground" if c.ok else "$error"
            lines.append(
                Content.styled(
                    shown(f"  {c.status:<13} {c.path} ({fmt_bytes(c.size)}) {c.detail}"), style
                )
            )
    for f in report.flags:
        lines.append(Content.styled(shown(f"  {f.kind:<13} {f.path}  {f.detail}"), "$warning"))
    if report.roster is None:
        if report.manifest is not None:  # else nothing was looked at
            lines.append(Content.styled("roster: no queue file; nothing to reconcile", MUTED))
    else:
        r = report.roster
        lines.append(Content(shown(f"roster: {roster_line(r)}")))
        unfinished = {name for name, _ in r.unfinished}  # named on the roster line
        lines += [
            Content.styled(shown(f"  missing cell {name}: {why}"), "$error")
            for name, why in r.missing
            if name not in unfinished
        ]
    lines += [Content.styled(shown(line), MUTED) for line in code_lines(report)]  # U42
    loader = report.loader
    if loader is not None:  # which interpreter and torch loaded the files ([fleet] verify_python)
        style = "$warning" if loader.torch_problem else MUTED
        lines.append(
            Content.assemble(("loaded with: ", MUTED), (shown(loader_line(loader)), style))
        )
    if offline(report):
        lines.append(Content.styled("the box was not re-scanned for changes", "$warning"))
    if report.ok:
        lines.append(
            Content.styled("✓ VERIFIED: every file checked, roster complete", "bold $success")
        )
    else:
        lines.append(
            Content.styled(
                f"✖ NOT VERIFIED: {plural(len(report.problems), 'problem')}", "bold $error"
            )
        )
        lines += [Content.styled(shown(f"  {p}"), "$error") for p in unlisted_problems(report)[:8]]
    return lines


def checklist_lines(report: GateReport, torn_down: bool = False) -> list[Content]:
    """Every gate condition with its state and evidence, and under each locked one the
    key that settles it; then why facts are missing, and the verdict. ``torn_down``: the
    box is recorded as torn down now: nothing is left to type."""
    lines = []
    for c in report.conditions:
        if torn_down and c.key == "confirmed":
            continue  # typed already: the teardown is recorded
        mark, style = ("✓", "$success") if c.ok else ("✖", "$error")
        title = CONDITION_TITLES.get(c.key, c.key)
        settle = "" if c.key == "confirmed" else fix(c, report.host.name, tui=True)
        lines.append(
            Content.assemble(
                (f"{mark} ", f"bold {style}"),
                (f"{c.key:<9} ", "bold"),
                (f"{title}: ", MUTED),
                shown(c.evidence),
                (f" → {settle}" if settle else "", "bold $accent"),
            )
        )
    lines += [Content.styled(shown(f"! {p}"), "$warning") for p in report.problems]
    if torn_down:
        lines.append(
            Content.styled(
                f"{report.host.name} is recorded as torn down: nothing left to confirm",
                "bold $success",
            )
        )
    elif report.ready_but_confirmation:
        lines.append(
            Content.styled(
                f"ready: type '{report.host.name}' below to tear it down", "bold $success"
            )
        )
    else:
        lines.append(
            Content.styled(
                "locked: nothing will be torn down until every item holds", "bold $error"
            )
        )
    return lines


def profile_lines(report: GateReport) -> list[Content]:
    """The profile's facts: verb, irreversibility, what it destroys, what keeps billing."""
    p = report.profile
    verb = Content.assemble(
        p.teardown_verb,
        ("  IRREVERSIBLE", "bold $error") if p.irreversible else ("  reversible", MUTED),
    )
    rows = [
        ("teardown verb", verb),
        ("destroys", Content(p.destroys)),
        ("keeps billing", Content("; ".join(p.keeps_billing))),
        ("survives stop", Content(p.stop_survives)),
        ("survives meter-stop", Content(p.meter_stop_survives)),
        ("danger clocks", Content("; ".join(p.clock_lines))),
        (
            "teardown command",
            Content(report.host.teardown or "(none: you will be shown what to do)"),
        ),
    ]
    return [Content.assemble((f"{k:<20}", MUTED), v) for k, v in rows]


def outcome_lines(
    outcome: TeardownOutcome, torn_down: bool, host: str = "the host"
) -> list[Content]:
    """After the typed confirmation: the command's output and exit code, or instructions.

    Without a command nothing is recorded (and nothing said about billing stopping) until
    the user types the name a second time to say the box is destroyed.
    """
    if not outcome.ran:
        lines = [Content.styled("Do this by hand now:", "bold"), Content(outcome.instructions)]
        lines += [Content.styled(outcome.credentials, MUTED)] if outcome.credentials else []
        if torn_down:
            lines.append(
                Content.styled(
                    "✓ you confirmed the box is destroyed: recorded as torn down; "
                    "its cost stops here",
                    "bold $success",
                )
            )
        else:
            lines.append(
                Content.styled(
                    f"NOT recorded as torn down: {host} bills until you destroy it. "
                    f"Once you have, type '{host}' again below.",
                    "bold $warning",
                )
            )
        return lines
    lines = [Content.styled(outcome.credentials, MUTED)] if outcome.credentials else []
    lines += [
        Content.styled(shown(line), MUTED)
        for line in outcome.output.rstrip("\n").splitlines()[-20:]
    ]
    if outcome.ok and torn_down:
        lines.append(
            Content.styled("✓ teardown command exited 0: recorded as torn down", "bold $success")
        )
    elif outcome.timed_out:
        # The output's last line already says what may have happened (timed_out_note).
        lines.append(
            Content.styled(
                "✖ teardown command TIMED OUT and was stopped with all it started: NOT "
                "recorded as torn down — check the provider's console: the box may be "
                "half-destroyed",
                "bold $error",
            )
        )
    else:
        lines.append(
            Content.styled(
                f"✖ teardown command FAILED (exit {outcome.exit_status}): NOT recorded as torn down",
                "bold $error",
            )
        )
    return lines


def join(lines: list[Content]) -> Content:
    """Lines as one block."""
    return Content("\n").join(lines)
