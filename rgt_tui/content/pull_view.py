"""What the Pulls tab says (and the verify lines of the Teardown tab), as styled text: pure
functions of job outcomes; the teardown checklist is content/teardown_text.py.

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
from rgt_tui.content.recorded_view import pulled_while_running_lines
from rgt_tui.domain.egress import moved_line
from rgt_tui.domain.roster import roster_line
from rgt_tui.domain.units import fmt_bytes, fmt_took, plural
from rgt_tui.services.pull.copy_words import large_files_lines
from rgt_tui.services.pull.progress import PullProgress
from rgt_tui.services.result_code import result_code_lines, running_line
from rgt_tui.services.verify.report import (
    code_lines,
    file_problem,
    flag_problem,
    loader_line,
    offline,
    problem_count,
    reclaimed_line,
    unlisted_counts,
    unlisted_problems,
)

if TYPE_CHECKING:
    from rgt_tui.services.pull.types import PullResult
    from rgt_tui.services.verify.types import VerificationReport

MUTED = "$foreground-muted"
MAX_FILES = 8


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


def pull_result_lines(result: PullResult, *, verified: bool = False) -> list[Content]:
    """The pull's outcome: counts, every failure and conflict by name, and the verdict
    (with "next: v to verify" until a verify of this pull is on record: ``verified``)."""
    resumed = sum(1 for f in result.pulled if f.resumed_from)
    lines = [
        Content(
            f"{len(result.pulled)} pulled ({resumed} resumed), {len(result.skipped)} already "
            f"here, {len(result.failed)} failed — {fmt_bytes(result.bytes_received)} in "
            f"{fmt_took(result.elapsed_s)} into {shown(result.dest)}"
        )
    ]
    # How the large files came (through OpenSSH's ssh, or SFTP and why): the CLI's words.
    lines += [Content.styled(shown(line), MUTED) for line in large_files_lines(result)]
    if result.egress is not None and result.moved:  # U14: what left the box, its cost
        lines.append(Content.styled(moved_line(result.moved, result.egress), MUTED))
    lines += [  # REPLACED (your earlier copy kept aside), AGAIN, GROWING (pulled up to a size)
        Content.assemble((f"{label:<10}", "bold $warning"), shown(text))
        for label, text in result.notices
    ]
    lines += [
        Content.assemble(("FAILED    ", "bold $error"), shown(f"{p}: {why}"))
        for p, why in result.failed
    ]
    lines += [
        Content.assemble(("CONFLICT  ", "bold $warning"), shown(f"{p}: {why}"))
        for p, why in result.conflicts
    ]
    m = result.manifest
    # Skipped by rule (a secret, rgt-tui's records): on purpose, not a shortfall. Any other
    # refusal is a MISSING line below, with its fix: listed here too, it was said twice
    # (h491 #11).
    lines += [
        Content.assemble(("SKIPPED   ", MUTED), shown(f"{m.display(r.root, r.path)}: {r.reason}"))
        for r in m.refused
        if skipped_by_rule(r.reason)
    ]
    if result.code is not None:  # the code that made the results (U42)
        lines += [Content.styled(shown(line), MUTED) for line in result_code_lines(result.code)]
    if result.ok:
        running = running_line(result.code)
        if running:
            return lines + pulled_while_running_lines(running)
        lines.append(
            Content.styled(
                f"✓ pull complete: every file of the manifest ({len(m.entries)}) is here with a "
                "matching SHA-256" + ("" if verified else " — next: v to verify"),
                "bold $success",
            )
        )
    else:
        lines += [
            Content.assemble(("MISSING   ", "bold $error"), shown(why)) for why in result.shortfalls
        ]
        again = " (it resumes)" if result.failed else ""  # as the command line says it
        lines.append(
            Content.styled(f"✖ NOT COMPLETE: fix the above and press p again{again}", "bold $error")
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
    # Problems by name; hash-only files counted, not named, as `rgt-tui verify` does (20
    # of them named put the problems below the fold at 80x24: a user's hour).
    lines += [
        Content.styled(
            shown(f"  {c.status:<13} {c.path} ({fmt_bytes(c.size)}) {c.detail}"), "$error"
        )
        for c in report.checks
        if not c.ok
    ]
    listed = any(not c.ok for c in report.checks) or report.flags
    # Not those a flag lists below (empty, leftover), as `rgt-tui verify` counts them.
    only = unlisted_counts(report)["hash-only"]
    if only and listed:  # else the files: line counts them already
        lines.append(
            Content.styled(
                f"  {plural(only, 'hash-only file', shown=f'{only:,}')} not listed (nothing "
                f"loads them; rgt-tui verify {report.host} --all lists every file)",
                MUTED,
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
    if report.reclaimed:
        lines.append(Content.styled(reclaimed_line(report), MUTED))
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
        others = unlisted_problems(report)
        # Each problem listed above (the roster's missing cells) is said to be there.
        count = (
            problem_count(report)
            if others
            else f"{plural(len(report.problems), 'problem')} (the roster's cells above)"
        )
        lines.append(Content.styled(f"✖ NOT VERIFIED: {count}", "bold $error"))
        # Not again what is listed above it: a bad file's or a flag's line (a flagged file
        # read twice, and pushed the verdict's lines off an 80x24 screen).
        above = {file_problem(c) for c in report.checks if not c.ok}
        above |= {flag_problem(f) for f in report.flags}
        rest = [p for p in others if p not in above]
        lines += [Content.styled(shown(f"  {p}"), "$error") for p in rest[:8]]
    return lines


def join(lines: list[Content]) -> Content:
    """Lines as one block."""
    return Content("\n").join(lines)
